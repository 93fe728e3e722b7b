//! One inbound request served without a connection: an HTTP POST outside any session.
//!
//! There is no read loop, write loop or in-flight table: the handler runs as one future (driven
//! by the POST's task until its answer is known, [`Driven`](super::driven::Driven)), with
//! the guarantees it has on a connection (a panic is answered -32603, a cancelled request is
//! not answered, an over-long id is refused), and what it sends, then its response, go to one
//! bounded queue that the HTTP answer reads. Nothing can carry the other side's answers back,
//! so the handle sends no requests ([`Error::Closed`](crate::Error::Closed)).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::{ErrorObject, Payload, Request, Response};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::shared::Shared;
use super::{BoxFuture, Peer, PeerConfig, Queued, RequestContext, inbound, unwind};
use crate::transport::Caller;

/// Where one request's messages go, and what ends it.
pub(crate) struct Route {
    /// The request's messages in order, its response last.
    pub(crate) outbound: mpsc::Sender<Queued>,
    /// Cancelled when the request is over (the client went away, the server halts): the
    /// handler sees its cancellation and nothing more is sent.
    pub(crate) closed: CancellationToken,
    /// Cancelled when the server shuts down: long-lived requests end gracefully.
    pub(crate) input_ended: CancellationToken,
    /// How long a send may wait for room before the other side counts as gone (it stopped
    /// reading): the request is then closed.
    pub(crate) stalled: Duration,
}

