//! One suite for every [`EventStore`]: the contract SSE resumption relies on, run against
//! [`MemoryEventStore`] here and against `RedisEventStore` (feature `redis`) on a real
//! `redis-server` in `event_store/redis.rs`, with the same assertions.
//!
//! Each check gets a [`Make`]: a fresh, empty store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use barrel_mcp::peer::BoxFuture;
use barrel_mcp::store::{
    EventLimits, EventStore, MemoryEventStore, NodeTag, Opened, Replay, StreamInfo,
};
use barrel_mcp::types::RequestId;

#[cfg(feature = "redis")]
mod redis;

/// Makes a fresh, empty store.
pub(crate) type Make = Box<dyn Fn() -> BoxFuture<'static, Arc<dyn EventStore>> + Send + Sync>;

/// The GET stream's number.
const GET: u64 = 0;

pub(crate) fn get_info() -> StreamInfo {
    StreamInfo {
        producer: NodeTag::LOCAL,
        request: None,
    }
}

pub(crate) fn post_info(tag: u32, request: i64) -> StreamInfo {
    StreamInfo {
        producer: NodeTag::new(tag).unwrap(),
        request: Some(RequestId::Number(request)),
    }
}

/// Opens a stream that must be new.
pub(crate) async fn open(
    store: &dyn EventStore,
    session: &str,
    stream: u64,
    info: StreamInfo,
    limits: &EventLimits,
) {
    assert_eq!(
        store.open(session, stream, info, limits).await.unwrap(),
        Opened::Created
    );
}

/// Appends to a stream that must be open; returns the sequence number.
pub(crate) async fn append(
    store: &dyn EventStore,
    session: &str,
    stream: u64,
    data: &str,
    last: bool,
    limits: &EventLimits,
) -> u64 {
    store
        .append(session, stream, data, last, limits)
        .await
        .unwrap()
        .expect("an open stream")
}

async fn replay(store: &dyn EventStore, session: &str, stream: u64, after: u64) -> Replay {
    store
        .replay(session, stream, after)
        .await
        .unwrap()
        .expect("a known stream")
}

fn seqs(replay: &Replay) -> Vec<u64> {
    replay.events.iter().map(|(seq, _)| *seq).collect()
}

fn texts(replay: &Replay) -> Vec<&str> {
    replay.events.iter().map(|(_, data)| &**data).collect()
}

/// Polls `replay` until the stream is gone, within 5 s.
async fn until_gone(store: &dyn EventStore, session: &str, stream: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match store.replay(session, stream, 0).await.unwrap() {
            None => return,
            Some(_) => assert!(
                Instant::now() < deadline,
                "stream {stream} outlived its TTL"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Expands to one test per check, each on stores from `$make()`.
macro_rules! event_store_suite {
    ($make:path) => {
        event_store_suite!(@tests $make;
            append_then_replay_round_trips,
            sequence_numbers_start_at_one_per_stream,
            replay_starts_after_the_cursor,
            the_window_drops_the_oldest_by_count_and_bytes,
            the_last_event_finishes_the_stream,
            finished_streams_expire,
            unknown_streams_are_none,
            forget_drops_the_whole_session,
            the_stream_cap_evicts_finished_streams_only,
            data_is_kept_byte_for_byte,
            idle_sessions_expire,
            idle_open_streams_go_and_free_their_place,
            the_first_append_opens_the_stream,
            finish_ends_a_stream_without_an_event,
            a_single_event_stream_is_stored_whole,
            keep_refreshes_only_for_the_producer,
            making_room_frees_a_quarter_at_once,
        );
        event_store_suite!(@threaded $make;
            concurrent_appends_to_the_get_stream_are_numbered_gap_free,
        );
    };
    (@tests $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                $crate::support::within($crate::event_store::$check(&$make())).await;
            }
        )*
    };
    (@threaded $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                $crate::support::within($crate::event_store::$check(&$make())).await;
            }
        )*
    };
}
#[cfg(feature = "redis")]
pub(crate) use event_store_suite;

mod memory {
    use super::*;

    fn make() -> Make {
        Box::new(|| Box::pin(async { Arc::new(MemoryEventStore::new()) as Arc<dyn EventStore> }))
    }

