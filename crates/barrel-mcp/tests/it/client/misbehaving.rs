//! The HTTP client against a server that misbehaves on purpose: a GET stream that ends at once
//! with `retry: 0` (the client must not hammer it) or with a `retry` of a day (capped), a call
//! whose SSE stream never answers (a timed-out call must let go of its stream, and the server
//! is told), a server that never answers at all (the response timeout), one whose content type
//! lies about its body, and one that sends comments for ever instead of an answer.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use barrel_mcp::client::{CallOptions, Client};
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport};
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Frame, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::builder;
use crate::support::within;

/// What the server saw, in order: `GET`, `POST <method>`, `stream dropped`.
pub(super) type Seen = Arc<Mutex<Vec<(Instant, String)>>>;

/// A body that sends one priming event, then nothing, for ever; notes when it is dropped.
struct Stalled {
    primed: bool,
    seen: Seen,
}

impl Body for Stalled {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.primed {
            return Poll::Pending;
        }
        self.primed = true;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
            b"id: stalled.1\nretry: 100\ndata:\n\n",
        )))))
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        note(&self.seen, "stream dropped".into());
    }
}

/// A request's head and its body as JSON (`null` when it is not JSON).
pub(super) async fn read(request: Request<Incoming>) -> (http::request::Parts, Value) {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (parts, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

pub(super) fn note(seen: &Seen, what: String) {
    seen.lock().expect("lock").push((Instant::now(), what));
}

pub(super) fn full(
    status: StatusCode,
    content_type: &str,
    body: String,
) -> Response<BoxBody<Bytes, Infallible>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("mcp-session-id", "misbehaving-1")
        .body(http_body_util::Full::new(Bytes::from(body)).boxed())
        .expect("response")
}

async fn answer(
    seen: Seen,
    get_body: Arc<String>,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let (parts, message) = read(request).await;
    answer_read(&seen, &get_body, &parts, &message)
}

/// [`answer`] once the request is read.
fn answer_read(
    seen: &Seen,
    get_body: &str,
    parts: &http::request::Parts,
    message: &Value,
) -> Response<BoxBody<Bytes, Infallible>> {
    let seen = Arc::clone(seen);
    if parts.method == Method::GET {
        note(&seen, "GET".into());
        return full(StatusCode::OK, "text/event-stream", get_body.to_owned());
    }
    if parts.method == Method::DELETE {
        return full(StatusCode::OK, "text/plain", String::new());
    }
    let method = message["method"]
        .as_str()
        .unwrap_or("(response)")
        .to_owned();
    note(&seen, format!("POST {method}"));
    let Some(id) = message.get("id").cloned() else {
        return full(StatusCode::ACCEPTED, "text/plain", String::new());
    };
    match method.as_str() {
        "initialize" => full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{
                "protocolVersion":"2025-11-25",
                "capabilities":{"tools":{}},
                "serverInfo":{"name":"misbehaving","version":"0"}
            }})
            .to_string(),
        ),
        "tools/call" => Response::builder()
            .header("content-type", "text/event-stream")
            .body(
                Stalled {
                    primed: false,
                    seen: Arc::clone(&seen),
                }
                .boxed(),
            )
            .expect("response"),
        _ => full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string(),
        ),
    }
}

/// Starts the server, whose GET stream ends at once without a single event, asking for an
/// immediate reconnection; returns its URL and what it sees.
async fn start() -> (String, Seen) {
    start_with("retry: 0\n\n".into()).await
}

/// Starts the server with `get_body` as the body of every GET stream.
async fn start_with(get_body: String) -> (String, Seen) {
    let get_body = Arc::new(get_body);
    serve(move |seen, request| answer(seen, Arc::clone(&get_body), request)).await
}

/// Serves HTTP/1.1 on a free port with `respond`, which sees what the server saw so far;
/// returns the endpoint URL and that record.
pub(super) async fn serve<F, Fut>(respond: F) -> (String, Seen)
where
    F: Fn(Seen, Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<BoxBody<Bytes, Infallible>>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let (state, respond) = (Arc::clone(&seen), Arc::new(respond));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (state, respond) = (Arc::clone(&state), Arc::clone(&respond));
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let answer = respond(Arc::clone(&state), request);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (url, seen)
}

async fn connect(url: &str, config: HttpClientConfig) -> Client {
    let transport = HttpClientTransport::new(url).expect("url").config(config);
    within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
        .await
        .expect("connect")
}

