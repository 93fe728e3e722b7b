//! A request's first poll on the task that carried it.
//!
//! Most handlers answer without waiting (a lookup, a computation, an echo). Spawning them
//! anyway costs a task, a wake of the runtime and, over HTTP, a timer and a second wake for
//! the POST that waits for the answer. Where the carrying task has nothing else to do (an HTTP
//! POST, see `inlet.rs` and `http/stateless.rs`: it waits for the answer, or on the legacy
//! transport answers 202 once the message is taken), the work is polled there once, and only
//! work that must wait moves to a task of its own: it is pinned on the heap before that first
//! poll, so it can move after it. A read loop does not do this (nor a node's inbox): its task
//! reads the next message, which must not wait for a handler.
//!
//! A panic in that first poll ends the work, not the carrying task: a handler's own panic is
//! answered -32603 further in (`unwind.rs`), so one here comes from the code around it, and
//! is logged.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::Poll;

/// Where a request's handler is first polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// On the task that hands the request in, which waits for its answer anyway (an HTTP
    /// POST); on a task of its own once it waits.
    #[cfg(feature = "http-server")]
    HereFirst,
    /// On a task of its own from the start: the task that hands it in has other messages to
    /// take (a read loop, a node's inbox).
    OwnTask,
}

/// Polls `work` once on the calling task. `None` when it finished; otherwise the work, to
/// be spawned (its next poll registers the new task's waker).
pub(crate) async fn poll_here<F>(work: F) -> Option<Pin<Box<F>>>
where
    F: Future<Output = ()>,
{
    let mut work = Box::pin(work);
    let finished = std::future::poll_fn(|cx| {
        Poll::Ready(catch_unwind(AssertUnwindSafe(|| {
            work.as_mut().poll(cx).is_ready()
        })))
    })
    .await;
    match finished {
        Ok(true) => None,
        Ok(false) => Some(work),
        Err(panic) => {
            tracing::error!(
                panic = super::unwind::panic_text(&*panic),
                "a request's work panicked outside its handler"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn work_that_does_not_wait_finishes_here() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let left = poll_here(async move { flag.store(true, Ordering::SeqCst) }).await;
        assert!(left.is_none());
        assert!(done.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_panic_in_the_first_poll_ends_the_work_not_the_task() {
        let left = poll_here(async { panic!("outside the handler") }).await;
        assert!(left.is_none());
    }

    #[tokio::test]
    async fn work_that_waits_is_handed_back_and_finishes_on_its_own_task() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let (out_tx, out_rx) = tokio::sync::oneshot::channel::<u32>();
        let left = poll_here(async move {
            if let Ok(value) = rx.await {
                let _ = out_tx.send(value + 1);
            }
        })
        .await;
        let Some(work) = left else {
            panic!("work waiting on a channel cannot finish on its first poll");
        };
        tokio::spawn(work);
        tx.send(41).expect("the work holds the receiver");
        assert_eq!(out_rx.await.expect("the spawned work answers"), 42);
    }
}
