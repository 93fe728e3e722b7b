//! Registry changes on their way to one session's client.
//!
//! Whoever changes the registry notes the change in each live session's pending set
//! ([`Server::emit_here`](super::Server) walks them), and a task sends what is pending, then
//! ends: an idle session has no task waiting for changes, and nothing queued. Changes go out in
//! the order they were made; one noted again before the client heard of it is announced once (a
//! list change or a resource update tells the client to read again, and once says it all),
//! which also bounds what a slow client makes the server hold: three kinds of list and the
//! resources updated while the session subscribed to them.

use std::sync::{Arc, Mutex};

#[cfg(test)]
mod tests;

use super::events::ServerEvent;
use super::session::{Session, lock};
use crate::peer::Peer;

/// The changes waiting for one session's client.
#[derive(Debug, Default)]
pub(crate) struct Announcer {
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    /// Where the sending task runs, once the client initialized: nothing is noted before.
    runtime: Option<tokio::runtime::Handle>,
    /// A task is sending (it takes what is noted meanwhile too).
    sending: bool,
    /// Each change once, oldest first.
    changes: Vec<ServerEvent>,
}

impl Announcer {
    /// Starts noting changes, to be sent on the current runtime (the client initialized).
    /// Once: false when it had started, or outside a runtime (then nothing is ever noted).
    pub(crate) fn open(&self) -> bool {
        let mut pending = lock(&self.pending);
        if pending.runtime.is_some() {
            return false;
        }
        pending.runtime = tokio::runtime::Handle::try_current().ok();
        pending.runtime.is_some()
    }

    /// Notes `event` for the client of `session`, reached through `peer`, and starts the task
    /// that sends it unless one is running. An update is noted only for a resource the session
    /// subscribes to; nothing is noted before [`open`](Self::open).
    pub(crate) fn note(&self, event: &ServerEvent, session: &Arc<Session>, peer: &Peer) {
        if let Some(runtime) = self.noted(event, session) {
            runtime.spawn(send(Arc::clone(session), peer.clone()));
        }
    }

    /// Notes `event` as [`note`](Self::note) says; returns where to start the sending task
    /// when none is running.
    fn noted(&self, event: &ServerEvent, session: &Session) -> Option<tokio::runtime::Handle> {
        if let ServerEvent::ResourceUpdated(uri) = event
            && !session.is_subscribed(uri)
        {
            return None;
        }
        let mut pending = lock(&self.pending);
        let runtime = pending.runtime.clone()?;
        if !pending.changes.contains(event) {
            pending.changes.push(event.clone());
        }
        (!std::mem::replace(&mut pending.sending, true)).then_some(runtime)
    }

    /// Takes what is pending; when nothing is, the sending task is done.
    fn take(&self) -> Vec<ServerEvent> {
        let mut pending = lock(&self.pending);
        let batch = std::mem::take(&mut pending.changes);
        if batch.is_empty() {
            pending.sending = false;
        }
        batch
    }
}

/// Sends what is pending for `session` until nothing is; stops once its connection is gone.
async fn send(session: Arc<Session>, peer: Peer) {
    loop {
        let batch = session.announcer.take();
        if batch.is_empty() {
            return;
        }
        // A copy of a shared session on a node that does not serve its GET stream leaves
        // changes to the node that does.
        if !session.hears_changes() {
            continue;
        }
        if !announce(&peer, &session, batch).await {
            // The connection is gone: nothing is noted or sent for it any more.
            let mut pending = lock(&session.announcer.pending);
            pending.runtime = None;
            pending.changes = Vec::new();
            return;
        }
    }
}

/// Announces `batch` to the session's client (a resource update only while it subscribes to
/// the resource); false once the connection is gone.
pub(crate) async fn announce(peer: &Peer, session: &Session, batch: Vec<ServerEvent>) -> bool {
    for event in batch {
        let sent = match event {
            ServerEvent::ResourceUpdated(uri) => {
                if !session.is_subscribed(&uri) {
                    continue;
                }
                let params = serde_json::json!({ "uri": uri });
                peer.notify("notifications/resources/updated", Some(params))
                    .await
            }
            event => peer.notify(event.method(), None).await,
        };
        if sent.is_err() {
            return false;
        }
    }
    true
}
