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
//! would run (a token of the tracker, an entry among the connection's handlers), so waiting for
//! those still waits for it.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;

use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use super::BoxFuture;
use super::handlers::Handlers;
use super::shared::Shared;

/// Work polled by its waiter until it ends or is detached.
pub(crate) struct Driven {
    /// `None` once the work has ended or was spawned.
    work: Option<BoxFuture<'static, ()>>,
    owner: Owner,
}

/// Where the work runs once detached, and what counts it meanwhile.
enum Owner {
    /// The endpoint's tracker, holding one of its tokens.
    Tracker(TaskTracker, Option<TaskTrackerToken>),
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
            owner: Owner::Tracker(tasks.clone(), Some(tasks.token())),
        }
    }

    /// Work of a connection's handlers, recorded there under `key`.
    pub(super) fn on_connection(
        work: impl Future<Output = ()> + Send + 'static,
        shared: Arc<Shared>,
        key: u64,
    ) -> Self {
        Self {
            work: Some(Box::pin(work)),
            owner: Owner::Connection(shared, key),
        }
    }

    /// Waits for `other` while driving the work. The work is polled first, so what it fills
    /// in that poll is taken by `other` at once, without a wake or a timer.
    pub(crate) async fn alongside<T>(&mut self, other: impl Future<Output = T>) -> T {
        let mut other = pin!(other);
        poll_fn(|cx| {
            if let Some(work) = &mut self.work
                && work.as_mut().poll(cx).is_ready()
            {
                self.work = None;
                self.release();
            }
            other.as_mut().poll(cx)
        })
        .await
    }

    /// Spawns what is left of the work where it runs; nothing when it has ended. Outside a
    /// runtime (one shutting down drops its tasks), the work is dropped.
    pub(crate) fn detach(&mut self) {
        let Some(work) = self.work.take() else {
            return;
        };
        let running = tokio::runtime::Handle::try_current().is_ok();
        match &self.owner {
            Owner::Tracker(tasks, _) if running => drop(tasks.spawn(work)),
            Owner::Connection(shared, key) if running => Handlers::adopt(shared, *key, work),
            Owner::Connection(shared, key) => shared.handlers.forget(*key),
            Owner::Tracker(..) => {}
        }
        self.release();
    }

    /// The work ended or was spawned: it no longer counts through this.
    fn release(&mut self) {
        if let Owner::Tracker(_, token) = &mut self.owner {
            token.take();
        }
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        self.detach();
    }
}

#[cfg(test)]
mod tests;