pub(super) fn count(seen: &Seen, what: &str) -> usize {
    seen.lock()
        .expect("lock")
        .iter()
        .filter(|(_, w)| w == what)
        .count()
}

#[tokio::test]
async fn an_empty_get_stream_with_retry_zero_is_not_hammered() {
    let (url, seen) = start().await;
    let client = connect(&url, HttpClientConfig::default()).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // The floor (100 ms), doubled after each stream that ended at once without an event: GETs
    // at 0, 200, 600 ms (then 1.4 s). Without both, a `retry: 0` server would see hundreds of
    // GETs a second.
    let gets = count(&seen, "GET");
    assert!((2..=6).contains(&gets), "{gets} GETs in one second");
    client.close();
}

#[tokio::test]
async fn a_call_that_times_out_lets_go_of_its_stream_and_the_server_is_told() {
    let (url, seen) = start().await;
    let config = HttpClientConfig {
        open_get_stream: false,
        ..HttpClientConfig::default()
    };
    let client = connect(&url, config).await;
    let options = CallOptions::new().timeout(Duration::from_millis(300));
    let error = within(client.call_tool_with(CallToolParams::new("stall"), options))
        .await
        .expect_err("no answer comes");
    assert!(error.to_string().contains("timed out"), "{error}");
    // The stream the server holds open is dropped (the client closed it), and the server got
    // `notifications/cancelled`.
    within(async {
        while count(&seen, "stream dropped") == 0
            || count(&seen, "POST notifications/cancelled") == 0
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    within(client.ping()).await.expect("the connection goes on");
    client.close();
}

/// A server that forgets session `s1` at the first `tools/call` (or roots notification) and
/// takes 400 ms to answer
/// the `initialize` that replaces it (session `s2`), as a newer build of itself (another
/// version, and prompts besides tools); no id is 400, as the spec says.
async fn forgetful(seen: Seen, request: Request<Incoming>) -> Response<BoxBody<Bytes, Infallible>> {
    let (parts, message) = read(request).await;
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match parts.method {
        Method::GET => return full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", String::new()),
        Method::DELETE => return full(StatusCode::OK, "text/plain", String::new()),
        _ => {}
    }
    let method = message["method"]
        .as_str()
        .unwrap_or("(response)")
        .to_owned();
    note(
        &seen,
        format!("POST {method} {}", session.as_deref().unwrap_or("-")),
    );
    if session.as_deref() == Some("s1") && method == "notifications/roots/list_changed" {
        return full(StatusCode::NOT_FOUND, "text/plain", String::new());
    }
    let Some(id) = message.get("id").cloned() else {
        return full(StatusCode::ACCEPTED, "text/plain", String::new());
    };
    let answer = |result: Value, session: &str| {
        let mut response = full(
            StatusCode::OK,
            "application/json",
            json!({"jsonrpc":"2.0","id":id,"result":result}).to_string(),
        );
        response
            .headers_mut()
            .insert("mcp-session-id", session.parse().expect("header"));
        response
    };
    if method == "initialize" {
        let again = count(&seen, "POST initialize -") > 1;
        if again {
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        let result = if again {
            json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{}},
                   "serverInfo":{"name":"forgetful","version":"1"}})
        } else {
            json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{}},
                   "serverInfo":{"name":"forgetful","version":"0"}})
        };
        return answer(result, if again { "s2" } else { "s1" });
    }
    match session.as_deref() {
        None => full(StatusCode::BAD_REQUEST, "text/plain", "no session".into()),
        Some("s1") if method == "tools/call" => {
            full(StatusCode::NOT_FOUND, "text/plain", String::new())
        }
        Some(current) => answer(json!({"content":[]}), current),
    }
}

#[tokio::test]
async fn a_call_that_gives_up_during_a_reinitialize_does_not_wedge_the_session() {
    let (url, seen) = serve(forgetful).await;
    let client = connect(&url, HttpClientConfig::default()).await;
    // The call meets a 404, and gives up while the new handshake is still running.
    let options = CallOptions::new().timeout(Duration::from_millis(150));
    let outcome = within(client.call_tool_with(CallToolParams::new("x"), options)).await;
    assert!(outcome.is_err(), "{outcome:?}");
    // A ping sent meanwhile waits for the handshake, and goes out in the new session.
    within(client.ping())
        .await
        .expect("ping in the new session");
    assert!(
        count(&seen, "POST ping s2") == 1,
        "{:?}",
        seen.lock().expect("lock")
    );
    assert_eq!(count(&seen, "POST ping -"), 0);
    // The client ran the handshake again itself: it knows the server as it answered then.
    assert_eq!(count(&seen, "POST notifications/initialized s2"), 1);
    assert_eq!(client.server_info().version, "1");
    assert!(client.capabilities().prompts.is_some());
    client.close();
}

