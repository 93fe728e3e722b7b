//! The tasks running a connection's inbound request handlers. Each forgets itself when it ends,
//! so an idle connection holds none; those still running when the connection ends get a grace
//! period, and are then aborted. A handler being polled on the task that handed its request in
//! (`first_poll.rs`) counts as running too: the end waits for that poll, then for its task.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::first_poll::{Start, poll_here};
use super::shared::{Shared, lock};

#[derive(Default)]
pub(super) struct Handlers {
    running: Mutex<Running>,
    /// Woken each time a handler task ends.
    ended: Notify,
}

#[derive(Default)]
struct Running {
    next: u64,
    tasks: HashMap<u64, JoinHandle<()>>,
    /// Handlers in their first poll on the task that handed their request in.
    polled_here: usize,
    /// Set once the connection's handlers were stopped: no task starts after that.
    stopped: bool,
}

impl Handlers {
    /// Starts `work` where `start` says (see `first_poll.rs`): first polled on the calling
    /// task, then on a task of the connection's if it waits; or on such a task from the start.
    /// Dropped unpolled once the connection's handlers were stopped.
    pub(super) async fn start(
        shared: &Arc<Shared>,
        start: Start,
        work: impl Future<Output = ()> + Send + 'static,
    ) {
        if start == Start::OwnTask {
            return Self::spawn(shared, work);
        }
        let handlers = &shared.handlers;
        {
            let mut running = lock(&handlers.running);
            if running.stopped {
                tracing::debug!("the connection has ended; a handler is dropped");
                return;
            }
            running.polled_here += 1;
        }
        let waiting = poll_here(work).await;
        let mut running = lock(&handlers.running);
        running.polled_here -= 1;
        if let Some(waiting) = waiting {
            // Recorded under the same lock: `stop` sees either the poll or the task.
            Self::spawn_locked(&mut running, shared, waiting);
        }
        drop(running);
        handlers.ended.notify_waiters();
    }

    /// Runs `work` on a task of the connection's; drops it when the connection's handlers
    /// were stopped already (its request was cancelled with the connection, so it would not
    /// be answered).
    pub(super) fn spawn(shared: &Arc<Shared>, work: impl Future<Output = ()> + Send + 'static) {
        // Held while spawning, so the task cannot forget itself before it is recorded.
        let mut running = lock(&shared.handlers.running);
        Self::spawn_locked(&mut running, shared, work);
    }

    fn spawn_locked(
        running: &mut Running,
        shared: &Arc<Shared>,
        work: impl Future<Output = ()> + Send + 'static,
    ) {
        let owner = Arc::clone(shared);
        if running.stopped {
            tracing::debug!("the connection has ended; a handler that would wait is dropped");
            return;
        }
        running.next += 1;
        let key = running.next;
        let task = tokio::spawn(async move {
            work.await;
            owner.handlers.forget(key);
        });
        running.tasks.insert(key, task);
    }

    /// True when no handler is running: none on a task, none in its first poll.
    pub(super) fn is_idle(&self) -> bool {
        let running = lock(&self.running);
        running.tasks.is_empty() && running.polled_here == 0
    }

    fn forget(&self, key: u64) {
        lock(&self.running).tasks.remove(&key);
        self.ended.notify_waiters();
    }

    /// Gives the handlers still running `grace` to return (their requests are cancelled by
    /// now), then aborts the rest and waits until they are gone, so no task of the connection
    /// outlives it.
    pub(super) async fn stop(&self, grace: Duration) {
        let all_ended = async {
            loop {
                let ended = self.ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if self.is_idle() {
                    return;
                }
                ended.await;
            }
        };
        let _ = tokio::time::timeout(grace, all_ended).await;
        let stuck: Vec<JoinHandle<()>> = {
            let mut running = lock(&self.running);
            running.stopped = true;
            running.tasks.drain().map(|(_, t)| t).collect()
        };
        if stuck.is_empty() {
            return;
        }
        tracing::debug!(
            count = stuck.len(),
            "handlers ignored cancellation; aborted"
        );
        for task in &stuck {
            task.abort();
        }
        for task in stuck {
            let _ = task.await;
        }
    }
}
