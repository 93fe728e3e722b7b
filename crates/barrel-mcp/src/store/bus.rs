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
//! - `RedisBus` (feature `redis`): nodes sharing one Redis, see its documentation for the keys
//!   and channels.
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
/// are ignored by [`LocalBus`].
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

    /// This node's tag, watched. It changes only when the bus lost its membership to another
    /// instance (Redis restarted without its data, and the tag went to another node): ids
    /// carrying the old tag no longer reach this node, so what was built on them (session
    /// replicas, streams, outstanding requests) must be dropped.
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
