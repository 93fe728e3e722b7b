//! A bare HTTP/1.1 connection to the server: requests written as the run wants them, answers
//! read as slowly as it wants, or never.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;

/// Whatever failed in a run (I/O, HTTP, an answer that is not what was expected).
pub(crate) type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The revision the soak speaks.
pub(crate) const REVISION: &str = "2025-11-25";

/// One keep-alive connection (one request at a time).
pub(crate) struct Connection {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Connection {
    /// Connects to the server at `addr`.
    pub(crate) async fn open(addr: SocketAddr) -> Result<Self, Failure> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Self {
            sender,
            host: addr.to_string(),
        })
    }

    /// Sends one request to `/mcp`: a JSON-RPC `message` when given, for `session` when given.
    pub(crate) async fn send(
        &mut self,
        method: Method,
        session: Option<&str>,
        message: Option<&Value>,
    ) -> Result<Response<Incoming>, Failure> {
        let accept = if method == Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        let mut request = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", &self.host)
            .header("accept", accept)
            .header("mcp-protocol-version", REVISION);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let body = match message {
            Some(message) => {
                request = request.header("content-type", "application/json");
                Bytes::from(serde_json::to_vec(message)?)
            }
            None => Bytes::new(),
        };
        self.sender.ready().await?;
        Ok(self
            .sender
            .send_request(request.body(Full::new(body))?)
            .await?)
    }
}

/// The whole body of an answer as text.
pub(crate) async fn text(response: Response<Incoming>) -> Result<String, Failure> {
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8(bytes.to_vec())?)
}

/// The session id an answer carries.
pub(crate) fn session_id(response: &Response<Incoming>) -> Option<String> {
    response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Fails with `what` unless `status` is one of `expected`.
pub(crate) fn expect_status(
    response: &Response<Incoming>,
    expected: &[u16],
    what: &str,
) -> Result<(), Failure> {
    let status = response.status().as_u16();
    if expected.contains(&status) {
        Ok(())
    } else {
        Err(format!("{what}: status {status}").into())
    }
}
