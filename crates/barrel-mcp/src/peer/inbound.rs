//! Inbound messages: requests, notifications, responses and undecodable frames, from the read
//! loop or handed in one at a time (`inlet.rs`).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use barrel_mcp_types::jsonrpc::DecodeError;
use barrel_mcp_types::method::names::INITIALIZE;
use barrel_mcp_types::{ErrorObject, Message, Notification, Request, RequestId, Response};
use serde_json::Value;

use super::handlers::Handlers;
use super::shared::{CANCELLED, PROGRESS, Shared, lock};
use super::unwind::{self, panic_text};
use super::{BoxFuture, Handler, Peer, RequestContext};
use crate::Error;
use crate::transport::{Caller, Frame, MessageReader};

/// Reads frames until the input ends, the transport fails or the connection is closed.
pub(super) async fn read_loop<R: MessageReader>(
    mut reader: R,
    handler: &dyn Handler,
    peer: &Peer,
) -> Result<(), Error> {
    let shared = &peer.shared;
    loop {
        let frame = tokio::select! {
            biased;
            () = shared.closed.cancelled() => return Ok(()),
            frame = reader.recv() => frame?,
        };
        let Some(frame) = frame else { return Ok(()) };
        if let Some(work) = on_frame(frame, reader.caller(), handler, peer).await {
            Handlers::spawn(shared, work);
        }
    }
}

/// Takes one inbound frame: a request goes to the handler, a notification too (but
/// cancellation and progress, which the peer handles), a response to the request waiting
/// for it, an undecodable frame is answered. An admitted request returns its handler's work,
/// to be spawned or driven; it answers the request.
pub(super) async fn on_frame(
    frame: Frame,
    caller: Option<Arc<Caller>>,
    handler: &dyn Handler,
    peer: &Peer,
) -> Option<impl Future<Output = ()> + Send + 'static> {
    match frame {
        Ok(Message::Request(request)) => return on_request(request, caller, handler, peer).await,
        Ok(Message::Notification(notification)) => on_notification(notification, handler, peer),
        Ok(Message::Response(response)) => peer.shared.complete(response),
        // Boxed, as the rare case (see `refuse`).
        Err(error) => Box::pin(on_decode_error(error, &peer.shared)).await,
    }
    None
}

/// Admits `request` (or answers its refusal) and returns the work that runs its handler and
/// answers it.
async fn on_request(
    request: Request,
    caller: Option<Arc<Caller>>,
    handler: &dyn Handler,
    peer: &Peer,
) -> Option<impl Future<Output = ()> + Send + 'static> {
    let shared = &peer.shared;
    let id = request.id.clone();
    if let Some(error) = id_too_long(&shared.config, &request) {
        tell(|| handler.on_refused(&request), "on_refused");
        // Not in flight: nothing to take out of the table afterwards.
        refuse(shared, Response::error(Some(id.clone()), error), id).await;
        return None;
    }
    let admitted = {
        let mut in_flight = lock(&shared.in_flight);
        // Checked under the table's lock: closing and draining take it once after they set
        // their flag, so no request is admitted behind them.
        if shared.closed.is_cancelled() || shared.input_ended.is_cancelled() {
            Err(ErrorObject::internal("the connection is closing"))
        } else if in_flight.contains_key(&id) {
            Err(ErrorObject::invalid_request(
                "duplicate request id: a request with this id is still in flight",
            ))
        } else if in_flight.len() >= shared.config.max_inbound_in_flight {
            Err(ErrorObject::internal(
                "server busy: too many requests in flight",
            ))
        } else {
            let token = shared.closed.child_token();
            let cancellable = request.method != INITIALIZE;
            in_flight.insert(id.clone(), cancellable.then(|| token.clone()));
            shared
                .active
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            Ok(token)
        }
    };
    let cancel = match admitted {
        Ok(cancel) => cancel,
        Err(error) => {
            tracing::debug!(%id, method = %request.method, "request refused: {}", error.message);
            tell(|| handler.on_refused(&request), "on_refused");
            refuse(shared, Response::error(Some(id.clone()), error), id).await;
            return None;
        }
    };
    let method = request.method.clone();
    let cx = RequestContext {
        id: id.clone(),
        cancel: cancel.clone(),
        peer: peer.related_to(id.clone()),
        caller,
    };
    let started = unwind::start(|| handler.on_request(request, cx));
    let shared = Arc::clone(shared);
    Some(async move {
        let outcome = unwind::outcome(started, &id, &method).await;
        lock(&shared.in_flight).remove(&id);
        if cancel.is_cancelled() {
            tracing::debug!(%id, %method, "request cancelled; its outcome is not sent");
        } else {
            let response = Response {
                id: Some(id.clone()),
                outcome,
            };
            shared.enqueue(response.into(), Some(id)).await;
        }
        shared.request_finished();
    })
}

