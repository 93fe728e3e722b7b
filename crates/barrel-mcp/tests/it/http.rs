//! Streamable HTTP server tests, over real sockets on 127.0.0.1 and through `Router::oneshot`.
//!
//! [`TestServer`] runs the fixture server behind the ready listener; [`Client`] is a raw
//! HTTP/1.1 client (one connection per request, so a test can hold a stream open while it sends
//! more), and [`SseReader`] reads events off a streamed body.

#[cfg(feature = "auth")]
mod auth;
#[cfg(feature = "auth")]
mod auth_remote;
mod hostile;
mod http2;
mod http2_floods;
mod legacy;
mod limits;
mod listen;
mod nodes;
mod security;
mod sessionless;
mod sessions;
mod stateless;
mod streams;
#[cfg(feature = "tls")]
mod tls;

use std::net::SocketAddr;

use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::server::Server;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::within;

/// The fixture server behind the listener.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    pub(crate) http: StreamableHttp,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<barrel_mcp::Result<()>>>,
}

impl TestServer {
    pub(crate) async fn start(config: HttpConfig) -> Self {
        let (server, _) = crate::server::fixture::server();
        Self::start_with(server, config).await
    }

    pub(crate) async fn start_with(server: Server, config: HttpConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        Self::start_on(listener, server, config)
    }

    /// Serves on a listener bound beforehand (a configuration that names the address).
    pub(crate) fn start_on(
        listener: tokio::net::TcpListener,
        server: Server,
        config: HttpConfig,
    ) -> Self {
        let addr = listener.local_addr().expect("addr");
        let http = StreamableHttp::new(server, config);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(barrel_mcp::http::serve(listener, http.clone(), async {
            let _ = stopped.await;
        }));
        Self {
            addr,
            http,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub(crate) fn client(&self) -> Client {
        Client {
            addr: self.addr,
            session: None,
        }
    }

    /// Stops the listener and waits for the graceful shutdown to finish.
    pub(crate) async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            within(task).await.expect("join").expect("serve");
        }
    }
}

/// A raw HTTP client bound to one server, remembering the session id it was given.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) addr: SocketAddr,
    pub(crate) session: Option<String>,
}

/// A response with its body not read yet.
pub(crate) type Response = http::Response<Incoming>;

impl Client {
    /// Sends one request on a fresh connection. `Host` defaults to the server's address;
    /// `headers` may override it.
    pub(crate) async fn send(
        &self,
        method: Method,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        self.send_to(method, "/mcp", headers, body).await
    }

    /// [`send`](Self::send) to another path.
    pub(crate) async fn send_to(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        let stream = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        let mut request = http::Request::builder().method(method).uri(path);
        let host = self.addr.to_string();
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            request = request.header("host", host.as_str());
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.as_str());
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = Full::new(Bytes::from(body.unwrap_or("").to_owned()));
        within(sender.send_request(request.body(body).expect("request")))
            .await
            .expect("send")
    }

    /// POSTs a JSON-RPC message the way a 2025 client does.
    pub(crate) async fn post(&self, message: &Value) -> Response {
        self.post_with(message, &[]).await
    }

    pub(crate) async fn post_with(&self, message: &Value, extra: &[(&str, &str)]) -> Response {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        headers.extend_from_slice(extra);
        self.send(Method::POST, &headers, Some(&message.to_string()))
            .await
    }

    /// `initialize` + `notifications/initialized`; keeps the session id.
    pub(crate) async fn initialize(&mut self) -> Value {
        self.session = None;
        let response = self.post(&initialize(1)).await;
        assert_eq!(response.status(), StatusCode::OK);
        let id = session_id(response.headers()).expect("Mcp-Session-Id");
        let result = SseReader::new(response).next_message().await;
        self.session = Some(id);
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let ack = self.post(&initialized).await;
        assert_eq!(ack.status(), StatusCode::ACCEPTED);
        result
    }

    /// A request in a session, answered as JSON; returns the response message.
    pub(crate) async fn call_json(&self, id: i64, method: &str, params: Value) -> Value {
        let message = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        let response = self
            .send(
                Method::POST,
                &[
                    ("content-type", "application/json"),
                    ("accept", "application/json"),
                ],
                Some(&message.to_string()),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{method}");
        body_json(response).await
    }
}

/// An `initialize` request for 2025-11-25 with sampling and elicitation.
pub(crate) fn initialize(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25",
        "capabilities":{"sampling":{},"elicitation":{}},
        "clientInfo":{"name":"http-test","version":"1"}}})
}

pub(crate) fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .map(|v| v.to_str().expect("ascii").to_owned())
}

pub(crate) async fn body_bytes(response: Response) -> Bytes {
    within(response.into_body().collect())
        .await
        .expect("body")
        .to_bytes()
}

pub(crate) async fn body_json(response: Response) -> Value {
    let bytes = body_bytes(response).await;
    serde_json::from_slice(&bytes).expect("JSON body")
}

/// One SSE event.
#[derive(Debug, Clone, Default)]
pub(crate) struct Event {
    pub(crate) id: Option<String>,
    pub(crate) retry: Option<String>,
    pub(crate) data: String,
}

/// Reads events off a streamed response body.
pub(crate) struct SseReader {
    body: Incoming,
    buffer: String,
}

impl SseReader {
    pub(crate) fn new(response: Response) -> Self {
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("ascii").to_owned());
        assert_eq!(content_type.as_deref(), Some("text/event-stream"));
        Self {
            body: response.into_body(),
            buffer: String::new(),
        }
    }

    /// The next event (comments skipped), or `None` when the stream ended.
    pub(crate) async fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event::default();
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_owned());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("retry: ") {
                        event.retry = Some(v.to_owned());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        event.data.push_str(v);
                        any = true;
                    } else if line.starts_with("data:") {
                        any = true;
                    }
                }
                if any {
                    return Some(event);
                }
                continue;
            }
            let frame = within(self.body.frame()).await?.expect("body frame");
            if let Ok(data) = frame.into_data() {
                self.buffer
                    .push_str(std::str::from_utf8(&data).expect("utf-8"));
            }
        }
    }

    /// The next event that carries a JSON-RPC message.
    pub(crate) async fn next_message(&mut self) -> Value {
        loop {
            let event = self.next_event().await.expect("stream ended early");
            if !event.data.is_empty() {
                return serde_json::from_str(&event.data).expect("JSON event");
            }
        }
    }
}

/// A 2026-07-28 request body with the envelope.
pub(crate) fn enveloped(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
    });
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

/// Through the router alone (no socket): the router is a plain tower service.
#[tokio::test]
async fn router_answers_oneshot() {
    use tower::ServiceExt;
    let (server, _) = crate::server::fixture::server();
    let http = StreamableHttp::new(server, HttpConfig::default());
    let request = http::Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .body(axum::body::Body::from(
            enveloped(1, "server/discover", json!({})).to_string(),
        ))
        .expect("request");
    let response = http.router().oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes).expect("json");
    assert!(body["result"]["supportedVersions"].is_array(), "{body}");
    assert_eq!(http.session_count(), 0, "2026-07-28 allocates no session");
}
