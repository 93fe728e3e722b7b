//! The bus between the nodes of one service: a lossy broadcast by [`Topic`], a reliable
//! directed message to one node, and the membership of nodes ([`NodeTag`]s and whether they
//! live).
//!
//! Several server processes ("nodes") behind one proxy serve one service. They tell each other
//! what changed (the tool list, a resource, a session, a task) through [`Bus::publish`]; each
//! subscriber gets a [`Delivery`]: a message, or a [`Delivery::Gap`] when messages may have
//! been lost, after which it re-reads the truth from the store. What must arrive (the answer to
//! a request another node sent the client; "the GET stream of session S moved away from you")
//! goes to one node through [`Bus::send`] and its [`Inbox`], at least once, duplicates dropped
//! by the receiver.
//!
//! Two implementations:
//! - [`LocalBus`]: in one process. [`LocalBus::new`] is one node (tag 0, the only node); a
//!   [`LocalHub`] joins several in-process nodes, so multi-node behaviour is testable without
//!   Redis;
//! - `RedisBus` (feature `redis`): nodes sharing one standalone Redis (or one behind
//!   Sentinel; not Redis Cluster), see its documentation for the keys and channels.
//!
//! Every queue is bounded: a subscriber holds at most
//! [`BusOptions::subscription_capacity`] deliveries (an overflow replaces them with one `Gap`),
//! a node's inbox at most [`BusOptions::inbox_capacity`] unread messages (then `send` fails).

mod fanout;
mod inbox;
mod local;
mod queue;
#[cfg(feature = "redis")]
mod redis;

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

pub use self::inbox::Inbox;
pub use self::local::{LocalBus, LocalHub};
pub use self::queue::Subscription;
#[cfg(feature = "redis")]
pub use self::redis::RedisBus;
use super::{NodeTag, StoreError};
use crate::peer::BoxFuture;

/// What a broadcast is about: subscribers pick topics, publications name one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Topic {
    /// The registry of the service: tools, resources or prompts changed, a resource was
    /// updated, a session ended.
    Registry,
    /// One session (its id): its state changed, an event was appended.
    Session(String),
    /// One task (its id): its status changed, input was answered, cancellation was requested.
    Task(String),
}

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A publication of another node.
    Message {
        /// The node that published it.
        origin: NodeTag,
        /// What it published.
        body: Bytes,
    },
    /// Messages may have been lost here (the subscriber fell behind, or the bus lost its
    /// connection and is listening again): re-read whatever the topic is about from the store.
    Gap,
}

/// A directed message, as its receiver gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directed {
    /// Unique per message (the same on every delivery of it): the inbox drops repeats.
    pub id: String,
    /// The node that sent it.
    pub from: NodeTag,
    /// What it carries.
    pub body: Bytes,
}

/// The limits and timings of a bus. Every field has a documented default; the Redis-only ones
/// are ignored by [`LocalBus`]. [`BusOptions::validate`] says which values can work.
#[derive(Debug, Clone)]
pub struct BusOptions {
    /// A label of this node in its membership record, for operators. Default
    /// `pid-<process id>`.
    pub name: String,
    /// Deliveries one subscription holds before an overflow replaces them with one
    /// [`Delivery::Gap`]. Default 256.
    pub subscription_capacity: usize,
    /// Unread directed messages a node's inbox holds; [`Bus::send`] to a full inbox fails as
    /// unavailable. Default 10,000.
    pub inbox_capacity: usize,
    /// (Redis) How often a node renews its membership. Default 1 s.
    pub heartbeat_interval: Duration,
    /// (Redis) How long a membership lasts without renewal: a node stopped or cut off for
    /// longer is no longer [`alive`](Bus::alive). Default 3 s.
    pub heartbeat_expiry: Duration,
    /// (Redis) How long an inbox outlives its last write or its owner's last renewal.
    /// Default 60 s.
    pub inbox_ttl: Duration,
    /// (Redis) How long one blocking read of the inbox waits for a message (`XREAD BLOCK`).
    /// Default 1 s.
    pub inbox_block: Duration,
    /// (Redis) How many directed message ids the inbox remembers to drop repeats. Default
    /// 4,096.
    pub dedup_window: usize,
    /// (Redis) How often the pub/sub connection is probed with `PING`; a probe unanswered
    /// within the response timeout reconnects it. Default 1 s.
    pub ping_interval: Duration,
    /// (Redis) Attempts of one [`Bus::send`] (a failed attempt is retried with the same message
    /// id, so a repeat is dropped by the receiver). Default 3.
    pub send_attempts: u32,
    /// (Redis) How long the tag counter lives after the last heartbeat of any node: it must
    /// outlive everything that carries a tag (sessions, streams, tasks), or tags of gone nodes
    /// could be issued again while ids carrying them live. Default 7 days.
    pub tag_counter_ttl: Duration,
}

