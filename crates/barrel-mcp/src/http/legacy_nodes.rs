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
//!   with it), 503 with `Retry-After` when the store or the bus cannot answer (or the holder's
//!   inbox is full: [`BusOptions::inbox_capacity`](crate::store::BusOptions::inbox_capacity)),
//!   413 past [`SharedSessions::max_forwarded_bytes`](super::SharedSessions::max_forwarded_bytes),
//!   429 with `Retry-After: 1` past
//!   [`SharedSessions::max_forwards_per_second`](super::SharedSessions::max_forwards_per_second)
//!   for the session through this node. The holder hands it to the session as if POSTed there,
//!   without the HTTP request (a handler sees no caller's headers for it).
//! - So a forwarded POST climbs the same rungs as one the holder gets (`Content-Type`, the body
//!   limit [`HttpConfig::max_body_size`](super::HttpConfig::max_body_size) and its timeout, JSON,
//!   no batches: `legacy.rs` reads it before it is sent on), and what one client pushes into the
//!   holder's inbox is bounded as for a Streamable HTTP session: by message
//!   (`max_forwarded_bytes`) and by session and second (`max_forwards_per_second`).
//! - When the holder dies the session ends: the old transport never resumes. So does it when
//!   its record is gone from the store, or when the holder takes a new node tag (the record
//!   names the old one).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::Response;
use barrel_mcp_types::{Message, ProtocolVersion};
use http::StatusCode;
use tokio::time::Instant;

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

/// The messages this node sent on for legacy sessions other nodes hold, counted per session
/// over one-second windows, for
/// [`SharedSessions::max_forwards_per_second`](super::SharedSessions::max_forwards_per_second)
/// (a node holds no copy of such a session to count them in). Each window starts empty, so the
/// table holds at most the sessions sent on for within one second, each a stored legacy
/// session of its caller.
#[derive(Default)]
pub(crate) struct Forwards(Mutex<Window>);

#[derive(Default)]
struct Window {
    started: Option<Instant>,
    sent: HashMap<String, u32>,
}

impl fmt::Debug for Forwards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Counts only: session ids are not shown.
        let sessions = self.0.lock().map_or(0, |window| window.sent.len());
        f.debug_struct("Forwards")
            .field("sessions", &sessions)
            .finish()
    }
}

impl Forwards {
    /// Counts one message for session `id`; false when it already sent `max` this second.
    fn admit(&self, id: &str, max: u32) -> bool {
        let mut window = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if window
            .started
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(1))
        {
            window.started = Some(Instant::now());
            // Given back whole: a busy second leaves no large table behind.
            window.sent = HashMap::new();
        }
        if let Some(sent) = window.sent.get_mut(id) {
            if *sent >= max {
                return false;
            }
            *sent += 1;
            return true;
        }
        if max == 0 {
            return false;
        }
        window.sent.insert(id.to_owned(), 1);
        true
    }
}

/// Sends `message`, POSTed for the legacy session `id`, on to `node`, which holds it: 413 past
/// [`SharedSessions::max_forwarded_bytes`], 429 with `Retry-After: 1` past
/// [`SharedSessions::max_forwards_per_second`] for this session (counted in `forwards`).
pub(crate) async fn send_on(
    forwards: &Forwards,
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
    if !forwards.admit(id, shared.max_forwards_per_second) {
        let mut response = reply::error(
            StatusCode::TOO_MANY_REQUESTS,
            None,
            reply::rpc_error(-32600, "too many messages for other nodes; try again"),
        );
        response.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        return response;
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Forwards;

    #[tokio::test(start_paused = true)]
    async fn forwards_are_counted_per_session_over_one_second() {
        let forwards = Forwards::default();
        assert!(forwards.admit("one", 2));
        assert!(forwards.admit("one", 2));
        assert!(!forwards.admit("one", 2), "a third in the same second");
        assert!(forwards.admit("two", 2), "another session counts apart");
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(!forwards.admit("one", 2));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(forwards.admit("one", 2), "a new second");
        assert!(!forwards.admit("three", 0), "none allowed");
        assert_eq!(format!("{forwards:?}"), "Forwards { sessions: 1 }");
    }
}
