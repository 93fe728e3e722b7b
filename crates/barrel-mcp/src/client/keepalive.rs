//! The optional keepalive: a ping every interval; after too many failures in a row the client
//! closes the connection, so calls fail fast and a supervisor ([`Clients`](super::Clients)) can
//! reconnect. The task holds the client weakly: dropping every handle still ends it.

use std::sync::Weak;

use super::options::CallOptions;
use super::{Client, Inner, Keepalive};
use crate::peer::Peer;

pub(crate) async fn run(inner: Weak<Inner>, peer: Peer, keepalive: Keepalive) {
    let mut failures = 0u32;
    loop {
        tokio::select! {
            () = peer.closed() => return,
            () = tokio::time::sleep(keepalive.interval) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        let client = Client { inner };
        let options = CallOptions::new().timeout(keepalive.interval);
        match client.ping_with(&options).await {
            Ok(()) => failures = 0,
            Err(error) => {
                failures += 1;
                tracing::debug!(%error, failures, "keepalive ping failed");
                if failures >= keepalive.failure_threshold {
                    tracing::warn!(failures, "server stopped answering pings; closing");
                    client.close();
                    return;
                }
            }
        }
    }
}
