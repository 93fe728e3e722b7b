//! What the proxy tests stand on: a tiny hyper backend that records what it receives, a
//! client that speaks over exactly one keep-alive connection, and a port nobody listens on.
//!
//! The backend's routes:
//! - `/sse`: an event stream; `data: 1` at once, `data: 2` and the end only after
//!   [`Backend::release`];
//! - `/hold`: answers only after [`Backend::release`];
//! - `/status/CODE`: that status, with multi-valued and hop-by-hop headers to filter;
//! - anything else: 200 with the backend's name as the body; on `/mcp`, a request without
//!   `Mcp-Session-Id` gets `Mcp-Session-Id: session-1` back, like an `initialize`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::channel::Channel;
use http_body_util::{BodyExt as _, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One request as a backend received it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// The path and query.
    pub(crate) target: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

type Body = Either<Full<Bytes>, Channel<Bytes, Infallible>>;

/// A running test backend; stops when dropped.
pub(crate) struct Backend {
    pub(crate) addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    release: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Backend {
    /// Starts a backend that answers with `name`.
    pub(crate) async fn start(name: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new(Notify::new());
        let (seen2, release2) = (Arc::clone(&seen), Arc::clone(&release));
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (seen, release) = (Arc::clone(&seen2), Arc::clone(&release2));
                let service = service_fn(move |request| {
                    let (seen, release) = (Arc::clone(&seen), Arc::clone(&release));
                    async move { Ok::<_, Infallible>(answer(name, request, &seen, release).await) }
                });
                connections.spawn(async move {
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            seen,
            release,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it received so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }

    /// Lets the `/sse` stream send its last event and end, or a `/hold` request be answered.
    pub(crate) fn release(&self) {
        self.release.notify_one();
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    name: &'static str,
    request: Request<Incoming>,
    seen: &Mutex<Vec<Seen>>,
    release: Arc<Notify>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    seen.lock().expect("seen").push(Seen {
        method: parts.method.to_string(),
        target: parts.uri.to_string(),
        headers: parts.headers.clone(),
        body,
    });
    let full = |text: &str| Either::Left(Full::new(Bytes::from(text.to_owned())));
    if path == "/sse" {
        let (mut sender, channel) = Channel::new(4);
        tokio::spawn(async move {
            let _ = sender.send(Frame::data(Bytes::from("data: 1\n\n"))).await;
            release.notified().await;
            let _ = sender.send(Frame::data(Bytes::from("data: 2\n\n"))).await;
        });
        return Response::builder()
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(Either::Right(channel))
            .expect("sse response");
    }
    if path == "/hold" {
        release.notified().await;
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return Response::builder()
            .status(StatusCode::from_bytes(code.as_bytes()).expect("a status"))
            .header("content-type", "text/x-teapot")
            .header("x-backend", name)
            .header("x-multi", "a")
            .header("x-multi", "b")
            .header("connection", "x-private")
            .header("x-private", "hop")
            .header("keep-alive", "timeout=5")
            .header("proxy-authenticate", "Basic")
            .body(full(name))
            .expect("status response");
    }
    let mut response = Response::builder().header("x-backend", name);
    if path == "/mcp" && !parts.headers.contains_key("mcp-session-id") {
        response = response.header("mcp-session-id", "session-1");
    }
    response.body(full(name)).expect("response")
}

/// A client over exactly one TCP connection, kept alive across requests.
pub(crate) struct OneConnection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OneConnection {
    /// Closes the connection at once, whatever is in flight.
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OneConnection {
    pub(crate) async fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr)
            .await
            .expect("connect to the proxy");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        let task = tokio::spawn(async move {
            let _ = connection.await;
        });
        Self { sender, task }
    }

    /// Sends `request` on this connection (a `Host` header is the caller's to set).
    pub(crate) async fn send(&mut self, request: Request<Full<Bytes>>) -> Response<Incoming> {
        self.sender
            .ready()
            .await
            .expect("the connection is still open");
        self.sender.send_request(request).await.expect("a response")
    }

    /// Sends and reads the whole answer.
    pub(crate) async fn call(&mut self, request: Request<Full<Bytes>>) -> (StatusCode, String) {
        let response = self.send(request).await;
        let status = response.status();
        (status, text(response).await)
    }
}

/// A request with `Host: localhost`.
pub(crate) fn request(method: &str, path: &str, body: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request")
}

/// A response's whole body as text.
pub(crate) async fn text(response: Response<Incoming>) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An address that refuses connections: a port bound but never listened on, held for as long
/// as this lives (so no other test can take it meanwhile).
pub(crate) struct DeadPort {
    _socket: tokio::net::TcpSocket,
    pub(crate) url: String,
}

impl DeadPort {
    pub(crate) fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let url = format!("http://{}", socket.local_addr().expect("addr"));
        Self {
            _socket: socket,
            url,
        }
    }
}

/// A child process killed when dropped (a failed or timed-out test leaves nothing behind).
pub(crate) struct KillOnDrop(pub(crate) std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fails a test that hangs.
pub(crate) async fn within<T>(test: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), test)
        .await
        .expect("the test did not finish within 20 s")
}
