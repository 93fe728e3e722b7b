//! What the halves and the stream tasks of one HTTP client connection share: the HTTP client,
//! the session, and the queue to the reader.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use barrel_mcp_types::{Message, RequestId};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::Full;
use hyper::body::Incoming;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::authorized::{self, Credentials};
use super::connector::{self, ClientTls, HttpClient};
use super::headers::{self, HeaderParam};
use super::{HttpClientConfig, Inbound, exchange, retry};
use crate::transport::Handshake;
use crate::{Error, HttpError};

const CANCELLED: &str = "notifications/cancelled";
const INITIALIZED: &str = "notifications/initialized";
pub(super) const JSON_AND_SSE: &str = "application/json, text/event-stream";

/// The session, as far as this client knows it.
#[derive(Debug, Default)]
pub(super) struct Session {
    /// `Mcp-Session-Id`, once `initialize` was answered with one.
    pub(super) id: Option<HeaderValue>,
    /// The revision the `initialize` result chose.
    pub(super) version: Option<HeaderValue>,
}

pub(crate) struct State {
    pub(super) config: HttpClientConfig,
    url: Uri,
    headers: HeaderMap,
    client: HttpClient,
    credentials: Option<Credentials>,
    pub(super) session: Mutex<Session>,
    /// Held while the handshake is re-run, so concurrent 404s run it once.
    pub(super) reinit: tokio::sync::Mutex<()>,
    /// Who owns the handshake run again after a 404 (the client); without one, the 404 stands.
    pub(super) handshake: Option<Arc<dyn Handshake>>,
    pub(super) reinit_count: AtomicU64,
    /// Tools with `x-mcp-header` arguments, from the last `tools/list` answers.
    pub(super) tool_params: Mutex<HashMap<String, Vec<HeaderParam>>>,
    /// Calls in flight, and whether each is a 2026-07-28 one: cancelling a call drops its HTTP
    /// exchange (so a server that never answers holds no task or socket); a session's server
    /// is also told with `notifications/cancelled`, a 2026-07-28 one learns it from the
    /// dropped connection.
    pub(super) calls: Mutex<HashMap<RequestId, (CancellationToken, bool)>>,
    /// True while the GET stream task runs.
    pub(super) listening: AtomicBool,
    inbound: mpsc::Sender<Inbound>,
    pub(super) closed: CancellationToken,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("url", &self.url)
            .field("closed", &self.closed.is_cancelled())
            .finish_non_exhaustive()
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl State {
    pub(super) fn new(
        url: Uri,
        headers: HeaderMap,
        credentials: Option<Credentials>,
        config: HttpClientConfig,
        tls: &ClientTls,
        inbound: mpsc::Sender<Inbound>,
        closed: CancellationToken,
    ) -> Self {
        let client = connector::client(&config, tls);
        Self {
            config,
            url,
            headers,
            client,
            credentials,
            session: Mutex::new(Session::default()),
            reinit: tokio::sync::Mutex::new(()),
            handshake: None,
            reinit_count: AtomicU64::new(0),
            tool_params: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            listening: AtomicBool::new(false),
            inbound,
            closed,
        }
    }

    /// Hands a frame to the reader (waiting while its queue is full).
    pub(super) async fn deliver(&self, frame: crate::transport::Frame) {
        let _ = self.inbound.send(Ok(frame)).await;
    }

    /// Ends the connection with `error`, which the reader returns.
    pub(super) async fn fail(&self, error: Error) {
        tracing::debug!(%error, "HTTP transport failed");
        let _ = self.inbound.send(Err(error)).await;
    }

    /// Sends one message (see the module docs for what each kind does).
    pub(super) async fn send(self: &std::sync::Arc<Self>, message: Message) -> Result<(), Error> {
        if self.closed.is_cancelled() {
            return Err(Error::Closed);
        }
        match &message {
            Message::Request(request) => {
                let cancel = CancellationToken::new();
                let stateless = headers::claimed_version(&message).is_some();
                lock(&self.calls).insert(request.id.clone(), (cancel.clone(), stateless));
                let state = std::sync::Arc::clone(self);
                tokio::spawn(exchange::run(state, message, cancel));
                Ok(())
            }
            Message::Notification(n) if n.method == CANCELLED => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value);
                let call = id.and_then(|id| lock(&self.calls).remove(&id));
                match call {
                    // No session to tell: dropping the exchange is the cancellation.
                    Some((cancel, true)) => {
                        cancel.cancel();
                        Ok(())
                    }
                    Some((cancel, false)) => {
                        cancel.cancel();
                        self.post_one_way(&message).await
                    }
                    None => self.post_one_way(&message).await,
                }
            }
            _ => self.post_one_way(&message).await,
        }
    }

    /// POSTs a notification or a response, which the server acknowledges with 202.
    async fn post_one_way(self: &std::sync::Arc<Self>, message: &Message) -> Result<(), Error> {
        let mut retried = false;
        let initialized = matches!(message, Message::Notification(n) if n.method == INITIALIZED);
        loop {
            exchange::after_reinitialize(self).await;
            let (headers, session) = self.headers_for(message);
            let response = self.post(message.to_json(), headers).await?;
            let status = response.status();
            if status.is_success() {
                if initialized {
                    exchange::start_listening(self).await;
                }
                return Ok(());
            }
            if let Some(error) = refusal(&response) {
                return Err(error);
            }
            if status == StatusCode::NOT_FOUND
                && !retried
                && self.reinitializes()
                && let Some(stale) = session
            {
                exchange::reinitialize_detached(self, &stale).await?;
                retried = true;
                continue;
            }
            let why = retry::gave_up(&response).unwrap_or_default();
            tracing::debug!(%status, "the server refused a notification or response {why}");
            return Ok(());
        }
    }

    /// True when a 404 for the session re-runs the handshake: asked for, and someone owns it.
    pub(super) fn reinitializes(&self) -> bool {
        self.config.reinitialize && self.handshake.is_some()
    }

    /// The headers for `message`, and the session id they carry.
    pub(super) fn headers_for(&self, message: &Message) -> (HeaderMap, Option<HeaderValue>) {
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(JSON_AND_SSE));
        let is_initialize = matches!(message, Message::Request(r) if r.method == "initialize");
        if let Some(version) = headers::claimed_version(message) {
            if let Ok(version) = HeaderValue::try_from(version) {
                headers.insert(headers::PROTOCOL_VERSION, version);
            }
            if let Message::Request(request) = message {
                headers::modern(request, &lock(&self.tool_params), &mut headers);
            }
            return (headers, None);
        }
        if is_initialize {
            return (headers, None);
        }
        let session = lock(&self.session);
        if let Some(version) = &session.version {
            headers.insert(headers::PROTOCOL_VERSION, version.clone());
        }
        if let Some(id) = &session.id {
            headers.insert(headers::SESSION_ID, id.clone());
        }
        (headers, session.id.clone())
    }

    /// One POST; `Err` only when no answer came (the connection ends).
    pub(super) async fn post(
        &self,
        body: String,
        headers: HeaderMap,
    ) -> Result<Response<Incoming>, Error> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Error::Protocol(format!("building the request: {e}")))?;
        *request.headers_mut() = headers;
        self.request(request).await
    }

    /// A GET for the session's stream, resuming after `last_event_id` when given.
    pub(super) async fn get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Response<Incoming>, Error> {
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        {
            let session = lock(&self.session);
            if let Some(version) = &session.version {
                headers.insert(headers::PROTOCOL_VERSION, version.clone());
            }
            if let Some(id) = &session.id {
                headers.insert(headers::SESSION_ID, id.clone());
            }
        }
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::try_from(id).ok()) {
            headers.insert(headers::LAST_EVENT_ID, id);
        }
        let mut request = Request::builder()
            .method(Method::GET)
            .uri(self.url.clone())
            .body(Full::new(Bytes::new()))
            .map_err(|e| Error::Protocol(format!("building the request: {e}")))?;
        *request.headers_mut() = headers;
        self.request(request).await
    }

    /// Sends `request`, again after a 503 or 429 as [`HttpClientConfig::retry`] allows; a wait
    /// ends at once when the connection closes.
    async fn request(&self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, Error> {
        self.request_until(request, Some(&self.closed)).await
    }

    /// [`request`](Self::request), whose waits end when `stop` is cancelled (if given).
    async fn request_until(
        &self,
        request: Request<Full<Bytes>>,
        stop: Option<&CancellationToken>,
    ) -> Result<Response<Incoming>, Error> {
        let limit = self.config.response_timeout;
        retry::send(&self.config.retry, request, stop, |request| async move {
            authorized::send(&self.client, self.credentials.as_ref(), request, limit)
                .await
                .map_err(|e| e.into_error(&self.url, limit))
        })
        .await
    }

    /// Stops every stream and DELETEs the session.
    pub(super) async fn close(&self) {
        self.closed.cancel();
        let session = lock(&self.session).id.clone();
        let Some(session) = session else { return };
        self.delete(session).await;
    }

    /// DELETEs session `session`, within `close_timeout`; a failure is only logged.
    pub(super) async fn delete(&self, session: HeaderValue) {
        let mut headers = self.headers.clone();
        headers.insert(headers::SESSION_ID, session);
        if let Some(version) = lock(&self.session).version.clone() {
            headers.insert(headers::PROTOCOL_VERSION, version);
        }
        let Ok(mut request) = Request::builder()
            .method(Method::DELETE)
            .uri(self.url.clone())
            .body(Full::new(Bytes::new()))
        else {
            return;
        };
        *request.headers_mut() = headers;
        // Closing is under way (the connection's token is cancelled): a retry waits all the
        // same, within `close_timeout`.
        let deleted = self.request_until(request, None);
        match tokio::time::timeout(self.config.close_timeout, deleted).await {
            Ok(Ok(response)) => {
                tracing::debug!(status = %response.status(), "session deleted");
            }
            Ok(Err(e)) => tracing::debug!("DELETE failed: {e}"),
            Err(_) => tracing::debug!("DELETE timed out"),
        }
    }
}

/// A status that ends the connection: 401/403 (authorization) and 5xx (a 503 once retrying
/// it gave up, which the message says).
pub(super) fn refusal<B>(response: &Response<B>) -> Option<Error> {
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        return Some(Error::Http(HttpError {
            status: Some(status.as_u16()),
            message: "the server requires authorization".into(),
            www_authenticate: challenge,
        }));
    }
    if status.is_server_error() {
        let mut message = status
            .canonical_reason()
            .unwrap_or("server error")
            .to_owned();
        if let Some(why) = retry::gave_up(response) {
            message = format!("{message}; {why}");
        }
        return Some(Error::Http(HttpError {
            status: Some(status.as_u16()),
            message,
            www_authenticate: None,
        }));
    }
    None
}

/// An error and its causes, for people: hyper-util's own text ("client error (Connect)") says
/// little without them.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The id of the `initialize` a lost session is taken up again with (its own namespace, never
/// one of the peer's integer ids).
pub(super) fn next_reinit_id(state: &State) -> RequestId {
    let n = state.reinit_count.fetch_add(1, Ordering::Relaxed);
    RequestId::String(format!("barrel-mcp-reinitialize-{n}"))
}
