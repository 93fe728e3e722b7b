//! Streams shared through an event store (`SharedSessions::events`, here one
//! `MemoryEventStore` both nodes hold): a request's stream produced on A is resumed on B,
//! replayed and followed to its response; a stream whose node is gone is answered with an
//! error; the GET stream is served by the node the client last opened it on, each registry
//! change written once, and resumed on another node with what it missed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use barrel_mcp::http::SharedSessions;
use barrel_mcp::peer::BoxFuture;
use barrel_mcp::store::{
    Bus, EventLimits, EventStore, LocalBus, LocalHub, MemoryEventStore, NodeTag, Opened, Replay,
    StoreError, StreamInfo,
};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Nodes, TestStore};
use crate::http::{Client, SseReader};
use crate::support::within;

pub(super) fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}})
}

/// A memory event store whose appends take `delay`, whose next `append_first` stores its
/// event and then fails while `lose_first_append` is set (as a Redis append that timed out
/// after Redis applied it), and which records the streams stored whole.
#[derive(Default)]
pub(super) struct TestEvents {
    inner: MemoryEventStore,
    delay: Duration,
    pub(super) lose_first_append: AtomicBool,
    pub(super) whole: Mutex<Vec<u64>>,
}

impl TestEvents {
    fn slow(delay: Duration) -> Self {
        Self {
            delay,
            ..Self::default()
        }
    }
}

impl EventStore for TestEvents {
    fn open<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Opened, StoreError>> {
        self.inner.open(session, stream, info, limits)
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.append(session, stream, data, last, limits).await
        })
    }

    fn append_first<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            let stored = self
                .inner
                .append_first(session, stream, info, data, last, limits)
                .await;
            if self.lose_first_append.swap(false, Ordering::SeqCst) {
                return Err(StoreError::Unavailable(
                    "timed out after it was applied".into(),
                ));
            }
            stored
        })
    }

    fn append_single<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        self.whole.lock().unwrap().push(stream);
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner
                .append_single(session, stream, info, data, limits)
                .await
        })
    }

    fn keep<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        producer: NodeTag,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.keep(session, stream, producer, limits)
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.finish(session, stream, info, limits)
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> BoxFuture<'a, Result<Option<Replay>, StoreError>> {
        self.inner.replay(session, stream, after)
    }

    fn forget<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.forget(session)
    }
}

async fn nodes() -> (Nodes, Arc<LocalBus>, Arc<LocalBus>) {
    nodes_on(Arc::new(MemoryEventStore::new()), |_| {}).await
}

/// Two nodes of one hub, their streams in `events`, their shared sessions tweaked by `tweak`.
pub(super) async fn nodes_on(
    events: Arc<dyn EventStore>,
    tweak: impl Fn(&mut SharedSessions),
) -> (Nodes, Arc<LocalBus>, Arc<LocalBus>) {
    let store = Arc::new(TestStore::default());
    let hub = LocalHub::new();
    let (bus_a, bus_b) = (Arc::new(hub.join()), Arc::new(hub.join()));
    let nodes = Nodes::start(
        store.clone(),
        store,
        bus_a.clone(),
        bus_b.clone(),
        |_, config| {
            if let Some(shared) = config.shared_sessions.as_mut() {
                shared.events = Some(Arc::clone(&events));
                shared.follow_interval = Duration::from_millis(20);
                tweak(shared);
            }
        },
    )
    .await;
    (nodes, bus_a, bus_b)
}

/// GET with `Last-Event-ID: cursor` (or none).
async fn get(client: &Client, cursor: Option<&str>) -> crate::http::Response {
    let mut headers = vec![("accept", "text/event-stream")];
    if let Some(cursor) = cursor {
        headers.push(("last-event-id", cursor));
    }
    client.send(Method::GET, &headers, None).await
}

/// The stream number of an event id `stream.seq`.
pub(super) fn stream_of(id: &str) -> u64 {
    id.split_once('.')
        .and_then(|(stream, _)| stream.parse().ok())
        .expect("an event id")
}

/// The next event carrying a message, with its id.
pub(super) async fn next(stream: &mut SseReader) -> (Option<String>, Value) {
    loop {
        let event = within(stream.next_event())
            .await
            .expect("stream ended early");
        if !event.data.is_empty() {
            return (event.id, serde_json::from_str(&event.data).expect("JSON"));
        }
    }
}

