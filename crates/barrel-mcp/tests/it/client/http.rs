//! The client over Streamable HTTP: against the in-process `barrel_mcp::http` server in every
//! revision and in auto, with sampling and elicitation; against a scripted raw HTTP server for
//! what the real one does not do on demand (401, resumption, huge events, DELETE).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use barrel_mcp::client::{Client, ClientHandler, HandlerContext};
use barrel_mcp::http::HttpConfig;
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport};
use barrel_mcp::types::{
    CallToolParams, ClientCapabilities, ContentBlock, CreateMessageParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorObject, JsonObject,
    ProtocolVersion, Role, SamplingCapability, SamplingContent,
};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::{builder, modes};
use crate::http::TestServer;
use crate::support::within;

fn text(result: &barrel_mcp::types::CallToolResult) -> String {
    match &result.content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("{other:?}"),
    }
}

fn url(server: &TestServer) -> String {
    format!("http://{}/mcp", server.addr)
}

/// Answers sampling with "short" and form elicitation with a name.
struct Answers;

impl ClientHandler for Answers {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(SamplingCapability::default()),
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: None,
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn create_message(
        &self,
        _: CreateMessageParams,
        _: HandlerContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::text("short"),
            model: "test-model".into(),
            stop_reason: None,
            meta: None,
        })
    }

    async fn elicit(
        &self,
        _: ElicitRequestParams,
        _: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult::accept(content))
    }
}

#[tokio::test]
async fn every_revision_and_auto_over_http() {
    let mut server = TestServer::start(HttpConfig::default()).await;
    for mode in modes() {
        let transport = HttpClientTransport::new(&url(&server)).expect("url");
        let client = within(builder(mode).connect_http(transport))
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(
            client.protocol_version(),
            mode.unwrap_or(ProtocolVersion::LATEST)
        );
        within(client.ping()).await.expect("ping");
        let tools = within(client.list_all_tools()).await.expect("tools");
        assert!(tools.iter().any(|t| t.name == "echo"), "{mode:?}");
        let mut args = serde_json::Map::new();
        args.insert("message".into(), json!("hi"));
        let called = within(client.call_tool(CallToolParams::new("echo").with_arguments(args)))
            .await
            .expect("call");
        assert_eq!(text(&called), "hi", "{mode:?}");
        let progress = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&progress);
        let options = barrel_mcp::client::CallOptions::new().on_progress(move |_| {
            *seen.lock().expect("lock") += 1;
        });
        let mut args = serde_json::Map::new();
        args.insert("steps".into(), json!(3));
        let counted = within(client.call_tool_with(
            CallToolParams::new("countdown").with_arguments(args),
            options,
        ))
        .await
        .expect("countdown");
        assert!(!counted.is_error(), "{mode:?}");
        assert_eq!(*progress.lock().expect("lock"), 3, "{mode:?}");
        client.close();
    }
    server.stop().await;
}

#[tokio::test]
async fn sampling_and_elicitation_round_trip_over_http() {
    let mut server = TestServer::start(HttpConfig::default()).await;
    for version in [
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ] {
        let transport = HttpClientTransport::new(&url(&server)).expect("url");
        let client = within(
            builder(Some(version))
                .handler(Answers)
                .connect_http(transport),
        )
        .await
        .expect("connect");
        let call = |name: &str| client.call_tool(CallToolParams::new(name));
        assert_eq!(
            text(&within(call("summarize")).await.expect("sampling")),
            "Summary: short",
            "{version}"
        );
        assert_eq!(
            text(&within(call("ask_name")).await.expect("elicitation")),
            "Hello, Ada!",
            "{version}"
        );
        client.close();
    }
    server.stop().await;
}

