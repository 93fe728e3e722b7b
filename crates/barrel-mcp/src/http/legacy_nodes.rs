//! The legacy HTTP+SSE transport (2024-11-05) on a replicated service
//! ([`SharedSessions`](super::SharedSessions)). Its stream is the session, so a session lives
//! on the node holding its stream, and the other nodes send its client's POSTs on to that node.
//!
//! - GET on the SSE path stores the session's record (legacy, its principal, the node holding
//!   it as `get_owner`) under the caps of every node before the `endpoint` event names it, and
//!   keeps it alive in the store (a touch every eighth of the idle timeout) while the stream
//!   lives; the record is deleted when the session ends.
//! - A POST for a session this node does not hold loads the record: 404 when it is unknown, not
//!   a legacy session, or another principal's; else the message goes to the holder's inbox
//!   (`session-deliver`) and the POST gets 202: 404 when that node is gone (the session ended
//!   with it), 503 with `Retry-After` when the store or the bus cannot answer, 413 past
//!   [`SharedSessions::max_forwarded_bytes`](super::SharedSessions::max_forwarded_bytes). The
//!   holder hands it to the session as if POSTed there, without the HTTP request (a handler
//!   sees no caller's headers for it).
//! - When the holder dies the session ends: the old transport never resumes. So does it when
//!   its record is gone from the store, or when the holder takes a new node tag (the record
//!   names the old one).

use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::{Message, ProtocolVersion};
use http::StatusCode;

use super::replica::{self, is_session_id, unavailable, unavailable_because};
use super::session::HttpSession;
use super::sessionful::not_found;
use super::shared::{News, SharedSessions};
use super::{State, reply};
use crate::store::{NodeTag, SessionRecord};

/// Stores the legacy session `session`, held by this node, and keeps it alive in the store
/// until it ends (then deletes it).
pub(crate) async fn store(
    state: &Arc<State>,
    parts: &http::request::Parts,
    shared: &SharedSessions,
    session: &Arc<HttpSession>,
) -> Result<(), Response> {
    let mut record = SessionRecord::new(
        session.id.clone(),
        ProtocolVersion::V2024_11_05,
        Default::default(),
        Default::default(),
    );
    record.legacy = true;
    record.principal = session.principal.clone();
    record.get_owner = Some(shared.bus.node());
    replica::create(state, parts, shared, &mut record).await?;
    let store = Arc::clone(&shared.store);
    let (id, ended) = (session.id.clone(), session.kill.clone());
    let idle = state.config.session_idle_timeout;
    let (every, ttl) = (
        (idle / 8).max(std::time::Duration::from_millis(1)),
        idle + idle / 8,
    );
    state.sessions.tasks.spawn(async move {
        loop {
            tokio::select! {
                () = ended.cancelled() => break,
                () = tokio::time::sleep(every) => {}
            }
            match store.touch(&id, ttl).await {
                Ok(true) => {}
                // The record is gone (an outage outlived it, or Redis lost it): the other
                // nodes can no longer find the session, so it ends; the client opens another.
                Ok(false) => {
                    tracing::debug!("a legacy session's record is gone; the session ends");
                    ended.cancel();
                }
                Err(error) => {
                    tracing::debug!(%error, "could not extend a legacy session's life; tried again");
                }
            }
        }
        if let Err(error) = store.delete(&id).await {
            tracing::debug!(%error, "could not delete an ended legacy session; it expires");
        }
    });
    Ok(())
}

/// The node holding the legacy session `id`, for the principal of `parts`, when it is not this
/// node: 404 when the store knows no such session (or this node held it), 503 when it cannot
/// say.
pub(crate) async fn holder(
    state: &Arc<State>,
    parts: &http::request::Parts,
    shared: &SharedSessions,
    id: &str,
) -> Result<NodeTag, Response> {
    if !is_session_id(id) {
        return Err(not_found());
    }
    let principal = state.config.principal_of(parts);
    match shared.store.load(id).await {
        Ok(Some(record)) if record.legacy && record.principal == principal => record
            .get_owner
            .filter(|node| *node != shared.bus.node())
            .ok_or_else(not_found),
        Ok(_) => Err(not_found()),
        Err(error) => {
            tracing::warn!(%error, "a legacy session could not be loaded");
            Err(unavailable())
        }
    }
}

/// Sends `message`, POSTed for the legacy session `id`, on to `node`, which holds it.
pub(crate) async fn send_on(
    shared: &SharedSessions,
    node: NodeTag,
    id: &str,
    message: &Message,
) -> Response {
    let text = message.to_json();
    if text.len() > shared.max_forwarded_bytes {
        return reply::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            reply::rpc_error(-32600, "message too large to send on to another node"),
        );
    }
    let news = News::Deliver {
        session: id,
        message: &text,
    };
    match shared.bus.send(node, news.encode()).await {
        Ok(true) => reply::empty(StatusCode::ACCEPTED),
        // The session ended with its node.
        Ok(false) => not_found(),
        Err(error) => {
            tracing::warn!(%error, "could not send a legacy client's message on");
            unavailable_because("the other nodes of the service cannot be reached")
        }
    }
}
