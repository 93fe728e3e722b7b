//! The MCP endpoint: every request starts here and climbs the same ladder.
//!
//! 1. `Host` and `Origin` ([`guard`]): 400/403, before anything is read or allocated; with
//!    [`HttpConfig::auth`](super::HttpConfig::auth) set, authentication (401/400/503) too.
//! 2. The method: OPTIONS is a CORS preflight; GET and DELETE belong to sessions (405 when the
//!    request speaks 2026-07-28 or carries no session); anything but POST is 405.
//! 3. POST: `Content-Type` (415), `Accept` (406), the body under its size and time limits
//!    (413, 408), JSON (400 / -32700), no batches (400 / -32600).
//! 4. With auth on, the operation's scopes (403 / 401), before anything is answered.
//! 5. The era: a body claiming a revision in `params._meta` is 2026-07-28 (stateless); a
//!    `MCP-Protocol-Version` header naming 2026-07-28 without that claim is refused; everything
//!    else belongs to a session, or with [`HttpConfig::sessionless`](super::HttpConfig::sessionless)
//!    is served on its own in the revision it names.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use barrel_mcp_types::ErrorObject;
use http::{Method, StatusCode};

use super::reply::{self, Accepts};
use super::version_header::VersionHeader;
use super::{State, guard, sessionful, sessionless, stateless};
use crate::transport::Caller;

/// Answers one request to the endpoint.
pub(crate) async fn handle(state: Arc<State>, request: http::Request<Body>) -> Response {
    guard::front_door(&state, request, |parts, body| route(&state, parts, body)).await
}

async fn route(state: &Arc<State>, parts: http::request::Parts, body: Body) -> Response {
    // A node sharing its sessions hears the others (and relays its changes) from its first
    // request on, whatever the request's revision.
    if let Some(shared) = &state.config.shared_sessions {
        super::shared::listen(state, shared).await;
    }
    let version = VersionHeader::of(&parts.headers);
    match parts.method {
        Method::POST => post(state, parts, body, &version).await,
        Method::GET | Method::DELETE if version.names_stateless() || state.config.sessionless => {
            reply::method_not_allowed("POST")
        }
        Method::GET | Method::DELETE if !parts.headers.contains_key(reply::SESSION_ID) => {
            if version.is_sent() {
                // A sessionful client that lost its session id.
                reply::error(
                    StatusCode::BAD_REQUEST,
                    None,
                    reply::rpc_error(-32600, "Mcp-Session-Id header is required"),
                )
            } else {
                reply::method_not_allowed("POST")
            }
        }
        Method::GET => sessionful::get(state, &parts, &version).await,
        Method::DELETE => sessionful::delete(state, &parts).await,
        _ => reply::method_not_allowed("GET, POST, DELETE, OPTIONS"),
    }
}

async fn post(
    state: &Arc<State>,
    parts: http::request::Parts,
    body: Body,
    version: &VersionHeader,
) -> Response {
    if let Err(response) = reply::check_content_type(&parts.headers) {
        return response;
    }
    let accepts = Accepts::of(&parts.headers);
    if !accepts.json && !accepts.sse {
        return reply::error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            reply::rpc_error(
                -32600,
                "Accept must list application/json and text/event-stream",
            ),
        );
    }
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
    // Who sent the body travels with it to the handler (`Ctx::auth`, `Ctx::http_request`).
    let head = Arc::new(parts);
    let caller = Some(Arc::new(Caller::http(Arc::clone(&head))));
    if stateless::claims_version(&frame) {
        return stateless::post(state, &head.headers, version, caller, accepts, frame).await;
    }
    if version.names_stateless() {
        let is_initialize = frame.method() == Some("initialize");
        let error = if is_initialize {
            reply::rpc_error(
                -32020,
                "MCP-Protocol-Version names 2026-07-28, which has no initialize",
            )
        } else {
            ErrorObject::invalid_params(
                "invalid params: missing _meta envelope keys (io.modelcontextprotocol/protocolVersion)",
            )
        };
        let id = frame
            .get("id")
            .and_then(barrel_mcp_types::RequestId::from_value);
        return reply::error(StatusCode::BAD_REQUEST, id, error);
    }
    if state.config.sessionless {
        return sessionless::post(state, version, caller, accepts, frame).await;
    }
    sessionful::post(state, &head, version, caller, accepts, frame).await
}
