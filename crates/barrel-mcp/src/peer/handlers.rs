//! A connection's inbound request handlers: on tasks of their own, or driven by the task that
//! waits for their answer (an HTTP POST, [`Driven`]) until they are spawned. Each forgets
//! itself when it ends, so an idle connection holds none; those still running when the
//! connection ends get a grace period, and are then aborted, driven or not.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::shared::{Shared, lock};
#[cfg(feature = "http-server")]
use super::{BoxFuture, driven::Driven};
#[cfg(feature = "http-server")]
use futures_util::future::{AbortHandle, Abortable};

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
    tasks: HashMap<u64, Slot, foldhash::fast::RandomState>,
    /// Set once the connection's handlers were stopped: no task starts after that.
    stopped: bool,
}

/// How a running handler is stopped.
enum Slot {
    /// It runs on a task of its own.
    Task(JoinHandle<()>),
    /// It is driven by its waiter: aborted, it ends at its waiter's next poll (which the
    /// abort wakes) without running any more of its code (a poll under way finishes first).
    #[cfg(feature = "http-server")]
    Driven(AbortHandle),
}

impl Handlers {
    /// Runs `work` on a task of the connection's; drops it when the connection's handlers
    /// were stopped already (its request was cancelled with the connection, so it would not
    /// be answered).
    pub(super) fn spawn(shared: &Arc<Shared>, work: impl Future<Output = ()> + Send + 'static) {
        // Held while spawning, so the task cannot forget itself before it is recorded.
        let mut running = lock(&shared.handlers.running);
        let Some(key) = running.admit() else { return };
        let owner = Arc::clone(shared);
        let task = tokio::spawn(async move {
            work.await;
            owner.handlers.forget(key);
        });
        running.tasks.insert(key, Slot::Task(task));
    }

    /// Hands `work` back to be driven by the caller's task, counted with the running
    /// handlers; `None` (the work dropped) when the connection's handlers were stopped.
    #[cfg(feature = "http-server")]
    pub(super) fn drive(
        shared: &Arc<Shared>,
        work: impl Future<Output = ()> + Send + 'static,
    ) -> Option<Driven> {
        let (abort, registration) = AbortHandle::new_pair();
        let key = {
            let mut running = lock(&shared.handlers.running);
            let key = running.admit()?;
            running.tasks.insert(key, Slot::Driven(abort));
            key
        };
        let owner = Arc::clone(shared);
        let work = async move {
            // Aborted or not, it forgets itself.
            let _ = Abortable::new(work, registration).await;
            owner.handlers.forget(key);
        };
        Some(Driven::on_connection(work, Arc::clone(shared), key))
    }

    /// Moves driven work `key` onto a task of its own; drops it when the connection's
    /// handlers were stopped (a stop that gave up on it already).
    #[cfg(feature = "http-server")]
    pub(super) fn adopt(shared: &Shared, key: u64, work: BoxFuture<'static, ()>) {
        let mut running = lock(&shared.handlers.running);
        if running.stopped {
            tracing::debug!(
                "the connection has ended; a driven handler left by its waiter is dropped"
            );
            return;
        }
        // Held while spawning, so the task cannot forget itself before it is recorded.
        let task = tokio::spawn(work);
        running.tasks.insert(key, Slot::Task(task));
    }

    /// How many handlers run (on tasks or driven).
    #[cfg(all(test, feature = "http-server"))]
    pub(super) fn running_count(&self) -> usize {
        lock(&self.running).tasks.len()
    }

    pub(super) fn forget(&self, key: u64) {
        lock(&self.running).tasks.remove(&key);
        self.ended.notify_waiters();
    }

    /// Gives the handlers still running `grace` to return (their requests are cancelled by
    /// now), then aborts the rest and waits until those on tasks are gone. A driven handler,
    /// aborted, runs no more code once the poll its waiter may be in returns; its waiter drops
    /// it (this does not wait for that poll).
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
        let stuck: Vec<Slot> = {
            let mut running = lock(&self.running);
            running.stopped = true;
            running.tasks.drain().map(|(_, slot)| slot).collect()
        };
        if stuck.is_empty() {
            return;
        }
        tracing::debug!(
            count = stuck.len(),
            "handlers ignored cancellation; aborted"
        );
        let mut tasks = Vec::with_capacity(stuck.len());
        for slot in stuck {
            match slot {
                Slot::Task(task) => {
                    task.abort();
                    tasks.push(task);
                }
                // Its code never runs again; its waiter drops it.
                #[cfg(feature = "http-server")]
                Slot::Driven(abort) => abort.abort(),
            }
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Running {
    /// A key for a new handler; `None` once the handlers were stopped.
    fn admit(&mut self) -> Option<u64> {
        if self.stopped {
            tracing::debug!("the connection has ended; a handler that would wait is dropped");
            return None;
        }
        self.next += 1;
        Some(self.next)
    }
}
