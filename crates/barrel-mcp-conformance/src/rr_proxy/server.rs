//! The listening side: accept client connections (at most `max_connections` at once) and serve
//! each with hyper's HTTP/1.1 server, keep-alive on, every request handed to the
//! [`Forwarder`]. The connections live in a `JoinSet`, so stopping the accept loop closes them.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::forward::Forwarder;

/// How long to wait after a failed `accept` (out of file descriptors, say) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Accepts and serves until aborted.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    forwarder: Arc<Forwarder>,
    max_connections: usize,
) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = accept(&listener, &slots) => match accepted {
                Ok((stream, slot)) => {
                    let forwarder = Arc::clone(&forwarder);
                    connections.spawn(async move {
                        serve_connection(stream, forwarder).await;
                        drop(slot);
                    });
                }
                Err(error) => {
                    eprintln!("rr-proxy: accept failed: {error}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Waits for a free slot, then for a connection.
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> std::io::Result<(TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let slot = Arc::clone(slots)
        .acquire_owned()
        .await
        .map_err(std::io::Error::other)?;
    let (stream, _) = listener.accept().await?;
    Ok((stream, slot))
}

/// Serves one client connection until it closes. hyper bounds the time to read a request head
/// (30 s, with the timer set).
async fn serve_connection(stream: TcpStream, forwarder: Arc<Forwarder>) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |request| {
        let forwarder = Arc::clone(&forwarder);
        async move { Ok::<_, Infallible>(forwarder.handle(request).await) }
    });
    // A connection that ends badly (the client went away mid-request) concerns nobody else.
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
