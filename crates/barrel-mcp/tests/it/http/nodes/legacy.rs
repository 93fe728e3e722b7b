//! A legacy HTTP+SSE session (2024-11-05) on a replicated service: its stream stays on the node
//! that opened it, and the POSTs that reach another node are sent on to that node; a session
//! that ended, or that no node holds, is 404 everywhere.

use std::sync::Arc;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Nodes, TestStore, eventually};
use crate::http::{Client, SseReader, initialize};
use crate::support::within;

/// POSTs `message` to the legacy `endpoint` on `client`'s node; returns the status.
async fn post(client: &Client, endpoint: &str, message: &Value) -> StatusCode {
    client
        .send_to(
            Method::POST,
            endpoint,
            &[("content-type", "application/json")],
            Some(&message.to_string()),
        )
        .await
        .status()
}

#[tokio::test]
async fn posts_reaching_the_other_node_are_answered_on_the_stream() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, _| {}).await;
    let (on_a, on_b) = (nodes.a.client(), nodes.b.client());
    let opened = on_a
        .send_to(
            Method::GET,
            "/sse",
            &[("accept", "text/event-stream")],
            None,
        )
        .await;
    assert_eq!(opened.status(), StatusCode::OK);
    let mut stream = SseReader::new(opened);
    let endpoint = within(stream.next_event()).await.expect("endpoint").data;
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");

    // Every message goes to B; the answers come on A's stream.
    assert_eq!(
        post(&on_b, &endpoint, &initialize(1)).await,
        StatusCode::ACCEPTED
    );
    let answer = within(stream.next_message()).await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(
        post(&on_b, &endpoint, &initialized).await,
        StatusCode::ACCEPTED
    );
    let echo = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"echo","arguments":{"message":"across"}}});
    assert_eq!(post(&on_b, &endpoint, &echo).await, StatusCode::ACCEPTED);
    let answer = within(stream.next_message()).await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "across");

    // Ids no node holds.
    let unknown = format!("/messages?sessionId={}", "A".repeat(32));
    assert_eq!(
        post(&on_b, &unknown, &initialized).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        post(&on_b, "/messages?sessionId=short", &initialized).await,
        StatusCode::NOT_FOUND
    );
    // Its Streamable HTTP endpoint does not know it either.
    let id = endpoint.trim_start_matches("/messages?sessionId=");
    let mut streamable = nodes.b.client();
    streamable.session = Some(id.to_owned());
    assert_eq!(streamable.post(&echo).await.status(), StatusCode::NOT_FOUND);

    // The stream ends: so does the session, on every node.
    drop(stream);
    eventually("the ended session is 404 on B", || async {
        post(&on_b, &endpoint, &initialized).await == StatusCode::NOT_FOUND
    })
    .await;
    nodes.stop().await;
}
