//! 2026-07-28 requests: one POST, no session, no connection.
//!
//! A POST whose body claims a revision in `params._meta` has its envelope read once (by the
//! server's [`Envelope`]) and compared with its headers (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-*`), then goes straight to the server: its handler ([`one_request`])
//! runs on the POST's own task until the answer is known ([`Driven`]), and what it sends comes
//! back through one bounded queue. The answer is one JSON body, unless the handler sends a
//! notification first (progress, logs, a subscription's acknowledgement): then it becomes an
//! SSE stream of that request's messages, ending with the response, and the handler goes on
//! on a task of its own. When the client goes away (the response is dropped), the handler is
//! cancelled, and ends on a task of its own too. A sessionless server's requests in the
//! sessionful revisions ([`HttpConfig::sessionless`](super::HttpConfig::sessionless)) are
//! served the same way.

use std::borrow::Cow;
use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::jsonrpc::Members;
use barrel_mcp_types::meta::PROTOCOL_VERSION_KEY;
use barrel_mcp_types::{ErrorCode, ErrorObject, Message, ProtocolVersion, Request};
use base64::Engine;
use http::{HeaderMap, HeaderName, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

use super::State;
use super::reply::{self, Accepts};
use super::sse;
use super::version_header::{Unreadable, VersionHeader};
use crate::peer::Queued;
use crate::peer::driven::Driven;
use crate::peer::one_request;
use crate::server::{self, Envelope, Scope, Server};
use crate::transport::Caller;

/// True when the body claims a revision in `params._meta` (the 2026-07-28 envelope): the one
/// place the era of an HTTP POST is decided.
pub(crate) fn claims_version(body: &Members) -> bool {
    server::claims_version(body.get("params"))
}

/// How a request served on its own is read.
pub(crate) enum Era {
    /// 2026-07-28, in the scope its envelope gave.
    Stateless(Scope),
    /// A sessionless server's request, in this sessionful revision.
    Sessionless(ProtocolVersion),
}

/// Serves one enveloped POST body.
pub(crate) async fn post(
    state: &Arc<State>,
    headers: &HeaderMap,
    version: &VersionHeader,
    caller: Option<Arc<Caller>>,
    accepts: Accepts,
    body: Members,
) -> Response {
    let scope = match check(headers, version, &body)
        .and_then(|scope| check_params(&state.server, headers, &body).map(|()| scope))
    {
        Ok(scope) => scope,
        Err(error) => return reply::error(StatusCode::BAD_REQUEST, request_id(&body), error),
    };
    let request = match body.decode() {
        Ok(Message::Request(request)) => request,
        // Notifications have no meaning over 2026-07-28 HTTP: accepted and dropped.
        Ok(_) => return reply::empty(StatusCode::ACCEPTED),
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    serve(state, accepts, request, caller, Era::Stateless(scope)).await
}

fn request_id(body: &Members) -> Option<barrel_mcp_types::RequestId> {
    body.get("id")
        .and_then(barrel_mcp_types::RequestId::from_value)
}

/// The envelope, read once, and the headers compared with it, in the order of the spec's
/// ingress rules; the scope the request is served in.
fn check(
    headers: &HeaderMap,
    version: &VersionHeader,
    body: &Members,
) -> Result<Scope, ErrorObject> {
    let meta = server::request_meta(body.get("params"))
        .ok_or_else(|| invalid_meta(PROTOCOL_VERSION_KEY, "must be a string"))?;
    let envelope = Envelope::read(meta)?;
    let method = body.get("method").and_then(Value::as_str).unwrap_or("");
    let is_request = body.get("id").is_some();
    let version_header = version.text().map_err(|unreadable| match unreadable {
        Unreadable::Repeated => mismatch("duplicated mcp-protocol-version header"),
        Unreadable::NotText => mismatch("mcp-protocol-version has invalid characters"),
    })?;
    if version_header.is_some_and(|h| h != envelope.claim) {
        return Err(mismatch(
            "MCP-Protocol-Version differs from the body's protocol version",
        ));
    }
    let method_header = header(headers, &reply::METHOD)?;
    if method_header.is_some_and(|h| h != method) {
        return Err(mismatch("Mcp-Method differs from the body's method"));
    }
    let scope = envelope.scope()?;
    if !is_request {
        return Ok(scope);
    }
    if version_header.is_none() {
        return Err(mismatch("MCP-Protocol-Version header is required"));
    }
    if method_header.is_none() {
        return Err(mismatch("Mcp-Method header is required"));
    }
    let named = barrel_mcp_types::header_params::name_header_field(method);
    if let Some(field) = named {
        let expected = body
            .get("params")
            .and_then(|p| p.get(field))
            .and_then(Value::as_str);
        let given = header(headers, &reply::NAME)?.map(decode_sentinel);
        match (expected, given) {
            (Some(expected), Some(Some(given))) if expected == given.as_ref() => {}
            (_, None) => return Err(mismatch("Mcp-Name header is required")),
            _ => return Err(mismatch("Mcp-Name differs from the body")),
        }
    }
    Ok(scope)
}

/// `Mcp-Param-{Name}` headers of a `tools/call`: each argument the tool annotates with
/// `x-mcp-header` that has a value in the body must come with its header, equal to the value once
/// decoded (integers compared as numbers, booleans as `true`/`false`).
fn check_params(server: &Server, headers: &HeaderMap, body: &Members) -> Result<(), ErrorObject> {
    if body.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Ok(());
    }
    let params = body.get("params");
    let Some(tool) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Ok(());
    };
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .unwrap_or(&Value::Null);
    for param in server.header_params(tool) {
        let Some(expected) = param.value_in(arguments) else {
            continue;
        };
        let name = format!("mcp-param-{}", param.name.to_ascii_lowercase());
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| mismatch(&format!("Mcp-Param-{} is not a header name", param.name)))?;
        let Some(raw) = header(headers, &header_name)? else {
            return Err(mismatch(&format!(
                "Mcp-Param-{} header is required",
                param.name
            )));
        };
        let Some(given) = decode_sentinel(raw.trim()) else {
            return Err(mismatch(&format!(
                "Mcp-Param-{} is not valid base64",
                param.name
            )));
        };
        if !header_matches(&given, expected) {
            return Err(mismatch(&format!(
                "Mcp-Param-{} differs from the body",
                param.name
            )));
        }
    }
    Ok(())
}

