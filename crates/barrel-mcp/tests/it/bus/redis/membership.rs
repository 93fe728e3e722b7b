//! Membership on Redis: a tag another instance took (its messages go to that instance, and
//! this node moves to a new tag), a membership that lapsed and is renewed (announced, never
//! silent), a Redis restarted without its data, and options refused before anything starts.

use std::time::Duration;

use barrel_mcp::store::{Bus, BusOptions, Delivery, NodeTag, RedisBus, Topic};
use bytes::Bytes;
use tokio::sync::watch;

use super::{eventually, node};
use crate::bus::{message, next, quick};
use crate::support::redis::{RedisProcess, connect, keys_under, plain, shared, unique_prefix};
use crate::support::within;

/// Writes the membership record of another instance, `instance`, for `tag` (as a node that
/// claimed it after Redis lost its data would).
async fn intrude(url: &str, prefix: &str, tag: NodeTag, instance: &str) {
    let record = serde_json::json!({"i": instance, "n": "intruder", "t": 0}).to_string();
    let _: () = ::redis::cmd("SET")
        .arg(format!("{prefix}:node:{{{tag}}}"))
        .arg(record)
        .arg("PX")
        .arg(60_000)
        .query_async(&mut plain(url).await)
        .await
        .unwrap();
}

/// The node's next tag other than `old`, within 5 s (a lapse renewed meanwhile announces the
/// same tag again: skipped).
async fn new_tag(changes: &mut watch::Receiver<NodeTag>, old: NodeTag) -> NodeTag {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            changes.changed().await.expect("the bus runs");
            let tag = *changes.borrow_and_update();
            if tag != old {
                return tag;
            }
        }
    })
    .await
    .expect("a new tag within 5 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_conflict_takes_a_new_tag() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("conflict");
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let old = a.node();
        let mut changes = a.node_changes();
        let mut on_a = a.subscribe(&Topic::Registry).await.unwrap();
        let mut inbox = a.inbox().unwrap();
        // Another instance takes A's tag (as after Redis lost its data and issued it again).
        intrude(&url, &prefix, old, "00000000000000aa").await;
        let fresh = new_tag(&mut changes, old).await;
        assert_ne!(fresh, b.node());
        assert_ne!(fresh, NodeTag::LOCAL);
        assert_eq!(a.node(), fresh);
        assert!(b.alive(fresh).await.unwrap());
        // The other instance keeps the old tag.
        assert_eq!(
            super::instance_of(&url, &prefix, old).await,
            "00000000000000aa"
        );
        // A's subscribers hear that messages may have been lost while it moved.
        assert_eq!(next(&mut on_a).await, Delivery::Gap);
        // Directed messages reach A under its new tag; broadcasts still flow both ways.
        assert!(b.send(fresh, "hello".into()).await.unwrap());
        let got = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((got.from, got.body), (b.node(), Bytes::from("hello")));
        let mut on_b = b.subscribe(&Topic::Registry).await.unwrap();
        a.publish(&Topic::Registry, "new tag".into()).await.unwrap();
        assert_eq!(next(&mut on_b).await, message(fresh, "new tag"));
        b.publish(&Topic::Registry, "to a".into()).await.unwrap();
        assert_eq!(next(&mut on_a).await, message(b.node(), "to a"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restarted_empty_is_a_gap_and_the_nodes_rejoin() {
    within(async {
        let mut server = RedisProcess::start(&[]);
        let url = server.url();
        let prefix = unique_prefix("restart");
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let mut on_b = b.subscribe(&Topic::Registry).await.unwrap();
        let mut inbox = b.inbox().unwrap();
        let mut changes = b.node_changes();
        changes.borrow_and_update();
        server.restart();
        // The subscriber hears of the loss once its bus listens to the new server.
        assert_eq!(next(&mut on_b).await, Delivery::Gap);
        // B's membership went with the data: renewing it is announced, with the same tag.
        tokio::time::timeout(Duration::from_secs(5), changes.changed())
            .await
            .expect("the renewal announced within 5 s")
            .unwrap();
        assert_eq!(*changes.borrow_and_update(), b.node());
        // The heartbeats write the memberships again (same tags: nobody took them).
        eventually(Duration::from_secs(5), "b is a member again", async || {
            matches!(a.alive(b.node()).await, Ok(true))
        })
        .await;
        eventually(Duration::from_secs(5), "a message reaches b", async || {
            matches!(a.send(b.node(), "again".into()).await, Ok(true))
        })
        .await;
        let got = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.body, Bytes::from("again"));
        // Broadcasts flow again once B listens to the new server (the gap above may be the
        // renewal's, not the listener's).
        super::heard_again(&a, &mut on_b, "again").await;
        // The counter went with the data; the beats put it back at least at the live tags.
        let counter: u32 = ::redis::cmd("GET")
            .arg(format!("{prefix}:nodes:next"))
            .query_async(&mut plain(&url).await)
            .await
            .unwrap();
        assert!(counter >= a.node().get().max(b.node().get()));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_that_cannot_work_are_refused_at_start() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("options");
        let cases = [
            (
                "heartbeat_interval",
                BusOptions {
                    heartbeat_interval: Duration::ZERO,
                    ..quick()
                },
            ),
            (
                "ping_interval",
                BusOptions {
                    ping_interval: Duration::ZERO,
                    ..quick()
                },
            ),
            (
                "heartbeat_expiry",
                BusOptions {
                    heartbeat_expiry: Duration::from_millis(100),
                    ..quick()
                },
            ),
            (
                "tag_counter_ttl",
                BusOptions {
                    tag_counter_ttl: Duration::MAX,
                    ..quick()
                },
            ),
            (
                "inbox_ttl",
                BusOptions {
                    inbox_ttl: Duration::from_secs(u64::MAX / 1000),
                    ..quick()
                },
            ),
            (
                "inbox_capacity",
                BusOptions {
                    inbox_capacity: 0,
                    ..quick()
                },
            ),
        ];
        for (field, options) in cases {
            let refused = RedisBus::start(connect(&url, &prefix).await, options).await;
            let error = refused.expect_err(field).to_string();
            assert!(error.contains(field), "{field}: {error}");
        }
        // Refused before anything was written.
        assert_eq!(keys_under(&url, &prefix).await, Vec::<String>::new());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_tag_s_messages_reach_the_new_holder_only() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("taken");
        let a = node(&url, &prefix, quick()).await;
        // B beats slowly: it keeps reading under its old tag for up to a second.
        let slow = BusOptions {
            heartbeat_interval: Duration::from_secs(1),
            heartbeat_expiry: Duration::from_secs(3),
            ..quick()
        };
        let b = node(&url, &prefix, slow).await;
        let old = b.node();
        let mut changes = b.node_changes();
        let mut inbox = b.inbox().unwrap();
        // Another instance claims B's tag (after a failover without data) ...
        let intruder = "0123456789abcdef";
        intrude(&url, &prefix, old, intruder).await;
        // ... and what is sent to that tag now is for it.
        for n in 0..5 {
            assert!(a.send(old, Bytes::from(n.to_string())).await.unwrap());
        }
        let fresh = new_tag(&mut changes, old).await;
        // Nobody read or trimmed the new holder's messages: B took none of them.
        let held: usize = ::redis::cmd("XLEN")
            .arg(format!("{prefix}:n:{{{old}}}:{intruder}"))
            .query_async(&mut plain(&url).await)
            .await
            .unwrap();
        assert_eq!(held, 5);
        assert!(a.send(fresh, "marker".into()).await.unwrap());
        let got = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.body, Bytes::from("marker"), "B read another's message");
        // A membership record this version cannot read is said so, not taken as absent.
        let _: () = ::redis::cmd("SET")
            .arg(format!("{prefix}:node:{{{old}}}"))
            .arg("not a record")
            .query_async(&mut plain(&url).await)
            .await
            .unwrap();
        assert!(crate::support::redis::corrupt(
            &a.send(old, "x".into()).await
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_membership_is_renewed_and_announced() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("lapse");
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let tag = a.node();
        let mut changes = a.node_changes();
        changes.borrow_and_update();
        let mut on_a = a.subscribe(&Topic::Registry).await.unwrap();
        // A's membership expires (A was paused, or its connection slow, for longer than the
        // expiry): meanwhile B takes A for gone.
        let _: i64 = ::redis::cmd("DEL")
            .arg(format!("{prefix}:node:{{{tag}}}"))
            .query_async(&mut plain(&url).await)
            .await
            .unwrap();
        // A renews it under the same tag, and says so: its watchers and subscribers hear.
        tokio::time::timeout(Duration::from_secs(5), changes.changed())
            .await
            .expect("the renewal announced within 5 s")
            .unwrap();
        assert_eq!(*changes.borrow_and_update(), tag);
        assert_eq!(a.node(), tag);
        assert_eq!(next(&mut on_a).await, Delivery::Gap);
        assert!(b.alive(tag).await.unwrap());
        b.publish(&Topic::Registry, "after".into()).await.unwrap();
        assert_eq!(next(&mut on_a).await, message(b.node(), "after"));
    })
    .await;
}