#[tokio::test]
async fn a_request_stream_produced_on_a_is_resumed_on_b_to_its_response() {
    let (nodes, bus_a, _bus_b) = nodes().await;
    let (on_a, on_b) = nodes.opened().await;

    let mut stream = SseReader::new(on_a.post(&call(2, "ask_name")).await);
    let priming = within(stream.next_event()).await.expect("priming event");
    let priming_id = priming.id.expect("the priming event has an id");
    let number = stream_of(&priming_id);
    assert_eq!(
        NodeTag::of_stream(number),
        Some(bus_a.node()),
        "a shared session's stream numbers carry their node: {priming_id}"
    );
    let (ask_id, ask) = next(&mut stream).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    // The client loses the stream and resumes it on B, from the priming event.
    drop(stream);
    let resumed = get(&on_b, Some(&priming_id)).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut resumed = SseReader::new(resumed);
    let (again_id, again) = next(&mut resumed).await;
    assert_eq!(
        again_id, ask_id,
        "the event the client missed, under its id"
    );
    assert_eq!(again, ask);

    // The answer reaches A; A's response reaches the client on B's stream.
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],
        "result":{"action":"accept","content":{"name":"Ada"}}});
    assert_eq!(on_b.post(&answer).await.status(), StatusCode::ACCEPTED);
    let (_, result) = next(&mut resumed).await;
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "Hello, Ada!");
    assert!(
        within(resumed.next_event()).await.is_none(),
        "the stream ends with its response"
    );
    nodes.stop().await;
}

#[tokio::test]
async fn a_stream_whose_node_is_gone_is_answered_with_an_error() {
    let (nodes, bus_a, _bus_b) = nodes().await;
    let (on_a, on_b) = nodes.opened().await;
    let mut stream = SseReader::new(on_a.post(&call(3, "ask_name")).await);
    let priming = within(stream.next_event()).await.expect("priming event");
    let (ask_id, _) = next(&mut stream).await;
    drop(stream);
    // A leaves the service: its request will never be answered.
    bus_a.stop();
    let resumed = get(&on_b, priming.id.as_deref()).await;
    let mut resumed = SseReader::new(resumed);
    let (again_id, _) = next(&mut resumed).await;
    assert_eq!(again_id, ask_id);
    let (_, answer) = next(&mut resumed).await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(within(resumed.next_event()).await.is_none());
    nodes.stop().await;
}

/// Reads messages until one with `method` arrives, for at most 5 s; the number read before it.
async fn until_method(stream: &mut SseReader, method: &str) -> (Option<String>, usize) {
    let mut skipped = 0;
    loop {
        let (id, message) = next(stream).await;
        if message["method"] == method {
            return (id, skipped);
        }
        skipped += 1;
    }
}

#[tokio::test]
async fn the_get_stream_follows_the_node_it_was_opened_on() {
    let (nodes, _bus_a, _bus_b) = nodes().await;
    let (on_a, on_b) = nodes.opened().await;

    // Opened on B: B serves it; a change announced on A is written once, by B.
    let on_b_get = get(&on_b, None).await;
    assert_eq!(on_b_get.status(), StatusCode::OK);
    let mut on_b_get = SseReader::new(on_b_get);
    let priming = within(on_b_get.next_event()).await.expect("priming event");
    assert_eq!(priming.id.as_deref(), Some("0.0"));
    // B takes a moment to hear the client initialized on A.
    let (changed_id, _) = {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            nodes.a_server.tools_list_changed();
            let next = tokio::time::timeout(Duration::from_millis(150), next(&mut on_b_get));
            if let Ok(found) = next.await {
                break found;
            }
            assert!(std::time::Instant::now() < deadline, "never announced on B");
        }
    };
    let changed_id = changed_id.expect("GET events have ids");
    assert_eq!(stream_of(&changed_id), 0, "{changed_id}");

    // Opened again on A, from the priming event: A replays what B wrote, serves it from now,
    // and B's stream ends.
    let on_a_get = get(&on_a, priming.id.as_deref()).await;
    assert_eq!(on_a_get.status(), StatusCode::OK);
    let mut on_a_get = SseReader::new(on_a_get);
    let (replayed_id, replayed) = next(&mut on_a_get).await;
    assert_eq!(replayed_id.as_deref(), Some(changed_id.as_str()));
    assert_eq!(replayed["method"], "notifications/tools/list_changed");
    loop {
        match within(on_b_get.next_event()).await {
            None => break,
            Some(event) => assert!(
                event.data.is_empty() || event.data.contains("tools/list_changed"),
                "B wrote {}",
                event.data
            ),
        }
    }

    // A change made on B now reaches the client through A, once.
    tokio::time::sleep(Duration::from_millis(100)).await;
    nodes.b_server.prompts_list_changed();
    let (_, before) = until_method(&mut on_a_get, "notifications/prompts/list_changed").await;
    let extra = tokio::time::timeout(Duration::from_millis(300), next(&mut on_a_get)).await;
    assert!(extra.is_err(), "written twice: {extra:?}");
    assert!(
        before <= 2,
        "{before} repeats of earlier changes came first"
    );
    nodes.stop().await;
}

