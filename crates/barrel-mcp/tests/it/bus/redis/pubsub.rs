//! Pub/sub on Redis: a killed connection (a gap, then messages again), a connection killed as
//! soon as it listens (retried with a growing pause, not at full speed), a channel Redis
//! refuses (that subscribe fails, the others keep listening), unsubscribing, and another
//! instance publishing under this node's tag (heard: only this instance's echo is dropped).

use std::time::{Duration, Instant};

use barrel_mcp::store::{Bus, Delivery, Topic};

use super::{eventually, node};
use crate::bus::{message, next, quick};
use crate::support::redis::{RedisProcess, plain, shared, unique_prefix};
use crate::support::within;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_pubsub_connection_is_a_gap_then_messages_flow_again() {
    within(async {
        // A server of its own: the kill hits every pub/sub connection on it.
        let server = RedisProcess::start(&[]);
        let url = server.url();
        let prefix = unique_prefix("kill");
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let mut on_a = a.subscribe(&Topic::Registry).await.unwrap();
        let mut on_b = b.subscribe(&Topic::Registry).await.unwrap();
        let mut task_on_b = b.subscribe(&Topic::Task("t".into())).await.unwrap();
        a.publish(&Topic::Registry, "before".into()).await.unwrap();
        assert_eq!(next(&mut on_b).await, message(a.node(), "before"));
        let killed: i64 = ::redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("pubsub")
            .query_async(&mut plain(&url).await)
            .await
            .unwrap();
        assert_eq!(killed, 2, "one pub/sub connection per node");
        // Every subscriber hears of the loss once its bus listens again.
        let started = Instant::now();
        assert_eq!(next(&mut on_a).await, Delivery::Gap);
        assert_eq!(next(&mut on_b).await, Delivery::Gap);
        assert_eq!(next(&mut task_on_b).await, Delivery::Gap);
        // Publications arrive again (the buses resubscribed), and new subscriptions work.
        let mut also_on_a = a.subscribe(&Topic::Registry).await.unwrap();
        a.publish(&Topic::Registry, "after".into()).await.unwrap();
        assert_eq!(next(&mut on_b).await, message(a.node(), "after"));
        b.publish(&Topic::Registry, "back".into()).await.unwrap();
        assert_eq!(next(&mut on_a).await, message(b.node(), "back"));
        assert_eq!(next(&mut also_on_a).await, message(b.node(), "back"));
        a.publish(&Topic::Task("t".into()), "task".into())
            .await
            .unwrap();
        assert_eq!(next(&mut task_on_b).await, message(a.node(), "task"));
        assert!(started.elapsed() < Duration::from_secs(3));
    })
    .await;
}

