//! Streams followed from the event store, beyond what `replay.rs` shows (one `MemoryEventStore`
//! both nodes hold): a node following a request stream for a reader that reads nothing cuts it
//! off after `stalled_reader_timeout` and gives its place among `max_followed_streams` back; a
//! quiet GET stream is kept alive in the store by its keep-alives; two GET streams of one
//! session opened at once on two nodes leave one served, which carries a change once.

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use barrel_mcp::store::{
    Bus, EventLimits, EventStore, LocalBus, LocalHub, MemoryEventStore, SessionStore, StreamInfo,
};
use barrel_mcp::types::RequestId;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpStream;

use super::{Nodes, TestStore, eventually, initialized, open};
use crate::http::{Client, SseReader};
use crate::support::within;

/// Two nodes of one hub, their streams in one memory event store, each configured by `tweak`
/// (given `'a'` or `'b'`).
struct Setup {
    nodes: Nodes,
    store: Arc<TestStore>,
    events: Arc<MemoryEventStore>,
    bus_a: Arc<LocalBus>,
    bus_b: Arc<LocalBus>,
}

async fn setup(tweak: impl Fn(char, &mut HttpConfig)) -> Setup {
    let store = Arc::new(TestStore::default());
    let events = Arc::new(MemoryEventStore::new());
    let hub = LocalHub::new();
    let (bus_a, bus_b) = (Arc::new(hub.join()), Arc::new(hub.join()));
    let shared_events: Arc<dyn EventStore> = events.clone();
    let nodes = Nodes::start(
        store.clone(),
        store.clone(),
        bus_a.clone(),
        bus_b.clone(),
        |node, config| {
            if let Some(shared) = config.shared_sessions.as_mut() {
                shared.events = Some(Arc::clone(&shared_events));
                shared.follow_interval = Duration::from_millis(20);
            }
            tweak(node, config);
        },
    )
    .await;
    Setup {
        nodes,
        store,
        events,
        bus_a,
        bus_b,
    }
}

/// GET with `Last-Event-ID: cursor` (or none).
async fn get(client: &Client, cursor: Option<&str>) -> crate::http::Response {
    let mut headers = vec![("accept", "text/event-stream")];
    if let Some(cursor) = cursor {
        headers.push(("last-event-id", cursor));
    }
    client.send(Method::GET, &headers, None).await
}

/// The next event carrying a message, with its id.
async fn next(stream: &mut SseReader) -> (Option<String>, Value) {
    loop {
        let event = within(stream.next_event())
            .await
            .expect("stream ended early");
        if !event.data.is_empty() {
            return (event.id, serde_json::from_str(&event.data).expect("JSON"));
        }
    }
}

/// Reads `stream` to its end.
async fn until_ended(stream: &mut SseReader) {
    while stream.next_event().await.is_some() {}
}

/// The ids of the events in `text` (raw SSE), in order.
fn event_ids(text: &str) -> Vec<String> {
    text.split("\n\n")
        .flat_map(|block| block.lines())
        .filter_map(|line| line.strip_prefix("id: "))
        .map(str::to_owned)
        .collect()
}

/// The sequence number of an event id `stream.seq` of `stream`.
fn seq_of(id: &str, stream: u64) -> u64 {
    let (number, seq) = id.split_once('.').expect("an event id");
    assert_eq!(number, stream.to_string(), "{id}");
    seq.parse().expect("a sequence number")
}

/// A reader's HTTP/2 flow-control window: what the server may send it before it reads.
const STALLED_WINDOW: u32 = 1024;

/// GET on `client`'s node over HTTP/2 (prior knowledge), by a reader whose stream window is
/// [`STALLED_WINDOW`]: once that much came, the server can send nothing more until the reader
/// reads, so a reader that does not read stalls the stream at once (no socket buffers to fill).
async fn stalled_get(
    client: &Client,
    cursor: &str,
) -> (h2::RecvStream, h2::client::SendRequest<Bytes>) {
    let tcp = TcpStream::connect(client.addr).await.expect("connect");
    let (sender, connection) = within(
        h2::client::Builder::new()
            .initial_window_size(STALLED_WINDOW)
            .handshake::<_, Bytes>(tcp),
    )
    .await
    .expect("h2 handshake");
    tokio::spawn(connection);
    let mut sender = within(sender.ready()).await.expect("ready");
    let request = Request::builder()
        .method(Method::GET)
        .uri(format!("http://localhost:{}/mcp", client.addr.port()))
        .header("accept", "text/event-stream")
        .header(
            "mcp-session-id",
            client.session.as_deref().expect("a session"),
        )
        .header("last-event-id", cursor)
        .body(())
        .expect("request");
    let (response, _) = sender.send_request(request, true).expect("send");
    let response = within(response).await.expect("response");
    assert_eq!(response.status(), StatusCode::OK);
    (response.into_body(), sender)
}

