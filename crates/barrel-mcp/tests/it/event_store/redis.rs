//! `RedisEventStore` on a real `redis-server`: the shared suite, then what only a shared store
//! has (two nodes on one Redis, keys that expire in Redis itself, an
//! outage that is `Unavailable` and never "no such stream", unreadable records that are
//! `Corrupt` with no session id in the message; the integrity of its keys is in
//! `redis/integrity.rs`).
//!
//! Every store gets a key prefix of its own, so the tests share one server
//! ([`shared`](crate::support::redis::shared)).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::AsyncCommands;
use barrel_mcp::store::{EventLimits, EventStore, RedisEventStore, StoreError};

use super::{GET, Make, append, event_store_suite, get_info, open, post_info};
use crate::support::redis::{
    RedisProcess, connect, corrupt, keys_under, plain, pttl, shared, unavailable, unique_prefix,
};
use crate::support::within;

/// A store on the shared server, under `prefix`.
async fn store_on(prefix: &str) -> RedisEventStore {
    RedisEventStore::new(connect(&shared().url(), prefix).await)
}

fn make() -> Make {
    Box::new(|| {
        Box::pin(async {
            Arc::new(store_on(&unique_prefix("events")).await) as Arc<dyn EventStore>
        })
    })
}

event_store_suite!(make);

mod integrity;

#[tokio::test]
async fn two_nodes_resume_each_others_streams() {
    within(async {
        let prefix = unique_prefix("nodes");
        let a = store_on(&prefix).await;
        let b = store_on(&prefix).await;
        let limits = EventLimits::default();
        let stream = barrel_mcp::store::NodeTag::new(1).unwrap().stream(1);
        open(&a, "s", stream, post_info(1, 9), &limits).await;
        open(&a, "s", GET, get_info(), &limits).await;
        append(&a, "s", stream, "from a", false, &limits).await;
        // Durable before `append` returned: the other node replays it at once.
        let got = b.replay("s", stream, 0).await.unwrap().unwrap();
        assert_eq!(got.events, vec![(1, Arc::from("from a"))]);
        assert_eq!(got.info, post_info(1, 9));
        // Both nodes write the GET stream; one numbering.
        assert_eq!(append(&b, "s", GET, "b1", false, &limits).await, 1);
        assert_eq!(append(&a, "s", GET, "a1", false, &limits).await, 2);
        assert_eq!(
            append(&b, "s", stream, "b's answer", true, &limits).await,
            2
        );
        assert!(a.replay("s", stream, 1).await.unwrap().unwrap().finished);
        // Another prefix is another store.
        let elsewhere = store_on(&unique_prefix("nodes")).await;
        assert_eq!(elsewhere.replay("s", stream, 0).await.unwrap(), None);
    })
    .await;
}

#[tokio::test]
async fn every_key_expires_and_forget_leaves_none() {
    within(async {
        let prefix = unique_prefix("ttl");
        let store = store_on(&prefix).await;
        let limits = EventLimits {
            session_ttl: Duration::from_secs(600),
            finished_stream_ttl: Duration::from_secs(30),
            replay_events: 2,
            ..EventLimits::default()
        };
        open(&store, "s", GET, get_info(), &limits).await;
        open(&store, "s", 1, post_info(0, 1), &limits).await;
        open(&store, "s", 2, post_info(0, 2), &limits).await;
        open(&store, "s", 3, post_info(0, 3), &limits).await;
        append(&store, "s", GET, "g", false, &limits).await;
        for n in 0..4 {
            append(&store, "s", 1, &format!("e{n}"), false, &limits).await;
        }
        append(&store, "s", 2, "answer", true, &limits).await;
        let keys = keys_under(&shared().url(), &prefix).await;
        let expected = [
            format!("{prefix}:s:{{s}}:e:0"),
            format!("{prefix}:s:{{s}}:e:1"),
            format!("{prefix}:s:{{s}}:e:2"),
            format!("{prefix}:s:{{s}}:st"),
        ];
        assert_eq!(keys, expected, "stream 3 holds no event, so no key");
        for key in &keys {
            let ttl = pttl(&shared().url(), key).await;
            assert!(ttl > 0, "{key} has no TTL ({ttl})");
            assert!(ttl <= 600_000, "{key}: {ttl}");
        }
        // The finished stream's key: at most the finished TTL.
        let finished = pttl(&shared().url(), &format!("{prefix}:s:{{s}}:e:2")).await;
        assert!(finished <= 30_000, "{finished}");
        assert!(pttl(&shared().url(), &format!("{prefix}:s:{{s}}:e:1")).await > 30_000);
        // Trimming is exact.
        let held: usize = ::redis::cmd("XLEN")
            .arg(format!("{prefix}:s:{{s}}:e:1"))
            .query_async(&mut plain(&shared().url()).await)
            .await
            .unwrap();
        assert_eq!(held, 2);
        store.forget("s").await.unwrap();
        assert_eq!(
            keys_under(&shared().url(), &prefix).await,
            Vec::<String>::new()
        );
    })
    .await;
}

