//! The Streamable HTTP client transport (feature `http-client`), and the legacy HTTP+SSE client
//! for 2024-11-05 servers ([`LegacySseTransport`]).
//!
//! [`HttpClientTransport`] speaks to one MCP endpoint URL over `http://`, or over `https://`
//! with the feature `http-client-tls`:
//!
//! - **TLS**: rustls with the ring provider, passed explicitly (the process-wide default is never
//!   installed or read). The trusted roots are Mozilla's, compiled in (`webpki-roots`: no file,
//!   no network, no platform verifier); `HttpClientTransport::add_root_certificates` trusts a
//!   private CA too, and `HttpClientTransport::rustls_config` takes a whole rustls
//!   configuration (client certificates, another provider). ALPN offers `h2` and `http/1.1`:
//!   the server's choice decides the HTTP version. A failed handshake (an unknown issuer, a name
//!   mismatch) is [`Error::Http`] with no status, naming the TLS error. Without the feature an
//!   `https://` URL is [`Error::Unsupported`].
//! - **Each outgoing message is one POST** with `Content-Type: application/json` and
//!   `Accept: application/json, text/event-stream`. A request's POST runs on a task of its own,
//!   so a slow call never holds up the next message, and a server request that arrives on a
//!   call's SSE stream (sampling, elicitation) can be answered while the call is still open.
//!   Notifications and responses are POSTed in order and expect 202.
//! - **Answers** are one JSON body or an SSE stream (decoded with a bounded event size,
//!   [`HttpClientConfig::max_event_size`]). Everything on the stream reaches the peer in order:
//!   progress, log messages, server requests, then the response. A JSON body that answers a POST
//!   without an `id` is taken as that request's answer (the POST carried only one request).
//! - **Headers**: `Mcp-Session-Id` is captured from the `initialize` answer and sent on every
//!   later message; `MCP-Protocol-Version` names the revision the `initialize` result chose
//!   (the transport reads it from the answer; `initialize` itself carries no version header). A
//!   2026-07-28 request (one whose `params._meta` claims the revision) carries that revision,
//!   `Mcp-Method`, `Mcp-Name` (`params.name` or `params.uri`, in the `=?base64?…?=` form when
//!   it is not plain visible ASCII) and `Mcp-Param-{Name}` for each `x-mcp-header` argument of
//!   a tool this transport saw in a `tools/list` answer. [`HttpClientTransport::header`] adds
//!   headers of your own (`Authorization`, ...).
//! - **Resumption**: an SSE stream that ends before the call's response is resumed with a GET
//!   carrying `Last-Event-ID`, after the server's `retry` (or
//!   [`HttpClientConfig::default_retry`], never under [`HttpClientConfig::min_retry`] nor over
//!   [`HttpClientConfig::max_retry`]), up
//!   to [`HttpClientConfig::max_resumptions`] times. An event larger than
//!   [`HttpClientConfig::max_event_size`] fails its call at once. Once the response is in, a
//!   stream the server keeps open is dropped after [`HttpClientConfig::stream_end_wait`].
//! - **The GET stream**: after `notifications/initialized`, a GET opens the session's stream for
//!   server-initiated messages, and nothing more is sent until the server has answered it (at
//!   most [`HttpClientConfig::get_stream_wait`]): a server may send a request on it at once. It
//!   reconnects after the server's `retry` with `Last-Event-ID`; a stream that ends at once
//!   without an event doubles the wait each time (up to 32 times), and one that keeps
//!   replaying an oversized event is given up after `max_resumptions`. 405 (or any other
//!   refusal) means the server offers none: nothing more is tried.
//! - **404 on a known session**: the session expired. The transport runs the handshake again
//!   on a task of its own, within [`HttpClientConfig::reinitialize_timeout`]: `initialize`
//!   with the params the owner of the handshake gives (the [`Client`](crate::client::Client),
//!   through [`Handshake`]), whose result the owner checks and keeps, then
//!   `notifications/initialized`; then it sends the message again, once. Messages sent
//!   meanwhile wait for it. The client keeps its handle and its calls, and knows the server as
//!   it answered this time (its revision, capabilities and info); what the old session held on
//!   the server side (subscriptions, the log level) is gone.
//!   [`HttpClientConfig::reinitialize`] turns this off, and so does a connection with no
//!   handshake owner (a bare [`Peer`](crate::peer::Peer), or a wrapper transport that does
//!   not pass [`Transport::set_handshake`] on); the message then fails.
//! - **Cancellation**: a cancelled or timed-out call drops its HTTP exchange. In 2026-07-28 that
//!   is the whole cancellation (there is no session to tell); in a session
//!   `notifications/cancelled` is POSTed too.
//! - **503 and 429** mean the server did not take the request (a shared store that blinked, a
//!   per-principal cap): the same request (POST of any message, the handshake, a GET stream
//!   opened or resumed with its `Last-Event-ID`, the DELETE) is sent again after the server's
//!   `Retry-After` (delta-seconds or an HTTP-date), or after a backoff with jitter, within
//!   [`HttpClientConfig::retry`] ([`RetryPolicy`]: how many retries, the longest wait, the
//!   whole budget). A call cancelled or timed out, or a closed connection, ends the wait at
//!   once. Past those bounds (or a `Retry-After` over `max_delay`) the answer is handled as
//!   below, with an error that says why it was not retried.
//! - **Failures**: 401 and 403 end the connection with [`Error::Http`] whose
//!   [`HttpError::is_auth`](crate::HttpError::is_auth) is true, never read as a protocol
//!   answer; so do 5xx answers (500, 502, 504 at once, a 503 not retried) and a server that
//!   cannot be reached. Another 4xx with a JSON-RPC body is that body; without one (or a 429
//!   not retried) it fails the call with a JSON-RPC error that names the status
//!   (`data.httpStatus`), which [`Client`](crate::client::Client) reads as "not a
//!   2026-07-28 server" when it probes.
//! - **Close**: closing the sending half DELETEs the session (a 405 is fine).
//!
//! ```no_run
//! # async fn run() -> barrel_mcp::Result<()> {
//! use barrel_mcp::client::Client;
//! use barrel_mcp::transport::http_client::HttpClientTransport;
//!
//! let transport = HttpClientTransport::new("http://127.0.0.1:8080/mcp")?
//!     .header("authorization", "Bearer my-token")?;
//! let client = Client::builder().connect_http(transport).await?;
//! println!("{} speaks {}", client.server_info().name, client.protocol_version());
//! # Ok(())
//! # }
//! ```

