//! The 2024-11-05 HTTP+SSE transport, for clients that speak only it.
//!
//! GET on [`HttpConfig::legacy_sse_path`](super::HttpConfig::legacy_sse_path) opens a session
//! and answers with its one SSE stream. The first event is `endpoint`, whose data is the URL the
//! client POSTs its messages to: [`HttpConfig::legacy_messages_path`](super::HttpConfig::legacy_messages_path)
//! with `?sessionId=…`, as an absolute path; when the router is nested in an application
//! (`Router::nest`), the prefix it is nested under leads that path. Each POST carries
//! one JSON-RPC message and gets 202; everything the server sends (responses, notifications,
//! its own requests) is an event on the stream.
//!
//! A session here is the same machinery as a Streamable HTTP session (one
//! [`Server::serve`](crate::server::Server::serve)), whose writer sends everything to the one
//! stream. It lives as long as the stream: when the client disconnects, or reads too slowly for
//! [`HttpConfig::stream_queue`](super::HttpConfig::stream_queue) (the old transport cannot
//! resume), the session ends. The init timeout applies; a connected stream keeps the session
//! from going idle. Legacy sessions count against
//! [`HttpConfig::max_sessions`](super::HttpConfig::max_sessions), and their ids are not accepted
//! in `Mcp-Session-Id` (nor Streamable HTTP ids here): 404.
//!
//! With [`HttpConfig::shared_sessions`](super::HttpConfig::shared_sessions), a session is
//! stored too, and a POST reaching another node is sent on to the node holding the stream
//! (`legacy_nodes.rs`).
//!
//! Both paths climb the same first rungs as the main endpoint: `Host` and `Origin`, 503 while
//! shutting down, `Content-Type` (415) and the body limits (413, 408), JSON (400 / -32700), no
//! batches.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use barrel_mcp_types::Message;
use bytes::Bytes;
use http::{Method, StatusCode};

use super::reply::{self, Accepts};
use super::session::HttpSession;
use super::sessionful::not_found;
use super::{State, guard, legacy_nodes, sessionful, sse};
use crate::transport::Caller;

/// Which of the two legacy paths a request came to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Path {
    Sse,
    Messages,
}

/// Answers one request to a legacy path.
pub(crate) async fn handle(
    state: Arc<State>,
    path: Path,
    request: http::Request<Body>,
) -> Response {
    let routed = Arc::clone(&state);
    guard::front_door(&state, request, |parts, body| async move {
        if let Some(shared) = &routed.config.shared_sessions {
            // Messages sent on by other nodes arrive through the bus's inbox.
            super::shared::listen(&routed, shared).await;
        }
        match (path, &parts.method) {
            (Path::Sse, &Method::GET) => open(&routed, &parts).await,
            (Path::Messages, &Method::POST) => post(&routed, parts, body).await,
            (Path::Sse, _) => reply::method_not_allowed("GET, OPTIONS"),
            (Path::Messages, _) => reply::method_not_allowed("POST, OPTIONS"),
        }
    })
    .await
}