/// Answers a request refused before its handler ran. Boxed: a refusal is rare, and an
/// `enqueue` held inline would make every request's future (moved at each layer above it)
/// that much larger.
fn refuse(shared: &Shared, response: Response, id: RequestId) -> BoxFuture<'_, ()> {
    Box::pin(shared.enqueue(response.into(), Some(id)))
}

/// Calls a handler's hook on the read loop; a panic in it is logged, and reading goes on.
fn tell(hook: impl FnOnce(), name: &str) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(hook)) {
        tracing::error!(
            hook = name,
            panic = panic_text(&*panic),
            "handler hook panicked"
        );
    }
}

/// -32600 for a string id longer than [`PeerConfig::max_request_id_length`](super::PeerConfig):
/// such an id is never kept in a table or written to the logs.
pub(super) fn id_too_long(config: &super::PeerConfig, request: &Request) -> Option<ErrorObject> {
    let RequestId::String(text) = &request.id else {
        return None;
    };
    let limit = config.max_request_id_length;
    if text.len() <= limit {
        return None;
    }
    tracing::debug!(
        length = text.len(),
        limit,
        method = %request.method,
        "request refused: its id is too long"
    );
    Some(ErrorObject::invalid_request(format!(
        "request id too long ({} bytes, at most {limit})",
        text.len()
    )))
}

fn on_notification(notification: Notification, handler: &dyn Handler, peer: &Peer) {
    let shared = &peer.shared;
    match notification.method.as_str() {
        CANCELLED => {
            if let Some(id) = cancel_in_flight(shared, notification.params.as_ref()) {
                tell(|| handler.on_cancelled(&id), "on_cancelled");
            }
            return;
        }
        PROGRESS if shared.route_progress(notification.params.as_ref()) => return,
        _ => {}
    }
    let method = notification.method.clone();
    let delivered = catch_unwind(AssertUnwindSafe(|| {
        handler.on_notification(notification, peer);
    }));
    if let Err(panic) = delivered {
        tracing::error!(%method, panic = panic_text(&*panic), "notification handler panicked");
    }
}

/// Handles `notifications/cancelled`: cancels the named request's token, which also keeps its
/// outcome from being sent, and returns its id. Unknown or finished ids are ignored, as the
/// spec asks.
fn cancel_in_flight(shared: &Shared, params: Option<&Value>) -> Option<RequestId> {
    let params = params.unwrap_or(&Value::Null);
    let Some(id) = params.get("requestId").and_then(RequestId::from_value) else {
        tracing::debug!("notifications/cancelled without a usable requestId; ignored");
        return None;
    };
    let reason = params.get("reason").and_then(Value::as_str).unwrap_or("");
    match lock(&shared.in_flight).get(&id) {
        Some(Some(token)) => {
            tracing::debug!(%id, reason, "request cancelled by the other side");
            token.cancel();
        }
        Some(None) => {
            tracing::debug!(%id, "initialize is never cancelled; ignored");
            return None;
        }
        None => {
            tracing::debug!(%id, "cancellation for no request in flight; ignored");
            return None;
        }
    }
    Some(id)
}

async fn on_decode_error(error: DecodeError, shared: &Shared) {
    tracing::debug!(id = ?error.id, "undecodable frame: {}", error.error.message);
    match error.to_response() {
        Some(response) => shared.enqueue(response, error.id.clone()).await,
        // A malformed response to one of our requests still ends that request.
        None => {
            if let Some(id) = &error.id {
                let message = format!("malformed response: {}", error.error.message);
                shared.fail(id, Error::Protocol(message));
            }
        }
    }
}