impl BusOptions {
    /// Checks that these options can work, as `RedisBus::start` (feature `redis`)
    /// does before it touches Redis: every count at least 1; every duration at least 1 ms and
    /// at most [`LONGEST_TTL`](crate::store::LONGEST_TTL); `heartbeat_expiry` longer than
    /// `heartbeat_interval` (or every beat would find the membership lapsed); `inbox_ttl` at
    /// least `heartbeat_expiry` (or an inbox could expire between the beats that renew it).
    ///
    /// Fails as [`StoreError::Unavailable`] naming the field (as an invalid Redis URL does).
    pub fn validate(&self) -> Result<(), StoreError> {
        let invalid = |why: String| {
            Err(StoreError::Unavailable(format!(
                "invalid bus options: {why}"
            )))
        };
        let counts = [
            ("subscription_capacity", self.subscription_capacity),
            ("inbox_capacity", self.inbox_capacity),
            ("dedup_window", self.dedup_window),
        ];
        if let Some((field, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return invalid(format!("{field} is 0"));
        }
        if self.send_attempts == 0 {
            return invalid("send_attempts is 0".into());
        }
        let durations = [
            ("heartbeat_interval", self.heartbeat_interval),
            ("heartbeat_expiry", self.heartbeat_expiry),
            ("inbox_ttl", self.inbox_ttl),
            ("inbox_block", self.inbox_block),
            ("ping_interval", self.ping_interval),
            ("tag_counter_ttl", self.tag_counter_ttl),
        ];
        let shortest = Duration::from_millis(1);
        if let Some((field, value)) = durations
            .iter()
            .find(|(_, d)| *d < shortest || *d > super::LONGEST_TTL)
        {
            return invalid(format!(
                "{field} is {value:?}, not between 1 ms and {:?}",
                super::LONGEST_TTL
            ));
        }
        if self.heartbeat_expiry <= self.heartbeat_interval {
            return invalid(format!(
                "heartbeat_expiry ({:?}) must be longer than heartbeat_interval ({:?})",
                self.heartbeat_expiry, self.heartbeat_interval
            ));
        }
        if self.inbox_ttl < self.heartbeat_expiry {
            return invalid(format!(
                "inbox_ttl ({:?}) must be at least heartbeat_expiry ({:?})",
                self.inbox_ttl, self.heartbeat_expiry
            ));
        }
        Ok(())
    }
}

impl Default for BusOptions {
    fn default() -> Self {
        Self {
            name: format!("pid-{}", std::process::id()),
            subscription_capacity: 256,
            inbox_capacity: 10_000,
            heartbeat_interval: Duration::from_secs(1),
            heartbeat_expiry: Duration::from_secs(3),
            inbox_ttl: Duration::from_secs(60),
            inbox_block: Duration::from_secs(1),
            dedup_window: 4_096,
            ping_interval: Duration::from_secs(1),
            send_attempts: 3,
            tag_counter_ttl: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// The bus of one node. Object-safe: a server holds an `Arc<dyn Bus>`.
pub trait Bus: Send + Sync + 'static {
    /// This node's tag now.
    fn node(&self) -> NodeTag;

    /// This node's tag, watched. A notification means the node's membership was interrupted;
    /// compare the tag with the one held before:
    /// - a new tag: the bus lost its membership to another instance (Redis restarted without
    ///   its data, and the tag went to another node): ids carrying the old tag no longer reach
    ///   this node, so what was built on them (session replicas, streams, outstanding requests)
    ///   must be dropped;
    /// - the same tag: the membership lapsed (the node did not renew it in time: a pause, a
    ///   slow connection, a failover) and was renewed. Ids carrying the tag reach this node
    ///   again, but meanwhile other nodes took it for gone (`alive` was false): they may have
    ///   dropped answers forwarded to it or taken over what it owned (streams, tasks), so
    ///   re-check in the store what it still owns.
    ///
    /// Either way every subscriber of the node also gets a [`Delivery::Gap`]. [`LocalBus`]
    /// never notifies.
    fn node_changes(&self) -> watch::Receiver<NodeTag>;

    /// Broadcasts `body` on `topic` to every *other* node's subscribers, at most once (a node
    /// never receives its own publications: it delivers locally itself).
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        body: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Listens to `topic` from now on, until the subscription is dropped. Fails as unavailable
    /// when the bus cannot listen now (its connection is down): nothing would arrive.
    fn subscribe<'a>(&'a self, topic: &'a Topic)
    -> BoxFuture<'a, Result<Subscription, StoreError>>;

    /// Sends `body` to node `to`'s inbox, reliably: at least once while `to` lives, kept until
    /// read or expired; the receiver drops repeats. `Ok(false)`: `to` is not alive, nothing was
    /// sent. Messages of one sender, each sent after the previous one returned, arrive in order.
    fn send(&self, to: NodeTag, body: Bytes) -> BoxFuture<'_, Result<bool, StoreError>>;

    /// This node's directed messages: `Some` the first time, `None` after.
    fn inbox(&self) -> Option<Inbox>;

    /// Whether node `node` lives (its membership has not expired).
    fn alive(&self, node: NodeTag) -> BoxFuture<'_, Result<bool, StoreError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_unworkable_values_are_named() {
        assert_eq!(BusOptions::default().validate(), Ok(()));
        let refused = |options: BusOptions| match options.validate() {
            Err(StoreError::Unavailable(why)) => why,
            other => panic!("{other:?}"),
        };
        let why = refused(BusOptions {
            ping_interval: Duration::ZERO,
            ..BusOptions::default()
        });
        assert!(why.contains("ping_interval"), "{why}");
        let why = refused(BusOptions {
            heartbeat_interval: Duration::from_micros(10),
            ..BusOptions::default()
        });
        assert!(why.contains("heartbeat_interval"), "{why}");
        let why = refused(BusOptions {
            tag_counter_ttl: Duration::MAX,
            ..BusOptions::default()
        });
        assert!(why.contains("tag_counter_ttl"), "{why}");
        let why = refused(BusOptions {
            heartbeat_interval: Duration::from_secs(3),
            ..BusOptions::default()
        });
        assert!(why.contains("heartbeat_expiry"), "{why}");
        let why = refused(BusOptions {
            inbox_ttl: Duration::from_secs(1),
            ..BusOptions::default()
        });
        assert!(why.contains("inbox_ttl"), "{why}");
        let why = refused(BusOptions {
            send_attempts: 0,
            ..BusOptions::default()
        });
        assert!(why.contains("send_attempts"), "{why}");
        // The bounds themselves are fine.
        let edges = BusOptions {
            heartbeat_interval: Duration::from_millis(1),
            heartbeat_expiry: Duration::from_millis(2),
            inbox_ttl: Duration::from_millis(2),
            inbox_block: Duration::from_millis(1),
            ping_interval: Duration::from_millis(1),
            tag_counter_ttl: crate::store::LONGEST_TTL,
            ..BusOptions::default()
        };
        assert_eq!(edges.validate(), Ok(()));
    }
}
