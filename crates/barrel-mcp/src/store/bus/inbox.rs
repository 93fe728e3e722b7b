//! [`Inbox`]: the directed messages of one node, as [`Bus::inbox`](super::Bus::inbox) hands
//! them out once.

use std::fmt;

use tokio::sync::mpsc;

use super::Directed;

/// This node's directed messages, in the order each sender sent them, repeats dropped.
pub struct Inbox {
    messages: mpsc::Receiver<Directed>,
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox").finish_non_exhaustive()
    }
}

impl Inbox {
    pub(super) fn new(messages: mpsc::Receiver<Directed>) -> Self {
        Self { messages }
    }

    /// The next message, waiting for one; `None` once the bus stopped and all was read.
    pub async fn recv(&mut self) -> Option<Directed> {
        self.messages.recv().await
    }

    /// The next message if one waits now.
    pub fn try_recv(&mut self) -> Option<Directed> {
        self.messages.try_recv().ok()
    }
}