/// True when a decoded header value stands for the body's value.
fn header_matches(given: &str, expected: &Value) -> bool {
    match expected {
        Value::String(s) => given == s,
        Value::Bool(b) => given == if *b { "true" } else { "false" },
        Value::Number(n) => given
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(a, b)| a == b),
        _ => false,
    }
}

/// One header's value: absent, or present once with visible ASCII (else -32020).
fn header<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h str>, ErrorObject> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(&format!("duplicated {name} header")));
    }
    let text = first
        .to_str()
        .map_err(|_| mismatch(&format!("{name} has invalid characters")))?;
    Ok(Some(text))
}

/// Decodes the `=?base64?…?=` form of a header value; plain values pass unchanged.
fn decode_sentinel(value: &str) -> Option<Cow<'_, str>> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok().map(Cow::Owned)
        }
        None => Some(Cow::Borrowed(value)),
    }
}

fn mismatch(message: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::HEADER_MISMATCH, message)
}

fn invalid_meta(key: &str, problem: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("invalid params: _meta[{key:?}] {problem}"))
}

/// Runs one request on its own and answers it, in `era`.
pub(crate) async fn serve(
    state: &Arc<State>,
    accepts: Accepts,
    request: Request,
    caller: Option<Arc<Caller>>,
    era: Era,
) -> Response {
    let (tx, mut rx) = mpsc::channel(state.config.stream_queue.max(1));
    // Cancelled when the client goes away or stops reading, or the endpoint halts.
    let close = state.halt.child_token();
    let route = one_request::Route {
        outbound: tx,
        closed: close.clone(),
        input_ended: state.shutdown.clone(),
        stalled: state.config.stalled_reader_timeout,
    };
    let id = request.id.clone();
    let server = state.server.clone();
    let config = server.config().peer.clone();
    // Driven on this task until the answer is known; spawned when it must go on without it
    // (the answer is a stream, or this future was dropped because the client went away).
    let mut work = Driven::new(
        one_request::serve(
            config,
            route,
            request,
            caller,
            move |request, cx| match era {
                Era::Stateless(scope) => server::serve_stateless(&server, scope, request, cx),
                Era::Sessionless(version) => {
                    server::serve_sessionless(&server, version, request, cx)
                }
            },
        ),
        &state.tasks,
    );
    // Dropping this (the client went away, or the answer is complete) cancels the handler.
    let over = close.clone();
    let guard = close.drop_guard();
    let mut first = work.alongside(rx.recv()).await;
    if !accepts.sse {
        while first
            .as_ref()
            .is_some_and(|outgoing| matches!(outgoing.message, Message::Notification(_)))
        {
            first = work.alongside(rx.recv()).await;
        }
    }
    work.detach();
    match first.map(|outgoing| outgoing.message) {
        Some(Message::Response(response)) => {
            let status = match &response.outcome {
                Ok(_) => StatusCode::OK,
                Err(error) => reply::status_of(error),
            };
            reply::json(status, &Message::Response(response))
        }
        Some(message) => reply::event_stream(sse::body(
            vec![sse::plain_event(&message)],
            Some(rx),
            |outgoing: Queued| sse::plain_event(&outgoing.message),
            state.config.keep_alive,
            Some(sse::Ending {
                last: |outgoing: &Queued| matches!(outgoing.message, Message::Response(_)),
                over,
                guard,
            }),
        )),
        None => reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(id),
            ErrorObject::internal("the request was not answered"),
        ),
    }
}
