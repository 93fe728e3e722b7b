//! The HTTP+SSE client of 2024-11-05: a GET opens the event stream, whose first `endpoint`
//! event names where to POST; every server message then arrives on that stream as a `message`
//! event, and every client message is one POST to the endpoint (answered 202).

use std::sync::Arc;

use barrel_mcp_types::jsonrpc;
use barrel_mcp_types::{ErrorCode, ErrorObject, Message, Response};
use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::authorized::{self, Credentials, SendError};
use super::connector::{self, ClientTls, HttpClient};
use super::sse::{Item, SseDecoder};
use super::state::refusal;
use super::{HttpClientConfig, Inbound, header_pair, parse_url};
use crate::auth::client::TokenSource;
use crate::transport::{Frame, MessageReader, MessageWriter, Transport};
use crate::{Error, HttpError};

/// A connection to a 2024-11-05 HTTP+SSE server, given the URL of its SSE endpoint. Speak
/// 2024-11-05 over it ([`ClientBuilder::pin`](crate::client::ClientBuilder::pin)); the stream
/// is not resumed when it breaks (the connection ends).
#[derive(Debug, Clone)]
pub struct LegacySseTransport {
    url: Uri,
    headers: HeaderMap,
    credentials: Option<Credentials>,
    config: HttpClientConfig,
    tls: ClientTls,
}

impl LegacySseTransport {
    /// Opens the SSE stream at `url` when split: `http://`, or `https://` with the feature
    /// `http-client-tls`.
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self {
            url: parse_url(url)?,
            headers: HeaderMap::new(),
            credentials: None,
            config: HttpClientConfig::default(),
            tls: ClientTls::new()?,
        })
    }

    /// Trusts the CA certificates in `pem` for `https://`, besides Mozilla's roots (see
    /// [`HttpClientTransport::add_root_certificates`](super::HttpClientTransport::add_root_certificates)).
    #[cfg(feature = "http-client-tls")]
    pub fn add_root_certificates(mut self, pem: &[u8]) -> Result<Self, Error> {
        self.tls.add_roots_pem(pem)?;
        Ok(self)
    }

    /// Like [`add_root_certificates`](Self::add_root_certificates), from a PEM file.
    #[cfg(feature = "http-client-tls")]
    pub fn add_root_certificates_file(
        mut self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, Error> {
        self.tls.add_roots_pem_file(path.as_ref())?;
        Ok(self)
    }

    /// Uses this rustls configuration as it is for `https://` (see
    /// [`HttpClientTransport::rustls_config`](super::HttpClientTransport::rustls_config)).
    #[cfg(feature = "http-client-tls")]
    pub fn rustls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls.set_rustls(config);
        self
    }

    /// Sends this header with every request (never shown by `Debug`).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let (name, value) = header_pair(name, value)?;
        self.headers.append(name, value);
        Ok(self)
    }

    /// Gets the `Authorization` header of the stream's GET and of every POST from `source`
    /// (see [`HttpClientTransport::auth`](super::HttpClientTransport::auth)).
    pub fn auth(mut self, source: impl TokenSource) -> Self {
        self.credentials = Some(Credentials(Arc::new(source)));
        self
    }

    /// Replaces every limit at once (`max_event_size`, `max_body_size`, `connect_timeout` and
    /// `inbound_queue` apply).
    pub fn config(mut self, config: HttpClientConfig) -> Self {
        self.config = config;
        self
    }
}

impl Transport for LegacySseTransport {
    type Reader = LegacyReader;
    type Writer = LegacyWriter;

    /// Must be called within a Tokio runtime: it starts the task that reads the stream.
    fn split(self) -> (LegacyReader, LegacyWriter) {
        let client = connector::client(&self.config, &self.tls);
        let (tx, rx) = mpsc::channel(self.config.inbound_queue.max(1));
        let (endpoint_tx, endpoint_rx) = watch::channel(None);
        let closed = CancellationToken::new();
        let shared = Arc::new(Shared {
            client,
            headers: self.headers,
            credentials: self.credentials,
            response_timeout: self.config.response_timeout,
            inbound: tx,
        });
        let task = Arc::clone(&shared);
        let stop = closed.clone();
        let (url, max) = (self.url, self.config.max_event_size);
        tokio::spawn(async move {
            tokio::select! {
                () = read_stream(&task, url, max, endpoint_tx) => {
                    // The one stream is the connection: its end ends the reader's input (after
                    // any error it queued), so calls in flight fail at once.
                    stop.cancel();
                }
                () = stop.cancelled() => {}
            }
        });
        (
            LegacyReader {
                rx,
                closed: closed.clone(),
            },
            LegacyWriter {
                shared,
                endpoint: endpoint_rx,
                _closed: closed.drop_guard(),
            },
        )
    }
}

struct Shared {
    client: HttpClient,
    headers: HeaderMap,
    credentials: Option<Credentials>,
    response_timeout: std::time::Duration,
    inbound: mpsc::Sender<Inbound>,
}

