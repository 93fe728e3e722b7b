//! A call whose SSE stream the server no longer holds fails soon: the stream breaks before the
//! response, and resumptions (GET with `Last-Event-ID`) are answered with
//! `notifications/replay_truncated` naming nothing left. One such answer may come from a node
//! behind a load balancer that never had the stream, so the client tries once more; twice in
//! a row, the call fails instead of resuming up to `max_resumptions` times.

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
    answer(seen, request, usize::MAX).await
}

/// As [`forgetful`], but the second resumption replays the response (it reached the server
/// that has the stream).
async fn found_on_the_second_try(
    seen: Seen,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    answer(seen, request, 2).await
}

/// Answers; the resumption numbered `found` (from 1) replays the call's response.
async fn answer(
    seen: Seen,
    request: Request<Incoming>,
    found: usize,
) -> Response<BoxBody<Bytes, Infallible>> {
    let (parts, message) = read(request).await;
    if parts.method == Method::GET {
        let Some(cursor) = parts.headers.get("last-event-id") else {
            return full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", String::new());
        };
        note(&seen, "resume".into());
        if count(&seen, "resume") == found {
            let id = seen
                .lock()
                .expect("lock")
                .iter()
                .find_map(|(_, what)| what.strip_prefix("call ").map(str::to_owned))
                .expect("the call was seen");
            let response = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"found"}}]}}}}"#
            );
            return full(
                StatusCode::OK,
                "text/event-stream",
                format!("id: 7.1\ndata: {response}\n\n"),
            );
        }
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
        Some("tools/call") => {
            note(&seen, format!("call {id}"));
            full(
                StatusCode::OK,
                "text/event-stream",
                "id: 7.0\nretry: 10\ndata: \n\n".into(),
            )
        }
        _ => full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string(),
        ),
    }
}

async fn client_of(url: &str) -> Client {
    let config = HttpClientConfig {
        max_resumptions: 5,
        min_retry: Duration::from_millis(10),
        ..HttpClientConfig::default()
    };
    let transport = HttpClientTransport::new(url).expect("url").config(config);
    within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
        .await
        .expect("connect")
}

#[tokio::test]
async fn a_resumption_that_reached_a_server_without_the_stream_is_tried_once_more() {
    let (url, seen) = serve(found_on_the_second_try).await;
    let client = client_of(&url).await;
    let result = within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect("the second resumption found the response");
    assert_eq!(result.text_content(), "found");
    assert_eq!(count(&seen, "resume"), 2);
    client.close();
}

#[tokio::test]
async fn a_call_whose_stream_the_server_forgot_fails_after_two_resumptions() {
    let (url, seen) = serve(forgetful).await;
    let client = client_of(&url).await;
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
    // Two resumptions told it; none after (not max_resumptions).
    assert_eq!(count(&seen, "resume"), 2);
    assert!(started.elapsed() < Duration::from_secs(5));
    client.close();
}
