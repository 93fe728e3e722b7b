//! The floor of the load benchmark: a bare hyper + serde_json JSON-RPC answerer with no MCP
//! logic, so the table shows how much of a server's cost is HTTP and JSON alone.
//!
//! Usage: `floor ADDR [--sessionless]`. It answers exactly what the load generator sends:
//!
//! - `initialize`: a fixed result, with a fresh `Mcp-Session-Id` (a counter, no state kept)
//!   unless `--sessionless`;
//! - a notification (no `id`): 202, no body;
//! - `tools/call`: the `message` argument sent back as one text content block, `ping`: `{}`,
//!   anything else: a JSON-RPC "method not found" error;
//! - DELETE: 200; any other HTTP method: 405.
//!
//! A reply is one SSE event (`text/event-stream`, in one body with a `Content-Length`) when the
//! request's `Accept` names `text/event-stream`, unless it is a 2026-07-28 request (its
//! `MCP-Protocol-Version` header says so) or the floor runs `--sessionless`; one JSON body
//! otherwise. That mirrors barrel-mcp's choice for the same request: SSE for `initialize` and
//! inside a session when the client accepts it, JSON for a client that accepts only JSON, for
//! 2026-07-28 requests and on a sessionless server. Sessions, versions, headers and arguments
//! are not checked.
//! TCP_NODELAY is set on accepted sockets, as the other servers of the benchmark do.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest request body read; a larger one is refused with 413.
const MAX_BODY: usize = 4 << 20;
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The revision without sessions, answered with JSON.
const STATELESS_VERSION: &[u8] = b"2026-07-28";

/// Session ids are a counter: the floor keeps no session state.
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// The parts of a JSON-RPC message the floor reads; every other member is skipped.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    arguments: Option<Arguments<'a>>,
}

#[derive(Deserialize)]
struct Arguments<'a> {
    #[serde(borrow)]
    message: Cow<'a, str>,
}

#[derive(Serialize)]
struct Reply<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: T,
}

#[derive(Serialize)]
struct ErrorReply<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorObject,
}

#[derive(Serialize)]
struct ErrorObject {
    code: i32,
    message: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: &'static str,
    capabilities: Value,
    server_info: ServerInfo,
}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallResult<'a> {
    content: [TextContent<'a>; 1],
    is_error: bool,
}

#[derive(Serialize)]
struct TextContent<'a> {
    r#type: &'static str,
    text: &'a str,
}

fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn body(status: StatusCode, content_type: &'static str, bytes: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Serializes `value`, framed as one SSE event when `sse`.
fn encode<T: Serialize>(value: &T, sse: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    if sse {
        out.extend_from_slice(b"event: message\ndata: ");
    }
    // Serializing these types into a Vec cannot fail.
    serde_json::to_writer(&mut out, value).expect("serializing into memory");
    if sse {
        out.extend_from_slice(b"\n\n");
    }
    out
}

/// A result reply.
fn ok<T: Serialize>(id: &Value, result: T, sse: bool) -> Vec<u8> {
    encode(
        &Reply {
            jsonrpc: "2.0",
            id,
            result,
        },
        sse,
    )
}

fn error(id: &Value, code: i32, message: &'static str, sse: bool) -> Vec<u8> {
    let reply = ErrorReply {
        jsonrpc: "2.0",
        id,
        error: ErrorObject { code, message },
    };
    encode(&reply, sse)
}

async fn post(request: Request<Incoming>, sessionless: bool) -> Response<Full<Bytes>> {
    let headers = request.headers();
    let stateless = headers
        .get(VERSION_HEADER)
        .is_some_and(|v| v.as_bytes() == STATELESS_VERSION);
    let accepts_sse = headers
        .get_all(ACCEPT)
        .iter()
        .any(|v| v.as_bytes().windows(17).any(|w| w == b"text/event-stream"));
    let sse = accepts_sse && !stateless && !sessionless;
    let bytes = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return empty(StatusCode::PAYLOAD_TOO_LARGE),
    };
    let message: Message = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(_) => {
            let reply = error(&Value::Null, -32700, "Parse error", false);
            return body(StatusCode::BAD_REQUEST, "application/json", reply);
        }
    };
    let Some(id) = message.id.as_ref() else {
        return empty(StatusCode::ACCEPTED);
    };
    let mut session = None;
    let reply = match message.method.as_ref() {
        "initialize" => {
            if !sessionless {
                let n = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
                session = Some(format!("floor-{n:016x}"));
            }
            let result = InitializeResult {
                protocol_version: "2025-11-25",
                capabilities: serde_json::json!({ "tools": {} }),
                server_info: ServerInfo {
                    name: "floor",
                    version: "0.0.0",
                },
            };
            ok(id, result, sse)
        }
        "tools/call" => match message.params.and_then(|p| p.arguments) {
            Some(args) => {
                let result = CallResult {
                    content: [TextContent {
                        r#type: "text",
                        text: &args.message,
                    }],
                    is_error: false,
                };
                ok(id, result, sse)
            }
            None => error(id, -32602, "Invalid params", sse),
        },
        "ping" => ok(id, serde_json::Map::new(), sse),
        _ => error(id, -32601, "Method not found", sse),
    };
    let content_type = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut response = body(StatusCode::OK, content_type, reply);
    if let Some(session) = session {
        let value = HeaderValue::from_str(&session).expect("a hex session id is a valid header");
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

async fn answer(
    request: Request<Incoming>,
    sessionless: bool,
) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match *request.method() {
        Method::POST => post(request, sessionless).await,
        Method::DELETE => empty(StatusCode::OK),
        _ => empty(StatusCode::METHOD_NOT_ALLOWED),
    })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8082".to_owned());
    let sessionless = args.any(|a| a == "--sessionless");
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("floor listening on http://{addr}/mcp (sessionless={sessionless})");
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        // A failure here only costs latency; the connection still works.
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(request, sessionless));
            // A connection that fails (the client went away mid-request) just ends.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                .await;
        });
    }
}
