//! The keepalive ping (barrel_mcp's `ping_interval`/`ping_failure_threshold`): a server that
//! stops answering is detected after the threshold and the connection closed; one that answers
//! keeps it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use barrel_mcp::types::{ErrorObject, ProtocolVersion};
use serde_json::json;

use super::{builder, connect_fake};
use crate::support::within;

/// A fake 2025-11-25 server that answers pings until `silent` is set, then never again.
async fn fake(
    silent: Arc<AtomicBool>,
    pings: Arc<AtomicUsize>,
    interval: Duration,
) -> barrel_mcp::client::Client {
    let builder = builder(Some(ProtocolVersion::V2025_11_25)).keepalive(interval, 2);
    connect_fake(builder, move |request, _| {
        let silent = Arc::clone(&silent);
        let pings = Arc::clone(&pings);
        Box::pin(async move {
            match request.method.as_str() {
                "initialize" => Ok(json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": { "name": "fake", "version": "0" }
                })),
                "ping" => {
                    pings.fetch_add(1, Ordering::SeqCst);
                    if silent.load(Ordering::SeqCst) {
                        std::future::pending::<()>().await;
                    }
                    Ok(json!({}))
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    })
    .await
}

#[tokio::test]
async fn a_server_that_stops_answering_is_detected_after_the_threshold() {
    let silent = Arc::new(AtomicBool::new(false));
    let pings = Arc::new(AtomicUsize::new(0));
    let interval = Duration::from_millis(50);
    let client = fake(Arc::clone(&silent), Arc::clone(&pings), interval).await;
    // Answered pings keep the connection.
    within(async {
        while pings.load(Ordering::SeqCst) < 3 {
            tokio::time::sleep(interval).await;
        }
    })
    .await;
    assert!(!client.is_closed());
    silent.store(true, Ordering::SeqCst);
    let stopped_at = pings.load(Ordering::SeqCst);
    within(client.closed()).await;
    // Two unanswered pings (the threshold) closed it, not the first.
    assert!(pings.load(Ordering::SeqCst) >= stopped_at + 2);
}
