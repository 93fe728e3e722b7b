//! The legacy transports: 2024-11-05 HTTP+SSE (a GET stream, and POSTs to the endpoint it
//! names), and plain JSON-RPC over POST for clients that accept only `application/json`.

use std::net::SocketAddr;
use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use super::{Response, SseReader, TestServer, body_json, session_id};
use crate::support::within;

/// One request to `path` on a fresh connection.
async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let host = addr.to_string();
    let mut request = http::Request::builder().method(method).uri(path);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request = request.header("host", host.as_str());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = Full::new(Bytes::from(body.unwrap_or("").to_owned()));
    within(sender.send_request(request.body(body).expect("request")))
        .await
        .expect("send")
}

/// A legacy client: the SSE stream and the endpoint it announced.
struct Legacy {
    addr: SocketAddr,
    stream: SseReader,
    endpoint: String,
}

impl Legacy {
    async fn open(addr: SocketAddr) -> Self {
        let response = send(
            addr,
            Method::GET,
            "/sse",
            &[("accept", "text/event-stream")],
            None,
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            session_id(response.headers()).is_none(),
            "no Mcp-Session-Id"
        );
        let mut stream = SseReader::new(response);
        let first = stream.next_event().await.expect("endpoint event");
        assert!(first.id.is_none() && first.retry.is_none(), "{first:?}");
        let endpoint = first.data;
        assert!(
            endpoint.starts_with("/messages?sessionId="),
            "endpoint: {endpoint}"
        );
        Self {
            addr,
            stream,
            endpoint,
        }
    }

    fn session(&self) -> &str {
        self.endpoint
            .strip_prefix("/messages?sessionId=")
            .expect("announced")
    }

    async fn post(&self, message: &Value) -> StatusCode {
        send(
            self.addr,
            Method::POST,
            &self.endpoint,
            &[("content-type", "application/json")],
            Some(&message.to_string()),
        )
        .await
        .status()
    }

    /// `initialize` (2024-11-05) and `notifications/initialized`.
    async fn initialize(&mut self) -> Value {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2024-11-05","capabilities":{"sampling":{}},
            "clientInfo":{"name":"legacy-test","version":"1"}}});
        assert_eq!(self.post(&init).await, StatusCode::ACCEPTED);
        let answer = self.stream.next_message().await;
        assert_eq!(answer["id"], 1);
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        assert_eq!(self.post(&initialized).await, StatusCode::ACCEPTED);
        answer
    }
}

#[tokio::test]
async fn http_sse_session_with_a_tool_call_and_a_sampling_round_trip() {
    let mut server = TestServer::start(HttpConfig::default()).await;
    let mut legacy = Legacy::open(server.addr).await;
    let answer = legacy.initialize().await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2024-11-05",
        "{answer}"
    );
    assert_eq!(server.http.session_count(), 1);

    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                      "params":{"name":"add","arguments":{"a":2,"b":3}}});
    assert_eq!(legacy.post(&call).await, StatusCode::ACCEPTED);
    let answer = legacy.stream.next_message().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"]["content"][0]["text"], "{\"sum\":5}",
        "{answer}"
    );

    // The server's own request rides the same stream; the answer is POSTed back.
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
                      "params":{"name":"summarize","arguments":{}}});
    assert_eq!(legacy.post(&call).await, StatusCode::ACCEPTED);
    let asked = legacy.stream.next_message().await;
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    let reply = json!({"jsonrpc":"2.0","id":asked["id"],"result":{
        "role":"assistant","content":{"type":"text","text":"short"},"model":"m"}});
    assert_eq!(legacy.post(&reply).await, StatusCode::ACCEPTED);
    let answer = legacy.stream.next_message().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["content"][0]["text"], "Summary: short");

    // Shutdown answers what runs, then ends the stream.
    server.stop().await;
    assert!(within(legacy.stream.next_event()).await.is_none());
}