    event_store_suite!(make);
}

pub(crate) async fn append_then_replay_round_trips(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    let info = post_info(3, 42);
    open(&*store, "s", 1, info.clone(), &limits).await;
    for (n, text) in ["one", "two", "three"].iter().enumerate() {
        let seq = append(&*store, "s", 1, text, false, &limits).await;
        assert_eq!(seq, n as u64 + 1);
    }
    let got = replay(&*store, "s", 1, 0).await;
    assert_eq!(seqs(&got), [1, 2, 3]);
    assert_eq!(texts(&got), ["one", "two", "three"]);
    assert_eq!(got.first_available, Some(1));
    assert_eq!(got.latest, 3);
    assert!(!got.finished);
    assert_eq!(got.info, info);
    assert!(!got.missed(0));
    // Opening it again keeps its events and numbering; the info is the newest opener's.
    let moved = StreamInfo {
        producer: NodeTag::new(9).unwrap(),
        request: Some(RequestId::from("req|with\"odd\"chars")),
    };
    assert_eq!(
        store.open("s", 1, moved.clone(), &limits).await.unwrap(),
        Opened::Existed
    );
    assert_eq!(append(&*store, "s", 1, "four", false, &limits).await, 4);
    let got = replay(&*store, "s", 1, 0).await;
    assert_eq!(texts(&got), ["one", "two", "three", "four"]);
    assert_eq!(got.info, moved);
}

