//! [`HttpConfig`]: every limit and default of the Streamable HTTP server, in one place.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::shared::SharedSessions;

/// hyper's own cap on an HTTP/1 request's headers, the default of
/// [`HttpConfig::max_headers`]: the listener leaves hyper at its default for it.
pub(crate) const HYPER_MAX_HEADERS: usize = 100;

/// Limits and defaults of the Streamable HTTP server. Every field has a documented default,
/// chosen to be safe on a developer machine: loopback only, bounded everything.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The path of the MCP endpoint in [`StreamableHttp::router`](super::StreamableHttp::router).
    /// Default `/mcp`.
    pub path: String,
    /// Also serve the 2024-11-05 HTTP+SSE transport: GET [`legacy_sse_path`](Self::legacy_sse_path)
    /// opens a session whose messages all travel on that one stream, and POSTs to
    /// [`legacy_messages_path`](Self::legacy_messages_path)`?sessionId=…` carry the client's
    /// messages. Same Host/Origin checks and limits as the main endpoint; its sessions count
    /// against [`max_sessions`](Self::max_sessions). Default true, so clients that only speak
    /// the old transport (the TypeScript SDK's `SSEClientTransport`, Python's `sse_client`)
    /// connect to the same server.
    pub legacy_sse: bool,
    /// The path of the legacy SSE stream. Default `/sse`.
    pub legacy_sse_path: String,
    /// The path legacy clients POST their messages to. Default `/messages`. The `endpoint`
    /// event names it as an absolute path, led by the prefix the router is nested under.
    pub legacy_messages_path: String,
    /// Accept `Host` headers naming `localhost`, `127.0.0.1` or `[::1]` (any port), and
    /// `Origin`s `http(s)://` of those names (any port). Default true.
    pub allow_loopback: bool,
    /// More accepted `Host` values: `name` (any port) or `name:port`, compared
    /// case-insensitively. Default empty. A non-loopback bind needs at least one.
    pub allowed_hosts: Vec<String>,
    /// More accepted `Origin` values, compared exactly after lowercasing
    /// (`https://app.example.com`, `http://intranet:8080`). The literal `null` is refused unless
    /// listed here. A request without `Origin` (not from a browser) is accepted. Default empty.
    pub allowed_origins: Vec<String>,
    /// Accept every `Origin` (barrel_mcp's `allowed_origins => any`): any web page a browser
    /// visits may then call the server with the browser's cookies and network position, so
    /// turn it on only for a server meant for every web page, behind authentication. CORS
    /// still echoes the request's origin, never `*`. Default false.
    pub allow_any_origin: bool,
    /// Accept requests that carry no `Origin` (every client that is not a browser: the SDKs,
    /// the CLI, desktop hosts). Turn it off for a server only browsers call, so a request
    /// whose origin cannot be checked is refused (403). Default true (barrel_mcp turns it
    /// off on public binds; here authentication is what protects a public server, and
    /// refusing non-browser clients by default would shut out most MCP clients).
    pub allow_missing_origin: bool,
    /// Serve the endpoint at `/` as well as at [`path`](Self::path), for clients configured
    /// with the bare origin. Default false.
    pub serve_at_root: bool,
    /// Serve the sessionful revisions (2024-11-05 to 2025-11-25) without sessions
    /// (barrel_mcp's `session_enabled => false`): `initialize` is answered with no
    /// `Mcp-Session-Id`, and every request is served on its own, in the revision its
    /// `MCP-Protocol-Version` names (2025-03-26 without one), as from a client that declared
    /// no capabilities. What needs a session is not offered: no GET stream or DELETE (405),
    /// no list-change notifications, resource subscriptions or tasks (left out of the
    /// `initialize` result); questions to the client (sampling, elicitation, roots) are
    /// refused; progress and log messages of a request travel on its own SSE answer. The
    /// legacy HTTP+SSE endpoint ([`legacy_sse`](Self::legacy_sse)) is a session by nature and
    /// is not served. Any process can answer any request, so a replicated service needs no
    /// shared session store. 2026-07-28 is stateless either way. Default false.
    pub sessionless: bool,
    /// The largest request body; a larger one is refused with 413 before it is parsed.
    /// Default 4 MiB.
    pub max_body_size: usize,
    /// How long a request body may take to arrive; slower bodies get 408. Default 30 s.
    pub body_timeout: Duration,
    /// The most headers an HTTP/1 request may carry (more: 431, and the connection is closed).
    /// Default 100, hyper's own: at that value hyper parses into arrays it never fills first;
    /// any other value costs two arrays of that size filled per request (about 1,500
    /// instructions, 3% of a call, in a build without LTO; little with fat LTO).
    pub max_headers: usize,
    /// How long a client may take to send a request's headers before the connection is
    /// closed (slowloris). Over TLS the handshake gets the same limit. Default 10 s.
    pub header_read_timeout: Duration,
    /// Limits for HTTP/2 connections (cleartext by prior knowledge, or TLS with ALPN `h2`).
    pub http2: Http2Config,
    /// The most connections the ready listeners ([`serve`](super::serve), `serve_tls`) serve
    /// at once. At the cap the listener stops accepting until a connection ends; new
    /// connections wait in the kernel's backlog (and time out there) rather than being accepted
    /// and dropped. Default 4096.
    pub max_connections: usize,
    /// The most live sessions; one more `initialize` gets 503 with `Retry-After`. Default 1024.
    pub max_sessions: usize,
    /// The most live sessions one principal (as [`principal`](Self::principal) names it) may
    /// hold; one more `initialize` from it gets 429 with `Retry-After`, and the others keep
    /// their share of [`max_sessions`](Self::max_sessions). Without a principal resolver it
    /// does not apply. Default 64.
    pub max_sessions_per_principal: usize,
    /// The most live sessions callers without a principal may hold from one IP address (known
    /// to the ready listeners, and to apps that serve the router with axum's `ConnectInfo`);
    /// one more gets 429 with `Retry-After`. Legacy `GET /sse` sessions count too. Loopback
    /// addresses are not capped: every local process, and every client of a reverse proxy on
    /// the same host, shares them (behind a proxy, authenticate or set a
    /// [`PrincipalResolver`]). Default 64.
    pub max_anonymous_sessions_per_address: usize,
    /// A session nobody used for this long is closed; later requests get 404. A client reading
    /// one of its streams, or waiting for a JSON answer, keeps it alive; a request still running
    /// with nobody waiting for it does not (closing the session stops it). Default 30 min.
    pub session_idle_timeout: Duration,
    /// A session that has not sent `notifications/initialized` this long after `initialize`
    /// is closed. Default 60 s.
    pub init_timeout: Duration,
    /// Events waiting to be written to one SSE stream. A reader slower than that loses the
    /// live stream (it ends); the events stay in the replay buffer, so the client resumes with
    /// `Last-Event-ID`. Default 64.
    pub stream_queue: usize,
    /// How long a 2026-07-28 answer stream may stay full (the client reads nothing) before its
    /// request is cancelled and the stream ends (such streams cannot be resumed); also how long
    /// a stream followed from the shared event store (a resume on a node that did not produce
    /// it) may stay full before it ends and frees its `max_followed_streams` place. Default
    /// 30 s.
    pub stalled_reader_timeout: Duration,
    /// Events each stream keeps for `Last-Event-ID` replay. Default 128.
    pub replay_events: usize,
    /// Bytes each stream keeps for replay (the oldest events go first). Default 1 MiB.
    pub replay_bytes: usize,
    /// Bytes all of one session's replay buffers may hold together (the per-stream limits
    /// alone allow `retained_streams` × `replay_bytes`, and more with many requests running):
    /// beyond it the oldest events of finished streams go first, then those of the fullest
    /// stream. Default 8 MiB.
    pub session_replay_bytes: usize,
    /// Streams one session keeps for replay; beyond that the oldest finished stream is
    /// forgotten. Default 32.
    pub retained_streams: usize,
    /// An idle SSE stream gets a `:` comment this often, so proxies keep it open. Default 15 s.
    pub keep_alive: Duration,
    /// How long a POST's SSE answer waits for its first event before its head is sent, so a
    /// quick answer leaves with the head and the priming event in one write instead of two.
    /// Default 2 ms; zero sends the head at once.
    pub sse_first_event_wait: Duration,
    /// The `retry:` sent in each stream's priming event: how long a client waits before it
    /// resumes. Default 3 s.
    pub sse_retry: Duration,
    /// Answer every sessionful request with one JSON body, never SSE. Notifications and
    /// requests a handler sends then go to the session's GET stream. Default false: requests
    /// are answered with an SSE stream when the client accepts one.
    pub json_response: bool,
    /// How long a graceful shutdown waits for requests and streams to finish. Default 10 s.
    pub shutdown_timeout: Duration,
    /// Binds each session to the principal that created it (see [`PrincipalResolver`]).
    /// Default none: sessions are bound to the authenticated caller when
    /// `auth` is set, and not bound otherwise.
    pub principal: Option<PrincipalResolver>,
    /// Keep sessions in a store shared by the nodes of one service, so a session started on
    /// one node continues on any other behind a load balancer (see [`SharedSessions`]: what
    /// is shared, what is not yet, and the caps it checks across nodes). With it,
    /// [`session_idle_timeout`](Self::session_idle_timeout) is the session's life in the
    /// store past its last use on any node, [`max_sessions`](Self::max_sessions) bounds this
    /// node's copies, and the per-principal and per-address caps count every node's sessions.
    /// Legacy HTTP+SSE sessions stay on the node that serves their stream. Default none: a
    /// session lives in this process only, and nothing is asked of any store.
    pub shared_sessions: Option<SharedSessions>,
    /// Authentication and authorization in front of every path (feature `auth`): who may call,
    /// which scopes each operation needs, and the RFC 9728 metadata. Default none: every
    /// request is served (keep such a server on loopback, or put your own layer in front).
    #[cfg(feature = "auth")]
    pub auth: Option<crate::auth::server::AuthConfig>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            path: "/mcp".to_owned(),
            legacy_sse: true,
            legacy_sse_path: "/sse".to_owned(),
            legacy_messages_path: "/messages".to_owned(),
            allow_loopback: true,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            allow_any_origin: false,
            allow_missing_origin: true,
            serve_at_root: false,
            sessionless: false,
            max_body_size: 4 * 1024 * 1024,
            body_timeout: Duration::from_secs(30),
            max_headers: HYPER_MAX_HEADERS,
            header_read_timeout: Duration::from_secs(10),
            http2: Http2Config::default(),
            max_connections: 4096,
            max_sessions: 1024,
            max_sessions_per_principal: 64,
            max_anonymous_sessions_per_address: 64,
            session_idle_timeout: Duration::from_secs(30 * 60),
            init_timeout: Duration::from_secs(60),
            stream_queue: 64,
            stalled_reader_timeout: Duration::from_secs(30),
            replay_events: 128,
            replay_bytes: 1024 * 1024,
            retained_streams: 32,
            session_replay_bytes: 8 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            sse_first_event_wait: Duration::from_millis(2),
            sse_retry: Duration::from_secs(3),
            json_response: false,
            shutdown_timeout: Duration::from_secs(10),
            principal: None,
            shared_sessions: None,
            #[cfg(feature = "auth")]
            auth: None,
        }
    }
}

