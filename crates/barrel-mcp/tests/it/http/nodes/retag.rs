//! A node that takes a new tag (its old one went to another node, as after a Redis restart
//! without its data) drops its copies of shared sessions and builds them anew: the requests
//! they make of the client carry the new tag, so answers keep reaching this node.

use std::sync::Arc;

use barrel_mcp::store::{LocalHub, NodeTag};
use http::StatusCode;
use serde_json::json;

use super::test_bus::TestBus;
use super::{Nodes, TestStore};
use crate::http::SseReader;
use crate::support::within;

/// The node a sampling request's id names, from the first message of a `summarize` call.
async fn asker(client: &crate::http::Client, id: i64) -> NodeTag {
    let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"summarize","arguments":{}}});
    let mut stream = SseReader::new(client.post(&call).await);
    let ask = within(stream.next_message()).await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    ask["id"]
        .as_i64()
        .and_then(NodeTag::of_request_id)
        .expect("a tagged id")
}

#[tokio::test]
async fn a_node_that_takes_a_new_tag_rebuilds_its_copies_under_it() {
    let store = Arc::new(TestStore::default());
    let hub = LocalHub::new();
    let first = NodeTag::new(40).expect("a tag");
    let retagged = Arc::new(TestBus::join(&hub).tagged(first));
    let nodes = Nodes::start(
        store.clone(),
        store,
        retagged.clone(),
        Arc::new(hub.join()),
        |_, _| {},
    )
    .await;
    let (on_a, _on_b) = nodes.opened().await;
    assert_eq!(asker(&on_a, 2).await, first);

    let second = NodeTag::new(41).expect("a tag");
    retagged.tag.send_replace(second);
    // The copy built under the old tag is dropped (by the watcher, or at the next request) and
    // the session goes on from the store, its requests tagged anew.
    let ping = on_a.call_json(3, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    assert_eq!(asker(&on_a, 4).await, second);
    assert_eq!(nodes.a.http.session_count(), 1);
    let listed = on_a
        .post(&json!({"jsonrpc":"2.0","id":5,"method":"ping"}))
        .await;
    assert_eq!(listed.status(), StatusCode::OK);
    nodes.stop().await;
}