pub(crate) async fn sequence_numbers_start_at_one_per_stream(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    // Tagged stream numbers beyond 2^53 that a double would confuse.
    let tag = NodeTag::new(NodeTag::MAX).unwrap();
    let (a, b) = (tag.stream(1), tag.stream(2));
    assert!(a > 1 << 53);
    open(&*store, "s", a, post_info(tag.get(), 1), &limits).await;
    open(&*store, "s", b, post_info(tag.get(), 2), &limits).await;
    open(&*store, "s", GET, get_info(), &limits).await;
    open(&*store, "other", a, post_info(tag.get(), 1), &limits).await;
    let mut got = Vec::new();
    for n in 0..4 {
        got.push(append(&*store, "s", a, &format!("a{n}"), false, &limits).await);
        got.push(append(&*store, "s", b, &format!("b{n}"), false, &limits).await);
        got.push(append(&*store, "s", GET, &format!("g{n}"), false, &limits).await);
    }
    assert_eq!(got, [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    assert_eq!(append(&*store, "other", a, "x", false, &limits).await, 1);
    assert_eq!(
        texts(&replay(&*store, "s", a, 0).await),
        ["a0", "a1", "a2", "a3"]
    );
    assert_eq!(
        texts(&replay(&*store, "s", b, 0).await),
        ["b0", "b1", "b2", "b3"]
    );
    assert_eq!(texts(&replay(&*store, "other", a, 0).await), ["x"]);
    assert_eq!(
        replay(&*store, "s", b, 0).await.info,
        post_info(tag.get(), 2)
    );
}

pub(crate) async fn replay_starts_after_the_cursor(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    open(&*store, "s", 5, post_info(0, 1), &limits).await;
    let empty = replay(&*store, "s", 5, 0).await;
    assert!(empty.events.is_empty());
    assert_eq!((empty.first_available, empty.latest), (None, 0));
    for n in 1..=6 {
        append(&*store, "s", 5, &format!("e{n}"), false, &limits).await;
    }
    let got = replay(&*store, "s", 5, 2).await;
    assert_eq!(seqs(&got), [3, 4, 5, 6]);
    assert_eq!(texts(&got), ["e3", "e4", "e5", "e6"]);
    assert_eq!(got.first_available, Some(1));
    assert!(!got.missed(2));
    let caught_up = replay(&*store, "s", 5, 6).await;
    assert!(caught_up.events.is_empty());
    assert_eq!(caught_up.latest, 6);
    // A cursor from the future: nothing, and the caller can tell (latest < cursor).
    let forged = replay(&*store, "s", 5, 99).await;
    assert!(forged.events.is_empty());
    assert!(forged.latest < 99);
    assert!(!forged.missed(99));
}

pub(crate) async fn the_window_drops_the_oldest_by_count_and_bytes(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        replay_events: 3,
        ..EventLimits::default()
    };
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    for n in 1..=5 {
        append(&*store, "s", 1, &format!("e{n}"), false, &limits).await;
    }
    let got = replay(&*store, "s", 1, 0).await;
    assert_eq!(seqs(&got), [3, 4, 5]);
    assert_eq!(got.first_available, Some(3));
    assert_eq!(got.latest, 5);
    assert!(got.missed(0) && got.missed(1));
    assert!(!got.missed(2), "event 3 on is held");
    assert_eq!(seqs(&replay(&*store, "s", 1, 3).await), [4, 5]);

    // Bytes: four of four bytes fit in ten as two; a larger event stays alone.
    let bytes = EventLimits {
        replay_bytes: 10,
        ..EventLimits::default()
    };
    open(&*store, "s", 2, post_info(0, 2), &bytes).await;
    for n in 1..=4 {
        append(&*store, "s", 2, &format!("abc{n}"), false, &bytes).await;
    }
    let got = replay(&*store, "s", 2, 0).await;
    assert_eq!(texts(&got), ["abc3", "abc4"]);
    assert_eq!(got.first_available, Some(3));
    let big = "x".repeat(25);
    append(&*store, "s", 2, &big, false, &bytes).await;
    let got = replay(&*store, "s", 2, 0).await;
    assert_eq!(seqs(&got), [5], "the newest is kept, however large");
    assert_eq!(texts(&got), [big.as_str()]);
    append(&*store, "s", 2, "tiny", false, &bytes).await;
    let got = replay(&*store, "s", 2, 0).await;
    assert_eq!(texts(&got), ["tiny"]);
    assert_eq!(got.first_available, Some(6));

    // A window of no events keeps nothing, yet numbers on.
    let none = EventLimits {
        replay_events: 0,
        ..EventLimits::default()
    };
    open(&*store, "s", 3, post_info(0, 3), &none).await;
    assert_eq!(append(&*store, "s", 3, "a", false, &none).await, 1);
    assert_eq!(append(&*store, "s", 3, "b", false, &none).await, 2);
    let got = replay(&*store, "s", 3, 0).await;
    assert!(got.events.is_empty());
    assert_eq!((got.first_available, got.latest), (None, 2));
    assert!(got.missed(0));
}

pub(crate) async fn the_last_event_finishes_the_stream(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    open(&*store, "s", 1, post_info(1, 7), &limits).await;
    append(&*store, "s", 1, "progress", false, &limits).await;
    assert_eq!(append(&*store, "s", 1, "response", true, &limits).await, 2);
    let got = replay(&*store, "s", 1, 0).await;
    assert!(got.finished);
    assert_eq!(texts(&got), ["progress", "response"]);
    // Nothing follows the last event.
    assert_eq!(
        store.append("s", 1, "late", false, &limits).await.unwrap(),
        None
    );
    assert_eq!(
        store.append("s", 1, "late", true, &limits).await.unwrap(),
        None
    );
    assert_eq!(replay(&*store, "s", 1, 0).await.latest, 2);
    // Opening it again does not reopen it.
    assert_eq!(
        store.open("s", 1, post_info(1, 7), &limits).await.unwrap(),
        Opened::Existed
    );
    assert!(replay(&*store, "s", 1, 0).await.finished);
    assert_eq!(
        store.append("s", 1, "late", false, &limits).await.unwrap(),
        None
    );
}

pub(crate) async fn finished_streams_expire(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        finished_stream_ttl: Duration::from_millis(150),
        ..EventLimits::default()
    };
    open(&*store, "s", GET, get_info(), &limits).await;
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    open(&*store, "s", 2, post_info(0, 2), &limits).await;
    append(&*store, "s", 1, "done", true, &limits).await;
    append(&*store, "s", 2, "working", false, &limits).await;
    assert!(replay(&*store, "s", 1, 0).await.finished);
    until_gone(&*store, "s", 1).await;
    // The open streams live on with the session.
    assert_eq!(texts(&replay(&*store, "s", 2, 0).await), ["working"]);
    assert!(store.replay("s", GET, 0).await.unwrap().is_some());
    // A stream gone is opened afresh.
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    assert_eq!(append(&*store, "s", 1, "again", false, &limits).await, 1);
}