/// Limits for HTTP/2 connections, applied by the ready listeners ([`serve`](super::serve),
/// `serve_tls`, [`serve_connection`](super::serve_connection)).
///
/// They bound what one connection can make the server hold: open streams, streams the client
/// resets before they are served (the "Rapid Reset" attack, CVE-2023-44487), streams the server
/// had to reset for protocol errors, the header block, and silent peers. A client over a limit
/// gets `REFUSED_STREAM` for the stream or `GOAWAY` (`ENHANCE_YOUR_CALM`) for the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http2Config {
    /// Streams one connection may have open at once (advertised in `SETTINGS`). Default 100.
    pub max_concurrent_streams: u32,
    /// Streams the client opened and reset before the server could serve them; one more ends
    /// the connection with `GOAWAY`. Default 20.
    pub max_pending_accept_reset_streams: usize,
    /// Streams the server reset because the client broke the protocol; one more ends the
    /// connection. Default 256.
    pub max_local_error_reset_streams: usize,
    /// The largest header list, in bytes. Default 16 KiB.
    pub max_header_list_size: u32,
    /// How often an idle connection is pinged (`None`: never). Default 30 s.
    pub keep_alive_interval: Option<Duration>,
    /// How long a ping may go unanswered before the connection is closed. Default 20 s.
    pub keep_alive_timeout: Duration,
}