/// The future that runs `request` through `handler` and queues its response; drive it, or
/// spawn it.
pub(crate) fn serve(
    config: PeerConfig,
    route: Route,
    request: Request,
    caller: Option<Arc<Caller>>,
    handler: impl FnOnce(Request, RequestContext) -> BoxFuture<'static, Result<Payload, ErrorObject>>,
) -> impl Future<Output = ()> + Send + 'static {
    let refused = inbound::id_too_long(&config, &request);
    let shared = Shared::one_request(config, route);
    let peer = Peer {
        shared: Arc::new(shared),
        related: None,
    };
    let id = request.id.clone();
    let method = request.method.clone();
    // The one request's cancellation is the route's: nothing cancels the request alone (no
    // `notifications/cancelled` reaches it), so a child token would only cost a node.
    let cancel = peer.shared.closed.clone();
    let started: unwind::Started = match refused {
        Some(error) => Ok(Box::pin(std::future::ready(Err(error)))),
        None => {
            let cx = RequestContext {
                id: id.clone(),
                cancel: cancel.clone(),
                peer: peer.related_to(id.clone()),
                caller,
            };
            unwind::start(|| handler(request, cx))
        }
    };
    async move {
        let shared = &peer.shared;
        // The handler is cancelled when the request is over (the client went away, the
        // server halts) or, once the server shuts down, when `drain_timeout` has passed; one
        // that ignores its cancellation is dropped `handler_grace` later, so no request's task
        // outlives the server.
        let deadline = async {
            let drained = async {
                shared.input_ended.cancelled().await;
                tokio::time::sleep(shared.config.drain_timeout).await;
            };
            tokio::select! {
                () = shared.closed.cancelled() => {}
                () = drained => shared.shutdown(),
            }
            tokio::time::sleep(shared.config.handler_grace).await;
        };
        let outcome = tokio::select! {
            outcome = unwind::outcome(started, &id, &method) => outcome,
            () = deadline => {
                tracing::debug!(%id, %method, "the handler ignored its cancellation; dropped");
                return;
            }
        };
        if cancel.is_cancelled() {
            return;
        }
        let response = Response {
            id: Some(id.clone()),
            outcome,
        };
        peer.shared.enqueue(response.into(), Some(id)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrel_mcp_types::{Message, RequestId};

    fn route(queue: usize, stalled: Duration) -> (Route, mpsc::Receiver<Queued>) {
        let (outbound, rx) = mpsc::channel(queue);
        let route = Route {
            outbound,
            closed: CancellationToken::new(),
            input_ended: CancellationToken::new(),
            stalled,
        };
        (route, rx)
    }

    /// The next message on the queue, which must be a response.
    async fn response_from(rx: &mut mpsc::Receiver<Queued>) -> barrel_mcp_types::Response {
        match rx.recv().await.map(|queued| queued.message) {
            Some(Message::Response(response)) => response,
            other => panic!("a response, not {other:?}"),
        }
    }

    fn request(id: RequestId) -> Request {
        Request {
            id,
            method: "tools/call".into(),
            params: None,
        }
    }

    #[tokio::test]
    async fn what_the_handler_sends_comes_before_its_response() {
        let (route, mut rx) = route(8, Duration::from_secs(5));
        let work = serve(
            PeerConfig::default(),
            route,
            request(RequestId::Number(7)),
            None,
            |_, cx| {
                Box::pin(async move {
                    cx.peer
                        .notify("notifications/progress", None)
                        .await
                        .expect("queued");
                    // Nothing could carry an answer back: requests are refused at once.
                    let asked = cx
                        .peer
                        .request("roots/list", None, Default::default())
                        .await;
                    assert!(matches!(asked, Err(crate::Error::Closed)));
                    Ok(Payload::from(serde_json::json!({ "ok": true })))
                })
            },
        );
        work.await;
        let first = *rx.recv().await.expect("the notification");
        assert!(matches!(first.message, Message::Notification(_)));
        assert_eq!(first.related, Some(RequestId::Number(7)));
        let response = response_from(&mut rx).await;
        assert_eq!(response.id, Some(RequestId::Number(7)));
        assert_eq!(
            response.outcome,
            Ok(Payload::from(serde_json::json!({ "ok": true })))
        );
    }

    #[tokio::test]
    async fn a_panicking_handler_is_answered_with_a_generic_error() {
        let (route, mut rx) = route(8, Duration::from_secs(5));
        serve(
            PeerConfig::default(),
            route,
            request(RequestId::Number(1)),
            None,
            |_, _| -> BoxFuture<'static, _> { panic!("secret detail") },
        )
        .await;
        let response = response_from(&mut rx).await;
        let error = response.outcome.expect_err("an error");
        assert_eq!(error.code, barrel_mcp_types::ErrorCode::INTERNAL_ERROR);
        assert!(!error.message.contains("secret"));
    }

    #[tokio::test]
    async fn a_client_that_reads_nothing_loses_the_request() {
        let (route, rx) = route(1, Duration::from_millis(50));
        let closed = route.closed.clone();
        let work = serve(
            PeerConfig::default(),
            route,
            request(RequestId::Number(1)),
            None,
            |_, cx| {
                Box::pin(async move {
                    let note = || cx.peer.notify("notifications/progress", None);
                    note().await.expect("queued");
                    // The queue is full and nobody reads: this send gives up and closes.
                    assert!(matches!(note().await, Err(crate::Error::Closed)));
                    assert!(cx.cancel.is_cancelled());
                    Ok(Payload::Value(serde_json::Value::Null))
                })
            },
        );
        tokio::time::timeout(Duration::from_secs(5), work)
            .await
            .expect("the request ended");
        assert!(closed.is_cancelled());
        // Only the first notification was queued; the response was dropped.
        assert_eq!(rx.len(), 1);
    }

    #[tokio::test]
    async fn an_overlong_id_is_refused_without_running_the_handler() {
        let (route, mut rx) = route(8, Duration::from_secs(5));
        let config = PeerConfig {
            max_request_id_length: 4,
            ..PeerConfig::default()
        };
        serve(
            config,
            route,
            request(RequestId::String("far too long".into())),
            None,
            |_, _| -> BoxFuture<'static, _> { unreachable!("the handler is not called") },
        )
        .await;
        let response = response_from(&mut rx).await;
        let error = response.outcome.expect_err("refused");
        assert_eq!(error.code, barrel_mcp_types::ErrorCode::INVALID_REQUEST);
    }

    #[tokio::test]
    async fn a_handler_that_ignores_its_cancellation_is_dropped_after_the_grace() {
        let (route, mut rx) = route(8, Duration::from_secs(5));
        let closed = route.closed.clone();
        let config = PeerConfig {
            handler_grace: Duration::from_millis(50),
            ..PeerConfig::default()
        };
        let work = tokio::spawn(serve(
            config,
            route,
            request(RequestId::Number(1)),
            None,
            |_, _| Box::pin(std::future::pending()),
        ));
        // The client went away: the handler is cancelled, ignores it, and is dropped.
        closed.cancel();
        tokio::time::timeout(Duration::from_secs(5), work)
            .await
            .expect("the request's task ended")
            .expect("no panic");
        assert!(rx.try_recv().is_err(), "nothing was answered");
    }

    #[tokio::test]
    async fn a_shutdown_cancels_a_handler_once_the_drain_timeout_passed() {
        let (route, mut rx) = route(8, Duration::from_secs(5));
        let input_ended = route.input_ended.clone();
        let config = PeerConfig {
            drain_timeout: Duration::from_millis(50),
            ..PeerConfig::default()
        };
        let (seen_tx, seen) = tokio::sync::oneshot::channel();
        let work = tokio::spawn(serve(
            config,
            route,
            request(RequestId::Number(1)),
            None,
            move |_, cx| {
                Box::pin(async move {
                    cx.cancel.cancelled().await;
                    let _ = seen_tx.send(());
                    Ok(Payload::Value(serde_json::Value::Null))
                })
            },
        ));
        input_ended.cancel();
        tokio::time::timeout(Duration::from_secs(5), seen)
            .await
            .expect("the handler saw its cancellation")
            .expect("sent");
        tokio::time::timeout(Duration::from_secs(5), work)
            .await
            .expect("the request's task ended")
            .expect("no panic");
        assert!(
            rx.try_recv().is_err(),
            "a cancelled request is not answered"
        );
    }
}