#[tokio::test]
async fn the_messages_endpoint_checks_everything_first() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let legacy = Legacy::open(addr).await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
    let json_type = [("content-type", "application/json")];
    let response = send(addr, Method::POST, "/messages", &json_type, Some(&ping)).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let unknown = "/messages?sessionId=nope";
    let response = send(addr, Method::POST, unknown, &json_type, Some(&ping)).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let text = [("content-type", "text/plain")];
    let path = legacy.endpoint.clone();
    let response = send(addr, Method::POST, &path, &text, Some(&ping)).await;
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let evil = [
        ("content-type", "application/json"),
        ("origin", "http://evil.example"),
    ];
    let response = send(addr, Method::POST, &path, &evil, Some(&ping)).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let rebound = [
        ("host", "attacker.example"),
        ("accept", "text/event-stream"),
    ];
    let response = send(addr, Method::GET, "/sse", &rebound, None).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = send(addr, Method::GET, &path, &[], None).await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    let response = send(addr, Method::POST, &path, &json_type, Some("[]")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = send(addr, Method::POST, &path, &json_type, Some("{")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body_json(response).await["error"]["code"], -32700);

    // The two kinds of session never reach each other.
    let mut modern = server.client();
    modern.initialize().await;
    let modern_id = modern.session.clone().expect("session");
    let crossed = format!("/messages?sessionId={modern_id}");
    let response = send(addr, Method::POST, &crossed, &json_type, Some(&ping)).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let mut borrowed = server.client();
    borrowed.session = Some(legacy.session().to_owned());
    let response = borrowed
        .post(&json!({"jsonrpc":"2.0","id":5,"method":"ping"}))
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_legacy_session_ends_with_its_stream_and_shares_the_session_cap() {
    let config = HttpConfig {
        max_sessions: 1,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let legacy = Legacy::open(server.addr).await;
    let endpoint = legacy.endpoint.clone();
    assert_eq!(server.http.session_count(), 1);
    // The cap counts both kinds.
    let response = send(
        server.addr,
        Method::GET,
        "/sse",
        &[("accept", "text/event-stream")],
        None,
    )
    .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let response = server.client().post(&super::initialize(1)).await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    drop(legacy);
    within(async {
        while server.http.session_count() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
    let response = send(
        server.addr,
        Method::POST,
        &endpoint,
        &[("content-type", "application/json")],
        Some(&ping),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn legacy_paths_can_be_turned_off_or_moved() {
    let config = HttpConfig {
        legacy_sse: false,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let accept = [("accept", "text/event-stream")];
    let response = send(server.addr, Method::GET, "/sse", &accept, None).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    let config = HttpConfig {
        legacy_sse_path: "/old/events".to_owned(),
        legacy_messages_path: "/old/post".to_owned(),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let response = send(server.addr, Method::GET, "/old/events", &accept, None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);
    let endpoint = stream.next_event().await.expect("endpoint").data;
    assert!(endpoint.starts_with("/old/post?sessionId="), "{endpoint}");
}

/// Plain JSON-RPC over POST: a client that accepts only `application/json` gets one JSON body
/// per request, in a session, for everything that needs no server-to-client request.
#[tokio::test]
async fn plain_json_rpc_over_post() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client();
    let json_only = [
        ("content-type", "application/json"),
        ("accept", "application/json"),
    ];
    let response = client
        .send(
            Method::POST,
            &json_only,
            Some(&super::initialize(1).to_string()),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().expect("ascii"),
        "application/json"
    );
    client.session = session_id(response.headers());
    assert!(client.session.is_some());
    let answer = body_json(response).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string();
    let response = client
        .send(Method::POST, &json_only, Some(&initialized))
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);

    let tools = client.call_json(2, "tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    let sum = client
        .call_json(
            3,
            "tools/call",
            json!({"name":"add","arguments":{"a":1,"b":2}}),
        )
        .await;
    assert_eq!(sum["result"]["structuredContent"]["sum"], 3, "{sum}");
    // Progress has no stream to ride: the answer is still one JSON body.
    let done = client
        .call_json(
            4,
            "tools/call",
            json!({"name":"countdown","arguments":{"steps":3},"_meta":{"progressToken":"p"}}),
        )
        .await;
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    let read = client.call_json(5, "resources/list", json!({})).await;
    assert!(read["result"]["resources"].is_array(), "{read}");
}

#[tokio::test]
async fn nested_under_a_prefix_the_endpoint_event_names_the_prefixed_path() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let (server, _) = crate::server::fixture::server();
    let http = barrel_mcp::http::StreamableHttp::new(server, HttpConfig::default());
    let app = axum::Router::new()
        .nest("/api/v1", http.router())
        .nest("/t/{tenant}", http.router());
    // Under a nest with a parameter, the endpoint names the path actually used.
    let tenant = http::Request::builder()
        .method(Method::GET)
        .uri("/t/acme/sse")
        .header("host", "localhost")
        .header("accept", "text/event-stream")
        .body(axum::body::Body::empty())
        .expect("request");
    let response = app.clone().oneshot(tenant).await.expect("infallible");
    let mut tenant_body = response.into_body();
    let frame = within(tenant_body.frame())
        .await
        .expect("a frame")
        .expect("data");
    let first = String::from_utf8(frame.into_data().expect("data").to_vec()).expect("utf-8");
    assert!(
        first.starts_with("event: endpoint\ndata: /t/acme/messages?sessionId="),
        "{first:?}"
    );
    drop(tenant_body);
    let open = http::Request::builder()
        .method(Method::GET)
        .uri("/api/v1/sse")
        .header("host", "localhost")
        .header("accept", "text/event-stream")
        .body(axum::body::Body::empty())
        .expect("request");
    let response = app.clone().oneshot(open).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let frame = within(body.frame()).await.expect("a frame").expect("data");
    let first = String::from_utf8(frame.into_data().expect("data").to_vec()).expect("utf-8");
    let endpoint = first
        .strip_prefix("event: endpoint\ndata: ")
        .and_then(|rest| rest.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("endpoint event: {first:?}"));
    assert!(
        endpoint.starts_with("/api/v1/messages?sessionId="),
        "{endpoint}"
    );

    // The announced path reaches the session through the nested router.
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},
        "clientInfo":{"name":"nested","version":"0"}}});
    let post = http::Request::builder()
        .method(Method::POST)
        .uri(endpoint)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(initialize.to_string()))
        .expect("request");
    let response = app.oneshot(post).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let frame = within(body.frame()).await.expect("a frame").expect("data");
    let event = String::from_utf8(frame.into_data().expect("data").to_vec()).expect("utf-8");
    assert!(
        event.contains("\"protocolVersion\":\"2024-11-05\""),
        "{event}"
    );
}

#[tokio::test]
async fn two_session_ids_in_the_query_are_refused() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut legacy = Legacy::open(server.addr).await;
    legacy.initialize().await;
    let ping = json!({"jsonrpc":"2.0","id":7,"method":"ping"}).to_string();
    for path in [
        format!("{}&sessionId=forged", legacy.endpoint),
        format!(
            "/messages?sessionId=forged&{}",
            &legacy.endpoint["/messages?".len()..]
        ),
    ] {
        let response = send(
            server.addr,
            Method::POST,
            &path,
            &[("content-type", "application/json")],
            Some(&ping),
        )
        .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
    }
    // The session itself goes on.
    assert_eq!(
        legacy
            .post(&json!({"jsonrpc":"2.0","id":8,"method":"ping"}))
            .await,
        StatusCode::ACCEPTED
    );
    assert_eq!(legacy.stream.next_message().await["id"], 8);
}
