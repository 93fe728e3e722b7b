//! A session opened on A continues on B, and what the client does on one node (initialize,
//! set a level, subscribe) governs the other.

use std::sync::Arc;
use std::time::{Duration, Instant};

use barrel_mcp::store::SessionStore;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{
    Nodes, TestStore, answer_stream, echo, eventually, initialized, open, post_json, request,
};
use crate::http::{SseReader, body_json, session_id};
use crate::support::within;

#[tokio::test]
async fn a_session_opened_on_a_continues_on_b() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store.clone(), |_, _| {}).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    let id = on_a.session.clone().expect("session");
    // Durable before visible: the record is there when the id is.
    let record = store.load(&id).await.unwrap().expect("stored");
    assert!(!record.initialized);
    assert_eq!(record.client_info.name, "http-test");
    assert!(record.client_capabilities.elicitation.is_some());

    let on_b = nodes.on_b(&on_a);
    let ack = on_b.post(&initialized()).await;
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
    assert_eq!(session_id(ack.headers()).as_deref(), Some(id.as_str()));
    // A JSON answer on B.
    let answer = body_json(post_json(&on_b, &echo(2, "hi from B"), &[]).await).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "hi from B",
        "{answer}"
    );
    // An SSE answer on B, in the negotiated revision.
    let sse = on_b
        .post_with(
            &echo(3, "streamed"),
            &[("mcp-protocol-version", "2025-11-25")],
        )
        .await;
    assert_eq!(session_id(sse.headers()).as_deref(), Some(id.as_str()));
    let messages = answer_stream(sse).await;
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "streamed"
    );
    // A GET stream on B works as on any node: B forwards its server's changes.
    let get = on_b
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::OK);
    let mut stream = SseReader::new(get);
    nodes.b_server.tools_list_changed();
    let listed = within(stream.next_message()).await;
    assert_eq!(listed["method"], "notifications/tools/list_changed");
    // And on A again.
    let answer = body_json(post_json(&on_a, &echo(4, "back on A"), &[]).await).await;
    assert_eq!(answer["result"]["content"][0]["text"], "back on A");

    // B's `notifications/initialized` reached the store; B holds one replica, known to its
    // server under the same name as on A.
    eventually("initialized is stored", || async {
        store
            .load(&id)
            .await
            .unwrap()
            .is_some_and(|r| r.initialized)
    })
    .await;
    assert_eq!(nodes.b.http.session_count(), 1);
    let handles = nodes.b_server.live_sessions();
    assert_eq!(handles.len(), 1);
    assert_ne!(
        handles[0].id(),
        id,
        "the server's name is not the Mcp-Session-Id"
    );
    let on_a_handles = nodes.a_server.live_sessions();
    assert_eq!(on_a_handles.len(), 1);
    assert_eq!(
        on_a_handles[0].id(),
        handles[0].id(),
        "one name on every node"
    );
    assert_eq!(handles[0].client_info().name, "http-test");
    nodes.stop().await;
}

/// The next message on `stream` within 150 ms, if one comes.
async fn soon(stream: &mut SseReader) -> Option<Value> {
    tokio::time::timeout(Duration::from_millis(150), stream.next_message())
        .await
        .ok()
}

#[tokio::test]
async fn what_the_client_does_on_b_reaches_its_stream_on_a() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store, |_, _| {}).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    let get = on_a
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::OK);
    let mut stream = SseReader::new(get);
    // Not initialized yet: A tells the session nothing.
    nodes.a_server.tools_list_changed();
    assert_eq!(soon(&mut stream).await, None);

    // Initialized and subscribed on B: A takes both from the store.
    let on_b = nodes.on_b(&on_a);
    assert_eq!(
        on_b.post(&initialized()).await.status(),
        StatusCode::ACCEPTED
    );
    let subscribe = request(2, "resources/subscribe", json!({"uri":"test://readme"}));
    let answer = body_json(post_json(&on_b, &subscribe, &[]).await).await;
    assert!(answer["result"].is_object(), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let told = loop {
        nodes.a_server.notify_resource_updated("test://readme");
        if let Some(message) = soon(&mut stream).await {
            break message;
        }
        assert!(Instant::now() < deadline, "A never forwarded the update");
    };
    assert_eq!(told["method"], "notifications/resources/updated", "{told}");
    assert_eq!(told["params"]["uri"], "test://readme");
    nodes.a_server.tools_list_changed();
    let listed = within(stream.next_message()).await;
    assert_eq!(listed["method"], "notifications/tools/list_changed");
    nodes.stop().await;
}

#[tokio::test]
async fn set_level_on_a_governs_logs_on_b() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store, |_, _| {}).await;
    let (on_a, on_b) = nodes.opened().await;
    let log = |id: i64, level: &str| {
        request(
            id,
            "tools/call",
            json!({"name":"log","arguments":{"level":level,"message":"note"}}),
        )
    };
    let logs_on_b = |id: i64, level: &'static str| {
        let on_b = on_b.clone();
        let message = log(id, level);
        async move {
            let messages = answer_stream(on_b.post(&message).await).await;
            messages
                .iter()
                .filter(|m| m["method"] == "notifications/message")
                .count()
        }
    };
    // No level yet: B (its replica built now) sends everything.
    assert_eq!(logs_on_b(2, "debug").await, 1);
    let set = body_json(
        post_json(
            &on_a,
            &request(3, "logging/setLevel", json!({"level":"error"})),
            &[],
        )
        .await,
    )
    .await;
    assert!(set["result"].is_object(), "{set}");
    let mut id = 10;
    eventually("B follows the level set on A", || {
        id += 1;
        let logged = logs_on_b(id, "debug");
        async move { logged.await == 0 }
    })
    .await;
    assert_eq!(logs_on_b(100, "error").await, 1);
    assert_eq!(logs_on_b(101, "info").await, 0);
    nodes.stop().await;
}

#[tokio::test]
async fn subscriptions_made_on_a_are_stored() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store.clone(), |_, _| {}).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    on_a.post(&initialized()).await;
    let id = on_a.session.clone().unwrap();
    let subscribe = request(2, "resources/subscribe", json!({"uri":"test://readme"}));
    let answer = body_json(post_json(&on_a, &subscribe, &[]).await).await;
    assert!(answer["result"].is_object(), "{answer}");
    eventually("the subscription is stored", || async {
        let record = store.load(&id).await.unwrap().unwrap();
        record.subscriptions.contains("test://readme") && record.initialized
    })
    .await;
    // Unsubscribing on B takes it out again.
    let on_b = nodes.on_b(&on_a);
    let unsubscribe = request(3, "resources/unsubscribe", json!({"uri":"test://readme"}));
    let answer = body_json(post_json(&on_b, &unsubscribe, &[]).await).await;
    assert!(answer["result"].is_object(), "{answer}");
    eventually("the unsubscription is stored", || async {
        store
            .load(&id)
            .await
            .unwrap()
            .unwrap()
            .subscriptions
            .is_empty()
    })
    .await;
    nodes.stop().await;
}
