//! A call whose SSE stream the server no longer holds fails at once: the stream breaks before
//! the response, and the resumption (GET with `Last-Event-ID`) is answered with
//! `notifications/replay_truncated` naming nothing left (the stream was forgotten, or the GET
//! reached a node that never had it), so the client does not resume again and again.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use barrel_mcp::client::Client;
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport};
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use serde_json::json;

use super::builder;
use super::misbehaving::{Seen, count, full, note, read, serve};
use crate::support::within;

/// Answers `tools/call` with a stream that breaks after its priming event, and every resumption
/// with "nothing of this stream is left".
async fn forgetful(seen: Seen, request: Request<Incoming>) -> Response<BoxBody<Bytes, Infallible>> {
    let (parts, message) = read(request).await;
    if parts.method == Method::GET {
        let Some(cursor) = parts.headers.get("last-event-id") else {
            return full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", String::new());
        };
        note(&seen, "resume".into());
        let notice = json!({"jsonrpc":"2.0","method":"notifications/replay_truncated",
            "params":{"lastEventId": cursor.to_str().unwrap_or_default()}});
        return full(
            StatusCode::OK,
            "text/event-stream",
            format!("retry: 10\ndata: {notice}\n\n"),
        );
    }
    if parts.method == Method::DELETE {
        return full(StatusCode::OK, "text/plain", String::new());
    }
    let Some(id) = message.get("id").cloned() else {
        return full(StatusCode::ACCEPTED, "text/plain", String::new());
    };
    match message["method"].as_str() {
        Some("initialize") => full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{
                "protocolVersion":"2025-11-25",
                "capabilities":{"tools":{}},
                "serverInfo":{"name":"forgetful","version":"0"}
            }})
            .to_string(),
        ),
        Some("tools/call") => full(
            StatusCode::OK,
            "text/event-stream",
            "id: 7.0\nretry: 10\ndata: \n\n".into(),
        ),
        _ => full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string(),
        ),
    }
}

#[tokio::test]
async fn a_call_whose_stream_the_server_forgot_fails_at_once() {
    let (url, seen) = serve(forgetful).await;
    let config = HttpClientConfig {
        max_resumptions: 5,
        min_retry: Duration::from_millis(10),
        ..HttpClientConfig::default()
    };
    let transport = HttpClientTransport::new(&url).expect("url").config(config);
    let client: Client =
        within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
            .await
            .expect("connect");
    let started = Instant::now();
    let error = within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect_err("the response cannot come");
    assert!(
        error
            .to_string()
            .contains("no longer holds this request's stream"),
        "{error}"
    );
    // One resumption told it; none after.
    assert_eq!(count(&seen, "resume"), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
    client.close();
}
