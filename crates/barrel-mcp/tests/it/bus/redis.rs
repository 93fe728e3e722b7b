//! `RedisBus` on a real `redis-server`: the shared suite on two buses (two nodes of one
//! service), then what only Redis has: tags from a counter, repeats in the inbox, a full
//! inbox, keys that all expire, and background tasks and connections that end with the bus;
//! membership (`redis/membership.rs`) and pub/sub (`redis/pubsub.rs`) have files of their own.
//!
//! Each pair gets a key prefix of its own on the shared server; tests that kill connections
//! or count them run on a server of their own.

mod membership;
mod pubsub;

use std::sync::Arc;
use std::time::{Duration, Instant};

use barrel_mcp::store::{Bus, BusOptions, Delivery, NodeTag, RedisBus, Subscription, Topic};
use bytes::Bytes;

use super::{Make, Pair, bus_suite, message, quick};
use crate::support::redis::{RedisProcess, connect, keys_under, plain, shared, unique_prefix};
use crate::support::within;

/// A bus on `url` under `prefix`, as one node.
async fn node(url: &str, prefix: &str, options: BusOptions) -> RedisBus {
    RedisBus::start(connect(url, prefix).await, options)
        .await
        .expect("the bus starts")
}

fn make() -> Make {
    Box::new(|options| {
        Box::pin(async move {
            let url = shared().url();
            let prefix = unique_prefix("bus");
            let a = node(&url, &prefix, options.clone()).await;
            let b = node(&url, &prefix, options).await;
            Pair {
                a: Arc::new(a),
                b: Arc::new(b),
            }
        })
    })
}

bus_suite!(make);

/// The instance id in the membership record of `tag` (what names its inbox).
async fn instance_of(url: &str, prefix: &str, tag: NodeTag) -> String {
    let record: String = ::redis::cmd("GET")
        .arg(format!("{prefix}:node:{{{tag}}}"))
        .query_async(&mut plain(url).await)
        .await
        .expect("a membership record");
    let record: serde_json::Value = serde_json::from_str(&record).expect("a JSON record");
    record["i"].as_str().expect("an instance id").to_owned()
}

/// The inbox stream of the node holding `tag`.
async fn inbox_key(url: &str, prefix: &str, tag: NodeTag) -> String {
    format!(
        "{prefix}:n:{{{tag}}}:{}",
        instance_of(url, prefix, tag).await
    )
}

/// Publishes `body` from `from` until `on` gets it (gaps skipped), within 5 s: for a
/// subscriber whose bus may not listen again yet.
async fn heard_again(from: &RedisBus, on: &mut Subscription, body: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        assert!(Instant::now() < deadline, "{body:?} not heard within 5 s");
        from.publish(on.topic(), Bytes::copy_from_slice(body.as_bytes()))
            .await
            .unwrap();
        match tokio::time::timeout(Duration::from_millis(200), on.recv()).await {
            Ok(Some(Delivery::Gap)) | Err(_) => {}
            Ok(got) => {
                assert_eq!(got, Some(message(from.node(), body)));
                return;
            }
        }
    }
}

