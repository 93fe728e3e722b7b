//! Resource subscriptions deliver updates to their subscriber: `resources/subscribe` in a
//! session, a `subscriptions/listen` in 2026-07-28 (ended by dropping the subscription).

use std::time::Duration;

use barrel_mcp::types::{ProtocolVersion, RequestId};
use serde_json::json;
use tokio::sync::mpsc;

use super::{builder, connect_fake, connect_to, discover_result, fixture};
use crate::support::within;

#[tokio::test]
async fn session_updates_reach_the_subscriber() {
    let (server, _) = fixture::server();
    let client = connect_to(&server, builder(Some(ProtocolVersion::V2025_11_25))).await;
    let mut readme = within(client.subscribe("test://readme"))
        .await
        .expect("subscribe");
    server.notify_resource_updated("test://blob");
    server.notify_resource_updated("test://readme");
    let update = within(readme.next()).await.expect("an update");
    assert_eq!(update.uri, "test://readme");
    client.close();
    assert!(within(readme.next()).await.is_none());
}

#[tokio::test]
async fn modern_updates_come_on_a_listen_that_ends_with_the_subscription() {
    let (cancelled_tx, mut cancelled) = mpsc::unbounded_channel::<RequestId>();
    let client = connect_fake(builder(None), move |req, peer| {
        let cancelled_tx = cancelled_tx.clone();
        Box::pin(async move {
            match req.method.as_str() {
                "server/discover" => Ok(discover_result(
                    json!({ "resources": { "subscribe": true } }),
                )),
                "subscriptions/listen" => {
                    let id = req.id.to_value();
                    let meta = json!({ "io.modelcontextprotocol/subscriptionId": id });
                    let filter = &req.params.as_ref().expect("params")["notifications"];
                    let _ = peer
                        .notify(
                            "notifications/subscriptions/acknowledged",
                            Some(json!({ "_meta": meta, "notifications": filter })),
                        )
                        .await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let update = json!({ "_meta": meta, "uri": "test://a" });
                    let _ = peer
                        .notify("notifications/resources/updated", Some(update))
                        .await;
                    // Runs until the client cancels it.
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    let _ = cancelled_tx.send(req.id);
                    Ok(json!({}))
                }
                other => Err(barrel_mcp::types::ErrorObject::method_not_found(other)),
            }
        })
    })
    .await;
    let mut sub = within(client.subscribe("test://a"))
        .await
        .expect("subscribe");
    assert_eq!(within(sub.next()).await.expect("update").uri, "test://a");
    drop(sub);
    // The fake's handler is cancelled, so its sleep never finishes.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(cancelled.try_recv().is_err());
}
