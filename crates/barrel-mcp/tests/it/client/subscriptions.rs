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

/// A modern fake server whose listen acknowledges `acknowledged` (the URIs it will watch),
/// sends one update for `test://a`, then ends the listen after `ends_after`.
async fn modern_fake(
    builder: barrel_mcp::client::ClientBuilder,
    acknowledged: serde_json::Value,
    ends_after: Duration,
) -> barrel_mcp::client::Client {
    connect_fake(builder, move |req, peer| {
        let acknowledged = acknowledged.clone();
        Box::pin(async move {
            match req.method.as_str() {
                "server/discover" => Ok(discover_result(
                    json!({ "resources": { "subscribe": true } }),
                )),
                "subscriptions/listen" => {
                    let meta = json!({ "io.modelcontextprotocol/subscriptionId": req.id.to_value() });
                    let ack = json!({ "_meta": meta, "notifications": { "resourceSubscriptions": acknowledged } });
                    let _ = peer
                        .notify("notifications/subscriptions/acknowledged", Some(ack))
                        .await;
                    let update = json!({ "_meta": meta, "uri": "test://a" });
                    let _ = peer
                        .notify("notifications/resources/updated", Some(update))
                        .await;
                    tokio::time::sleep(ends_after).await;
                    Ok(json!({ "resultType": "complete", "_meta": meta }))
                }
                other => Err(barrel_mcp::types::ErrorObject::method_not_found(other)),
            }
        })
    })
    .await
}

#[tokio::test]
async fn a_modern_subscription_outlives_the_request_time_limit_and_ends_with_its_listen() {
    // The listen has no time limit: it outlives max_request_timeout (200 ms here)...
    let builder = builder(None)
        .request_timeout(Duration::from_millis(200))
        .max_request_timeout(Duration::from_millis(200));
    let client = modern_fake(builder, json!(["test://a"]), Duration::from_millis(600)).await;
    let mut sub = within(client.subscribe("test://a"))
        .await
        .expect("subscribe");
    assert_eq!(within(sub.next()).await.expect("update").uri, "test://a");
    // ...and when the server ends it, `next` says so instead of waiting for ever.
    let started = std::time::Instant::now();
    assert!(within(sub.next()).await.is_none());
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "ended early"
    );
    assert!(within(sub.next()).await.is_none());
    client.close();
}

#[tokio::test]
async fn a_subscription_the_server_does_not_acknowledge_fails() {
    // The acknowledgement names no resource: the server will not watch `test://a`.
    let builder = builder(None).request_timeout(Duration::from_millis(300));
    let client = modern_fake(builder, json!([]), Duration::from_secs(30)).await;
    let error = within(client.subscribe("test://a"))
        .await
        .expect_err("not acknowledged");
    assert!(error.to_string().contains("did not acknowledge"), "{error}");
    client.close();
}

#[tokio::test]
async fn the_last_update_before_the_listen_ends_is_not_lost() {
    // The update and the listen's end arrive together: the update is still handed out.
    for _ in 0..20 {
        let client = modern_fake(builder(None), json!(["test://a"]), Duration::ZERO).await;
        let mut sub = within(client.subscribe("test://a"))
            .await
            .expect("subscribe");
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(within(sub.next()).await.expect("update").uri, "test://a");
        assert!(within(sub.next()).await.is_none());
        client.close();
    }
}