/// Polls `check` every 20 ms until it holds, failing after `within`.
async fn eventually<F: AsyncFnMut() -> bool>(within: Duration, what: &str, mut check: F) {
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_come_from_the_counter_and_are_never_zero() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("tags");
        let mut tags = Vec::new();
        for _ in 0..3 {
            let bus = node(&url, &prefix, quick()).await;
            tags.push(bus.node().get());
            bus.stop().await;
        }
        // 1, 2, 3: a stopped node's tag is not issued again.
        assert_eq!(tags, [1, 2, 3]);
        // A counter at the largest tag wraps to 1.
        let mut connection = plain(&url).await;
        let _: () = ::redis::cmd("SET")
            .arg(format!("{prefix}:nodes:next"))
            .arg(NodeTag::MAX)
            .query_async(&mut connection)
            .await
            .unwrap();
        let wrapped = node(&url, &prefix, quick()).await;
        assert_eq!(wrapped.node().get(), 1);
        // ... and skips a tag a live node holds.
        let _: () = ::redis::cmd("SET")
            .arg(format!("{prefix}:nodes:next"))
            .arg(0)
            .query_async(&mut connection)
            .await
            .unwrap();
        let next = node(&url, &prefix, quick()).await;
        assert_eq!(next.node().get(), 2);
        assert!(format!("{next:?}").contains(&prefix));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_and_unreadable_entries_in_an_inbox_are_dropped() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("repeats");
        let b = node(&url, &prefix, quick()).await;
        let mut inbox = b.inbox().unwrap();
        let stream = inbox_key(&url, &prefix, b.node()).await;
        let mut connection = plain(&url).await;
        // What a retried send leaves: the same message twice, then a foreign entry.
        for (id, from) in [("m1", "5"), ("m1", "5"), ("m2", "not a tag"), ("m3", "5")] {
            let _: String = ::redis::cmd("XADD")
                .arg(&stream)
                .arg("*")
                .arg("i")
                .arg(id)
                .arg("f")
                .arg(from)
                .arg("b")
                .arg(id)
                .query_async(&mut connection)
                .await
                .unwrap();
        }
        for id in ["m1", "m3"] {
            let got = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(got.id, id);
            assert_eq!(got.from, NodeTag::new(5).unwrap());
        }
        assert!(b.send(b.node(), "marker".into()).await.unwrap());
        let marker = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(marker.body, Bytes::from("marker"));
        // What was handed over is trimmed, the last entry too.
        eventually(Duration::from_secs(2), "the inbox trimmed", async || {
            let left: usize = ::redis::cmd("XLEN")
                .arg(&stream)
                .query_async(&mut connection)
                .await
                .unwrap();
            left == 0
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_inbox_refuses_rather_than_dropping() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("full");
        let options = BusOptions {
            inbox_capacity: 5,
            ..quick()
        };
        let a = node(&url, &prefix, options.clone()).await;
        let b = node(&url, &prefix, options).await;
        // B never reads: its reader holds a buffer's worth, Redis the capacity, then no more.
        let mut refused = None;
        for n in 0..500 {
            match a.send(b.node(), Bytes::from(n.to_string())).await {
                Ok(sent) => assert!(sent),
                Err(error) => {
                    refused = Some(error);
                    break;
                }
            }
        }
        let refused = refused.expect("the inbox filled up");
        assert!(refused.to_string().contains("full"), "{refused}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_stop_every_key_left_expires() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("keys");
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let _on_b = b.subscribe(&Topic::Session("s".into())).await.unwrap();
        a.publish(&Topic::Session("s".into()), "x".into())
            .await
            .unwrap();
        assert!(a.send(b.node(), "unread".into()).await.unwrap());
        let mut connection = plain(&url).await;
        let keys = keys_under(&url, &prefix).await;
        assert!(keys.len() >= 3, "{keys:?}");
        for key in &keys {
            let ttl: i64 = ::redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut connection)
                .await
                .unwrap();
            assert!(ttl > 0, "{key} expires ({ttl})");
        }
        a.stop().await;
        b.stop().await;
        // The memberships and inboxes went with the nodes; the counter stays, bound to expire.
        let keys = keys_under(&url, &prefix).await;
        assert_eq!(keys, [format!("{prefix}:nodes:next")]);
        let ttl: i64 = ::redis::cmd("PTTL")
            .arg(&keys[0])
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(ttl > 0, "the counter expires ({ttl})");
    })
    .await;
}

/// `CLIENT LIST` of `url`: (all connections, pub/sub connections).
async fn clients(url: &str) -> (usize, usize) {
    let list: String = ::redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut plain(url).await)
        .await
        .unwrap();
    let lines: Vec<&str> = list.lines().collect();
    let pubsub = lines
        .iter()
        .filter(|line| {
            line.split(' ')
                .any(|f| f.starts_with("sub=") && f != "sub=0")
        })
        .count();
    // Minus the connection that asked.
    (lines.len() - 1, pubsub)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_drop_end_every_task_and_connection() {
    within(async {
        // A server of its own, to count its connections.
        let server = RedisProcess::start(&[]);
        let url = server.url();
        let prefix = unique_prefix("stop");
        let shared = connect(&url, &prefix).await;
        assert_eq!(clients(&url).await, (1, 0), "only the command connection");
        let bus = RedisBus::start(shared.clone(), quick()).await.unwrap();
        let _subscription = bus.subscribe(&Topic::Registry).await.unwrap();
        assert_eq!(bus.running_tasks(), 3);
        // Its own pub/sub and inbox connections.
        assert_eq!(clients(&url).await, (3, 1));
        bus.stop().await;
        assert_eq!(bus.running_tasks(), 0);
        eventually(
            Duration::from_secs(2),
            "the bus's connections closed",
            async || clients(&url).await == (1, 0),
        )
        .await;
        assert!(bus.publish(&Topic::Registry, "x".into()).await.is_err());
        assert!(bus.send(bus.node(), "x".into()).await.is_err());
        // Dropping does the same, without waiting.
        let bus = RedisBus::start(shared.clone(), quick()).await.unwrap();
        let tag = bus.node();
        assert_eq!(clients(&url).await, (3, 0));
        drop(bus);
        eventually(
            Duration::from_secs(2),
            "the dropped bus's connections closed",
            async || clients(&url).await == (1, 0),
        )
        .await;
        let other = RedisBus::start(shared, quick()).await.unwrap();
        eventually(
            Duration::from_secs(2),
            "the dropped node left",
            async || !other.alive(tag).await.unwrap(),
        )
        .await;
    })
    .await;
}
