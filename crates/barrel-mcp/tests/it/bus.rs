//! One suite for every [`Bus`]: two nodes of one bus, run on a [`LocalHub`] here and on two
//! `RedisBus` instances on one real `redis-server` in `bus/redis.rs` (feature `redis`), with
//! the same assertions.
//!
//! Each check gets a [`Make`]: two fresh nodes, `a` and `b`, with the options it asks for.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use barrel_mcp::peer::BoxFuture;
use barrel_mcp::store::{Bus, BusOptions, Delivery, LocalHub, NodeTag, Subscription, Topic};
use bytes::Bytes;

#[cfg(feature = "redis")]
mod redis;

/// Two nodes of one fresh bus.
pub(crate) struct Pair {
    pub(crate) a: Arc<dyn Bus>,
    pub(crate) b: Arc<dyn Bus>,
}

/// Makes two nodes of a fresh bus with these options.
pub(crate) type Make = Box<dyn Fn(BusOptions) -> BoxFuture<'static, Pair> + Send + Sync>;

/// Options for the suite: short heartbeats, so a stopped node is gone fast; an expiry ten
/// beats long, so a busy test machine does not let a membership lapse (a lapse is announced
/// with a gap to every subscriber).
pub(crate) fn quick() -> BusOptions {
    BusOptions {
        heartbeat_interval: Duration::from_millis(100),
        heartbeat_expiry: Duration::from_secs(1),
        ping_interval: Duration::from_millis(200),
        inbox_block: Duration::from_millis(200),
        ..BusOptions::default()
    }
}

/// The next delivery, within 5 s.
pub(crate) async fn next(subscription: &mut Subscription) -> Delivery {
    tokio::time::timeout(Duration::from_secs(5), subscription.recv())
        .await
        .expect("a delivery within 5 s")
        .expect("the subscription is open")
}

/// A message from `origin` with `body`.
pub(crate) fn message(origin: NodeTag, body: &str) -> Delivery {
    Delivery::Message {
        origin,
        body: Bytes::copy_from_slice(body.as_bytes()),
    }
}

/// Expands to one test per check, each on nodes from `$make()`.
macro_rules! bus_suite {
    ($make:path) => {
        bus_suite!(@tests $make;
            nodes_have_distinct_tags_and_are_alive,
            a_publication_reaches_other_nodes_only,
            topics_are_separate,
            a_slow_subscriber_gets_a_gap_not_a_backlog,
            directed_messages_arrive_once_and_in_order,
            a_stopped_node_is_no_longer_alive,
        );
    };
    (@tests $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                $crate::support::within($crate::bus::$check(&$make())).await;
            }
        )*
    };
}
#[cfg(feature = "redis")]
pub(crate) use bus_suite;

mod local {
    use super::*;

    fn make() -> Make {
        Box::new(|options| {
            Box::pin(async move {
                let hub = LocalHub::with_options(options);
                Pair {
                    a: Arc::new(hub.join()),
                    b: Arc::new(hub.join()),
                }
            })
        })
    }

    bus_suite!(make);

    #[tokio::test]
    async fn one_process_is_node_zero_alone() {
        let bus = barrel_mcp::store::LocalBus::new();
        assert_eq!(bus.node(), NodeTag::LOCAL);
        assert!(bus.alive(NodeTag::LOCAL).await.unwrap());
        let mut changes = bus.subscribe(&Topic::Registry).await.unwrap();
        // Its own publications reach nobody: it delivers locally itself.
        bus.publish(&Topic::Registry, "x".into()).await.unwrap();
        assert_eq!(changes.try_recv(), None);
        bus.stop();
        assert_eq!(changes.recv().await, None);
        assert!(bus.publish(&Topic::Registry, "x".into()).await.is_err());
        assert!(bus.subscribe(&Topic::Registry).await.is_err());
        assert!(!bus.alive(NodeTag::LOCAL).await.unwrap());
    }

