//! A legacy HTTP+SSE session (2024-11-05) on a replicated service: its stream stays on the node
//! that opened it, and the POSTs that reach another node are sent on to that node; a session
//! that ended, or that no node holds, is 404 everywhere. The holder keeps the record while the
//! stream lives and deletes it when it ends; a record gone from the store ends the session.
//! (`legacy_bounds.rs`: what is sent on is bounded.)

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp::store::{Bus, LocalHub, SessionStore};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Nodes, TestStore, eventually};
use crate::http::{Client, Response, SseReader, initialize};
use crate::support::within;

/// POSTs `message` to the legacy `endpoint` on `client`'s node.
pub(super) async fn post_for(client: &Client, endpoint: &str, message: &Value) -> Response {
    client
        .send_to(
            Method::POST,
            endpoint,
            &[("content-type", "application/json")],
            Some(&message.to_string()),
        )
        .await
}

/// POSTs `message` to the legacy `endpoint` on `client`'s node; returns the status.
pub(super) async fn post(client: &Client, endpoint: &str, message: &Value) -> StatusCode {
    post_for(client, endpoint, message).await.status()
}

/// Opens a legacy session on `client`'s node: its stream, and the endpoint it names.
pub(super) async fn open_legacy(client: &Client) -> (SseReader, String) {
    let opened = client
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
    (stream, endpoint)
}

/// The session id an endpoint names.
pub(super) fn id_of(endpoint: &str) -> &str {
    endpoint.trim_start_matches("/messages?sessionId=")
}

/// Reads `stream` to its end (each event within the step timeout).
pub(super) async fn until_ended(stream: &mut SseReader) {
    while within(stream.next_event()).await.is_some() {}
}

/// `initialize` POSTed on `client`'s node, answered on `stream`, then `initialized`.
pub(super) async fn initialize_through(client: &Client, endpoint: &str, stream: &mut SseReader) {
    assert_eq!(
        post(client, endpoint, &initialize(1)).await,
        StatusCode::ACCEPTED
    );
    let answer = within(stream.next_message()).await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        post(client, endpoint, &super::initialized()).await,
        StatusCode::ACCEPTED
    );
}

/// A notification the holder takes without a word on the stream.
pub(super) fn cancelled() -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}})
}

#[tokio::test]
async fn posts_reaching_the_other_node_are_answered_on_the_stream() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |_, _| {}).await;
    let (on_a, on_b) = (nodes.a.client(), nodes.b.client());
    let (mut stream, endpoint) = open_legacy(&on_a).await;

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

#[tokio::test]
async fn the_holder_deletes_the_record_when_the_stream_ends() {
    let store = Arc::new(TestStore::default());
    let hub = LocalHub::new();
    let (bus_a, bus_b) = (Arc::new(hub.join()), Arc::new(hub.join()));
    let holder = bus_a.node();
    let nodes = Nodes::start(store.clone(), store.clone(), bus_a, bus_b, |_, _| {}).await;
    let (mut stream, endpoint) = open_legacy(&nodes.a.client()).await;
    let (on_a, on_b) = (nodes.a.client(), nodes.b.client());
    initialize_through(&on_b, &endpoint, &mut stream).await;
    let id = id_of(&endpoint).to_owned();
    let record = store
        .inner
        .load(&id)
        .await
        .expect("the store answers")
        .expect("stored while the stream lives");
    assert!(record.legacy);
    assert_eq!(record.get_owner, Some(holder));

    // The client leaves: the holder deletes the record, and the session is 404 everywhere.
    drop(stream);
    eventually("the record is deleted", || async {
        store
            .inner
            .load(&id)
            .await
            .expect("the store answers")
            .is_none()
    })
    .await;
    assert_eq!(
        post(&on_b, &endpoint, &cancelled()).await,
        StatusCode::NOT_FOUND
    );
    eventually("the holder forgot the session", || async {
        post(&on_a, &endpoint, &cancelled()).await == StatusCode::NOT_FOUND
    })
    .await;
    nodes.stop().await;
}

