//! Messages a client POSTs into a shared session ([`SharedSessions`](super::SharedSessions))
//! that belong to another node.
//!
//! A round-robin proxy sends each POST to any node, so the answer to a server-to-client
//! request (sampling, elicitation, roots) may reach a node other than the one whose handler
//! waits for it. Those requests take ids carrying the node that made them
//! ([`NodeTag::request_id`]), and so do their progress tokens: a response or a
//! `notifications/progress` naming another node's id is sent to that node's inbox
//! ([`Bus::send`](crate::store::Bus::send)), and its node hands it to its copy of the session.
//! A client's `notifications/cancelled` names the client's own request id, which carries no
//! node: when the request is not running on the node the notification reached, it is
//! published to every node (`session-deliver` news), and the node running it cancels it.
//!
//! What reaches a node that no longer holds the session (its copy was dropped) is logged and
//! dropped: the handler that waited for it ended with the copy. What a client can push into
//! the inboxes is bounded per message ([`SharedSessions::max_forwarded_bytes`], 413) and per
//! session and second ([`SharedSessions::max_forwards_per_second`], 429 with `Retry-After`).

use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::{Message, RequestId};
use http::StatusCode;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::replica;
use super::reply;
use super::session::HttpSession;
use super::sessionful::not_found;
use super::sessions::Sessions;
use super::shared::{News, SharedSessions};
use crate::store::{Inbox, NodeTag, Topic};
use crate::transport::Caller;

/// Where a message a client sent into a shared session belongs.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// To this node's copy.
    Here,
    /// To the node that made the request it answers (or reports progress on).
    Node(NodeTag),
    /// To the node running the client request it cancels, wherever that is.
    Running(RequestId),
}

/// Where `message` belongs, seen from node `here`.
fn target(message: &Message, here: NodeTag) -> Target {
    let ours = match message {
        Message::Response(response) => match &response.id {
            Some(RequestId::Number(id)) => Some(*id),
            _ => None,
        },
        Message::Notification(notification) => match notification.method.as_str() {
            "notifications/progress" => notification
                .params
                .as_ref()
                .and_then(|params| params.get("progressToken"))
                .and_then(Value::as_i64),
            "notifications/cancelled" => {
                return cancelled_request(notification.params.as_ref())
                    .map_or(Target::Here, Target::Running);
            }
            _ => None,
        },
        _ => None,
    };
    match ours.and_then(NodeTag::of_request_id) {
        Some(node) if node != here && node != NodeTag::LOCAL => Target::Node(node),
        _ => Target::Here,
    }
}

/// The error of a message that must reach another node while the bus cannot carry it.
const BUS_UNAVAILABLE: &str = "the other nodes of the service cannot be reached";

/// The longest request id (as JSON) a cancellation is told to the other nodes for.
const MAX_CANCELLED_ID: usize = 256;

/// The `notifications/cancelled` told to the other nodes for the client's request `id`: the id
/// alone (the reason stays here); `None` for an id longer than [`MAX_CANCELLED_ID`].
fn cancellation(id: &RequestId) -> Option<String> {
    let message = Message::notification(
        "notifications/cancelled",
        Some(serde_json::json!({ "requestId": id })),
    );
    let text = message.to_json();
    (text.len() <= MAX_CANCELLED_ID + 64).then_some(text)
}

/// The request id a `notifications/cancelled` names.
fn cancelled_request(params: Option<&Value>) -> Option<RequestId> {
    let id = params?.get("requestId")?;
    serde_json::from_value(id.clone()).ok()
}

/// Hands a notification or response from the client to `session` (this node's copy), or to
/// the node it belongs to: 202 once it is on its way, 404 when the session ended here, 503
/// with `Retry-After` when the bus cannot take it now.
pub(crate) async fn deliver(
    shared: Option<&SharedSessions>,
    session: &HttpSession,
    message: Message,
    caller: Option<Arc<Caller>>,
) -> Response {
    match shared.filter(|_| session.durable.is_some()) {
        None => here(session, message, caller).await,
        // Boxed: a session shared through a bus is the rare case, and its bus calls would make
        // every POST's future (moved at each layer above it) that much larger.
        Some(shared) => Box::pin(deliver_shared(shared, session, message, caller)).await,
    }
}

/// [`deliver`] for a session shared through a bus.
async fn deliver_shared(
    shared: &SharedSessions,
    session: &HttpSession,
    message: Message,
    caller: Option<Arc<Caller>>,
) -> Response {
    // What leaves this node (made once), and where to: one node's inbox, or every node.
    let (to, text) = match target(&message, shared.bus.node()) {
        Target::Node(node) => (Some(node), message.to_json()),
        // Only what the running node needs goes out, and only an id of a sensible size: a
        // client cannot make every node read its whole body.
        Target::Running(id) if !session.serves(&id) => match cancellation(&id) {
            Some(text) => (None, text),
            None => return reply::empty(StatusCode::ACCEPTED),
        },
        _ => return here(session, message, caller).await,
    };
    if let Some(refused) = refuse_forward(shared, session, text.len()) {
        return refused;
    }
    let news = News::Deliver {
        session: &session.id,
        message: &text,
    }
    .encode();
    let sent = match to {
        Some(node) => shared.bus.send(node, news).await.map(|alive| {
            if !alive {
                // Its handler ended with the node.
                tracing::debug!(%node, "an answer for a node that is gone; dropped");
            }
        }),
        None => shared.bus.publish(&Topic::Registry, news).await,
    };
    match sent {
        Ok(()) => reply::empty(StatusCode::ACCEPTED),
        Err(error) => {
            tracing::warn!(%error, "could not send a client's message on to the other nodes");
            replica::unavailable_because(BUS_UNAVAILABLE)
        }
    }
}

