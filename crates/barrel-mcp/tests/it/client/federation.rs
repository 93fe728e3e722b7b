//! Federation: a supervised client reconnects with backoff after its server goes away.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use barrel_mcp::client::{Backoff, Clients, ServerStatus};
use barrel_mcp::transport::memory;
use tokio::task::JoinHandle;

use super::{builder, fixture};
use crate::support::within;

#[tokio::test]
async fn reconnects_after_the_server_restarts() {
    let (server, _) = fixture::server();
    let running: Arc<Mutex<Vec<JoinHandle<barrel_mcp::Result<()>>>>> = Arc::default();
    let served = Arc::clone(&running);
    let clients = Clients::new();
    let backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(100),
        ..Backoff::default()
    };
    clients.start("fixture", builder(None), backoff, move || {
        let server = server.clone();
        let served = Arc::clone(&served);
        async move {
            let (a, b) = memory();
            let task = tokio::spawn(async move { server.serve(b).await });
            served.lock().expect("lock").push(task);
            Ok(a)
        }
    });
    let first = within(clients.connected("fixture"))
        .await
        .expect("connected");
    within(first.ping()).await.expect("ping");
    assert_eq!(
        clients.list(),
        [("fixture".to_owned(), ServerStatus::Connected)]
    );

    // The server goes away.
    if let Some(task) = running.lock().expect("lock").pop() {
        task.abort();
    }
    within(first.closed()).await;
    let second = within(async {
        loop {
            if let Some(client) = clients.get("fixture").filter(|c| !c.is_closed()) {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    within(second.ping()).await.expect("ping after the restart");
    assert!(first.ping().await.is_err());

    assert!(within(clients.stop("fixture")).await);
    within(second.closed()).await;
    assert!(clients.get("fixture").is_none());
    assert!(clients.list().is_empty());
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
        ..Backoff::default()
    };
    assert_eq!(backoff.delay(1), Duration::from_millis(100));
    assert_eq!(backoff.delay(2), Duration::from_millis(200));
    assert_eq!(backoff.delay(4), Duration::from_millis(800));
    assert_eq!(backoff.delay(5), Duration::from_secs(1));
    assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(1));
}

#[tokio::test]
async fn a_server_that_dies_at_once_sees_the_backoff_grow() {
    // Each connection is served for 20 ms, then dropped: never healthy, so the waits grow
    // (20, 40, 80 ms...) instead of starting over after every short-lived connection.
    let (server, _) = fixture::server();
    let clients = Clients::new();
    let backoff = Backoff {
        initial: Duration::from_millis(20),
        max: Duration::from_secs(5),
        reset_after: Duration::from_secs(5),
    };
    let connections = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = Arc::clone(&connections);
    clients.start("flaky", builder(None), backoff, move || {
        let server = server.clone();
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let (a, b) = memory();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_millis(20), server.serve(b)).await;
            });
            Ok(a)
        }
    });
    let attempt = within(async {
        loop {
            if let Some(ServerStatus::Retrying { attempt, .. }) = clients.status("flaky")
                && attempt >= 4
            {
                return attempt;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(attempt >= 4);
    // `attempt` reaching 4 is the proof: with the backoff starting over after every
    // connection it would stay at 1. And one connection per attempt, no more.
    let made = connections.load(std::sync::atomic::Ordering::SeqCst);
    assert!((4..=6).contains(&made), "{made} connections");
    clients.stop_all().await;
}

#[tokio::test]
async fn dropping_the_registry_stops_its_servers() {
    let (server, _) = fixture::server();
    let serving: Arc<Mutex<Option<JoinHandle<barrel_mcp::Result<()>>>>> = Arc::default();
    let served = Arc::clone(&serving);
    let clients = Clients::new();
    clients.start("fixture", builder(None), Backoff::default(), move || {
        let server = server.clone();
        let served = Arc::clone(&served);
        async move {
            let (a, b) = memory();
            let task = tokio::spawn(async move { server.serve(b).await });
            *served.lock().expect("lock") = Some(task);
            Ok(a)
        }
    });
    let client = within(clients.connected("fixture"))
        .await
        .expect("connected");
    drop(clients);
    // The supervisor closes its connection: the client ends, and so does the server's side.
    within(client.closed()).await;
    let task = serving.lock().expect("lock").take().expect("served");
    within(task).await.expect("join").expect("served cleanly");
}
