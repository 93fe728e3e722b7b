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

/// The longest a request may wait for its answer, or an answer's body to arrive whole: past
/// it the session fails the run instead of hanging it.
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

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

    /// Opens a session: `initialize`, then `notifications/initialized`; returns its id.
    pub(crate) async fn open_session(&mut self, client: &str) -> Result<String, Failure> {
        let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": REVISION, "capabilities": {},
                       "clientInfo": {"name": client, "version": "0"}}});
        let answer = self.send(Method::POST, None, Some(&initialize)).await?;
        expect_status(&answer, &[200], "initialize")?;
        let id = session_id(&answer).ok_or("initialize: no session id")?;
        text(answer).await?;
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self
            .send(Method::POST, Some(&id), Some(&initialized))
            .await?;
        expect_status(&answer, &[202], "initialized")?;
        text(answer).await?;
        Ok(id)
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
        let request = request.body(Full::new(body))?;
        let exchange = async {
            self.sender.ready().await?;
            self.sender.send_request(request).await
        };
        Ok(tokio::time::timeout(ANSWER_WITHIN, exchange)
            .await
            .map_err(|_| "no answer within 30 s")??)
    }
}

/// The whole body of an answer as text.
pub(crate) async fn text(response: Response<Incoming>) -> Result<String, Failure> {
    let body = tokio::time::timeout(ANSWER_WITHIN, response.into_body().collect())
        .await
        .map_err(|_| "the body did not end within 30 s")??;
    let bytes = body.to_bytes();
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