mod authorized;
mod connector;
mod exchange;
mod headers;
mod legacy;
mod retry;
pub(crate) mod sse;
mod state;
#[cfg(feature = "http-client-tls")]
pub(crate) mod tls;

#[cfg(feature = "http-client-tls")]
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::Message;
use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use legacy::{LegacyReader, LegacySseTransport, LegacyWriter};
pub use retry::RetryPolicy;
#[cfg(any(feature = "auth", feature = "oauth-client"))]
pub(crate) use state::error_chain;

use super::{Frame, Handshake, MessageReader, MessageWriter, Transport};
use crate::Error;
use crate::auth::client::TokenSource;
use authorized::Credentials;
use connector::ClientTls;
use state::State;

/// The default largest SSE event or JSON body accepted: 4 MiB, like a stdio line.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// Limits and behaviour of an HTTP client transport. Every field has a documented default.
#[derive(Debug, Clone)]
pub struct HttpClientConfig {
    /// The largest SSE event accepted, in bytes. A larger one fails the call whose stream
    /// carried it; on the GET stream it is skipped (the stream reconnects, and is given up
    /// when it keeps coming back); on the legacy transport's one stream it ends the
    /// connection. Default 4 MiB.
    pub max_event_size: usize,
    /// The largest JSON answer body accepted, in bytes. Default 4 MiB.
    pub max_body_size: usize,
    /// How long to wait before resuming or reconnecting a stream when the server named no
    /// `retry`. Default 1 s.
    pub default_retry: Duration,
    /// The shortest wait before resuming or reconnecting a stream, whatever `retry` the server
    /// sends (a `retry: 0` must not make the client hammer the server). A GET stream that ends
    /// without any event doubles the wait each time, up to 32 times. Default 100 ms.
    pub min_retry: Duration,
    /// The longest wait before resuming or reconnecting, whatever `retry` the server sends
    /// (a `retry` of a day must not park a call). Default 30 s.
    pub max_retry: Duration,
    /// How long a request waits for the server's answer to begin (its status and headers;
    /// a stream's events may come later). A server that never answers fails the request
    /// instead of holding it (and, for notifications, every later message). Default 60 s.
    pub response_timeout: Duration,
    /// Once a call's response has arrived on its SSE stream, how long the client waits for the
    /// stream to end (so its connection can be reused) before dropping it. Default 1 s.
    pub stream_end_wait: Duration,
    /// How many times one call's stream is resumed (GET with `Last-Event-ID`) before the call
    /// fails. Default 5.
    pub max_resumptions: u32,
    /// Open the GET stream for server-initiated messages once a session is initialized.
    /// Default true.
    pub open_get_stream: bool,
    /// After `notifications/initialized`, how long the transport waits for the server to
    /// answer the GET stream's request before it sends anything else, so that a request the
    /// server sends right away is not lost. Default 2 s.
    pub get_stream_wait: Duration,
    /// Re-run the handshake when the server answers 404 for a known session. Default true.
    pub reinitialize: bool,
    /// How long that handshake may take; messages sent meanwhile wait for it. When it fails
    /// or times out, the old session id is kept, so the next message meets the 404 and tries
    /// again. Default 30 s.
    pub reinitialize_timeout: Duration,
    /// How long opening a TCP connection may take, and then the TLS handshake for `https://`.
    /// Default 10 s.
    pub connect_timeout: Duration,
    /// How long the DELETE on close may take; the peer's
    /// [`close_grace`](crate::peer::PeerConfig::close_grace) bounds it too. Default 2 s.
    pub close_timeout: Duration,
    /// Messages from the server buffered for the peer before streams wait. Default 64.
    pub inbound_queue: usize,
    /// How a request answered 503 or 429 is sent again (see [`RetryPolicy`]: 3 retries, a
    /// `Retry-After` of at most 10 s, a 250 ms backoff, 30 s in all). The Streamable HTTP
    /// transport only; the legacy one does not retry.
    pub retry: RetryPolicy,
}