async fn read_stream(
    shared: &Shared,
    url: Uri,
    max_event_size: usize,
    endpoint: watch::Sender<Option<Uri>>,
) {
    let fail = |error: Error| async move {
        let _ = shared.inbound.send(Err(error)).await;
    };
    let mut headers = shared.headers.clone();
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let Ok(mut request) = Request::builder()
        .method(Method::GET)
        .uri(url.clone())
        .body(Full::new(Bytes::new()))
    else {
        return;
    };
    *request.headers_mut() = headers;
    let response = match shared.send(request).await {
        Ok(response) => response,
        Err(e) => return fail(shared.failed(&url, e)).await,
    };
    if let Some(error) = refusal(&response) {
        return fail(error).await;
    }
    if !response.status().is_success() {
        let status = response.status();
        return fail(Error::Http(HttpError {
            status: Some(status.as_u16()),
            message: "the SSE endpoint refused the stream".into(),
            www_authenticate: None,
        }))
        .await;
    }
    let mut body = response.into_body();
    let mut decoder = SseDecoder::new(max_event_size);
    let mut items = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        decoder.feed(&chunk, &mut items);
        for item in items.drain(..) {
            let Item::Event(event) = item else {
                // Every message rides this one stream and it cannot be resumed: losing one
                // would leave a call waiting for ever, so the connection ends, saying why.
                let why = format!(
                    "an SSE event exceeded {max_event_size} bytes (HttpClientConfig::max_event_size)"
                );
                return fail(Error::Protocol(why)).await;
            };
            match event.event.as_deref() {
                Some("endpoint") => match resolve(&url, event.data.trim()) {
                    Some(uri) => {
                        endpoint.send_replace(Some(uri));
                    }
                    None => {
                        let why = format!("unusable endpoint event {:?}", event.data);
                        return fail(Error::Protocol(why)).await;
                    }
                },
                None | Some("message") if !event.data.trim().is_empty() => {
                    let frame: Frame = jsonrpc::decode(&event.data);
                    if shared.inbound.send(Ok(frame)).await.is_err() {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
    tracing::debug!("the legacy SSE stream ended");
}

/// The endpoint event's URI, relative to the stream's URL (same origin only).
fn resolve(base: &Uri, endpoint: &str) -> Option<Uri> {
    if let Ok(absolute) = endpoint.parse::<Uri>()
        && absolute.scheme().is_some()
    {
        let same = absolute.scheme() == base.scheme() && absolute.authority() == base.authority();
        return same.then_some(absolute);
    }
    let path = if endpoint.starts_with('/') {
        endpoint.to_owned()
    } else {
        let base_path = base.path();
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        format!("{dir}{endpoint}")
    };
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(path.parse().ok()?);
    Uri::from_parts(parts).ok()
}

impl Shared {
    async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<http::Response<hyper::body::Incoming>, SendError> {
        authorized::send(
            &self.client,
            self.credentials.as_ref(),
            request,
            self.response_timeout,
        )
        .await
    }

    fn failed(&self, url: &Uri, error: SendError) -> Error {
        error.into_error(url, self.response_timeout)
    }
}

/// The receiving half of a [`LegacySseTransport`]: the SSE stream's messages.
#[derive(Debug)]
pub struct LegacyReader {
    rx: mpsc::Receiver<Inbound>,
    closed: CancellationToken,
}

impl MessageReader for LegacyReader {
    /// Cancel-safe.
    async fn recv(&mut self) -> Result<Option<Frame>, Error> {
        tokio::select! {
            biased;
            inbound = self.rx.recv() => inbound.transpose(),
            () = self.closed.cancelled() => Ok(None),
        }
    }
}

/// The sending half of a [`LegacySseTransport`]: one POST per message, once the endpoint is
/// known. Dropping or closing it ends the stream.
pub struct LegacyWriter {
    shared: Arc<Shared>,
    endpoint: watch::Receiver<Option<Uri>>,
    _closed: DropGuard,
}

impl std::fmt::Debug for LegacyWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyWriter").finish_non_exhaustive()
    }
}

impl MessageWriter for LegacyWriter {
    async fn send(&mut self, message: Message) -> Result<(), Error> {
        let endpoint = self
            .endpoint
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Error::Closed)?
            .clone()
            .ok_or(Error::Closed)?;
        let mut headers = self.shared.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(endpoint.clone())
            .body(Full::new(Bytes::from(message.to_json())))
            .map_err(|e| Error::Protocol(format!("building the request: {e}")))?;
        *request.headers_mut() = headers;
        let response = self
            .shared
            .send(request)
            .await
            .map_err(|e| self.shared.failed(&endpoint, e))?;
        if let Some(error) = refusal(&response) {
            return Err(error);
        }
        let status = response.status();
        if !status.is_success() {
            tracing::debug!(%status, "the server refused a message");
            if let Message::Request(request) = &message {
                let error = ErrorObject::new(ErrorCode::INVALID_REQUEST, format!("HTTP {status}"))
                    .with_data(json!({ "httpStatus": status.as_u16() }));
                let response = Response::error(Some(request.id.clone()), error);
                let _ = self
                    .shared
                    .inbound
                    .send(Ok(Ok(Message::Response(response))))
                    .await;
            }
        }
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_stream() {
        let base: Uri = "http://127.0.0.1:9/sse".parse().unwrap();
        let got = |e: &str| resolve(&base, e).map(|u| u.to_string());
        assert_eq!(
            got("/messages?sessionId=1").as_deref(),
            Some("http://127.0.0.1:9/messages?sessionId=1")
        );
        assert_eq!(got("msg").as_deref(), Some("http://127.0.0.1:9/msg"));
        assert_eq!(
            got("http://127.0.0.1:9/m").as_deref(),
            Some("http://127.0.0.1:9/m")
        );
        assert_eq!(got("http://evil.example/m"), None);
    }
}
