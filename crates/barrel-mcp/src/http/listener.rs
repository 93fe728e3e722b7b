//! The ready listener: accepts TCP connections, serves HTTP/1.1 and HTTP/2 (prior knowledge)
//! on them with hyper, and shuts down gracefully.
//!
//! Each accepted socket gets `TCP_NODELAY` and is handed to [`serve_connection`], which takes
//! any IO: a TLS acceptor wraps the socket and calls it the same way. A connection must show
//! its HTTP version (the HTTP/2 preface, or anything else) within the header read timeout, or
//! it is dropped and its slot freed (`prefixed.rs`). hyper's timer is
//! configured, so the header read timeout really fires (without a timer hyper silently
//! disables it). Requests are answered by `service.rs`: the endpoint's path directly, every
//! other path through [`StreamableHttp::router`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::StreamableHttp;
use super::config::HYPER_MAX_HEADERS;
use super::prefixed::sniff;
use super::service::ListenerService;

/// How long to pause accepting after an accept error (such as running out of file
/// descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `http` on `listener` until `shutdown` resolves, then shuts down gracefully.
///
/// The bind is checked first ([`HttpConfig::check_bind`](super::HttpConfig::check_bind)): a
/// listener beyond loopback without allowed hosts is refused with an error that says why.
/// At most [`HttpConfig::max_connections`](super::HttpConfig::max_connections) connections are
/// served at once; beyond that the listener stops accepting until one ends (new connections
/// wait in the kernel's backlog).
/// On shutdown the listener stops accepting, sessions stop taking requests, requests already
/// running finish and are answered, streams end, and idle connections close; after
/// [`HttpConfig::shutdown_timeout`](super::HttpConfig::shutdown_timeout) whatever is left is
/// dropped. No task is left running when this returns.
///
/// Cancel safety: dropping the future stops accepting and drops the connections being served.
pub async fn serve(
    listener: TcpListener,
    http: StreamableHttp,
    shutdown: impl Future<Output = ()> + Send,
) -> crate::Result<()> {
    accept_loop(listener, http, shutdown, |stream| {
        std::future::ready(Some(stream))
    })
    .await
}

/// The accept loop shared by [`serve`] and `serve_tls`: `handshake` turns an accepted socket
/// into the IO to serve (the socket itself, or a TLS stream), in the connection's own task,
/// `None` when the connection is to be dropped.
pub(super) async fn accept_loop<H, F, I>(
    listener: TcpListener,
    http: StreamableHttp,
    shutdown: impl Future<Output = ()> + Send,
    handshake: H,
) -> crate::Result<()>
where
    H: Fn(TcpStream) -> F,
    F: Future<Output = Option<I>> + Send + 'static,
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let local = listener.local_addr()?;
    http.config()
        .check_bind(local)
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
    let builder = builder(&http);
    let graceful = GracefulShutdown::new();
    let router = http.router();
    let slots = Arc::new(Semaphore::new(http.config().max_connections.max(1)));
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // Forget the connections that have ended, so the set stays as small as what runs.
        while connections.try_join_next().is_some() {}
        // Over the cap, stop accepting until a connection ends.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, remote) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::debug!(%error, "accept failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let handshake = handshake(stream);
        let watcher = graceful.watcher();
        let builder = builder.clone();
        // Requests know the address they came from (per-address session caps).
        let service = ListenerService::new(&http, router.clone(), Some(remote));
        let detect = http.config().header_read_timeout;
        connections.spawn(async move {
            let _slot = slot;
            let Some(io) = handshake.await else { return };
            let Some(io) = sniff(io, detect).await else {
                return;
            };
            let connection = builder
                .serve_connection(TokioIo::new(io), service)
                .into_owned();
            if let Err(error) = watcher.watch(connection).await {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    http.shutdown();
    let limit = http.config().shutdown_timeout;
    let drained = async {
        graceful.shutdown().await;
        http.wait().await;
    };
    if tokio::time::timeout(limit, drained).await.is_err() {
        tracing::debug!("graceful shutdown timed out; what is left is stopped");
        http.halt();
        connections.shutdown().await;
        http.wait().await;
    }
    Ok(())
}

/// Serves one connection over any IO (a TCP socket, a TLS stream), HTTP/1.1 or HTTP/2 by
/// prior knowledge, until the client closes it. A client that sends nothing (or half the
/// HTTP/2 preface) for [`HttpConfig::header_read_timeout`](super::HttpConfig::header_read_timeout)
/// is dropped.
pub async fn serve_connection<I>(io: I, http: &StreamableHttp) -> crate::Result<()>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = ListenerService::new(http, http.router(), None);
    let Some(io) = sniff(io, http.config().header_read_timeout).await else {
        return Ok(());
    };
    builder(http)
        .serve_connection(TokioIo::new(io), service)
        .await
        .map_err(|e| crate::Error::Io(std::io::Error::other(e)))
}

/// The hyper connection builder with the configured limits and a real timer.
fn builder(http: &StreamableHttp) -> auto::Builder<TokioExecutor> {
    let config = http.config();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    // Left unset at hyper's own cap: hyper then parses into arrays it never fills first.
    if config.max_headers != HYPER_MAX_HEADERS {
        builder.http1().max_headers(config.max_headers);
    }
    let h2 = &config.http2;
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(h2.max_concurrent_streams)
        .max_pending_accept_reset_streams(h2.max_pending_accept_reset_streams)
        .max_local_error_reset_streams(h2.max_local_error_reset_streams)
        .max_header_list_size(h2.max_header_list_size)
        .keep_alive_interval(h2.keep_alive_interval)
        .keep_alive_timeout(h2.keep_alive_timeout);
    builder
}
