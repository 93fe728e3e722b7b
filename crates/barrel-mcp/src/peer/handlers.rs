//! The tasks running a connection's inbound request handlers. Each forgets itself when it ends,
//! so an idle connection holds none; those still running when the connection ends get a grace
//! period, and are then aborted.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

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
    /// Keyed by numbers this connection hands out, never by anything a peer chose: a fast
    /// hasher is enough.
    tasks: HashMap<u64, JoinHandle<()>, foldhash::fast::RandomState>,
    /// Set once the connection's handlers were stopped: no task starts after that.
    stopped: bool,
}

impl Handlers {
    /// Runs `work` on a task of the connection's; drops it when the connection's handlers
    /// were stopped already (its request was cancelled with the connection, so it would not
    /// be answered).
    pub(super) fn spawn(shared: &Arc<Shared>, work: impl Future<Output = ()> + Send + 'static) {
        let owner = Arc::clone(shared);
        // Held while spawning, so the task cannot forget itself before it is recorded.
        let mut running = lock(&shared.handlers.running);
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
                if lock(&self.running).tasks.is_empty() {
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