impl Default for Http2Config {
    fn default() -> Self {
        Self {
            max_concurrent_streams: 100,
            max_pending_accept_reset_streams: 20,
            max_local_error_reset_streams: 256,
            max_header_list_size: 16 * 1024,
            keep_alive_interval: Some(Duration::from_secs(30)),
            keep_alive_timeout: Duration::from_secs(20),
        }
    }
}

impl HttpConfig {
    /// Checks that serving on `addr` with this configuration is safe: a bind beyond loopback
    /// needs explicit [`allowed_hosts`](Self::allowed_hosts), else any web page could reach the
    /// server through DNS rebinding. Returns the reason when it is not.
    pub fn check_bind(&self, addr: SocketAddr) -> Result<(), String> {
        if addr.ip().is_loopback() || !self.allowed_hosts.is_empty() {
            return Ok(());
        }
        Err(format!(
            "refusing to serve on {addr}: it is reachable beyond this machine, and without an \
             explicit list of allowed hosts (and origins, for browsers) any web page could reach \
             the server through DNS rebinding; set allowed_hosts (e.g. `--allow-host \
             mcp.example.com`), or bind 127.0.0.1"
        ))
    }
}

impl HttpConfig {
    /// The paths the endpoint is served at: [`path`](Self::path), and `/` with
    /// [`serve_at_root`](Self::serve_at_root) (axum route syntax, as the router takes them).
    pub(crate) fn endpoint_paths(&self) -> impl Iterator<Item = &str> {
        let root = (self.serve_at_root && self.path != "/").then_some("/");
        std::iter::once(self.path.as_str()).chain(root)
    }