pub(crate) async fn unknown_streams_are_none(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    assert_eq!(store.replay("nobody", 1, 0).await.unwrap(), None);
    assert_eq!(
        store
            .append("nobody", 1, "x", false, &limits)
            .await
            .unwrap(),
        None
    );
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    assert_eq!(store.replay("s", 2, 0).await.unwrap(), None);
    assert_eq!(store.replay("s", GET, 0).await.unwrap(), None);
    assert_eq!(
        store.append("s", GET, "x", false, &limits).await.unwrap(),
        None,
        "the GET stream too is opened before use"
    );
    assert_eq!(store.replay("s", 2, 0).await.unwrap(), None);
    // Nothing leaked into the open stream.
    assert_eq!(replay(&*store, "s", 1, 0).await.latest, 0);
}

pub(crate) async fn forget_drops_the_whole_session(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    for session in ["gone", "kept"] {
        open(&*store, session, GET, get_info(), &limits).await;
        open(&*store, session, 1, post_info(0, 1), &limits).await;
        append(&*store, session, GET, "g", false, &limits).await;
        append(&*store, session, 1, "p", true, &limits).await;
    }
    store.forget("gone").await.unwrap();
    store.forget("never-was").await.unwrap();
    for stream in [GET, 1] {
        assert_eq!(store.replay("gone", stream, 0).await.unwrap(), None);
        assert!(store.replay("kept", stream, 0).await.unwrap().is_some());
    }
    assert_eq!(
        store
            .append("gone", GET, "x", false, &limits)
            .await
            .unwrap(),
        None
    );
    // The session can start over (a late open after forget is a new session).
    open(&*store, "gone", GET, get_info(), &limits).await;
    assert_eq!(append(&*store, "gone", GET, "new", false, &limits).await, 1);
}

pub(crate) async fn the_stream_cap_evicts_finished_streams_only(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        max_streams: 3,
        ..EventLimits::default()
    };
    open(&*store, "s", GET, get_info(), &limits).await;
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    open(&*store, "s", 2, post_info(0, 2), &limits).await;
    // Every stream is open: refused, nothing opened.
    assert_eq!(
        store.open("s", 3, post_info(0, 3), &limits).await.unwrap(),
        Opened::Full
    );
    assert_eq!(store.replay("s", 3, 0).await.unwrap(), None);
    assert_eq!(
        store.append("s", 3, "x", false, &limits).await.unwrap(),
        None
    );
    // A stream that is there opens again, full or not.
    assert_eq!(
        store.open("s", 2, post_info(0, 2), &limits).await.unwrap(),
        Opened::Existed
    );
    // Other sessions have caps of their own.
    open(&*store, "t", 3, post_info(0, 3), &limits).await;
    // A finished stream makes room.
    append(&*store, "s", 1, "r1", true, &limits).await;
    open(&*store, "s", 3, post_info(0, 3), &limits).await;
    assert_eq!(store.replay("s", 1, 0).await.unwrap(), None);
    // The finished stream closest to expiry goes first.
    append(&*store, "s", 2, "r2", true, &limits).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    append(&*store, "s", 3, "r3", true, &limits).await;
    open(&*store, "s", 4, post_info(0, 4), &limits).await;
    assert_eq!(store.replay("s", 2, 0).await.unwrap(), None);
    assert_eq!(texts(&replay(&*store, "s", 3, 0).await), ["r3"]);
    // The GET stream is never evicted.
    assert!(store.replay("s", GET, 0).await.unwrap().is_some());
    append(&*store, "s", 4, "r4", true, &limits).await;
    open(&*store, "s", 5, post_info(0, 5), &limits).await;
    assert!(store.replay("s", GET, 0).await.unwrap().is_some());
    // No room at all.
    let none = EventLimits {
        max_streams: 0,
        ..EventLimits::default()
    };
    assert_eq!(
        store.open("u", GET, get_info(), &none).await.unwrap(),
        Opened::Full
    );
    assert_eq!(store.replay("u", GET, 0).await.unwrap(), None);
}