/// How many connections listen to `channel`.
async fn listeners(url: &str, channel: &str) -> i64 {
    let counts: Vec<(String, i64)> = ::redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel)
        .query_async(&mut plain(url).await)
        .await
        .unwrap();
    counts.first().map_or(0, |(_, n)| *n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_subscriber_gone_unsubscribes_the_channel() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("unsub");
        let bus = node(&url, &prefix, quick()).await;
        let topic = Topic::Session("s1".into());
        let channel = format!("{prefix}:bs:{{s1}}");
        assert_eq!(listeners(&url, &channel).await, 0);
        let first = bus.subscribe(&topic).await.unwrap();
        let second = bus.subscribe(&topic).await.unwrap();
        // One listening connection per node, however many subscribers it has.
        assert_eq!(listeners(&url, &channel).await, 1);
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(listeners(&url, &channel).await, 1);
        drop(second);
        eventually(
            Duration::from_secs(2),
            "the channel unsubscribed",
            async || listeners(&url, &channel).await == 0,
        )
        .await;
        // Subscribing again listens again.
        let _again = bus.subscribe(&topic).await.unwrap();
        assert_eq!(listeners(&url, &channel).await, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instance_on_this_tag_is_heard() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("twin");
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let mut on_a = a.subscribe(&Topic::Registry).await.unwrap();
        let mut on_b = b.subscribe(&Topic::Registry).await.unwrap();
        // Another instance publishing under A's tag (two instances hold one tag until a
        // heartbeat sorts it out): header version 2, the 24-bit tag, the 8-byte instance id.
        let mut payload = vec![2u8];
        payload.extend_from_slice(&a.node().get().to_be_bytes()[1..]);
        payload.extend_from_slice(&[0xee; 8]);
        payload.extend_from_slice(b"twin");
        let _: i64 = ::redis::cmd("PUBLISH")
            .arg(format!("{prefix}:b"))
            .arg(payload)
            .query_async(&mut plain(&url).await)
            .await
            .unwrap();
        assert_eq!(next(&mut on_a).await, message(a.node(), "twin"));
        assert_eq!(next(&mut on_b).await, message(a.node(), "twin"));
        // A's own publications still never come back to it.
        a.publish(&Topic::Registry, "own".into()).await.unwrap();
        assert_eq!(next(&mut on_b).await, message(a.node(), "own"));
        b.publish(&Topic::Registry, "marker".into()).await.unwrap();
        assert_eq!(next(&mut on_a).await, message(b.node(), "marker"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_redis_refuses_fails_that_subscribe_only() {
    within(async {
        let prefix = unique_prefix("acl");
        // A user that may listen to the registry and task channels, not to session ones.
        let registry = format!("&{prefix}:b");
        let tasks = format!("&{prefix}:bt:*");
        let server = RedisProcess::start(&[
            "--user", "bus", "on", "nopass", "~*", &registry, &tasks, "+@all",
        ]);
        let url = format!("redis://bus:any@127.0.0.1:{}/", server.port());
        let a = node(&url, &prefix, quick()).await;
        let b = node(&url, &prefix, quick()).await;
        let mut on_b = b.subscribe(&Topic::Registry).await.unwrap();
        let started = Instant::now();
        let refused = b
            .subscribe(&Topic::Session("secret-session-id".into()))
            .await;
        let error = refused.expect_err("the channel is not allowed").to_string();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "refused at once"
        );
        assert!(error.contains("NOPERM"), "{error}");
        assert!(!error.contains("secret-session-id"), "{error}");
        // The connection stayed: no gap, the other subscriptions listen, new ones work.
        let mut task_on_b = b.subscribe(&Topic::Task("t".into())).await.unwrap();
        a.publish(&Topic::Registry, "after".into()).await.unwrap();
        assert_eq!(next(&mut on_b).await, message(a.node(), "after"));
        a.publish(&Topic::Task("t".into()), "task".into())
            .await
            .unwrap();
        assert_eq!(next(&mut task_on_b).await, message(a.node(), "task"));
    })
    .await;
}

/// `total_connections_received` of the server behind `connection`.
async fn connections_received(connection: &mut ::redis::aio::MultiplexedConnection) -> u64 {
    let info: String = ::redis::cmd("INFO")
        .arg("stats")
        .query_async(connection)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("total_connections_received:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("INFO stats counts connections")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_as_soon_as_it_listens_is_retried_with_a_growing_pause() {
    within(async {
        // A server of its own: its connection count is the bus's.
        let server = RedisProcess::start(&[]);
        let url = server.url();
        let prefix = unique_prefix("spin");
        let bus = node(&url, &prefix, quick()).await;
        let mut on_bus = bus.subscribe(&Topic::Registry).await.unwrap();
        let mut killer = plain(&url).await;
        let before = connections_received(&mut killer).await;
        // Every listening connection dies as soon as it subscribes, for 1.5 s.
        let until = Instant::now() + Duration::from_millis(1_500);
        while Instant::now() < until {
            let _: i64 = ::redis::cmd("CLIENT")
                .arg("KILL")
                .arg("TYPE")
                .arg("pubsub")
                .query_async(&mut killer)
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let made = connections_received(&mut killer).await - before;
        // 50 ms, 100 ms, 200 ms, 400 ms, 500 ms...: a handful, not one per kill.
        assert!(made <= 12, "{made} connections in 1.5 s");
        // Left alone, it listens again: a gap (one per connection that listened), then
        // messages.
        assert_eq!(next(&mut on_bus).await, Delivery::Gap);
        let other = node(&url, &prefix, quick()).await;
        super::heard_again(&other, &mut on_bus, "back").await;
    })
    .await;
}