    /// The principal a request's session belongs to: the resolver's answer when one is set,
    /// else the authenticated caller's ([`AuthInfo::principal`](crate::auth::AuthInfo::principal)),
    /// else none (anonymous).
    pub(crate) fn principal_of(&self, parts: &http::request::Parts) -> Option<String> {
        match &self.principal {
            Some(resolver) => resolver.resolve(parts),
            None => parts
                .extensions
                .get::<Arc<crate::auth::AuthInfo>>()
                .map(|info| info.principal()),
        }
    }
}

/// Names the principal (the authenticated user or client) behind an HTTP request, so a session
/// stays bound to the one that created it.
///
/// It is called on `initialize` and on every later request of the session. A request whose
/// principal differs from the session's gets 404, exactly like an unknown session, on every
/// method. Authentication layers usually put the principal in the request's extensions; the
/// resolver reads it from there.
#[derive(Clone)]
pub struct PrincipalResolver(Arc<ResolveFn>);

/// The function inside a [`PrincipalResolver`].
type ResolveFn = dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync;

impl PrincipalResolver {
    /// Wraps a function from the request head to the principal, `None` for anonymous.
    pub fn new(
        resolve: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(resolve))
    }

    pub(crate) fn resolve(&self, parts: &http::request::Parts) -> Option<String> {
        (self.0)(parts)
    }
}

impl fmt::Debug for PrincipalResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrincipalResolver(..)")
    }
}