/// GET: a new session and its stream, starting with the `endpoint` event.
async fn open(state: &Arc<State>, parts: &http::request::Parts) -> Response {
    if !Accepts::of(&parts.headers).sse {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            reply::rpc_error(-32600, "Accept must list text/event-stream"),
        );
    }
    let config = &state.config;
    let principal = config.principal_of(parts);
    let address = super::peer_address(parts);
    let session = match state
        .sessions
        .create(&state.server, config, principal, address, true, None)
    {
        Ok(session) => session,
        Err(error) => return sessionful::refused(&error),
    };
    if let Some(shared) = &config.shared_sessions
        && let Err(response) = legacy_nodes::store(state, parts, shared, &session).await
    {
        session.kill.cancel();
        return response;
    }
    let Ok(attached) = session.attach(None) else {
        session.kill.cancel();
        return reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            reply::rpc_error(-32603, "internal error"),
        );
    };
    // Nested under a prefix, the router sees paths without it; the client needs it back: it is
    // what the original path has before the path seen here (`/t/acme` under
    // `nest("/t/{tenant}", …)`, which the nest pattern alone could not say).
    let prefix = parts
        .extensions
        .get::<axum::extract::OriginalUri>()
        .and_then(|original| original.path().strip_suffix(parts.uri.path()))
        .unwrap_or("")
        .trim_end_matches('/');
    let endpoint = format!(
        "{prefix}{}?sessionId={}",
        config.legacy_messages_path, session.id
    );
    // The priming event of a Streamable HTTP stream is not sent: the old transport's clients
    // expect `endpoint` first and may choke on an empty message.
    let first = Bytes::from(format!("event: endpoint\ndata: {endpoint}\n\n"));
    // The session lives as long as its stream, and the stream as long as the session.
    let kill = session.kill.clone();
    let guard = kill.clone().drop_guard();
    reply::event_stream(sse::body(
        vec![first],
        attached.live,
        |event: Bytes| event,
        config.keep_alive,
        Some(sse::Ending::when(kill, guard)),
    ))
}

/// POST: one message for the session named by `sessionId`.
async fn post(state: &Arc<State>, parts: http::request::Parts, body: Body) -> Response {
    if let Err(response) = reply::check_content_type(&parts.headers) {
        return response;
    }
    let id = match requested_id(&parts) {
        Ok(id) => id.to_owned(),
        Err(response) => return response,
    };
    // Held here, or (shared sessions) by the node the store names.
    let session = match (lookup(state, &parts, &id), &state.config.shared_sessions) {
        (Ok(session), _) => Ok(session),
        (Err(_), Some(shared)) if state.sessions.get(&id).is_none() => {
            match legacy_nodes::holder(state, &parts, shared, &id).await {
                Ok(node) => Err((shared, node)),
                Err(response) => return response,
            }
        }
        (Err(response), _) => return response,
    };
    let config = &state.config;
    let read = reply::read_frame(
        &parts.headers,
        body,
        config.max_body_size,
        config.body_timeout,
    );
    let frame = match read.await {
        Ok(frame) => frame,
        Err(response) => return response,
    };
    #[cfg(feature = "auth")]
    if let Some(auth) = &state.config.auth
        && let Err(response) = super::auth::authorize(auth, &parts, &frame)
    {
        return response;
    }
    let message: Message = match frame.decode() {
        Ok(message) => message,
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    let session = match session {
        Ok(session) => session,
        Err((shared, node)) => {
            let forwards = &state.sessions.legacy_forwards;
            return legacy_nodes::send_on(forwards, shared, node, &id, &message).await;
        }
    };
    session.touch();
    let caller = Arc::new(Caller::http(Arc::new(parts)));
    match session.deliver(message, Some(caller)).await {
        Ok(()) => reply::empty(StatusCode::ACCEPTED),
        Err(_) => not_found(),
    }
}

/// The id the `sessionId` query parameter names: 400 without one (or with two).
fn requested_id(parts: &http::request::Parts) -> Result<&str, Response> {
    let mut ids = parts
        .uri
        .query()
        .into_iter()
        .flat_map(|query| query.split('&'))
        .filter_map(|pair| pair.strip_prefix("sessionId="));
    let (Some(id), None) = (ids.next(), ids.next()) else {
        return Err(reply::error(
            StatusCode::BAD_REQUEST,
            None,
            reply::rpc_error(-32600, "exactly one sessionId query parameter is required"),
        ));
    };
    Ok(id)
}

/// The legacy session `id` this node holds: 404 when it is unknown here, ended, not a legacy
/// session, or another principal's.
fn lookup(
    state: &Arc<State>,
    parts: &http::request::Parts,
    id: &str,
) -> Result<Arc<HttpSession>, Response> {
    let session = state
        .sessions
        .get(id)
        .filter(|session| session.legacy)
        .ok_or_else(not_found)?;
    if state.config.principal_of(parts) != session.principal {
        return Err(not_found());
    }
    Ok(session)
}
