//! The 2026-07-28 response cache: a list page or a resource read the server says may be kept
//! (`ttlMs`) is answered without a request until it expires or a notification says it changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use barrel_mcp::types::{ProtocolVersion, ReadResourceParams};
use serde_json::{Value, json};

use super::{builder, connect_fake, discover_result};
use crate::support::within;

/// A fake server that counts its `tools/list` and `resources/read` requests and answers them
/// with the given `ttlMs` and `cacheScope`.
async fn counting(
    ttl_ms: u64,
    scope: &'static str,
) -> (barrel_mcp::client::Client, Arc<AtomicUsize>) {
    let sent = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&sent);
    let client = connect_fake(
        builder(Some(ProtocolVersion::V2026_07_28)),
        move |request, peer| {
            let count = Arc::clone(&count);
            Box::pin(async move {
                let base = json!({"resultType": "complete", "ttlMs": ttl_ms, "cacheScope": scope});
                let mut answer = match request.method.as_str() {
                    "server/discover" => {
                        return Ok(discover_result(
                            json!({"tools": {"listChanged": true}, "resources": {}}),
                        ));
                    }
                    "tools/list" => {
                        json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
                    }
                    "resources/read" => {
                        let uri = request
                            .params
                            .as_ref()
                            .and_then(|p| p["uri"].as_str())
                            .unwrap_or("");
                        json!({"contents": [{"uri": uri, "text": "body"}]})
                    }
                    // A tool whose call changes the tool list: the server says so first.
                    "tools/call" => {
                        peer.notify("notifications/tools/list_changed", None)
                            .await
                            .ok();
                        return Ok(json!({"resultType": "complete", "content": []}));
                    }
                    other => return Err(barrel_mcp::types::ErrorObject::method_not_found(other)),
                };
                count.fetch_add(1, Ordering::SeqCst);
                for (k, v) in base.as_object().expect("object") {
                    answer[k] = v.clone();
                }
                Ok::<Value, _>(answer)
            })
        },
    )
    .await;
    (client, sent)
}

#[tokio::test]
async fn a_cached_list_is_served_without_a_request_until_it_expires() {
    within(async {
        let (client, sent) = counting(200, "private").await;
        for _ in 0..3 {
            assert_eq!(client.list_tools(None).await.expect("list").tools.len(), 1);
        }
        assert_eq!(
            sent.load(Ordering::SeqCst),
            1,
            "one request for three lists"
        );
        assert!(
            client.cached_public("tools/list", &json!({})).is_none(),
            "private"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        client.list_tools(None).await.expect("list");
        assert_eq!(sent.load(Ordering::SeqCst), 2, "expired: asked again");
        let read = |uri: &str| client.read_resource(ReadResourceParams::new(uri));
        read("a://1").await.expect("read");
        read("a://1").await.expect("read");
        read("a://2").await.expect("read");
        assert_eq!(sent.load(Ordering::SeqCst), 4, "one read per URI");
        client.clear_response_cache();
        client.list_tools(None).await.expect("list");
        assert_eq!(sent.load(Ordering::SeqCst), 5);
    })
    .await;
}

#[tokio::test]
async fn list_changed_drops_the_cached_list_and_ttl_zero_is_never_kept() {
    within(async {
        let (client, sent) = counting(60_000, "public").await;
        client.list_tools(None).await.expect("list");
        assert!(
            client
                .cached_public("tools/list", &json!({"cursor": null}))
                .is_some()
        );
        client.list_tools(None).await.expect("list");
        assert_eq!(sent.load(Ordering::SeqCst), 1);
        client
            .call_tool(barrel_mcp::types::CallToolParams::new("change"))
            .await
            .expect("call");
        client.list_tools(None).await.expect("list");
        assert_eq!(
            sent.load(Ordering::SeqCst),
            2,
            "asked again after list_changed"
        );
        let (uncached, sent) = counting(0, "public").await;
        uncached.list_tools(None).await.expect("list");
        uncached.list_tools(None).await.expect("list");
        assert_eq!(sent.load(Ordering::SeqCst), 2, "ttlMs 0 is not cached");
    })
    .await;
}
