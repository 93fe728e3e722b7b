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
    };
    assert_eq!(backoff.delay(1), Duration::from_millis(100));
    assert_eq!(backoff.delay(2), Duration::from_millis(200));
    assert_eq!(backoff.delay(4), Duration::from_millis(800));
    assert_eq!(backoff.delay(5), Duration::from_secs(1));
    assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(1));
}