pub(crate) async fn the_first_append_opens_the_stream(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        max_streams: 2,
        ..EventLimits::default()
    };
    let first = store
        .append_first("s", 7, post_info(3, 9), "e1", false, &limits)
        .await
        .unwrap();
    assert_eq!(first, Some(1), "opened and numbered from 1");
    append(&*store, "s", 7, "e2", false, &limits).await;
    let held = replay(&*store, "s", 7, 0).await;
    assert_eq!(texts(&held), ["e1", "e2"]);
    assert_eq!(
        held.info,
        post_info(3, 9),
        "the stream records who produces it"
    );
    // A second stream fills the session; the third first finished one makes room, as `open`.
    let only = store
        .append_first("s", 8, post_info(3, 10), "r8", true, &limits)
        .await
        .unwrap();
    assert_eq!(only, Some(1));
    let third = store
        .append_first("s", 9, post_info(3, 11), "e9", false, &limits)
        .await
        .unwrap();
    assert_eq!(third, Some(1), "the finished stream 8 made room");
    assert_eq!(store.replay("s", 8, 0).await.unwrap(), None);
    // Full of open streams: nothing stored.
    assert_eq!(
        store
            .append_first("s", 10, post_info(3, 12), "x", false, &limits)
            .await
            .unwrap(),
        None,
    );
    assert_eq!(store.replay("s", 10, 0).await.unwrap(), None);
    // A finished stream is not opened again by a late first append.
    append(&*store, "s", 9, "r9", true, &limits).await;
    assert_eq!(
        store
            .append_first("s", 9, post_info(3, 11), "late", false, &limits)
            .await
            .unwrap(),
        None
    );
}

pub(crate) async fn a_single_event_stream_is_stored_whole(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        finished_stream_ttl: Duration::from_secs(3),
        ..EventLimits::default()
    };
    open(&*store, "s", GET, get_info(), &limits).await;
    let stored = store
        .append_single("s", 5, post_info(4, 2), "{\"result\":{}}\nraw", &limits)
        .await
        .unwrap();
    assert_eq!(stored, Some(1));
    let whole = replay(&*store, "s", 5, 0).await;
    assert_eq!(seqs(&whole), [1]);
    assert_eq!(texts(&whole), ["{\"result\":{}}\nraw"]);
    assert!(whole.finished, "its one event is its last");
    assert_eq!(
        (whole.first_available, whole.latest),
        (Some(1), 1),
        "numbered as any stream"
    );
    assert_eq!(whole.info, post_info(4, 2));
    let after = replay(&*store, "s", 5, 1).await;
    assert!(after.events.is_empty());
    assert!(!after.missed(1));
    // Finished from the start: no more events, however they come.
    assert_eq!(
        store.append("s", 5, "late", true, &limits).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .append_first("s", 5, post_info(4, 2), "late", false, &limits)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.open("s", 5, post_info(9, 9), &limits).await.unwrap(),
        Opened::Existed
    );
    store
        .finish("s", 5, post_info(9, 9), &limits)
        .await
        .unwrap();
    let kept = replay(&*store, "s", 5, 0).await;
    assert_eq!(texts(&kept), ["{\"result\":{}}\nraw"]);
    assert_eq!(
        kept.info,
        post_info(4, 2),
        "a finished stream stays as it is"
    );
    // The session's other streams are untouched; the stream goes after the finished TTL.
    assert_eq!(replay(&*store, "s", GET, 0).await.latest, 0);
    until_gone(&*store, "s", 5).await;
}