#[tokio::test]
async fn a_get_stream_whose_node_is_gone_is_taken_over_with_every_change_announced() {
    let (nodes, bus_a, _bus_b) = nodes().await;
    let (on_a, on_b) = nodes.opened().await;
    let on_a_get = get(&on_a, None).await;
    let mut on_a_get = SseReader::new(on_a_get);
    let priming = within(on_a_get.next_event()).await.expect("priming event");
    nodes.a_server.resources_list_changed();
    let (seen, _) = until_method(&mut on_a_get, "notifications/resources/list_changed").await;
    drop(on_a_get);
    bus_a.stop();
    // The client comes back on B: what A wrote is replayed, then every kind of change is
    // announced (A may have had more to write).
    let on_b_get = get(&on_b, priming.id.as_deref()).await;
    assert_eq!(on_b_get.status(), StatusCode::OK);
    let mut on_b_get = SseReader::new(on_b_get);
    let (again, message) = next(&mut on_b_get).await;
    assert_eq!(again, seen);
    assert_eq!(message["method"], "notifications/resources/list_changed");
    let mut announced = Vec::new();
    while announced.len() < 3 {
        let (id, message) = next(&mut on_b_get).await;
        assert!(id.is_some_and(|id| stream_of(&id) == 0));
        announced.push(message["method"].as_str().unwrap_or_default().to_owned());
    }
    announced.sort();
    assert_eq!(
        announced,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    nodes.stop().await;
}

fn countdown(id: i64, steps: u32) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"countdown","arguments":{"steps":steps},"_meta":{"progressToken":"p"}}})
}

/// Every message of a `countdown` stream, in order, up to its response: the progress values.
async fn progress_then_answer(stream: &mut SseReader, id: i64) -> Vec<f64> {
    let mut progress = Vec::new();
    loop {
        let (_, message) = next(stream).await;
        if message["id"] == id {
            assert_eq!(message["result"]["content"][0]["text"], "done", "{message}");
            return progress;
        }
        assert_eq!(message["method"], "notifications/progress", "{message}");
        progress.push(message["params"]["progress"].as_f64().expect("progress"));
    }
}

#[tokio::test]
async fn a_slow_store_loses_nothing_and_keeps_the_order_past_its_bound() {
    let slow = Arc::new(TestEvents::slow(Duration::from_millis(2)));
    let (nodes, _bus_a, _bus_b) = nodes_on(slow, |shared| shared.max_pending_events = 2).await;
    let (on_a, _on_b) = nodes.opened().await;
    let mut stream = SseReader::new(on_a.post(&countdown(2, 50)).await);
    let progress = progress_then_answer(&mut stream, 2).await;
    let expected: Vec<f64> = (1..=50).map(f64::from).collect();
    assert_eq!(progress, expected, "every message, in order");
    nodes.stop().await;
}

#[tokio::test]
async fn a_shutdown_delivers_what_waits_for_the_store() {
    let slow = Arc::new(TestEvents::slow(Duration::from_millis(20)));
    let (mut nodes, _bus_a, _bus_b) = nodes_on(slow, |_| {}).await;
    let (on_a, _on_b) = nodes.opened().await;
    let mut stream = SseReader::new(on_a.post(&countdown(3, 5)).await);
    // The server stops while the events wait for the store: they still reach the client.
    within(nodes.a.stop()).await;
    let progress = progress_then_answer(&mut stream, 3).await;
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0, 5.0]);
    nodes.b.stop().await;
}

#[tokio::test]
async fn a_cancelled_request_ends_its_stream_on_every_node() {
    let (nodes, _bus_a, _bus_b) = nodes().await;
    let (on_a, on_b) = nodes.opened().await;
    // `slow` writes nothing until it ends: the client resumes on B from the priming event,
    // before the stream is in the store, and B waits for it.
    let mut stream = SseReader::new(on_a.post(&call(4, "slow")).await);
    let priming = within(stream.next_event()).await.expect("priming event");
    drop(stream);
    let resumed = get(&on_b, priming.id.as_deref()).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut resumed = SseReader::new(resumed);
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":4}});
    assert_eq!(on_a.post(&cancel).await.status(), StatusCode::ACCEPTED);
    // The request is never answered, and B's stream ends (not truncated: it was never cut).
    while let Some(event) = within(resumed.next_event()).await {
        assert!(
            event.data.is_empty(),
            "nothing was to be sent: {}",
            event.data
        );
    }
    nodes.stop().await;
}

#[tokio::test]
async fn streams_followed_from_the_store_are_bounded_per_session() {
    let (nodes, bus_a, _bus_b) = nodes_on(Arc::new(MemoryEventStore::new()), |shared| {
        shared.max_followed_streams = 2;
    })
    .await;
    let (_on_a, on_b) = nodes.opened().await;
    // Cursors naming streams of A that the store does not hold (yet): B waits for them, two
    // at most; the third is refused until one ends.
    let cursor = |n: u32| format!("{}.0", bus_a.node().stream(n));
    let first = get(&on_b, Some(&cursor(1))).await;
    let second = get(&on_b, Some(&cursor(2))).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(second.status(), StatusCode::OK);
    let third = get(&on_b, Some(&cursor(3))).await;
    assert_eq!(third.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(third.headers().contains_key("retry-after"));
    drop(first);
    super::eventually("a place is given back", || async {
        get(&on_b, Some(&cursor(4))).await.status() == StatusCode::OK
    })
    .await;
    drop(second);
    nodes.stop().await;
}