#[tokio::test]
async fn a_notification_that_meets_an_expired_session_takes_it_up_again() {
    let (url, seen) = serve(forgetful).await;
    let client = connect(&url, HttpClientConfig::default()).await;
    // A one-way message meets the 404: the handshake runs again (not behind it in the
    // connection's queue), and the notification goes out in the new session.
    within(
        client
            .peer()
            .notify("notifications/roots/list_changed", None),
    )
    .await
    .expect("queued");
    for _ in 0..100 {
        if count(&seen, "POST notifications/roots/list_changed s2") > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        count(&seen, "POST notifications/roots/list_changed s2"),
        1,
        "{:?}",
        seen.lock().expect("lock")
    );
    assert_eq!(count(&seen, "POST notifications/initialized s2"), 1);
    within(client.ping()).await.expect("the connection goes on");
    assert_eq!(client.server_info().version, "1");
    client.close();
}

#[tokio::test]
async fn a_get_stream_that_keeps_replaying_an_oversized_event_is_given_up() {
    // Every GET replays the same event, too large for the client: resuming cannot get past it.
    let huge = format!("id: big.1\nretry: 10\ndata: {}\n\n", "x".repeat(4096));
    let (url, seen) = start_with(huge).await;
    let config = HttpClientConfig {
        max_event_size: 1024,
        max_resumptions: 2,
        min_retry: Duration::from_millis(10),
        ..HttpClientConfig::default()
    };
    let client = connect(&url, config).await;
    // 1 + 2 resumptions, then nothing more, however long we wait.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(count(&seen, "GET"), 3);
    within(client.ping()).await.expect("the connection goes on");
    client.close();
}

/// A 2026-07-28 server whose tool `t` mirrors `region` into `Mcp-Param-Region` in the first
/// `tools/list` and no longer in the second; notes each call's header as `call <value|->`.
async fn changing_tool(
    seen: Seen,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let (parts, message) = read(request).await;
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message["method"].as_str().unwrap_or("");
    let result = match method {
        "server/discover" => super::discover_result(json!({ "tools": {} })),
        "tools/list" => {
            let listed = count(&seen, "listed");
            note(&seen, "listed".into());
            let mut region = json!({ "type": "string" });
            if listed == 0 {
                region["x-mcp-header"] = json!("Region");
            }
            json!({ "resultType": "complete", "tools": [{ "name": "t", "inputSchema":
                { "type": "object", "properties": { "region": region } } }] })
        }
        "tools/call" => {
            let header = parts
                .headers
                .get("mcp-param-region")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            note(&seen, format!("call {header}"));
            json!({ "resultType": "complete", "content": [] })
        }
        _ => json!({ "resultType": "complete" }),
    };
    full(
        StatusCode::OK,
        "application/json",
        json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string(),
    )
}

#[tokio::test]
async fn a_tool_that_drops_its_header_argument_is_called_without_it() {
    let (url, seen) = serve(changing_tool).await;
    let transport = HttpClientTransport::new(&url).expect("url");
    let client = within(builder(Some(ProtocolVersion::V2026_07_28)).connect_http(transport))
        .await
        .expect("connect");
    let call = || {
        let mut arguments = barrel_mcp::types::JsonObject::new();
        arguments.insert("region".into(), json!("eu"));
        client.call_tool(CallToolParams::new("t").with_arguments(arguments))
    };
    within(client.list_tools(None)).await.expect("first list");
    within(call()).await.expect("call");
    within(client.list_tools(None)).await.expect("second list");
    within(call()).await.expect("call");
    let calls: Vec<String> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(_, what)| what.starts_with("call "))
        .map(|(_, what)| what.clone())
        .collect();
    assert_eq!(calls, ["call eu", "call -"]);
    client.close();
}