    #[tokio::test]
    async fn tags_follow_the_join_order() {
        let hub = LocalHub::new();
        let tags: Vec<u32> = (0..3).map(|_| hub.join()).map(|b| b.node().get()).collect();
        // Each node left at once (dropped), so the next tags are new ones all the same.
        // Tag 0 is a lone process's (`LocalBus::new`): a hub's nodes start at 1.
        assert_eq!(tags, [1, 2, 3]);
    }
}

pub(crate) async fn nodes_have_distinct_tags_and_are_alive(make: &Make) {
    let Pair { a, b } = make(quick()).await;
    assert_ne!(a.node(), b.node());
    assert_eq!(*a.node_changes().borrow(), a.node());
    for bus in [&a, &b] {
        for node in [a.node(), b.node()] {
            assert!(bus.alive(node).await.unwrap(), "{node} is alive");
        }
    }
    assert!(!a.alive(NodeTag::new(NodeTag::MAX).unwrap()).await.unwrap());
    // The inbox is handed out once.
    assert!(a.inbox().is_some());
    assert!(a.inbox().is_none());
}

pub(crate) async fn a_publication_reaches_other_nodes_only(make: &Make) {
    let Pair { a, b } = make(quick()).await;
    let mut on_a = a.subscribe(&Topic::Registry).await.unwrap();
    let mut on_b = b.subscribe(&Topic::Registry).await.unwrap();
    let mut also_on_b = b.subscribe(&Topic::Registry).await.unwrap();
    a.publish(&Topic::Registry, "from a".into()).await.unwrap();
    assert_eq!(next(&mut on_b).await, message(a.node(), "from a"));
    assert_eq!(next(&mut also_on_b).await, message(a.node(), "from a"));
    // B answers after it saw A's message: A's first delivery is B's, so its own never came.
    b.publish(&Topic::Registry, "from b".into()).await.unwrap();
    assert_eq!(next(&mut on_a).await, message(b.node(), "from b"));
    assert_eq!(on_b.try_recv(), None);
    // A dropped subscription no longer receives; the other one still does.
    drop(also_on_b);
    a.publish(&Topic::Registry, "again".into()).await.unwrap();
    assert_eq!(next(&mut on_b).await, message(a.node(), "again"));
}

pub(crate) async fn topics_are_separate(make: &Make) {
    let Pair { a, b } = make(quick()).await;
    let s1 = Topic::Session("s1".into());
    let t1 = Topic::Task("t1".into());
    let mut session = b.subscribe(&s1).await.unwrap();
    let mut task = b.subscribe(&t1).await.unwrap();
    let mut registry = b.subscribe(&Topic::Registry).await.unwrap();
    // A session and a task of the same name are different topics, as are other ids.
    for (topic, body) in [
        (Topic::Session("s2".into()), "s2"),
        (Topic::Task("s1".into()), "task s1"),
        (Topic::Session("t1".into()), "session t1"),
        (t1.clone(), "t1"),
        (s1.clone(), "s1"),
        (Topic::Registry, "registry"),
    ] {
        a.publish(&topic, Bytes::from(body)).await.unwrap();
    }
    assert_eq!(next(&mut session).await, message(a.node(), "s1"));
    assert_eq!(next(&mut task).await, message(a.node(), "t1"));
    assert_eq!(next(&mut registry).await, message(a.node(), "registry"));
    // Nothing else came: the next of each is a marker sent after.
    for (topic, subscription) in [
        (&s1, &mut session),
        (&t1, &mut task),
        (&Topic::Registry, &mut registry),
    ] {
        a.publish(topic, "marker".into()).await.unwrap();
        assert_eq!(next(subscription).await, message(a.node(), "marker"));
    }
}