/// A server with a tool that runs only as a task and asks the user's name on the way.
fn task_server() -> barrel_mcp::server::Server {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let tool = barrel_mcp::types::Tool {
        name: "greet_later".into(),
        execution: Some(barrel_mcp::types::ToolExecution {
            task_support: Some("required".into()),
        }),
        ..barrel_mcp::types::Tool::default()
    };
    barrel_mcp::server::Server::builder()
        .name("http-tasks", "1.0.0")
        .tool_with(tool, |ctx: barrel_mcp::server::Ctx, _: NoArgs| async move {
            let form = ElicitRequestParams::form("Your name?", JsonObject::new());
            let answer = ctx.elicit(form).await?;
            let name = answer.content.and_then(|c| c.get("name").cloned());
            Ok(format!(
                "Hello later, {}!",
                name.and_then(|n| n.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ))
        })
        .build()
        .expect("server")
}

#[tokio::test]
async fn a_2026_task_with_input_over_http() {
    let mut server = TestServer::start_with(task_server(), HttpConfig::default()).await;
    let transport = HttpClientTransport::new(&url(&server)).expect("url");
    let client = within(
        builder(Some(ProtocolVersion::V2026_07_28))
            .handler(Answers)
            .connect_http(transport),
    )
    .await
    .expect("connect");
    assert!(client.supports_tool_tasks());
    // tasks/get and tasks/update carry `Mcp-Name: <taskId>`, which the server requires.
    let result = within(client.call_tool_as_task(CallToolParams::new("greet_later")))
        .await
        .expect("the task ends");
    assert_eq!(text(&result), "Hello later, Ada!");
    client.close();
    server.stop().await;
}

#[tokio::test]
async fn an_expired_session_is_initialized_again() {
    let config = HttpConfig {
        session_idle_timeout: Duration::from_millis(200),
        ..HttpConfig::default()
    };
    let mut server = TestServer::start(config).await;
    let transport = HttpClientTransport::new(&url(&server))
        .expect("url")
        .config(HttpClientConfig {
            open_get_stream: false,
            ..HttpClientConfig::default()
        });
    let client = within(builder(Some(ProtocolVersion::V2025_11_25)).connect_http(transport))
        .await
        .expect("connect");
    within(client.ping()).await.expect("ping");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // The server forgot the session: the transport initializes again and retries the call.
    within(client.ping())
        .await
        .expect("ping after the session expired");
    let tools = within(client.list_all_tools()).await.expect("tools");
    assert!(!tools.is_empty());
    client.close();
    server.stop().await;
}

// ---------------------------------------------------------------- a scripted raw server

/// What the scripted server saw.
#[derive(Default)]
struct Seen {
    requests: Vec<(Method, HeaderMap, Value)>,
    /// The id of the `tools/call` whose stream is cut short.
    pending: Option<Value>,
    /// In order: `POST <method>` when a POST arrives, `GET answered` when the first GET's
    /// answer leaves.
    events: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Normal,
    Unauthorized,
    /// The first GET is answered only after 200 ms.
    SlowGet,
}

struct Scripted {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Seen>>,
}

impl Scripted {
    async fn start(mode: Mode) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(script(mode, &state, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.seen.lock().expect("lock"))
    }
}

fn sse(body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Full::new(Bytes::from(body)))
        .expect("response")
}

