//! POST, GET and DELETE for the sessionful revisions (2024-11-05 to 2025-11-25).
//!
//! `initialize` without `Mcp-Session-Id` creates a session and names it in the response
//! header (an `initialize` whose params do not decode is 400 and opens nothing); every later
//! request must carry the id (400 without it, 404 when it is unknown, ended, or belongs to
//! another principal). A request is answered with an SSE stream when the
//! client accepts one (and [`HttpConfig::json_response`](super::HttpConfig::json_response) is
//! off), else with one JSON body; notifications and responses get 202. GET opens the session's
//! stream for server-initiated messages, or resumes any stream with `Last-Event-ID`; DELETE
//! ends the session.
//!
//! With [`HttpConfig::shared_sessions`](super::HttpConfig::shared_sessions), opening, finding
//! and deleting a session go through the store (`replica.rs`): a session another node opened
//! is served here on a local replica, and a store that cannot answer is 503, never 404.

use std::future::Future;
use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::jsonrpc::Members;
use barrel_mcp_types::{ErrorObject, InitializeParams, Message};
use bytes::Bytes;
use http::StatusCode;
use http::header::{self, HeaderValue};

use super::durable::Touch;
use super::follow::{self, Followed};
use super::replica;
use super::reply::{self, Accepts};
use super::session::{HttpSession, Refused, Reply};
use super::sessions::CreateError;
use super::sse;
use super::version_header::VersionHeader;
use super::{State, guard};
use crate::peer::driven::Driven;
use crate::transport::Caller;

/// POST of a message that belongs to a session (or `initialize`, which opens one).
pub(crate) async fn post(
    state: &Arc<State>,
    parts: &http::request::Parts,
    version: &VersionHeader,
    caller: Option<Arc<Caller>>,
    accepts: Accepts,
    body: Members,
) -> Response {
    let message = match body.decode() {
        Ok(message) => message,
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    if let Err(response) = version.sessionful() {
        return response;
    }
    let shared = state.config.shared_sessions.as_ref();
    let mut opening = None;
    if let Message::Request(request) = &message
        && request.method == "initialize"
        && !parts.headers.contains_key(reply::SESSION_ID)
    {
        match crate::server::read_initialize(request.params.as_ref()) {
            Ok(params) => opening = Some(params),
            // Refused before a session exists: nothing is allocated for it.
            Err(error) => {
                return reply::error(StatusCode::BAD_REQUEST, Some(request.id.clone()), error);
            }
        }
    }
    let found = match (opening, shared) {
        // Boxed, as the rare case: inline, its store calls would make every POST's future
        // (moved at each layer above it) that much larger.
        (Some(params), Some(shared)) => Box::pin(replica::open(state, parts, shared, params)).await,
        (Some(params), None) => open(state, parts, params),
        (None, _) => lookup(state, parts).await,
    };
    let session = match found {
        Ok(session) => session,
        Err(response) => return response,
    };
    session.touch();
    let mut response = match message {
        Message::Request(request) => {
            let id = request.id.clone();
            let stream = accepts.sse && !(state.config.json_response && accepts.json);
            match session.request(request, caller, stream).await {
                // The handler is driven here until the first answer is in, then goes on on a
                // task of its own (dropping `work` spawns what is left of it).
                Ok((Reply::Stream(mut attached), work)) => {
                    let mut wait = state.config.sse_first_event_wait;
                    if let Some(journal) = &session.journal {
                        wait = wait.max(journal.shared.first_event_wait);
                    }
                    drive(work, sse::gather_first(&mut attached, wait)).await;
                    reply::event_stream(sse::body(
                        attached.initial,
                        attached.live,
                        |event: Bytes| event,
                        state.config.keep_alive,
                        None,
                    ))
                }
                Ok((Reply::Json(answer), work)) => match drive(work, answer).await {
                    Ok(text) => reply::json_text(StatusCode::OK, text),
                    // Cancelled, or the session ended before answering.
                    Err(_) => reply::empty(StatusCode::NO_CONTENT),
                },
                Err(Refused::DuplicateId) => reply::error(
                    StatusCode::BAD_REQUEST,
                    Some(id),
                    ErrorObject::invalid_request(
                        "duplicate request id: a request with this id is still in flight",
                    ),
                ),
                Err(Refused::Ended) => not_found(),
            }
        }
        other => super::forward::deliver(shared, &session, other, caller).await,
    };
    if let Some(value) = &session.id_header {
        response
            .headers_mut()
            .insert(reply::SESSION_ID, value.clone());
    }
    response
}

/// Waits for `answer` while driving the request's handler `work` (when it came back to be
/// driven); what is left of it then goes on on a task of its own.
async fn drive<T>(work: Option<Driven>, answer: impl Future<Output = T>) -> T {
    match work {
        Some(mut work) => work.alongside(answer).await,
        None => answer.await,
    }
}

/// GET: the session's stream for server-initiated messages, or a resumed stream.
pub(crate) async fn get(
    state: &Arc<State>,
    parts: &http::request::Parts,
    version: &VersionHeader,
) -> Response {
    if !Accepts::of(&parts.headers).sse {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            reply::rpc_error(-32600, "Accept must list text/event-stream"),
        );
    }
    if let Err(response) = version.sessionful() {
        return response;
    }
    let session = match lookup(state, parts).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    session.touch();
    let cursor = match parts.headers.get(reply::LAST_EVENT_ID) {
        None => None,
        Some(value) => match value.to_str().ok().and_then(sse::parse_event_id) {
            Some(cursor) => Some(cursor),
            None => return bad_request("malformed Last-Event-ID"),
        },
    };
    let attached = match &session.journal {
        // Streams in the event store: any node serves them.
        Some(journal) => match follow::attach(&session, journal, cursor, &state.config).await {
            Ok(followed) => followed,
            Err(refusal) => return refusal.response(),
        },
        None => match session.attach(cursor) {
            Ok(attached) => Followed::from(attached),
            Err(true) => {
                return reply::error(
                    StatusCode::CONFLICT,
                    None,
                    reply::rpc_error(-32600, "the session's GET stream is already open"),
                );
            }
            Err(false) => return bad_request("Last-Event-ID names an event not sent yet"),
        },
    };
    let ending = attached
        .over
        .map(|over| sse::Ending::when(over.clone(), over.drop_guard()));
    let mut response = reply::event_stream(sse::body(
        attached.initial,
        attached.live,
        |event: Bytes| event,
        state.config.keep_alive,
        ending,
    ));
    if let Some(value) = &session.id_header {
        response
            .headers_mut()
            .insert(reply::SESSION_ID, value.clone());
    }
    response
}