pub(crate) async fn a_slow_subscriber_gets_a_gap_not_a_backlog(make: &Make) {
    let capacity = 8;
    let Pair { a, b } = make(BusOptions {
        subscription_capacity: capacity,
        ..quick()
    })
    .await;
    let topic = Topic::Task("busy".into());
    let mut slow = b.subscribe(&topic).await.unwrap();
    let mut probe = b.subscribe(&topic).await.unwrap();
    for n in 0..100 {
        a.publish(&topic, Bytes::from(n.to_string())).await.unwrap();
    }
    // Each message goes to both queues in turn: when the probe has the last, the slow one had
    // all but at most the last.
    let last = message(a.node(), "99");
    while next(&mut probe).await != last {}
    let mut held = Vec::new();
    while held.last() != Some(&last) {
        held.push(next(&mut slow).await);
    }
    assert!(held.len() <= capacity + 1, "{} held", held.len());
    assert_eq!(held.first(), Some(&Delivery::Gap), "{held:?}");
    assert_eq!(held.iter().filter(|d| **d == Delivery::Gap).count(), 1);
    assert_eq!(held.last(), Some(&message(a.node(), "99")));
    // After the gap it keeps receiving.
    a.publish(&topic, "more".into()).await.unwrap();
    assert_eq!(next(&mut slow).await, message(a.node(), "more"));
}

pub(crate) async fn directed_messages_arrive_once_and_in_order(make: &Make) {
    let Pair { a, b } = make(quick()).await;
    let mut inbox = b.inbox().expect("b's inbox");
    let count = 1_000;
    for n in 0..count {
        assert!(b_gets(&*a, &b, n).await);
    }
    let mut ids = HashSet::new();
    for n in 0..count {
        let message = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
            .await
            .expect("a message within 5 s")
            .expect("the inbox is open");
        assert_eq!(message.from, a.node());
        assert_eq!(message.body, Bytes::from(n.to_string()), "in order");
        assert!(ids.insert(message.id), "ids are unique");
    }
    // Exactly once: the next one is a marker sent after all of them.
    assert!(a.send(b.node(), "marker".into()).await.unwrap());
    let marker = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(marker.body, Bytes::from("marker"));
    // A node that is not alive gets nothing, and the sender hears so.
    let nobody = NodeTag::new(NodeTag::MAX).unwrap();
    assert!(!a.send(nobody, "lost".into()).await.unwrap());
    // A node may send to itself.
    let mut own = a.inbox().expect("a's inbox");
    assert!(a.send(a.node(), "self".into()).await.unwrap());
    let got = tokio::time::timeout(Duration::from_secs(5), own.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((got.from, got.body), (a.node(), Bytes::from("self")));
}

/// Sends `n` from `a` to `b`.
async fn b_gets(a: &dyn Bus, b: &Arc<dyn Bus>, n: usize) -> bool {
    a.send(b.node(), Bytes::from(n.to_string())).await.unwrap()
}

pub(crate) async fn a_stopped_node_is_no_longer_alive(make: &Make) {
    let Pair { a, b } = make(quick()).await;
    let tag = a.node();
    assert!(b.alive(tag).await.unwrap());
    let mut subscription = a.subscribe(&Topic::Registry).await.unwrap();
    let mut inbox = a.inbox().unwrap();
    drop(a);
    // Its subscriptions and inbox end.
    let ended = tokio::time::timeout(Duration::from_secs(5), subscription.recv()).await;
    assert_eq!(ended, Ok(None));
    let ended = tokio::time::timeout(Duration::from_secs(5), inbox.recv()).await;
    assert_eq!(ended, Ok(None));
    // Gone within the heartbeat expiry (at once when it could say goodbye).
    let deadline = Instant::now() + quick().heartbeat_expiry + Duration::from_secs(1);
    while b.alive(tag).await.unwrap() {
        assert!(Instant::now() < deadline, "{tag} still alive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!b.send(tag, "too late".into()).await.unwrap());
    assert!(b.alive(b.node()).await.unwrap());
}