impl Default for HttpClientConfig {
    fn default() -> Self {
        Self {
            max_event_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_body_size: DEFAULT_MAX_MESSAGE_SIZE,
            default_retry: Duration::from_secs(1),
            min_retry: Duration::from_millis(100),
            max_retry: Duration::from_secs(30),
            response_timeout: Duration::from_secs(60),
            stream_end_wait: Duration::from_secs(1),
            max_resumptions: 5,
            open_get_stream: true,
            get_stream_wait: Duration::from_secs(2),
            reinitialize: true,
            reinitialize_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            close_timeout: Duration::from_secs(2),
            inbound_queue: 64,
            retry: RetryPolicy::default(),
        }
    }
}

/// A Streamable HTTP client connection to one endpoint (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct HttpClientTransport {
    url: Uri,
    headers: HeaderMap,
    credentials: Option<Credentials>,
    config: HttpClientConfig,
    tls: ClientTls,
    handshake: Option<HandshakeOwner>,
}

/// The owner of the connection's handshake, which re-runs it after a 404.
#[derive(Clone)]
struct HandshakeOwner(Arc<dyn Handshake>);

impl std::fmt::Debug for HandshakeOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandshakeOwner")
    }
}

impl HttpClientTransport {
    /// Speaks to the endpoint at `url`: `http://`, or `https://` with the feature
    /// `http-client-tls` (without it, [`Error::Unsupported`]).
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self {
            url: parse_url(url)?,
            headers: HeaderMap::new(),
            credentials: None,
            config: HttpClientConfig::default(),
            tls: ClientTls::new()?,
            handshake: None,
        })
    }

    /// Trusts the CA certificates in `pem` (PEM text, one or more `CERTIFICATE` blocks) for
    /// `https://`, besides Mozilla's roots: for a server whose certificate a private CA signed.
    /// Fails when `pem` holds no certificate or one that cannot be a trust anchor. Replaces a
    /// configuration given with [`rustls_config`](Self::rustls_config).
    #[cfg(feature = "http-client-tls")]
    pub fn add_root_certificates(mut self, pem: &[u8]) -> Result<Self, Error> {
        self.tls.add_roots_pem(pem)?;
        Ok(self)
    }

    /// Like [`add_root_certificates`](Self::add_root_certificates), from a PEM file.
    #[cfg(feature = "http-client-tls")]
    pub fn add_root_certificates_file(mut self, path: impl AsRef<Path>) -> Result<Self, Error> {
        self.tls.add_roots_pem_file(path.as_ref())?;
        Ok(self)
    }

    /// Uses this rustls configuration as it is for `https://`: client certificates, other
    /// roots, another crypto provider. Set its `alpn_protocols` to `h2` and `http/1.1` to let
    /// the server pick HTTP/2 (with none, HTTP/1.1 is spoken).
    #[cfg(feature = "http-client-tls")]
    pub fn rustls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls.set_rustls(config);
        self
    }

    /// Sends this header with every request (an API key, ...). Fails for a name or value HTTP
    /// does not allow. The value is never shown by `Debug`. An `Authorization` header given
    /// here is replaced by what a [`auth`](Self::auth) source hands out.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let (name, value) = header_pair(name, value)?;
        self.headers.append(name, value);
        Ok(self)
    }

    /// Gets the `Authorization` header of every request from `source`, which is told about
    /// each 401 or 403 and may have the request sent again with a new credential (see
    /// [`auth::client`](crate::auth::client)).
    pub fn auth(mut self, source: impl TokenSource) -> Self {
        self.credentials = Some(Credentials(Arc::new(source)));
        self
    }

    /// Replaces every limit at once.
    pub fn config(mut self, config: HttpClientConfig) -> Self {
        self.config = config;
        self
    }

    /// The largest SSE event accepted, in bytes.
    pub fn max_event_size(mut self, max: usize) -> Self {
        self.config.max_event_size = max;
        self
    }

    /// How a request answered 503 or 429 is sent again ([`HttpClientConfig::retry`]).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.config.retry = policy;
        self
    }

    /// The endpoint.
    pub fn url(&self) -> &Uri {
        &self.url
    }
}

