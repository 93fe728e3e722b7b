//! 2026-07-28 requests: one POST, one short-lived connection, no session.
//!
//! A POST whose body claims a revision in `params._meta` is checked against its headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), then served by a connection of its own:
//! the reader yields the one request, and ends once the response is written (or the server shuts
//! down); the peer's drain rule answers it and ends. The answer is one JSON body, unless the
//! handler sends a notification first (progress, logs, a subscription's acknowledgement): then
//! it becomes an SSE stream of that request's messages, ending with the response. When the
//! client goes away (the response body is dropped), the connection is closed and the handler
//! cancelled.

use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY,
};
use barrel_mcp_types::{ErrorCode, ErrorObject, Implementation, Message, ProtocolVersion, Request};
use base64::Engine;
use http::{HeaderMap, HeaderName, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::State;
use super::reply::{self, Accepts};
use super::sse;
use crate::Error;
use crate::server::{Ctx, Server};
use crate::transport::{Caller, Frame, MessageReader, MessageWriter, Outgoing};

/// True when the body claims a revision in `params._meta` (the 2026-07-28 envelope).
pub(crate) fn claims_version(body: &Value) -> bool {
    meta(body).is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY))
}

fn meta(body: &Value) -> Option<&serde_json::Map<String, Value>> {
    body.get("params")?.get("_meta")?.as_object()
}

/// Serves one enveloped POST body.
pub(crate) async fn post(
    state: &Arc<State>,
    headers: &HeaderMap,
    caller: Option<Arc<Caller>>,
    accepts: Accepts,
    body: Value,
) -> Response {
    if let Err(error) =
        check(headers, &body).and_then(|()| check_params(&state.server, headers, &body))
    {
        return reply::error(StatusCode::BAD_REQUEST, request_id(&body), error);
    }
    let request = match barrel_mcp_types::jsonrpc::decode_value(body) {
        Ok(Message::Request(request)) => request,
        // Notifications have no meaning over 2026-07-28 HTTP: accepted and dropped.
        Ok(_) => return reply::empty(StatusCode::ACCEPTED),
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    serve(state, accepts, request, caller, None).await
}

fn request_id(body: &Value) -> Option<barrel_mcp_types::RequestId> {
    body.get("id")
        .and_then(barrel_mcp_types::RequestId::from_value)
}

/// The header and envelope checks, in the order of the spec's ingress rules.
fn check(headers: &HeaderMap, body: &Value) -> Result<(), ErrorObject> {
    let Some(meta) = meta(body) else {
        return Err(invalid_meta(PROTOCOL_VERSION_KEY, "must be a string"));
    };
    let method = body.get("method").and_then(Value::as_str).unwrap_or("");
    let is_request = body.get("id").is_some();
    let Some(claim) = meta.get(PROTOCOL_VERSION_KEY).and_then(Value::as_str) else {
        return Err(invalid_meta(PROTOCOL_VERSION_KEY, "must be a string"));
    };
    match meta.get(CLIENT_CAPABILITIES_KEY) {
        Some(Value::Object(_)) => {}
        Some(_) => return Err(invalid_meta(CLIENT_CAPABILITIES_KEY, "must be an object")),
        None => return Err(invalid_meta(CLIENT_CAPABILITIES_KEY, "is required")),
    }
    if let Some(info) = meta.get(CLIENT_INFO_KEY)
        && Implementation::deserialize(info).is_err()
    {
        return Err(invalid_meta(
            CLIENT_INFO_KEY,
            "must be an object with a name and a version",
        ));
    }
    if Ctx::meta_log_level(meta).is_err() {
        return Err(invalid_meta(LOG_LEVEL_KEY, "is not a logging level"));
    }
    let version_header = header(headers, &reply::PROTOCOL_VERSION)?;
    if version_header.as_deref().is_some_and(|h| h != claim) {
        return Err(mismatch(
            "MCP-Protocol-Version differs from the body's protocol version",
        ));
    }
    let method_header = header(headers, &reply::METHOD)?;
    if method_header.as_deref().is_some_and(|h| h != method) {
        return Err(mismatch("Mcp-Method differs from the body's method"));
    }
    if !ProtocolVersion::parse(claim).is_some_and(ProtocolVersion::is_stateless) {
        return Err(crate::server::unsupported_version(claim));
    }
    if !is_request {
        return Ok(());
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
        let given = header(headers, &reply::NAME)?.map(|h| decode_sentinel(&h));
        match (expected, given) {
            (Some(expected), Some(Some(given))) if expected == given => {}
            (_, None) => return Err(mismatch("Mcp-Name header is required")),
            _ => return Err(mismatch("Mcp-Name differs from the body")),
        }
    }
    Ok(())
}

/// `Mcp-Param-{Name}` headers of a `tools/call`: each argument the tool annotates with
/// `x-mcp-header` that has a value in the body must come with its header, equal to the value once
/// decoded (integers compared as numbers, booleans as `true`/`false`).
fn check_params(server: &Server, headers: &HeaderMap, body: &Value) -> Result<(), ErrorObject> {
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
fn header(headers: &HeaderMap, name: &HeaderName) -> Result<Option<String>, ErrorObject> {
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
    Ok(Some(text.to_owned()))
}

/// Decodes the `=?base64?…?=` form of a header value; plain values pass unchanged.
fn decode_sentinel(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

fn mismatch(message: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::HEADER_MISMATCH, message)
}

fn invalid_meta(key: &str, problem: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("invalid params: _meta[{key:?}] {problem}"))
}

/// Runs the request on a connection of its own and answers it: a 2026-07-28 request, or with
/// `sessionless` a sessionless server's request in that sessionful revision.
pub(crate) async fn serve(
    state: &Arc<State>,
    accepts: Accepts,
    request: Request,
    caller: Option<Arc<Caller>>,
    sessionless: Option<ProtocolVersion>,
) -> Response {
    let (tx, mut rx) = mpsc::channel(state.config.stream_queue.max(1));
    let answered = CancellationToken::new();
    let id = request.id.clone();
    let reader = OnceReader {
        request: Some(request),
        caller,
        answered: answered.clone(),
        shutdown: state.shutdown.clone(),
    };
    // Cancelled when the client goes away or stops reading, the answer is complete, or the
    // endpoint halts.
    let close = state.halt.child_token();
    let closed = close.clone();
    let writer = ChannelWriter {
        tx,
        id: id.clone(),
        answered,
        stalled: state.config.stalled_reader_timeout,
        close: close.clone(),
    };
    let server = state.server.clone();
    state.tasks.spawn(async move {
        let _ = match sessionless {
            Some(version) => {
                server
                    .serve_sessionless_until(version, (reader, writer), closed)
                    .await
            }
            None => server.serve_until((reader, writer), closed).await,
        };
    });
    // Dropping this (the client went away, or the answer is complete) closes the connection.
    let guard = close.drop_guard();
    let mut first = rx.recv().await;
    if !accepts.sse {
        while let Some(Message::Notification(_)) = first {
            first = rx.recv().await;
        }
    }
    match first {
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
            |message: Message| sse::plain_event(&message),
            state.config.keep_alive,
            Some(guard),
        )),
        None => reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(id),
            ErrorObject::internal("the request was not answered"),
        ),
    }
}

