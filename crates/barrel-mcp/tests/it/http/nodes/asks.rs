//! What crosses nodes for one client: the answer to a server-to-client request made on A,
//! POSTed to B, reaches the handler waiting on A; a cancellation POSTed to B stops the request
//! running on A; a server request made on B takes ids of B's own; registry changes announced
//! on A reach the client's GET stream on B; and what a client sends on is bounded.

use std::sync::Arc;

use barrel_mcp::store::NodeTag;
use http::StatusCode;
use serde_json::{Value, json};

use super::{Nodes, TestStore, eventually};
use crate::http::SseReader;
use crate::support::within;

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}})
}

fn sampled(id: &Value, text: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":{
        "role":"assistant","content":{"type":"text","text":text},"model":"test-model"}})
}

/// The node a server-to-client request id names.
fn node_of(id: &Value) -> Option<NodeTag> {
    id.as_i64().and_then(NodeTag::of_request_id)
}

#[tokio::test]
async fn a_sampling_request_made_on_a_is_answered_on_b() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, _| {}).await;
    let (on_a, on_b) = nodes.opened().await;

    let mut stream = SseReader::new(on_a.post(&call(2, "summarize")).await);
    let ask = within(stream.next_message()).await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let asker = node_of(&ask["id"]).expect("a tagged id");
    assert_ne!(
        asker,
        NodeTag::LOCAL,
        "a shared session's ids name their node"
    );

    // The answer goes to B, which sends it on to A.
    let answer = on_b.post(&sampled(&ask["id"], "forwarded")).await;
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    let result = within(stream.next_message()).await;
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"], "Summary: forwarded",
        "{result}"
    );

    // The same the other way round: B's requests carry B's tag, answered on A.
    let mut stream = SseReader::new(on_b.post(&call(3, "summarize")).await);
    let ask = within(stream.next_message()).await;
    let other = node_of(&ask["id"]).expect("a tagged id");
    assert_ne!(other, asker, "each node its own ids");
    assert_eq!(
        on_a.post(&sampled(&ask["id"], "back")).await.status(),
        StatusCode::ACCEPTED
    );
    let result = within(stream.next_message()).await;
    assert_eq!(result["result"]["content"][0]["text"], "Summary: back");
    nodes.stop().await;
}

#[tokio::test]
async fn an_answer_for_a_node_that_is_gone_is_accepted_and_dropped() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, _| {}).await;
    let (_on_a, on_b) = nodes.opened().await;
    // No node carries this tag: B accepts the answer (the client can do nothing better) and
    // serves the session on.
    let nobody = NodeTag::new(NodeTag::MAX)
        .and_then(|tag| tag.request_id(1))
        .expect("a tagged id");
    let answer = on_b.post(&sampled(&json!(nobody), "lost")).await;
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    let ping = on_b.call_json(9, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    nodes.stop().await;
}

#[tokio::test]
async fn a_cancellation_sent_to_b_stops_the_request_running_on_a() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, _| {}).await;
    let (on_a, on_b) = nodes.opened().await;
    // The response's headers come once the request was handed to A's connection.
    let running = on_a.post(&call(7, "slow")).await;
    assert_eq!(running.status(), StatusCode::OK);
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":7,"reason":"changed my mind"}});
    assert_eq!(on_b.post(&cancel).await.status(), StatusCode::ACCEPTED);
    eventually("A's tool sees the cancellation", || async {
        nodes.a_probe.saw_cancel()
    })
    .await;
    assert!(!nodes.b_probe.saw_cancel());
    // The cancelled request is never answered: its stream ends without a response.
    let mut stream = SseReader::new(running);
    while let Some(event) = within(stream.next_event()).await {
        assert!(!event.data.contains("\"id\":7"), "answered: {}", event.data);
    }
    nodes.stop().await;
}

/// Calls `announce` until a message arrives on `stream` (the other node may take a moment to
/// learn the client initialized), for at most 5 s.
async fn announced(stream: &mut SseReader, announce: impl Fn()) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        announce();
        let next =
            tokio::time::timeout(std::time::Duration::from_millis(150), stream.next_message());
        if let Ok(message) = next.await {
            return message;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never reached the other node"
        );
    }
}

#[tokio::test]
async fn changes_announced_on_a_reach_the_clients_of_b() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, _| {}).await;
    let (_on_a, on_b) = nodes.opened().await;
    let subscribe = json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe",
        "params":{"uri":"test://readme"}});
    let subscribed = on_b.post(&subscribe).await;
    assert_eq!(subscribed.status(), StatusCode::OK);
    let get = on_b
        .send(http::Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::OK);
    let mut stream = SseReader::new(get);

    let listed = announced(&mut stream, || nodes.a_server.tools_list_changed()).await;
    assert_eq!(listed["method"], "notifications/tools/list_changed");
    let updated = announced(&mut stream, || {
        nodes.a_server.notify_resource_updated("test://readme");
    })
    .await;
    // Calls made before B took the subscription may have sent more list changes: skip them.
    let mut updated = updated;
    while updated["method"] == "notifications/tools/list_changed" {
        updated = within(stream.next_message()).await;
    }
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    assert_eq!(updated["params"]["uri"], "test://readme");
    // An update of a resource B's client did not subscribe to is not sent.
    nodes.a_server.notify_resource_updated("test://other");
    nodes.a_server.prompts_list_changed();
    // (Repeats of the announcements above may still arrive first.)
    let next = loop {
        let next = within(stream.next_message()).await;
        let repeat = next["method"] == "notifications/tools/list_changed"
            || (next["method"] == "notifications/resources/updated"
                && next["params"]["uri"] == "test://readme");
        if !repeat {
            break next;
        }
    };
    assert_eq!(
        next["method"], "notifications/prompts/list_changed",
        "{next}"
    );
    nodes.stop().await;
}

#[tokio::test]
async fn what_a_client_sends_on_to_other_nodes_is_bounded_in_size_and_rate() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, config| {
        if let Some(shared) = config.shared_sessions.as_mut() {
            shared.max_forwarded_bytes = 2048;
            shared.max_forwards_per_second = 3;
        }
    })
    .await;
    let (_on_a, on_b) = nodes.opened().await;
    let on_a_id = |n| {
        NodeTag::new(NodeTag::MAX - 1)
            .and_then(|tag| tag.request_id(n))
            .expect("a tagged id")
    };
    // Too large to send on: 413, and the session goes on.
    let large = sampled(&json!(on_a_id(1)), &"x".repeat(4096));
    assert_eq!(
        on_b.post(&large).await.status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // Three a second go out; the fourth is 429 with Retry-After (cancellations count too).
    for n in 2..5 {
        let answer = on_b.post(&sampled(&json!(on_a_id(n)), "ok")).await;
        assert_eq!(answer.status(), StatusCode::ACCEPTED, "answer {n}");
    }
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":"elsewhere"}});
    let refused = on_b.post(&cancel).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "1");
    // What stays on this node is not counted; a second later the budget is back.
    let ping = on_b.call_json(9, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(on_b.post(&cancel).await.status(), StatusCode::ACCEPTED);
    nodes.stop().await;
}