#[tokio::test]
async fn a_retry_of_a_day_is_capped() {
    // Every GET stream ends at once asking for a wait of a day before the next one.
    let (url, seen) = start_with("retry: 86400000\n\n".into()).await;
    let config = HttpClientConfig {
        max_retry: Duration::from_millis(100),
        ..HttpClientConfig::default()
    };
    let client = connect(&url, config).await;
    within(async {
        while count(&seen, "GET") < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    client.close();
}

#[tokio::test]
async fn a_server_that_never_answers_fails_the_message_in_time() {
    let get_body = Arc::new(String::from("retry: 100\n\n"));
    let (url, _seen) = serve(move |seen, request| {
        let get_body = Arc::clone(&get_body);
        async move {
            if request.uri().query() == Some("stall") {
                std::future::pending::<()>().await;
            }
            answer(seen, get_body, request).await
        }
    })
    .await;
    let config = HttpClientConfig {
        open_get_stream: false,
        response_timeout: Duration::from_millis(300),
        ..HttpClientConfig::default()
    };
    // Every POST stalls: the handshake fails after the response timeout instead of holding
    // the connection (and every later message) for ever.
    let stalled = format!("{url}?stall");
    let transport = HttpClientTransport::new(&stalled)
        .expect("url")
        .config(config.clone());
    let started = Instant::now();
    let outcome = within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport)).await;
    let error = outcome.expect_err("the server never answers");
    assert!(error.to_string().contains("response_timeout"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A body that primes a stream, then sends an SSE comment every 10 ms, for ever.
struct Comments {
    primed: bool,
    next: Pin<Box<tokio::time::Sleep>>,
    seen: Seen,
}

impl Body for Comments {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if !self.primed {
            self.primed = true;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                b"id: comments.1\nretry: 100\ndata:\n\n",
            )))));
        }
        if self.next.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let later = tokio::time::Instant::now() + Duration::from_millis(10);
        self.next.as_mut().reset(later);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
            b": still here\n\n",
        )))))
    }
}

impl Drop for Comments {
    fn drop(&mut self) {
        note(&self.seen, "stream dropped".into());
    }
}

/// Like [`answer`], but `tools/call` is answered as the URL's query asks: `json` (a JSON
/// content type over an SSE body), `sse` (an SSE content type over a bare JSON body), or
/// `comments` (a stream of comments that never answers).
async fn liar(seen: Seen, request: Request<Incoming>) -> Response<BoxBody<Bytes, Infallible>> {
    let lie = request.uri().query().unwrap_or_default().to_owned();
    let (parts, message) = read(request).await;
    if message["method"] != "tools/call" {
        return answer_read(&seen, "retry: 100\n\n", &parts, &message);
    }
    let id = message["id"].clone();
    let result = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
    match lie.as_str() {
        "json" => full(
            StatusCode::OK,
            "application/json",
            format!("event: message\ndata: {result}\n\n"),
        ),
        "sse" => full(StatusCode::OK, "text/event-stream", result.to_string()),
        _ => Response::builder()
            .header("content-type", "text/event-stream")
            .body(
                Comments {
                    primed: false,
                    next: Box::pin(tokio::time::sleep(Duration::from_millis(10))),
                    seen,
                }
                .boxed(),
            )
            .expect("response"),
    }
}

#[tokio::test]
async fn a_body_that_is_not_what_its_content_type_says_fails_the_call_and_nothing_else() {
    let (url, _seen) = serve(liar).await;
    let config = HttpClientConfig {
        open_get_stream: false,
        ..HttpClientConfig::default()
    };
    for lie in ["json", "sse"] {
        let transport = HttpClientTransport::new(&format!("{url}?{lie}"))
            .expect("url")
            .config(config.clone());
        let client = within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
            .await
            .expect("connect");
        let outcome = within(client.call_tool(CallToolParams::new("anything"))).await;
        assert!(outcome.is_err(), "{lie}: {outcome:?}");
        // The connection goes on serving.
        within(client.ping()).await.expect("ping after the lie");
        client.close();
    }
}

#[tokio::test]
async fn comments_for_ever_do_not_keep_a_call_alive_past_its_timeout() {
    let (url, seen) = serve(liar).await;
    let config = HttpClientConfig {
        open_get_stream: false,
        ..HttpClientConfig::default()
    };
    let transport = HttpClientTransport::new(&format!("{url}?comments"))
        .expect("url")
        .config(config);
    let client = within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
        .await
        .expect("connect");
    let started = Instant::now();
    let options = CallOptions::new().timeout(Duration::from_millis(300));
    let outcome = within(client.call_tool_with(CallToolParams::new("anything"), options)).await;
    assert!(outcome.is_err(), "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // The client let go of the stream.
    within(async {
        while count(&seen, "stream dropped") == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    within(client.ping()).await.expect("ping after the timeout");
}