impl Transport for HttpClientTransport {
    type Reader = HttpReader;
    type Writer = HttpWriter;

    /// Must be called within a Tokio runtime (the writer spawns a task per request).
    fn split(self) -> (HttpReader, HttpWriter) {
        let (tx, rx) = mpsc::channel(self.config.inbound_queue.max(1));
        let closed = CancellationToken::new();
        let mut state = State::new(
            self.url,
            self.headers,
            self.credentials,
            self.config,
            &self.tls,
            tx,
            closed.clone(),
        );
        state.handshake = self.handshake.map(|owner| owner.0);
        let state = Arc::new(state);
        (
            HttpReader {
                rx,
                closed: closed.clone(),
            },
            HttpWriter {
                state,
                _closed: closed.drop_guard(),
            },
        )
    }

    fn set_handshake(&mut self, handshake: Arc<dyn Handshake>) {
        self.handshake = Some(HandshakeOwner(handshake));
    }
}

/// What a transport task hands the reader: a frame, or the failure that ends the connection.
pub(crate) type Inbound = Result<Frame, Error>;

/// The receiving half of an [`HttpClientTransport`]: every stream's messages, in the order each
/// stream delivered them.
#[derive(Debug)]
pub struct HttpReader {
    rx: mpsc::Receiver<Inbound>,
    closed: CancellationToken,
}