/// Reads an HTTP/2 body to its end, giving the window back as it goes; the text.
async fn read_to_end(body: &mut h2::RecvStream) -> String {
    let mut text = String::new();
    while let Some(data) = within(body.data()).await {
        let data = data.expect("a data frame");
        body.flow_control()
            .release_capacity(data.len())
            .expect("window given back");
        text.push_str(std::str::from_utf8(&data).expect("utf-8"));
    }
    text
}

#[tokio::test]
async fn a_follower_whose_reader_stalls_is_cut_off_and_gives_its_place_back() {
    let setup = setup(|node, config| {
        if node == 'b' {
            config.stalled_reader_timeout = Duration::from_millis(300);
            config.stream_queue = 1;
            if let Some(shared) = config.shared_sessions.as_mut() {
                shared.max_followed_streams = 1;
            }
        }
    })
    .await;
    let (on_a, on_b) = setup.nodes.opened().await;
    let session = on_a.session.clone().expect("a session");
    // A request stream of A's, with its first event; the test writes its events to the
    // store as A would (A lives, so B follows the stream until it ends).
    let stream = setup.bus_a.node().stream(7);
    let limits = EventLimits::default();
    let info = StreamInfo {
        producer: setup.bus_a.node(),
        request: Some(RequestId::Number(9)),
    };
    let filler = json!({"jsonrpc":"2.0","method":"notifications/message",
        "params":{"level":"info","data":"x".repeat(1024)}})
    .to_string();
    let first = setup
        .events
        .append_first(&session, stream, info, &filler, false, &limits)
        .await;
    assert_eq!(first.expect("stored"), Some(1));

    // The client resumes it on B over HTTP/2, and reads nothing.
    let (mut stalled, _connection) = stalled_get(&on_b, &format!("{stream}.0")).await;
    // It holds B's one place for this session's followed streams.
    let other = format!("{}.0", setup.bus_a.node().stream(8));
    assert_eq!(
        get(&on_b, Some(&other)).await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    // A writes more than the reader's window and B's queue hold.
    for _ in 0..63 {
        let appended = setup
            .events
            .append(&session, stream, &filler, false, &limits)
            .await;
        assert!(appended.expect("stored").is_some());
    }

    // B cuts the stalled reader off: its place is free while the client still holds the
    // stream it does not read.
    eventually("the stalled follower gives its place back", || async {
        get(&on_b, Some(&other)).await.status() == StatusCode::OK
    })
    .await;

    // Read now, the stalled stream ends: what was sent, in order, and not all of it.
    let sent = event_ids(&read_to_end(&mut stalled).await);
    let seqs: Vec<u64> = sent.iter().map(|id| seq_of(id, stream)).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "the events sent, in order");
    let last = *seqs.last().expect("the first event was sent");
    assert!(last < 64, "cut off before the end, yet {last} events came");

    // The client resumes after the last event it got and reads the rest (the probe's
    // follower may hold the place a moment longer).
    let cursor = format!("{stream}.{last}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let resumed = loop {
        let resumed = get(&on_b, Some(&cursor)).await;
        if resumed.status() == StatusCode::OK {
            break resumed;
        }
        assert_eq!(resumed.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(std::time::Instant::now() < deadline, "never resumed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut resumed = SseReader::new(resumed);
    for seq in last + 1..=64 {
        let (id, message) = next(&mut resumed).await;
        assert_eq!(id, Some(format!("{stream}.{seq}")), "{message}");
    }
    setup.nodes.stop().await;
}

#[tokio::test]
async fn a_quiet_get_stream_is_kept_alive_in_the_store_by_its_keep_alives() {
    // A stream left open and quiet expires from the store `session_ttl` after its last event
    // or open (the idle timeout and an eighth: 675 ms here). A keep-alives every 100 ms; B's
    // never come within the test.
    let setup = setup(|node, config| {
        config.session_idle_timeout = Duration::from_millis(600);
        config.keep_alive = if node == 'a' {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(60)
        };
    })
    .await;
    // A GET stream served by A, and one served by B, of two sessions; nothing is sent on
    // either.
    let (on_a, on_b_of_a) = setup.nodes.opened().await;
    let mut on_b = setup.nodes.b.client();
    open(&mut on_b, &[]).await;
    assert_eq!(
        on_b.post(&initialized()).await.status(),
        StatusCode::ACCEPTED
    );
    let mut a_get = SseReader::new(get(&on_a, None).await);
    let mut b_get = SseReader::new(get(&on_b, None).await);
    for stream in [&mut a_get, &mut b_get] {
        let priming = within(stream.next_event()).await.expect("priming event");
        assert_eq!(priming.id.as_deref(), Some("0.0"));
    }

    // Three times the stream's life later, while both readers are still there.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let held = |client: &Client| {
        let session = client.session.clone().expect("a session");
        let events = Arc::clone(&setup.events);
        async move {
            events
                .replay(&session, 0, 0)
                .await
                .expect("the store answers")
        }
    };
    assert!(
        held(&on_a).await.is_some(),
        "the quiet GET stream kept alive by A's keep-alives expired"
    );
    assert!(
        held(&on_b).await.is_none(),
        "without a keep-alive the quiet GET stream expires"
    );

    // Resumed on the other node from its priming event, A's stream goes on: the next event
    // is numbered after it, nothing was lost. B's expired: the client is told events may be
    // lost.
    drop(a_get);
    let mut resumed = SseReader::new(get(&on_b_of_a, Some("0.0")).await);
    setup.nodes.b_server.tools_list_changed();
    let (id, message) = next(&mut resumed).await;
    assert_eq!(
        message["method"], "notifications/tools/list_changed",
        "{message}"
    );
    assert_eq!(id.as_deref(), Some("0.1"));
    drop(b_get);
    let mut on_a_of_b = setup.nodes.a.client();
    on_a_of_b.session.clone_from(&on_b.session);
    let mut resumed = SseReader::new(get(&on_a_of_b, Some("0.0")).await);
    let (_, message) = next(&mut resumed).await;
    assert_eq!(
        message["method"], "notifications/replay_truncated",
        "{message}"
    );
    // What was written to the stream meanwhile is lost: every kind of change is announced.
    let mut methods = Vec::new();
    while !methods
        .iter()
        .any(|m| m == "notifications/tools/list_changed")
    {
        let (_, message) = next(&mut resumed).await;
        methods.push(message["method"].as_str().unwrap_or_default().to_owned());
        assert!(methods.len() < 10, "{methods:?}");
    }
    setup.nodes.stop().await;
}

#[tokio::test]
async fn get_streams_opened_at_once_on_two_nodes_leave_one_that_carries_a_change_once() {
    let setup = setup(|_, _| {}).await;
    for round in 0..4 {
        let (on_a, on_b) = setup.nodes.opened().await;
        let session = on_a.session.clone().expect("a session");
        eventually("the session is initialized in the store", || async {
            setup
                .store
                .inner
                .load(&session)
                .await
                .expect("the store answers")
                .is_some_and(|record| record.initialized)
        })
        .await;

        // B holds a copy too, so neither node loads the session on the way: both at once.
        let ping = super::request(2, "ping", json!({}));
        let pong = super::post_json(&on_b, &ping, &[]).await;
        assert_eq!(pong.status(), StatusCode::OK);
        // (Each round starts the other one first.)
        let (a_get, b_get) = if round % 2 == 0 {
            tokio::join!(get(&on_a, None), get(&on_b, None))
        } else {
            let (b_get, a_get) = tokio::join!(get(&on_b, None), get(&on_a, None));
            (a_get, b_get)
        };
        assert_eq!(a_get.status(), StatusCode::OK);
        assert_eq!(b_get.status(), StatusCode::OK);
        let (mut a_get, mut b_get) = (SseReader::new(a_get), SseReader::new(b_get));

        // One of them ends; the other is served by the node the store names.
        let loser = within(async {
            tokio::select! {
                () = until_ended(&mut a_get) => 'a',
                () = until_ended(&mut b_get) => 'b',
            }
        })
        .await;
        let (mut served, server, winner) = match loser {
            'a' => (b_get, &setup.nodes.a_server, &setup.bus_b),
            _ => (a_get, &setup.nodes.b_server, &setup.bus_a),
        };
        let replay = setup
            .events
            .replay(&session, 0, u64::MAX)
            .await
            .expect("the store answers")
            .expect("the GET stream is stored");
        assert_eq!(
            replay.info.producer,
            winner.node(),
            "round {round}: {loser}'s stream ended"
        );

        // A change announced on the node whose stream ended reaches the client once, on the
        // stream served.
        server.tools_list_changed();
        let (id, message) = next(&mut served).await;
        assert_eq!(
            message["method"], "notifications/tools/list_changed",
            "{message}"
        );
        assert!(id.is_some_and(|id| id.starts_with("0.")));
        let again = tokio::time::timeout(Duration::from_millis(500), next(&mut served)).await;
        assert!(again.is_err(), "round {round}: written twice: {again:?}");
    }
    setup.nodes.stop().await;
}
