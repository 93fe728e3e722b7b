//! A request's work driven by the task that waits for its answer, and spawned only when it must
//! outlive that wait.
//!
//! A handler on a task of its own costs a spawn, a task to schedule and a wake for every call,
//! and its answer crosses to the HTTP connection's task, when most handlers answer in their
//! first poll. [`Driven`] polls the work on the waiting task instead (an HTTP POST's), next
//! to what the work fills ([`Driven::alongside`]). Once the work has to go on without a waiter
//! (its answer became a stream, the wait for a first event is over, or the waiter was dropped
//! because the client went away), [`Driven::detach`] (or dropping it) spawns what is left where
//! its kind of work runs: a request served on its own onto the endpoint's tracker, a session's
//! request among its connection's handlers. It then ends as a spawned handler would: cancelled,
//! given its grace, aborted with its connection. While driven, the work is counted where it
//! would run (a token of the tracker, an entry among the connection's handlers, which aborts it
//! at the connection's end as it aborts a task), so waiting for those still waits for it.
//!
//! While driven, the work runs within the waiting task (its tracing span, its task-locals);
//! once spawned, within a task of its own. A panic while polling it (the handler's own panics
//! are answered inside it) is caught here: the work is dropped and the waiter goes on.

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use super::BoxFuture;
use super::handlers::Handlers;
use super::shared::Shared;
use super::unwind::panic_text;

/// Work polled by its waiter until it ends or is detached.
pub(crate) struct Driven {
    /// `None` once the work has ended, was spawned or panicked.
    work: Option<BoxFuture<'static, ()>>,
    /// `None` once the work no longer counts through this.
    owner: Option<Owner>,
}

/// Where the work runs once detached, and what counts it meanwhile.
enum Owner {
    /// The endpoint's tracker, holding one of its tokens.
    Tracker(TaskTracker, TaskTrackerToken),
    /// A connection's handlers, under this key.
    Connection(Arc<Shared>, u64),
}

impl Driven {
    /// Work to drive, counted by `tasks` from now on.
    pub(crate) fn new(
        work: impl Future<Output = ()> + Send + 'static,
        tasks: &TaskTracker,
    ) -> Self {
        Self {
            work: Some(Box::pin(work)),
            owner: Some(Owner::Tracker(tasks.clone(), tasks.token())),
        }
    }

    /// Work of a connection's handlers, recorded there under `key` (the work forgets the key
    /// when it ends).
    pub(super) fn on_connection(
        work: impl Future<Output = ()> + Send + 'static,
        shared: Arc<Shared>,
        key: u64,
    ) -> Self {
        Self {
            work: Some(Box::pin(work)),
            owner: Some(Owner::Connection(shared, key)),
        }
    }

    /// Waits for `other` while driving the work. The work is polled first, so what it fills
    /// in that poll is taken by `other` at once, without a wake or a timer.
    pub(crate) async fn alongside<T>(&mut self, other: impl Future<Output = T>) -> T {
        let mut other = pin!(other);
        poll_fn(|cx| {
            if let Some(mut work) = self.work.take() {
                match catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx))) {
                    Ok(Poll::Pending) => self.work = Some(work),
                    // It forgot itself (a connection's) or its token goes (the tracker's).
                    Ok(Poll::Ready(())) => self.owner = None,
                    Err(panic) => {
                        tracing::error!(
                            panic = panic_text(&*panic),
                            "a driven request's work panicked; dropped"
                        );
                        let owner = self.owner.take();
                        drop(work);
                        if let Some(Owner::Connection(shared, key)) = owner {
                            shared.handlers.forget(key);
                        }
                    }
                }
            }
            other.as_mut().poll(cx)
        })
        .await
    }

    /// Spawns what is left of the work where it runs; nothing when it has ended. Outside a
    /// runtime (one shutting down drops its tasks), the work is dropped.
    pub(crate) fn detach(&mut self) {
        let (Some(work), Some(owner)) = (self.work.take(), self.owner.take()) else {
            return;
        };
        let running = tokio::runtime::Handle::try_current().is_ok();
        match owner {
            // The token goes once the spawned task counts instead.
            Owner::Tracker(tasks, _token) if running => drop(tasks.spawn(work)),
            Owner::Tracker(..) => {}
            Owner::Connection(shared, key) if running => Handlers::adopt(&shared, key, work),
            Owner::Connection(shared, key) => shared.handlers.forget(key),
        }
    }

    /// True once the work has ended (or panicked) on its waiter.
    #[cfg(test)]
    pub(super) fn is_done(&self) -> bool {
        self.work.is_none() && self.owner.is_none()
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        self.detach();
    }
}

#[cfg(test)]
mod tests;
