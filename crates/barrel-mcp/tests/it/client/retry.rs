//! The HTTP client against a busy server: 503 and 429 (with or without `Retry-After`) are
//! retried with the same request within the bounds of `RetryPolicy` (the handshake, calls,
//! notifications, a stream resumed with its `Last-Event-ID`); past those bounds the request
//! fails naming the status and why; other 5xx are not retried; and a call dropped while it
//! waits sends nothing more.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use barrel_mcp::client::Client;
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport, RetryPolicy};
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::builder;
use super::misbehaving::{Seen, count, full, note, read, serve};
use crate::support::within;

/// A refusal: a status and a `Retry-After`.
type Refusal = (u16, Option<&'static str>);

/// Refusals the server gives first, per kind of request (a method, or `GET`).
type Plan = HashMap<&'static str, VecDeque<Refusal>>;

/// Starts a server that answers as `plan` says first, then well. It notes `POST <method>
/// <body>` and `GET <Last-Event-ID>`. `tools/call` on `?resume` answers with a stream that
/// ends after one event (`id: ev-1`), and the GET that resumes it carries the response.
async fn start(plan: Plan) -> (String, Seen) {
    let plan = Arc::new(Mutex::new(plan));
    let call_id = Arc::new(Mutex::new(Value::Null));
    serve(move |seen, request| {
        let (plan, call_id) = (Arc::clone(&plan), Arc::clone(&call_id));
        async move { answer(&plan, &call_id, &seen, request).await }
    })
    .await
}

async fn answer(
    plan: &Mutex<Plan>,
    call_id: &Mutex<Value>,
    seen: &Seen,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let resume = request.uri().query() == Some("resume");
    let (parts, message) = read(request).await;
    let method = message["method"].as_str().unwrap_or("(response)");
    let key = match parts.method {
        Method::GET => {
            let last = parts.headers.get("last-event-id");
            let last = last.and_then(|v| v.to_str().ok()).unwrap_or("-");
            note(seen, format!("GET {last}"));
            "GET"
        }
        Method::DELETE => return full(StatusCode::OK, "text/plain", String::new()),
        _ => {
            note(seen, format!("POST {method} {message}"));
            method
        }
    };
    let refusal = plan
        .lock()
        .expect("lock")
        .get_mut(key)
        .and_then(VecDeque::pop_front);
    if let Some((status, retry_after)) = refusal {
        let status = StatusCode::from_u16(status).expect("status");
        let mut response = full(status, "text/plain", "busy".into());
        if let Some(retry_after) = retry_after {
            let value = retry_after.parse().expect("header");
            response.headers_mut().insert("retry-after", value);
        }
        return response;
    }
    if parts.method == Method::GET {
        let id = call_id.lock().expect("lock").clone();
        let result = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
        return full(
            StatusCode::OK,
            "text/event-stream",
            format!("id: ev-2\ndata: {result}\n\n"),
        );
    }
    let Some(id) = message.get("id").cloned() else {
        return full(StatusCode::ACCEPTED, "text/plain", String::new());
    };
    let result = match method {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "busy", "version": "0"}
        }),
        "tools/call" if resume => {
            *call_id.lock().expect("lock") = id;
            return full(
                StatusCode::OK,
                "text/event-stream",
                "id: ev-1\nretry: 10\ndata:\n\n".into(),
            );
        }
        "tools/call" => json!({"content": []}),
        _ => json!({}),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    full(StatusCode::OK, "application/json", body.to_string())
}