#[tokio::test]
async fn a_session_whose_record_is_gone_ends_on_its_holder() {
    let store = Arc::new(TestStore::default());
    // The holder touches the record every eighth of the idle timeout (250 ms here).
    let nodes = Nodes::local(store.clone(), |_, config| {
        config.session_idle_timeout = Duration::from_secs(2);
    })
    .await;
    let (mut stream, endpoint) = open_legacy(&nodes.a.client()).await;
    let (on_a, on_b) = (nodes.a.client(), nodes.b.client());
    initialize_through(&on_b, &endpoint, &mut stream).await;

    // The record vanishes (an outage outlived it, or the store lost it): the holder notices
    // at its next touch and ends the session, stream included.
    assert!(store.inner.delete(id_of(&endpoint)).await.expect("deleted"));
    until_ended(&mut stream).await;
    assert_eq!(
        post(&on_b, &endpoint, &cancelled()).await,
        StatusCode::NOT_FOUND
    );
    eventually("the holder forgot the session", || async {
        post(&on_a, &endpoint, &cancelled()).await == StatusCode::NOT_FOUND
    })
    .await;
    nodes.stop().await;
}

/// The same over Redis: each node its own `RedisSessionStore` and `RedisBus` on the shared
/// `redis-server`; the record is the key `P:s:{id}`.
#[cfg(feature = "redis")]
#[tokio::test]
async fn over_redis_the_record_lives_as_long_as_the_stream() {
    use barrel_mcp::store::{BusOptions, RedisBus, RedisSessionStore};

    use crate::support::redis::{connect, keys_under, plain, shared, unique_prefix};

    let (url, prefix) = (shared().url(), unique_prefix("legacy-nodes"));
    let store_a = Arc::new(RedisSessionStore::new(connect(&url, &prefix).await));
    let store_b = Arc::new(RedisSessionStore::new(connect(&url, &prefix).await));
    let bus = || async {
        let redis = connect(&url, &prefix).await;
        Arc::new(
            RedisBus::start(redis, BusOptions::default())
                .await
                .expect("the bus starts"),
        )
    };
    let (bus_a, bus_b) = (bus().await, bus().await);
    let nodes = Nodes::start(
        store_a,
        store_b,
        bus_a.clone(),
        bus_b.clone(),
        |_, config| {
            config.session_idle_timeout = Duration::from_secs(2);
        },
    )
    .await;
    let on_b = nodes.b.client();
    let key = |endpoint: &str| format!("{prefix}:s:{{{}}}", id_of(endpoint));

    // The stream ends: its record is deleted.
    let (mut stream, endpoint) = open_legacy(&nodes.a.client()).await;
    initialize_through(&on_b, &endpoint, &mut stream).await;
    assert!(keys_under(&url, &prefix).await.contains(&key(&endpoint)));
    drop(stream);
    eventually("the record is deleted", || async {
        !keys_under(&url, &prefix).await.contains(&key(&endpoint))
    })
    .await;
    assert_eq!(
        post(&on_b, &endpoint, &cancelled()).await,
        StatusCode::NOT_FOUND
    );

    // The record is deleted behind the holder's back: the session ends.
    let (mut stream, endpoint) = open_legacy(&nodes.a.client()).await;
    initialize_through(&on_b, &endpoint, &mut stream).await;
    let deleted: i64 = ::redis::cmd("DEL")
        .arg(key(&endpoint))
        .query_async(&mut plain(&url).await)
        .await
        .expect("DEL");
    assert_eq!(deleted, 1);
    until_ended(&mut stream).await;
    assert_eq!(
        post(&on_b, &endpoint, &cancelled()).await,
        StatusCode::NOT_FOUND
    );
    nodes.stop().await;
    bus_a.stop().await;
    bus_b.stop().await;
}
