//! `RedisEventStore` keeps its keys whole: a key of the wrong type is `Corrupt` (not
//! `Unavailable`), a refused append writes nothing, an events key left from an earlier stream
//! does not wedge a new one, a session full of open streams is refused without reading
//! every record each time, and a stream of one event is one command on a key of its own.

use std::sync::Arc;
use std::time::Duration;

use ::redis::AsyncCommands;
use barrel_mcp::store::{EventLimits, EventStore, Opened, RedisEventStore};

use super::super::{GET, append, get_info, open, post_info};
use super::{SECRET_SID, corrupt_quietly, store_on};
use crate::support::redis::{RedisProcess, connect, corrupt, plain, pttl, shared, unique_prefix};
use crate::support::within;

#[tokio::test]
async fn keys_of_the_wrong_type_are_corrupt_not_unavailable() {
    within(async {
        let prefix = unique_prefix("wrongtype");
        let store = store_on(&prefix).await;
        let limits = EventLimits::default();
        let sid = SECRET_SID;
        let mut redis = plain(&shared().url()).await;
        // The session's table is a string.
        let table = format!("{prefix}:s:{{{sid}}}:st");
        let _: () = redis.set(&table, "x").await.unwrap();
        let opened = store.open(sid, 1, post_info(0, 1), &limits).await;
        assert!(corrupt_quietly(&opened), "{opened:?}");
        let appended = store.append(sid, 1, "x", false, &limits).await;
        assert!(corrupt_quietly(&appended), "{appended:?}");
        let replayed = store.replay(sid, 1, 0).await;
        assert!(corrupt_quietly(&replayed), "{replayed:?}");
        // A stream's events are a string: its record is fine, its events are not.
        let other = "other-session";
        open(&store, other, 1, post_info(0, 1), &limits).await;
        let events = format!("{prefix}:s:{{{other}}}:e:1");
        let _: () = redis.set(&events, "x").await.unwrap();
        let appended = store.append(other, 1, "x", false, &limits).await;
        assert!(corrupt(&appended), "{appended:?}");
        let replayed = store.replay(other, 1, 0).await;
        assert!(corrupt(&replayed), "{replayed:?}");
        // Nothing was written past the refusal: the record still numbers no event.
        let record: String = redis
            .hget(format!("{prefix}:s:{{{other}}}:st"), "1")
            .await
            .unwrap();
        assert!(
            record.starts_with('o') && record.contains("|0|0|"),
            "{record}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_leftover_events_key_does_not_wedge_a_new_stream() {
    within(async {
        let prefix = unique_prefix("leftover");
        let store = store_on(&prefix).await;
        let limits = EventLimits::default();
        // Events of an earlier stream by that number outlived its record (a node with longer
        // TTLs, say).
        let events = format!("{prefix}:s:{{s}}:e:1");
        let mut redis = plain(&shared().url()).await;
        for seq in 1..=5 {
            let _: String = ::redis::cmd("XADD")
                .arg(&events)
                .arg(format!("0-{seq}"))
                .arg("d")
                .arg(format!("old {seq}"))
                .query_async(&mut redis)
                .await
                .unwrap();
        }
        open(&store, "s", 1, post_info(0, 1), &limits).await;
        assert_eq!(append(&store, "s", 1, "fresh", false, &limits).await, 1);
        assert_eq!(append(&store, "s", 1, "fresher", false, &limits).await, 2);
        let got = store.replay("s", 1, 0).await.unwrap().unwrap();
        assert_eq!(
            got.events,
            vec![(1, Arc::from("fresh")), (2, Arc::from("fresher"))]
        );
        assert_eq!((got.first_available, got.latest), (Some(1), 2));
    })
    .await;
}

#[tokio::test]
async fn a_refused_append_writes_nothing() {
    within(async {
        let prefix = unique_prefix("refused");
        let store = store_on(&prefix).await;
        let limits = EventLimits {
            replay_events: 2,
            ..EventLimits::default()
        };
        open(&store, "s", 1, post_info(0, 1), &limits).await;
        open(&store, "s", GET, get_info(), &limits).await;
        for n in 0..3 {
            append(&store, "s", 1, &format!("e{n}"), false, &limits).await;
        }
        let table = format!("{prefix}:s:{{s}}:st");
        let events = format!("{prefix}:s:{{s}}:e:1");
        let mut redis = plain(&shared().url()).await;
        // The events run ahead of the record (it numbers 2 of them, the newest is 3).
        let record: String = redis.hget(&table, "1").await.unwrap();
        let behind = record.replacen("|3|", "|2|", 1);
        let _: () = redis.hset(&table, "1", &behind).await.unwrap();
        let range = || {
            ::redis::cmd("XRANGE")
                .arg(&events)
                .arg("-")
                .arg("+")
                .to_owned()
        };
        let before: Vec<(String, Vec<String>)> = range().query_async(&mut redis).await.unwrap();
        let appended = store.append("s", 1, "x", false, &limits).await;
        assert!(corrupt(&appended), "{appended:?}");
        let after: Vec<(String, Vec<String>)> = range().query_async(&mut redis).await.unwrap();
        assert_eq!(before, after, "no event added, none trimmed");
        let record: String = redis.hget(&table, "1").await.unwrap();
        assert_eq!(record, behind);
    })
    .await;
}

#[tokio::test]
async fn a_full_session_refuses_without_reading_every_record() {
    within(async {
        // A server of its own: its command counts are this test's alone.
        let server = RedisProcess::start(&[]);
        let store = RedisEventStore::new(connect(&server.url(), &unique_prefix("full")).await);
        let limits = EventLimits {
            max_streams: 4,
            ..EventLimits::default()
        };
        open(&store, "s", GET, get_info(), &limits).await;
        for stream in 1..=3 {
            open(&store, "s", stream, post_info(0, stream as i64), &limits).await;
        }
        for stream in 10..30 {
            assert_eq!(
                store
                    .open("s", stream, post_info(0, stream as i64), &limits)
                    .await
                    .unwrap(),
                Opened::Full
            );
        }
        let stats: String = ::redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut plain(&server.url()).await)
            .await
            .unwrap();
        let calls = stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_hgetall:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse::<u64>().unwrap());
        assert_eq!(
            calls, 1,
            "one look at the records, not one per refused open"
        );
        // A stream that finishes makes room at once.
        append(&store, "s", 2, "answer", true, &limits).await;
        open(&store, "s", 30, post_info(0, 30), &limits).await;
        assert_eq!(store.replay("s", 2, 0).await.unwrap(), None);
        assert_eq!(
            store
                .open("s", 31, post_info(0, 31), &limits)
                .await
                .unwrap(),
            Opened::Full
        );
    })
    .await;
}

/// The `calls` of every command in `INFO commandstats`, summed, but `INFO` itself and the
/// `CLIENT` commands a connection sends when it starts.
async fn commands_served(redis: &mut ::redis::aio::MultiplexedConnection) -> u64 {
    let stats: String = ::redis::cmd("INFO")
        .arg("commandstats")
        .query_async(redis)
        .await
        .unwrap();
    stats
        .lines()
        .filter(|line| {
            line.starts_with("cmdstat_")
                && !line.starts_with("cmdstat_info:")
                && !line.starts_with("cmdstat_client|")
        })
        .filter_map(|line| line.split_once("calls=")?.1.split(',').next())
        .map(|n| n.parse::<u64>().unwrap())
        .sum()
}

#[tokio::test]
async fn a_single_event_stream_is_one_command_on_a_key_of_its_own() {
    within(async {
        // A server of its own: its command counts are this test's alone.
        let server = RedisProcess::start(&[]);
        let prefix = unique_prefix("single");
        let store = RedisEventStore::new(connect(&server.url(), &prefix).await);
        let limits = EventLimits {
            max_streams: 1,
            finished_stream_ttl: Duration::from_secs(30),
            ..EventLimits::default()
        };
        // The GET stream fills the session; one-event streams take no place in it.
        open(&store, "s", GET, get_info(), &limits).await;
        let mut counter = plain(&server.url()).await;
        let before = commands_served(&mut counter).await;
        for stream in 1..=10 {
            let stored = store
                .append_single("s", stream, post_info(0, stream as i64), "answer", &limits)
                .await
                .unwrap();
            assert_eq!(stored, Some(1));
        }
        // The connection's handshake and script loads were before `before`.
        assert_eq!(commands_served(&mut counter).await - before, 10);
        let key = format!("{prefix}:s:{{s}}:1:7");
        let ttl = pttl(&server.url(), &key).await;
        assert!(ttl > 0 && ttl <= 30_000, "{key}: {ttl}");
        // A number in use is refused, and the stream is as it was.
        assert_eq!(
            store
                .append_single("s", 7, post_info(0, 70), "again", &limits)
                .await
                .unwrap(),
            None
        );
        let held = store.replay("s", 7, 0).await.unwrap().unwrap();
        assert_eq!(held.events, vec![(1, Arc::from("answer"))]);
        assert_eq!(held.info, post_info(0, 7));
        // Bounds that keep no event take the script, which stores none.
        let none = EventLimits {
            replay_events: 0,
            ..EventLimits::default()
        };
        assert_eq!(
            store
                .append_single("t", 3, post_info(0, 3), "dropped", &none)
                .await
                .unwrap(),
            Some(1)
        );
        let replay = store.replay("t", 3, 0).await.unwrap().unwrap();
        assert!(replay.events.is_empty() && replay.finished && replay.missed(0));
        // What is not ours is corrupt.
        let _: () = plain(&server.url())
            .await
            .set(&key, "no info line")
            .await
            .unwrap();
        assert!(corrupt(&store.replay("s", 7, 0).await));
    })
    .await;
}