/// Hands the message to this node's copy: 202, or 404 when the session ended here.
async fn here(session: &HttpSession, message: Message, caller: Option<Arc<Caller>>) -> Response {
    match session.deliver(message, caller).await {
        Ok(()) => reply::empty(StatusCode::ACCEPTED),
        Err(_) => not_found(),
    }
}

/// The answer when a message of `len` bytes may not be sent on to another node: 413 past
/// [`SharedSessions::max_forwarded_bytes`], 429 with `Retry-After: 1` past
/// [`SharedSessions::max_forwards_per_second`] for this session.
fn refuse_forward(shared: &SharedSessions, session: &HttpSession, len: usize) -> Option<Response> {
    if len > shared.max_forwarded_bytes {
        return Some(reply::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            reply::rpc_error(-32600, "message too large to send on to another node"),
        ));
    }
    if !session.durable.as_ref()?.may_forward() {
        let mut response = reply::error(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            reply::rpc_error(-32600, "too many messages for other nodes; try again"),
        );
        response.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        return Some(response);
    }
    None
}

/// Hands the message another node sent on (its JSON text) to this node's copy of `session`.
pub(crate) async fn receive(sessions: &Sessions, session: &str, message: &str) {
    let Some(copy) = sessions.get(session) else {
        tracing::debug!("a message for a session this node no longer holds; dropped");
        return;
    };
    let message = match barrel_mcp_types::jsonrpc::decode(message) {
        Ok(message) => message,
        Err(error) => {
            tracing::warn!(
                ?error,
                "another node sent on a message that does not decode"
            );
            return;
        }
    };
    // A cancellation reaches every node; only the one running the request acts on it (a
    // legacy session's messages are sent to the one node holding it).
    if let Target::Running(id) = target(&message, NodeTag::LOCAL)
        && !copy.legacy
        && !copy.serves(&id)
    {
        return;
    }
    if copy.deliver(message, None).await.is_err() {
        tracing::debug!("a message for a session that ended here; dropped");
    }
}

/// Reads this node's inbox until the endpoint shuts down or the bus stops.
pub(crate) async fn read_inbox(mut inbox: Inbox, sessions: Arc<Sessions>, stop: CancellationToken) {
    loop {
        let directed = tokio::select! {
            () = stop.cancelled() => return,
            directed = inbox.recv() => directed,
        };
        let Some(directed) = directed else {
            tracing::warn!("the bus stopped; answers sent on by other nodes no longer arrive");
            return;
        };
        match News::decode(&directed.body) {
            Some(News::Deliver { session, message }) => {
                receive(&sessions, session, message).await;
            }
            _ => tracing::debug!(from = %directed.from, "a directed message of no known kind"),
        }
    }
}

#[cfg(test)]
mod tests {
    use barrel_mcp_types::{Message, RequestId, Response};
    use serde_json::json;

    use super::{Target, target};
    use crate::store::NodeTag;

    fn tag(n: u32) -> NodeTag {
        NodeTag::new(n).unwrap_or_default()
    }

    #[test]
    fn answers_and_progress_go_to_the_node_their_id_names() {
        let (here, there) = (tag(3), tag(7));
        let theirs = there.request_id(5).unwrap_or_default();
        let mine = here.request_id(5).unwrap_or_default();
        let response = |id| Message::Response(Response::result(RequestId::Number(id), json!({})));
        assert_eq!(target(&response(theirs), here), Target::Node(there));
        assert_eq!(target(&response(mine), here), Target::Here);
        // An id no node made (tag 0, or beyond 2^52) stays here.
        assert_eq!(target(&response(5), here), Target::Here);
        assert_eq!(target(&response(-1), here), Target::Here);
        let string = Message::Response(Response::result(RequestId::String("x".into()), json!({})));
        assert_eq!(target(&string, here), Target::Here);
        let progress = |token: serde_json::Value| {
            Message::notification(
                "notifications/progress",
                Some(json!({"progressToken": token, "progress": 1})),
            )
        };
        assert_eq!(target(&progress(json!(theirs)), here), Target::Node(there));
        assert_eq!(target(&progress(json!("t")), here), Target::Here);
    }

    #[test]
    fn a_cancellation_goes_where_its_request_runs() {
        let cancel = Message::notification(
            "notifications/cancelled",
            Some(json!({"requestId": "call-1", "reason": "no"})),
        );
        assert_eq!(
            target(&cancel, tag(1)),
            Target::Running(RequestId::String("call-1".into()))
        );
        let malformed = Message::notification("notifications/cancelled", Some(json!({})));
        assert_eq!(target(&malformed, tag(1)), Target::Here);
        let other = Message::notification("notifications/initialized", None);
        assert_eq!(target(&other, tag(1)), Target::Here);
    }

    #[test]
    fn a_cancellation_told_to_other_nodes_is_the_id_alone_and_bounded() {
        let told = super::cancellation(&RequestId::Number(7)).unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&told).unwrap_or_default(),
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})
        );
        let long = RequestId::String("x".repeat(super::MAX_CANCELLED_ID + 100));
        assert_eq!(super::cancellation(&long), None);
    }
}