fn json_response(value: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .header("content-type", "application/json")
        .header("mcp-session-id", "session-1")
        .body(Full::new(Bytes::from(value.to_string())))
        .expect("response")
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

async fn script(
    mode: Mode,
    seen: &Mutex<Seen>,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().expect("lock").requests.push((
        parts.method.clone(),
        parts.headers.clone(),
        message.clone(),
    ));
    if mode == Mode::Unauthorized {
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("www-authenticate", "Bearer realm=\"test\"")
            .body(Full::new(Bytes::from(
                // A JSON-RPC-looking body must not be read as an answer.
                json!({"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}).to_string(),
            )))
            .expect("response");
    }
    if parts.method == Method::POST {
        let method = message["method"].as_str().unwrap_or("(response)");
        seen.lock()
            .expect("lock")
            .events
            .push(format!("POST {method}"));
    }
    let last_event_id = parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match parts.method {
        Method::DELETE => return status(StatusCode::OK),
        Method::GET => {
            return match last_event_id.as_deref() {
                Some("call.1") => {
                    let id = seen
                        .lock()
                        .expect("lock")
                        .pending
                        .clone()
                        .unwrap_or_default();
                    let response = json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"resumed"}]}});
                    sse(format!("id: call.2\ndata: {response}\n\n"))
                }
                None => {
                    if mode == Mode::SlowGet {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        seen.lock()
                            .expect("lock")
                            .events
                            .push("GET answered".into());
                    }
                    let note = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}});
                    sse(format!("id: get.1\nretry: 20\ndata: {note}\n\n"))
                }
                Some(_) => status(StatusCode::METHOD_NOT_ALLOWED),
            };
        }
        _ => {}
    }
    let id = message.get("id").cloned();
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(id) = id else {
        return status(StatusCode::ACCEPTED);
    };
    match method {
        "initialize" => json_response(json!({"jsonrpc":"2.0","id":id,"result":{
            "protocolVersion":"2025-03-26",
            "capabilities":{"tools":{}},
            "serverInfo":{"name":"scripted","version":"0"}
        }})),
        "tools/call" => match message["params"]["name"].as_str() {
            Some("cut_short") => {
                seen.lock().expect("lock").pending = Some(id);
                sse("id: call.1\nretry: 100\ndata:\n\n".into())
            }
            Some("huge") => {
                let big = "x".repeat(64 * 1024);
                let response = json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":big}]}});
                sse(format!("data: {response}\n\n"))
            }
            _ => json_response(json!({"jsonrpc":"2.0","id":id,"result":{"content":[]}})),
        },
        _ => json_response(json!({"jsonrpc":"2.0","id":id,"result":{}})),
    }
}

async fn scripted_client(server: &Scripted, config: HttpClientConfig) -> Client {
    let transport = HttpClientTransport::new(&server.url())
        .expect("url")
        .header("x-api-key", "secret")
        .expect("header")
        .config(config);
    within(builder(Some(ProtocolVersion::V2025_03_26)).connect_http(transport))
        .await
        .expect("connect")
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_never_an_answer() {
    let server = Scripted::start(Mode::Unauthorized).await;
    for mode in [None, Some(ProtocolVersion::V2025_11_25)] {
        let transport = HttpClientTransport::new(&server.url()).expect("url");
        let error = within(builder(mode).connect_http(transport))
            .await
            .expect_err("401");
        assert!(error.is_auth(), "{mode:?}: {error}");
        let http = error.as_http().expect("http");
        assert_eq!(http.status, Some(401));
        assert_eq!(
            http.www_authenticate.as_deref(),
            Some("Bearer realm=\"test\"")
        );
    }
    // Auto mode did not fall back to initialize after the 401 on server/discover.
    let methods: Vec<String> = server.seen(|s| {
        s.requests
            .iter()
            .map(|(_, _, m)| m["method"].as_str().unwrap_or("").to_owned())
            .collect()
    });
    assert_eq!(methods, ["server/discover", "initialize"]);
}

#[tokio::test]
async fn a_broken_stream_resumes_with_last_event_id_and_close_deletes() {
    let server = Scripted::start(Mode::Normal).await;
    let client = scripted_client(&server, HttpClientConfig::default()).await;
    let started = std::time::Instant::now();
    let result = within(client.call_tool(CallToolParams::new("cut_short")))
        .await
        .expect("resumed");
    assert_eq!(text(&result), "resumed");
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "waited for retry"
    );
    // The GET stream reconnected after its retry, naming the last event it saw.
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.close();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.seen(|seen| {
        let gets: Vec<Option<&str>> = seen
            .requests
            .iter()
            .filter(|(m, _, _)| m == Method::GET)
            .map(|(_, h, _)| h.get("last-event-id").and_then(|v| v.to_str().ok()))
            .collect();
        assert!(gets.contains(&Some("call.1")), "{gets:?}");
        assert!(gets.contains(&None), "{gets:?}");
        assert!(gets.contains(&Some("get.1")), "{gets:?}");
        for (method, headers, message) in &seen.requests {
            assert_eq!(headers["x-api-key"], "secret");
            if message["method"] != "initialize" {
                assert_eq!(headers["mcp-session-id"], "session-1", "{method} {message}");
                assert_eq!(headers["mcp-protocol-version"], "2025-03-26");
            } else {
                assert!(headers.get("mcp-protocol-version").is_none());
            }
        }
        let last = seen.requests.last().expect("requests");
        assert_eq!(last.0, Method::DELETE);
    });
}

