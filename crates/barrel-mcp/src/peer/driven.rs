//! A request's work driven by the task that waits for its answer, and spawned only when it must
//! outlive that wait.
//!
//! An HTTP request served on its own (`one_request`) used to run on a task of its own, its
//! answer crossing a queue to the connection's task: a spawn, a task to schedule and a wake
//! for every call, when most handlers answer in the first poll. [`Driven`] polls the work on
//! the waiting task instead, next to the queue it fills ([`Driven::alongside`]). Once the work
//! has to go on without a waiter (its answer became a stream, or the waiter was dropped because
//! the client went away), [`Driven::detach`] (or dropping it) spawns what is left onto the
//! tracker, where it ends as a spawned handler would: cancelled, then given its grace. While
//! driven, the work holds a token of the tracker, so waiting on the tracker still waits for it.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use tokio_util::task::{TaskTracker, task_tracker::TaskTrackerToken};

use super::BoxFuture;

/// Work polled by its waiter until it ends or is detached.
pub(crate) struct Driven {
    /// `None` once the work has ended or was spawned.
    work: Option<(BoxFuture<'static, ()>, TaskTrackerToken)>,
    tasks: TaskTracker,
}

impl Driven {
    /// Work to drive, counted by `tasks` from now on.
    pub(crate) fn new(
        work: impl Future<Output = ()> + Send + 'static,
        tasks: &TaskTracker,
    ) -> Self {
        Self {
            work: Some((Box::pin(work), tasks.token())),
            tasks: tasks.clone(),
        }
    }

    /// Waits for `other` while driving the work. When the work ends in a poll, `other` is
    /// polled again at once: what the work queued last is then taken without a wake.
    pub(crate) async fn alongside<T>(&mut self, other: impl Future<Output = T>) -> T {
        let mut other = pin!(other);
        poll_fn(|cx| {
            if let Poll::Ready(value) = other.as_mut().poll(cx) {
                return Poll::Ready(value);
            }
            let Some((work, _)) = &mut self.work else {
                return Poll::Pending;
            };
            if work.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.work = None;
            other.as_mut().poll(cx)
        })
        .await
    }

    /// Spawns what is left of the work onto the tracker; nothing when it has ended. Outside a
    /// runtime (one shutting down drops its tasks), the work is dropped.
    pub(crate) fn detach(&mut self) {
        let Some((work, _token)) = self.work.take() else {
            return;
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            self.tasks.spawn(work);
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