/// Yields the one request, then ends once it is answered or the server shuts down.
struct OnceReader {
    request: Option<Request>,
    caller: Option<Arc<Caller>>,
    answered: CancellationToken,
    shutdown: CancellationToken,
}

impl MessageReader for OnceReader {
    async fn recv(&mut self) -> Result<Option<Frame>, Error> {
        if let Some(request) = self.request.take() {
            return Ok(Some(Ok(Message::Request(request))));
        }
        tokio::select! {
            () = self.answered.cancelled() => {}
            () = self.shutdown.cancelled() => {}
        }
        Ok(None)
    }

    fn caller(&self) -> Option<Arc<Caller>> {
        self.caller.clone()
    }
}

/// Hands the connection's messages to the HTTP answer, and notes when the response went out.
/// A client that reads nothing for `stalled` loses the request: the connection is closed (the
/// handler is cancelled) and its stream ends, as such streams cannot be resumed.
struct ChannelWriter {
    tx: mpsc::Sender<Message>,
    id: barrel_mcp_types::RequestId,
    answered: CancellationToken,
    stalled: std::time::Duration,
    close: CancellationToken,
}

impl MessageWriter for ChannelWriter {
    async fn send(&mut self, message: Message) -> Result<(), Error> {
        self.send_outgoing(Outgoing {
            message,
            related: None,
        })
        .await
    }

    async fn send_outgoing(&mut self, outgoing: Outgoing) -> Result<(), Error> {
        let is_answer = matches!(&outgoing.message,
            Message::Response(r) if r.id.as_ref() == Some(&self.id));
        if self.close.is_cancelled() {
            return Ok(());
        }
        // A gone client is the end of this connection, not an error of the transport.
        match tokio::time::timeout(self.stalled, self.tx.send(outgoing.message)).await {
            Ok(_) => {}
            Err(_) => {
                tracing::debug!(id = %self.id, "the client stopped reading; request dropped");
                self.close.cancel();
                return Ok(());
            }
        }
        if is_answer {
            self.answered.cancel();
        }
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.answered.cancel();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_client_that_reads_nothing_loses_the_request() {
        let (tx, rx) = mpsc::channel(1);
        let close = CancellationToken::new();
        let answered = CancellationToken::new();
        let mut writer = ChannelWriter {
            tx,
            id: barrel_mcp_types::RequestId::Number(1),
            answered: answered.clone(),
            stalled: std::time::Duration::from_millis(50),
            close: close.clone(),
        };
        let note = || Message::notification("notifications/progress", None);
        writer.send(note()).await.expect("queued");
        // The queue is full and nobody reads: the second write gives up and closes.
        tokio::time::timeout(std::time::Duration::from_secs(5), writer.send(note()))
            .await
            .expect("the write gave up")
            .expect("not an error of the transport");
        assert!(close.is_cancelled());
        // Later messages, the answer included, are dropped at once.
        let answer = Message::Response(barrel_mcp_types::Response::result(
            barrel_mcp_types::RequestId::Number(1),
            serde_json::json!({}),
        ));
        tokio::time::timeout(std::time::Duration::from_secs(5), writer.send(answer))
            .await
            .expect("dropped at once")
            .expect("no error");
        assert!(!answered.is_cancelled());
        drop(rx);
    }
}