#[tokio::test]
async fn nothing_is_sent_after_the_handshake_before_the_get_stream_is_answered() {
    // A server that sends a request on the GET stream right after the handshake (the official
    // TypeScript SDK drops it when no stream is open) must find the stream open.
    let server = Scripted::start(Mode::SlowGet).await;
    let client = scripted_client(&server, HttpClientConfig::default()).await;
    within(client.ping()).await.expect("ping");
    let events = server.seen(|seen| seen.events.clone());
    assert_eq!(
        events,
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET answered",
            "POST ping"
        ]
    );
    client.close();
}

#[tokio::test]
async fn an_oversized_event_fails_the_call_not_the_connection() {
    let server = Scripted::start(Mode::Normal).await;
    let config = HttpClientConfig {
        max_event_size: 16 * 1024,
        open_get_stream: false,
        ..HttpClientConfig::default()
    };
    let client = scripted_client(&server, config).await;
    let error = within(client.call_tool(CallToolParams::new("huge")))
        .await
        .expect_err("too large");
    assert!(error.to_string().contains("max_event_size"), "{error}");
    within(client.ping()).await.expect("the connection goes on");
    client.close();
}

#[tokio::test]
async fn a_legacy_connection_ends_with_its_stream() {
    use barrel_mcp::transport::http_client::LegacySseTransport;
    let mut server = TestServer::start(HttpConfig::default()).await;
    let url = format!("http://{}/sse", server.addr);
    let transport = LegacySseTransport::new(&url).expect("url");
    let client = within(builder(Some(ProtocolVersion::V2024_11_05)).connect(transport))
        .await
        .expect("connect");
    within(client.ping()).await.expect("ping");
    // The server goes away: its stream ends, and so does the connection (no call waits for
    // an answer that cannot come any more).
    server.stop().await;
    within(client.closed()).await;
    let after = within(client.ping()).await;
    assert!(after.is_err(), "{after:?}");
}

/// Ten sessions at once, each with the same request ids and progress tokens (every client
/// numbers its requests alike): each gets its own progress and its own result, nothing of
/// another's.
#[tokio::test]
async fn ten_sessions_with_the_same_ids_each_get_their_own_messages() {
    let mut server = TestServer::start(HttpConfig::default()).await;
    let mut runs = Vec::new();
    for n in 0..10u64 {
        let url = url(&server);
        runs.push(tokio::spawn(async move {
            let transport = HttpClientTransport::new(&url).expect("url");
            let client = builder(Some(ProtocolVersion::V2025_11_25))
                .connect_http(transport)
                .await
                .expect("connect");
            let seen = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&seen);
            let options = barrel_mcp::client::CallOptions::new()
                .on_progress(move |p| sink.lock().expect("lock").push(p.progress));
            let steps = 2 + n % 3;
            let mut args = serde_json::Map::new();
            args.insert("steps".into(), json!(steps));
            let counted = client
                .call_tool_with(
                    CallToolParams::new("countdown").with_arguments(args),
                    options,
                )
                .await
                .expect("countdown");
            let mut echo = serde_json::Map::new();
            echo.insert("message".into(), json!(format!("client {n}")));
            let echoed = client
                .call_tool(CallToolParams::new("echo").with_arguments(echo))
                .await
                .expect("echo");
            client.close();
            let progress = seen.lock().expect("lock").clone();
            (n, steps, counted.is_error(), progress, text(&echoed))
        }));
    }
    for run in runs {
        let (n, steps, failed, progress, echoed) = within(run).await.expect("a run");
        assert!(!failed, "client {n}");
        let expected: Vec<f64> = (1..=steps).map(|s| s as f64).collect();
        assert_eq!(progress, expected, "client {n} saw only its own progress");
        assert_eq!(echoed, format!("client {n}"));
    }
    server.stop().await;
}