pub(crate) async fn keep_refreshes_only_for_the_producer(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        session_ttl: Duration::from_millis(1_500),
        ..EventLimits::default()
    };
    let (a, b) = (NodeTag::new(1).unwrap(), NodeTag::new(2).unwrap());
    let on = |producer| StreamInfo {
        producer,
        request: None,
    };
    assert!(
        !store.keep("s", GET, a, &limits).await.unwrap(),
        "nothing to keep"
    );
    open(&*store, "s", GET, on(a), &limits).await;
    // Kept past its session TTL while its producer keeps it.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(store.keep("s", GET, a, &limits).await.unwrap());
    }
    assert!(store.replay("s", GET, 0).await.unwrap().is_some());
    // Another node opened it: the first no longer keeps it, and changes nothing.
    assert_eq!(
        store.open("s", GET, on(b), &limits).await.unwrap(),
        Opened::Existed
    );
    assert!(!store.keep("s", GET, a, &limits).await.unwrap());
    assert_eq!(replay(&*store, "s", GET, 0).await.info, on(b));
    assert!(store.keep("s", GET, b, &limits).await.unwrap());
    // A finished stream is not kept.
    open(&*store, "s", 3, post_info(1, 3), &limits).await;
    append(&*store, "s", 3, "answer", true, &limits).await;
    assert!(!store.keep("s", 3, a, &limits).await.unwrap());
    // Not kept, it goes.
    until_gone(&*store, "s", GET).await;
    assert!(!store.keep("s", GET, b, &limits).await.unwrap());
}

pub(crate) async fn finish_ends_a_stream_without_an_event(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        max_streams: 3,
        finished_stream_ttl: Duration::from_millis(300),
        ..EventLimits::default()
    };
    // An open stream: finished, its events kept for replay, no more appends.
    open(&*store, "s", 1, post_info(2, 1), &limits).await;
    append(&*store, "s", 1, "e1", false, &limits).await;
    store
        .finish("s", 1, post_info(2, 1), &limits)
        .await
        .unwrap();
    let held = replay(&*store, "s", 1, 0).await;
    assert!(held.finished);
    assert_eq!(texts(&held), ["e1"]);
    assert_eq!(
        store.append("s", 1, "late", true, &limits).await.unwrap(),
        None
    );
    // A stream never opened: recorded finished and empty, so a reader stops waiting.
    store
        .finish("s", 2, post_info(2, 2), &limits)
        .await
        .unwrap();
    let empty = replay(&*store, "s", 2, 0).await;
    assert!(empty.finished);
    assert_eq!(empty.latest, 0);
    assert_eq!(empty.info, post_info(2, 2));
    assert!(empty.events.is_empty());
    // Finishing again changes nothing; and it goes after the finished TTL.
    store
        .finish("s", 1, post_info(2, 1), &limits)
        .await
        .unwrap();
    assert_eq!(texts(&replay(&*store, "s", 1, 0).await), ["e1"]);
    until_gone(&*store, "s", 2).await;
    // A session full of streams records no new one.
    open(&*store, "t", 1, post_info(2, 1), &limits).await;
    open(&*store, "t", 2, post_info(2, 2), &limits).await;
    open(&*store, "t", 3, post_info(2, 3), &limits).await;
    store
        .finish("t", 4, post_info(2, 4), &limits)
        .await
        .unwrap();
    assert_eq!(store.replay("t", 4, 0).await.unwrap(), None);
}

pub(crate) async fn making_room_frees_a_quarter_at_once(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        max_streams: 8,
        ..EventLimits::default()
    };
    for n in 1..=8 {
        open(&*store, "s", n, post_info(0, n as i64), &limits).await;
        append(&*store, "s", n, "r", true, &limits).await;
        // Distinct expiry instants: the oldest finished goes first.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    // Full: the two finished streams closest to expiry make room for the next six opens.
    open(&*store, "s", 9, post_info(0, 9), &limits).await;
    assert_eq!(store.replay("s", 1, 0).await.unwrap(), None);
    assert_eq!(store.replay("s", 2, 0).await.unwrap(), None);
    assert!(store.replay("s", 3, 0).await.unwrap().is_some());
    open(&*store, "s", 10, post_info(0, 10), &limits).await;
    assert!(
        store.replay("s", 3, 0).await.unwrap().is_some(),
        "room was made already"
    );
}