impl MessageReader for HttpReader {
    /// Cancel-safe: a message is either returned or stays queued.
    async fn recv(&mut self) -> Result<Option<Frame>, Error> {
        tokio::select! {
            biased;
            inbound = self.rx.recv() => inbound.transpose(),
            () = self.closed.cancelled() => Ok(None),
        }
    }
}

/// The sending half of an [`HttpClientTransport`]. Dropping it stops every stream; closing it
/// also DELETEs the session.
#[derive(Debug)]
pub struct HttpWriter {
    state: Arc<State>,
    _closed: DropGuard,
}

impl MessageWriter for HttpWriter {
    async fn send(&mut self, message: Message) -> Result<(), Error> {
        self.state.send(message).await
    }

    async fn close(&mut self) -> Result<(), Error> {
        self.state.close().await;
        Ok(())
    }
}

fn parse_url(url: &str) -> Result<Uri, Error> {
    let uri: Uri = url
        .parse()
        .map_err(|e| Error::Protocol(format!("invalid URL {url:?}: {e}")))?;
    // Credentials in the URL would be shown wherever the URL is (errors, logs, `Debug`).
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(Error::Protocol(
            "the URL carries credentials (user:password@): give them with .header() or .auth()"
                .into(),
        ));
    }
    match uri.scheme_str() {
        Some("http") => Ok(uri),
        #[cfg(feature = "http-client-tls")]
        Some("https") => Ok(uri),
        #[cfg(not(feature = "http-client-tls"))]
        Some("https") => Err(Error::Unsupported(format!(
            "{url}: https needs barrel-mcp's feature http-client-tls"
        ))),
        _ => Err(Error::Protocol(format!(
            "{url:?} is not an http:// or https:// URL"
        ))),
    }
}

fn header_pair(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), Error> {
    let name = HeaderName::try_from(name.trim())
        .map_err(|_| Error::Protocol(format!("invalid header name {name:?}")))?;
    let mut value = HeaderValue::try_from(value.trim())
        .map_err(|_| Error::Protocol(format!("invalid value for header {name}")))?;
    // Headers of one's own are mostly credentials: `Debug` shows none of them (and HTTP/2
    // keeps them out of its compression tables).
    value.set_sensitive(true);
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::StaticToken;

    #[test]
    fn debug_shows_no_credential() {
        let transport = HttpClientTransport::new("http://127.0.0.1:1/mcp")
            .unwrap()
            .header("authorization", "Bearer sekrit-1")
            .unwrap()
            .header("x-api-key", "sekrit-2")
            .unwrap()
            .auth(StaticToken::bearer("sekrit-3"));
        let legacy = LegacySseTransport::new("http://127.0.0.1:1/sse")
            .unwrap()
            .header("x-api-key", "sekrit-4")
            .unwrap()
            .auth(StaticToken::bearer("sekrit-5"));
        let shown = format!("{transport:?} {legacy:?}");
        assert!(!shown.contains("sekrit"), "{shown}");
        assert!(shown.contains("x-api-key"));
        let refused = HttpClientTransport::new("http://user:sekrit-6@127.0.0.1:1/mcp").unwrap_err();
        assert!(!refused.to_string().contains("sekrit"), "{refused}");
        assert!(LegacySseTransport::new("http://u:p@127.0.0.1:1/sse").is_err());
    }
}
