//! `rr-proxy`: a small round-robin HTTP/1.1 proxy for multi-node tests, per request rather than
//! per connection (a TCP proxy would pin a keep-alive connection to one node and test nothing).
//!
//! - Every incoming request, whatever connection it came on, goes to the next backend in strict
//!   alternation: request `n` (1-based) starts at backend `(n - 1) % backends`.
//! - Request bodies are buffered up to [`Config::max_body`] (413 beyond it) so that a backend
//!   that refuses the connection can be skipped: the same request then goes to the next one.
//!   A request is only ever retried when none of it was sent; if no backend takes it, 502.
//! - Response bodies (SSE included) are streamed through frame by frame, never buffered.
//! - Headers are copied verbatim both ways except the hop-by-hop ones; `Host` is
//!   kept as the client sent it, so the backends' DNS-rebinding check sees what the client
//!   sent (a loopback name through a loopback proxy passes; a foreign one is still refused).
//! - One JSON line per request ([`Record`]) to a file, stderr or memory, so tests can assert
//!   which backend served which request of which session.
//!
//! Start it in-process with [`Proxy::start`], or run the `rr-proxy` binary
//! (`rr-proxy --listen 127.0.0.1:0 --backend http://127.0.0.1:A --backend http://127.0.0.1:B
//! [--log FILE]`; see [`Config::from_args`]).

mod args;
mod forward;
mod headers;
mod log;
mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use http::uri::Authority;

pub use self::args::USAGE;
pub use self::log::{Record, read_log};

/// What the proxy listens on, where it forwards, and its bounds.
#[derive(Debug, Clone)]
pub struct Config {
    /// The address to listen on (port 0: a free port; [`Proxy::url`] tells which).
    pub listen: SocketAddr,
    /// The backends' `host:port`, in the order of the alternation (plain `http://` only).
    pub backends: Vec<Authority>,
    /// Where the request log goes.
    pub log: LogTo,
    /// The largest request body buffered, in bytes (default 4 MiB); beyond it, 413.
    pub max_body: usize,
    /// How long a connection to a backend may take (default 2 s); beyond it, the backend is
    /// skipped like one that refuses.
    pub connect_timeout: Duration,
    /// How long a client may take to send a request body (default 30 s); beyond it, 408.
    pub body_timeout: Duration,
    /// Client connections served at once (default 1,024); more wait to be accepted.
    pub max_connections: usize,
}

impl Config {
    /// A configuration with the default bounds, logging to stderr.
    pub fn new(listen: SocketAddr, backends: Vec<Authority>) -> Self {
        Self {
            listen,
            backends,
            log: LogTo::Stderr,
            max_body: 4 * 1024 * 1024,
            connect_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(30),
            max_connections: 1024,
        }
    }

    /// Parses a backend URL: `http://host:port`, with no path beyond `/`, no query and no user
    /// info.
    pub fn backend(url: &str) -> anyhow::Result<Authority> {
        let uri: http::Uri = url
            .parse()
            .with_context(|| format!("backend {url:?} is not a URL"))?;
        anyhow::ensure!(
            uri.scheme_str() == Some("http"),
            "backend {url:?}: only http:// backends are supported"
        );
        let authority = uri
            .authority()
            .with_context(|| format!("backend {url:?} has no host"))?;
        anyhow::ensure!(
            !authority.as_str().contains('@'),
            "backend {url:?}: no user info allowed"
        );
        anyhow::ensure!(
            matches!(uri.path(), "" | "/") && uri.query().is_none(),
            "backend {url:?}: no path or query allowed (the client's path is forwarded as is)"
        );
        Ok(authority.clone())
    }
}

/// Where the proxy writes its request log, one JSON [`Record`] a line.
#[derive(Debug, Clone, Default)]
pub enum LogTo {
    /// Standard error (after the `listening on` line).
    #[default]
    Stderr,
    /// A file, created if missing and appended to.
    File(PathBuf),
    /// Kept in memory for [`Proxy::records`] (in-process tests; grows with every request).
    Memory,
}

/// A running proxy. Dropping it stops accepting and closes every client connection it holds.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    log: Arc<log::Log>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Binds `config.listen`, opens the log, and serves in the background.
    pub async fn start(config: Config) -> anyhow::Result<Self> {
        anyhow::ensure!(!config.backends.is_empty(), "no backend given");
        anyhow::ensure!(
            config.max_connections > 0,
            "max_connections must be positive"
        );
        let log = Arc::new(log::Log::open(&config.log)?);
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("binding {}", config.listen))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let forwarder = Arc::new(forward::Forwarder::new(&config, Arc::clone(&log)));
        let task = tokio::spawn(server::accept_loop(
            listener,
            forwarder,
            config.max_connections,
        ));
        Ok(Self { addr, log, task })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<bound address>`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The records logged so far, in the order they were written (by response, not by `n`),
    /// with [`LogTo::Memory`]; empty otherwise.
    pub fn records(&self) -> Vec<Record> {
        self.log.records()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