/// DELETE: ends the session at once; its requests are cancelled. A shared session is deleted
/// from the store, and every node drops its copy.
pub(crate) async fn delete(state: &Arc<State>, parts: &http::request::Parts) -> Response {
    if let Some(shared) = &state.config.shared_sessions {
        return match requested_id(parts) {
            Ok(id) => replica::delete(state, parts, shared, id).await,
            Err(response) => response,
        };
    }
    let session = match lookup(state, parts).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    state.sessions.remove(&session.id);
    session.kill.cancel();
    reply::empty(StatusCode::OK)
}

/// Creates a session for an `initialize`.
fn open(
    state: &Arc<State>,
    parts: &http::request::Parts,
    initialize: InitializeParams,
) -> Result<Arc<HttpSession>, Response> {
    let principal = state.config.principal_of(parts);
    let address = super::peer_address(parts);
    state
        .sessions
        .create(
            &state.server,
            &state.config,
            principal,
            address,
            false,
            Some(Box::new(initialize)),
        )
        .map_err(|error| refused(&error))
}

/// The answer when a session cannot be created: 503 with `Retry-After` when full or shutting
/// down, 500 when no id could be minted.
pub(crate) fn refused(error: &CreateError) -> Response {
    match error {
        CreateError::Full | CreateError::ShuttingDown => {
            let mut response = reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                reply::rpc_error(-32603, "too many sessions; try again later"),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
        CreateError::PrincipalFull | CreateError::AddressFull => {
            let whose = if matches!(error, CreateError::PrincipalFull) {
                "too many sessions for this principal"
            } else {
                "too many anonymous sessions from this address"
            };
            let mut response = reply::error(
                StatusCode::TOO_MANY_REQUESTS,
                None,
                reply::rpc_error(-32603, whose),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
        CreateError::NoRandomness => reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            reply::rpc_error(-32603, "internal error"),
        ),
    }
}

/// The session the request names: 400 without an id, 404 when it is unknown or belongs to
/// another principal (the two are indistinguishable). With shared sessions, one this node does
/// not hold is restored from the store (503 when the store cannot say), and one the store no
/// longer has is 404.
async fn lookup(
    state: &Arc<State>,
    parts: &http::request::Parts,
) -> Result<Arc<HttpSession>, Response> {
    let id = requested_id(parts)?;
    let Some(shared) = &state.config.shared_sessions else {
        let session = state
            .sessions
            .get(id)
            // A legacy (HTTP+SSE) session is reachable only through its own endpoint.
            .filter(|session| !session.legacy)
            .ok_or_else(not_found)?;
        if state.config.principal_of(parts) != session.principal {
            return Err(not_found());
        }
        return Ok(session);
    };
    let session = match replica::find(state, parts, shared, id).await? {
        replica::Found::Local(session) => session,
        replica::Found::Stored(record) => replica::restore(state, shared, &record)?,
    };
    // In use from here: no idle timer or full table drops it while the store is asked.
    session.touch();
    if session.keep_alive().await == Touch::Gone {
        state.sessions.drop_copy(id);
        return Err(not_found());
    }
    Ok(session)
}

/// The id `Mcp-Session-Id` names: 400 without one (or with two), 404 when it is not text.
fn requested_id(parts: &http::request::Parts) -> Result<&str, Response> {
    // Two ids are refused, never resolved to one: a proxy could act on the other.
    let Some(id) = guard::single(&parts.headers, reply::SESSION_ID)? else {
        return Err(bad_request("Mcp-Session-Id header is required"));
    };
    id.to_str().map_err(|_| not_found())
}

pub(super) fn bad_request(message: &str) -> Response {
    reply::error(
        StatusCode::BAD_REQUEST,
        None,
        reply::rpc_error(-32600, message),
    )
}

pub(super) fn not_found() -> Response {
    reply::error(
        StatusCode::NOT_FOUND,
        None,
        reply::rpc_error(-32600, "Session not found"),
    )
}