pub(crate) async fn data_is_kept_byte_for_byte(make: &Make) {
    let store = make().await;
    let limits = EventLimits::default();
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    let samples = [
        String::new(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"t\":\"héllo wörld ✓ 🦀\"}}".to_owned(),
        "line one\nline two\r\nline three\rend\n\n".to_owned(),
        "data: not framing\n\nid: 9.9\n".to_owned(),
        "pipes | and \\ back\\slashes \"quotes\" 0-1 e 1 2 0\n".to_owned(),
        "nul \0 inside and \u{feff} bom and \u{10ffff}".to_owned(),
        "ü".repeat(50_000),
    ];
    for sample in &samples {
        append(&*store, "s", 1, sample, false, &limits).await;
    }
    let got = replay(&*store, "s", 1, 0).await;
    let texts = texts(&got);
    assert_eq!(texts.len(), samples.len());
    for (got, sent) in texts.iter().zip(&samples) {
        assert_eq!(got.as_bytes(), sent.as_bytes());
    }
}

pub(crate) async fn idle_sessions_expire(make: &Make) {
    let store = make().await;
    let limits = EventLimits {
        session_ttl: Duration::from_millis(150),
        finished_stream_ttl: Duration::from_millis(100),
        ..EventLimits::default()
    };
    open(&*store, "s", GET, get_info(), &limits).await;
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    append(&*store, "s", 1, "x", false, &limits).await;
    until_gone(&*store, "s", GET).await;
    until_gone(&*store, "s", 1).await;
    assert_eq!(
        store.append("s", 1, "late", false, &limits).await.unwrap(),
        None
    );
}

pub(crate) async fn idle_open_streams_go_and_free_their_place(make: &Make) {
    const TTL: Duration = Duration::from_millis(600);
    let store = make().await;
    let limits = EventLimits {
        session_ttl: TTL,
        max_streams: 2,
        ..EventLimits::default()
    };
    open(&*store, "s", GET, get_info(), &limits).await;
    open(&*store, "s", 1, post_info(0, 1), &limits).await;
    let last_event = Instant::now();
    append(&*store, "s", 1, "progress", false, &limits).await;
    // Its producer died (or its last append failed): the stream stays open, and holds a place.
    assert_eq!(
        store.open("s", 2, post_info(0, 2), &limits).await.unwrap(),
        Opened::Full
    );
    // The session stays busy (events keep coming on its GET stream), yet the idle stream goes
    // `session_ttl` after its last event.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut ticks = 0;
    loop {
        ticks += 1;
        append(&*store, "s", GET, "tick", false, &limits).await;
        if store.replay("s", 1, 0).await.unwrap().is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "the idle open stream never went");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        last_event.elapsed() >= TTL - Duration::from_millis(50),
        "gone after {:?}, before its TTL",
        last_event.elapsed()
    );
    assert_eq!(
        store.append("s", 1, "late", false, &limits).await.unwrap(),
        None
    );
    // Its place is free; the GET stream, written all along, is whole.
    open(&*store, "s", 2, post_info(0, 2), &limits).await;
    let get = replay(&*store, "s", GET, 0).await;
    assert_eq!(get.latest, ticks);
    assert!(!get.missed(0));
}

pub(crate) async fn concurrent_appends_to_the_get_stream_are_numbered_gap_free(make: &Make) {
    const PRODUCERS: usize = 4;
    const EACH: usize = 50;
    let store = make().await;
    let limits = Arc::new(EventLimits {
        replay_events: PRODUCERS * EACH,
        ..EventLimits::default()
    });
    open(&*store, "s", GET, get_info(), &limits).await;
    let mut tasks = Vec::new();
    for producer in 0..PRODUCERS {
        let store = store.clone();
        let limits = limits.clone();
        tasks.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for n in 0..EACH {
                let data = format!("{producer}:{n}");
                seqs.push(append(&*store, "s", GET, &data, false, &limits).await);
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        let seqs = task.await.unwrap();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        all.extend(seqs);
    }
    all.sort_unstable();
    assert_eq!(all, (1..=(PRODUCERS * EACH) as u64).collect::<Vec<_>>());
    let got = replay(&*store, "s", GET, 0).await;
    assert_eq!(got.events.len(), PRODUCERS * EACH);
    assert_eq!(seqs(&got), all, "in sequence order");
    // Each producer's events appear in the order it appended them.
    for producer in 0..PRODUCERS {
        let mine: Vec<&str> = texts(&got)
            .into_iter()
            .filter(|t| t.starts_with(&format!("{producer}:")))
            .collect();
        let expected: Vec<String> = (0..EACH).map(|n| format!("{producer}:{n}")).collect();
        assert_eq!(mine, expected);
    }
}
