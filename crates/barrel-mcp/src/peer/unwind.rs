//! Handler panics: caught when the handler starts and while it runs, logged here with their
//! message, and answered -32603 with a generic one (never the panic's text).

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use barrel_mcp_types::{ErrorObject, Payload, RequestId};

use super::BoxFuture;

/// A handler's future, or the panic raised while making it.
pub(crate) type Started =
    Result<BoxFuture<'static, Result<Payload, ErrorObject>>, Box<dyn Any + Send>>;

/// Starts a handler, catching a panic in the call itself.
pub(crate) fn start(
    handler: impl FnOnce() -> BoxFuture<'static, Result<Payload, ErrorObject>>,
) -> Started {
    catch_unwind(AssertUnwindSafe(handler))
}

/// Runs a started handler to its outcome; a panic becomes -32603 "internal error".
pub(crate) async fn outcome(
    started: Started,
    id: &RequestId,
    method: &str,
) -> Result<Payload, ErrorObject> {
    let outcome = match started {
        Ok(future) => CatchUnwind(future).await,
        Err(panic) => Err(panic),
    };
    outcome.unwrap_or_else(|panic| {
        tracing::error!(%id, %method, panic = panic_text(&*panic), "request handler panicked");
        Err(ErrorObject::internal("internal error"))
    })
}

/// The panic message, for the local log only; it is never sent to the other side.
pub(super) fn panic_text(panic: &(dyn Any + Send)) -> &str {
    if let Some(text) = panic.downcast_ref::<&str>() {
        text
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text
    } else {
        "(not a string)"
    }
}

/// Polls a future, turning a panic into an `Err` instead of unwinding through the task.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