fn plan(entries: &[(&'static str, &[Refusal])]) -> Plan {
    entries
        .iter()
        .map(|(key, refusals)| (*key, refusals.iter().copied().collect()))
        .collect()
}

/// No GET stream (only resumptions GET), a short floor for resuming, and `retry`.
fn config(retry: RetryPolicy) -> HttpClientConfig {
    HttpClientConfig {
        open_get_stream: false,
        min_retry: Duration::from_millis(10),
        retry,
        ..HttpClientConfig::default()
    }
}

fn transport(url: &str, retry: RetryPolicy) -> HttpClientTransport {
    HttpClientTransport::new(url)
        .expect("url")
        .config(config(retry))
}

async fn connect(url: &str, retry: RetryPolicy) -> Client {
    let transport = transport(url, retry);
    within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
        .await
        .expect("connect")
}

/// The bodies of the POSTs of `method`, in order.
fn posts(seen: &Seen, method: &str) -> Vec<String> {
    let prefix = format!("POST {method} ");
    seen.lock()
        .expect("lock")
        .iter()
        .filter_map(|(_, what)| what.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_503_with_retry_after_zero_is_sent_again_with_the_same_body() {
    let (url, seen) = start(plan(&[
        ("initialize", &[(503, Some("0"))]),
        ("notifications/initialized", &[(429, Some("0"))]),
        ("tools/call", &[(503, Some("0"))]),
    ]))
    .await;
    let client = connect(&url, RetryPolicy::default()).await;
    // The handshake's request and notification were refused once each, and sent again.
    let initialize = posts(&seen, "initialize");
    assert_eq!(initialize.len(), 2, "{initialize:?}");
    assert_eq!(initialize[0], initialize[1]);
    // The notification goes out once the handshake returned.
    within(async {
        while posts(&seen, "notifications/initialized").len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;

    within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect("the call succeeds");
    let calls = posts(&seen, "tools/call");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], calls[1]);
    client.close();
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    let (url, seen) = start(plan(&[("tools/call", &[(429, Some("1"))])])).await;
    let client = connect(&url, RetryPolicy::default()).await;
    let started = Instant::now();
    within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect("the call succeeds");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(posts(&seen, "tools/call").len(), 2);
    client.close();
}

#[tokio::test]
async fn a_retry_after_over_max_delay_fails_at_once_naming_503() {
    let (url, seen) = start(plan(&[("initialize", &[(503, Some("60"))])])).await;
    let started = Instant::now();
    let transport = transport(&url, RetryPolicy::default());
    let outcome = within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport)).await;
    let error = outcome
        .expect_err("the server is busy for a minute")
        .to_string();
    assert!(error.contains("503"), "{error}");
    assert!(error.contains("Retry-After 60 s"), "{error}");
    assert!(error.contains("max_delay"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(posts(&seen, "initialize").len(), 1);
}

#[tokio::test]
async fn more_than_max_retries_refusals_fail_after_max_retries_plus_one_attempts() {
    let busy = [(503, Some("0")); 5];
    let (url, seen) = start(plan(&[("tools/call", &busy)])).await;
    let policy = RetryPolicy {
        max_retries: 2,
        ..RetryPolicy::default()
    };
    let client = connect(&url, policy).await;
    let error = within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect_err("refused three times")
        .to_string();
    assert!(
        error.contains("503") && error.contains("max_retries"),
        "{error}"
    );
    assert_eq!(posts(&seen, "tools/call").len(), 3);
    // A 503 still ends the connection, as without retries.
    within(client.closed()).await;
}

#[tokio::test]
async fn a_429_past_its_retries_fails_the_call_and_keeps_the_connection() {
    let busy = [(429, None); 2];
    let (url, seen) = start(plan(&[("tools/call", &busy)])).await;
    let policy = RetryPolicy {
        max_retries: 1,
        base_delay: Duration::from_millis(20),
        ..RetryPolicy::default()
    };
    let client = connect(&url, policy).await;
    let error = within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect_err("refused twice")
        .to_string();
    assert!(
        error.contains("429") && error.contains("max_retries"),
        "{error}"
    );
    assert_eq!(posts(&seen, "tools/call").len(), 2);
    within(client.ping()).await.expect("the connection goes on");
    client.close();
}

#[tokio::test]
async fn a_500_is_not_retried() {
    let (url, seen) = start(plan(&[("tools/call", &[(500, Some("0"))])])).await;
    let client = connect(&url, RetryPolicy::default()).await;
    let error = within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect_err("a 500 ends the connection")
        .to_string();
    assert!(error.contains("500"), "{error}");
    within(client.closed()).await;
    assert_eq!(posts(&seen, "tools/call").len(), 1);
}

#[tokio::test]
async fn a_resumption_refused_with_503_is_retried_with_the_same_last_event_id() {
    let (url, seen) = start(plan(&[("GET", &[(503, Some("0"))])])).await;
    let client = connect(&format!("{url}?resume"), RetryPolicy::default()).await;
    within(client.call_tool(CallToolParams::new("t")))
        .await
        .expect("the resumed stream answers");
    assert_eq!(
        count(&seen, "GET ev-1"),
        2,
        "{:?}",
        seen.lock().expect("lock")
    );
    assert_eq!(posts(&seen, "tools/call").len(), 1);
    client.close();
}

#[tokio::test]
async fn a_call_dropped_while_it_waits_sends_nothing_more() {
    let (url, seen) = start(plan(&[("tools/call", &[(503, Some("1"))])])).await;
    let client = connect(&url, RetryPolicy::default()).await;
    let started = Instant::now();
    let call = client.call_tool(CallToolParams::new("t"));
    let gave_up = tokio::time::timeout(Duration::from_millis(200), call).await;
    assert!(gave_up.is_err(), "the call is still waiting: {gave_up:?}");
    // Past the server's second: the retry would have gone out by now.
    tokio::time::sleep(Duration::from_millis(1_300).saturating_sub(started.elapsed())).await;
    assert_eq!(posts(&seen, "tools/call").len(), 1);
    within(client.ping()).await.expect("the connection goes on");
    client.close();
}