/// A session id that must appear in no error message (it is a bearer handle).
const SECRET_SID: &str = "sid-bearer-7f3a9c";

/// True when a store answered `Corrupt` with a message that does not name the session.
fn corrupt_quietly<T>(result: &Result<T, StoreError>) -> bool {
    corrupt(result) && !matches!(result, Err(StoreError::Corrupt(why)) if why.contains(SECRET_SID))
}

/// A record state far in the future: open, gone in the year 5138.
const OPEN_LONG: &str = "o99999999999999";

#[tokio::test]
async fn unreadable_records_are_corrupt() {
    within(async {
        let prefix = unique_prefix("corrupt");
        let store = store_on(&prefix).await;
        let limits = EventLimits::default();
        let sid = SECRET_SID;
        open(&store, sid, 1, post_info(0, 1), &limits).await;
        append(&store, sid, 1, "ok", false, &limits).await;
        let table = format!("{prefix}:s:{{{sid}}}:st");
        let mut redis = plain(&shared().url()).await;
        let _: () = redis.hset(&table, "1", "garbage").await.unwrap();
        let replayed = store.replay(sid, 1, 0).await;
        assert!(corrupt_quietly(&replayed), "{replayed:?}");
        let appended = store.append(sid, 1, "x", false, &limits).await;
        assert!(corrupt_quietly(&appended), "{appended:?}");
        let opened = store.open(sid, 1, post_info(0, 1), &limits).await;
        assert!(corrupt_quietly(&opened), "{opened:?}");
        // A record that numbers fewer events than its stream holds.
        let _: () = redis
            .hset(&table, "1", format!("{OPEN_LONG}|0|2|0|"))
            .await
            .unwrap();
        let replayed = store.replay(sid, 1, 0).await;
        assert!(corrupt_quietly(&replayed), "{replayed:?}");
        // Events that are not ours.
        let events = format!("{prefix}:s:{{{sid}}}:e:1");
        let _: () = redis
            .hset(&table, "1", format!("{OPEN_LONG}|5|2|0|"))
            .await
            .unwrap();
        let _: String = ::redis::cmd("XADD")
            .arg(&events)
            .arg("0-5")
            .arg("x")
            .arg("y")
            .query_async(&mut redis)
            .await
            .unwrap();
        let replayed = store.replay(sid, 1, 0).await;
        assert!(corrupt_quietly(&replayed), "{replayed:?}");
    })
    .await;
}

#[tokio::test]
async fn redis_down_is_unavailable_not_unknown() {
    within(async {
        let mut server = RedisProcess::start(&[]);
        let store = RedisEventStore::new(connect(&server.url(), &unique_prefix("down")).await);
        let limits = EventLimits::default();
        open(&store, "s", 1, post_info(0, 1), &limits).await;
        append(&store, "s", 1, "kept", false, &limits).await;
        server.kill();
        assert!(!server.answers_ping());
        let started = Instant::now();
        let replayed = store.replay("s", 1, 0).await;
        assert!(unavailable(&replayed), "{replayed:?}");
        let appended = store.append("s", 1, "x", false, &limits).await;
        assert!(unavailable(&appended), "{appended:?}");
        let opened = store.open("s", 2, post_info(0, 2), &limits).await;
        assert!(unavailable(&opened), "{opened:?}");
        let forgotten = store.forget("s").await;
        assert!(unavailable(&forgotten), "{forgotten:?}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "took {:?}",
            started.elapsed()
        );
        // Redis comes back (empty): the same store serves again.
        server.restart();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match store.open("s", 1, post_info(0, 1), &limits).await {
                Ok(_) => break,
                Err(StoreError::Unavailable(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => panic!("no recovery: {other:?}"),
            }
        }
        assert_eq!(append(&store, "s", 1, "fresh", false, &limits).await, 1);
    })
    .await;
}
