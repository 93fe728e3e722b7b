//! [`RedisBus`]: the bus of nodes sharing one Redis (feature `redis`).
//!
//! Each node has three background tasks, all ended when the bus stops or is dropped:
//! - the heartbeat (`node.rs`), on the shared command connection: the node's membership
//!   `P:node:{tag}` is renewed every second and expires 3 s after the last renewal;
//! - the listener (`pubsub.rs`), on a pub/sub connection of its own: the channels of the topics
//!   that have local subscribers;
//! - the inbox reader (`inbox.rs`), on a connection of its own looping on `XREAD BLOCK`.
//!
//! Publications and sends go through the shared command connection
//! ([`Redis::commands`]). The keys and channels are listed in `keys.rs`; every key expires.
//!
//! For a standalone Redis (a primary, possibly failed over by Sentinel), not Redis Cluster:
//! the heartbeat's script touches the tag counter and a node's keys (different slots), and the
//! claim and send scripts build key names from their arguments or from the membership record
//! rather than declaring them.

mod header;
mod inbox;
mod keys;
mod node;
mod pubsub;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::keys::Keys;
use self::pubsub::{Catch, Listener};
use super::fanout::Fanout;
use super::inbox::Inbox;
use super::queue::Subscription;
use super::{Bus, BusOptions, Bytes, Topic};
use crate::peer::BoxFuture;
use crate::store::redis::Redis;
use crate::store::{NodeTag, StoreError};

/// What the bus and its tasks share.
struct Shared {
    redis: Redis,
    keys: Keys,
    options: BusOptions,
    /// The value of this instance's membership key: its random id, name and start time.
    record: String,
    /// This instance's random id, in hex (in its membership record and inbox name).
    instance: String,
    /// The same id as it heads the broadcasts of this instance.
    instance_id: [u8; 8],
    /// The node's tag now.
    tag: watch::Sender<NodeTag>,
    fanout: Arc<Fanout>,
    stop: CancellationToken,
}

impl Shared {
    /// How long a task may take to (re)connect and have two commands answered: the connection
    /// timeout plus twice the response timeout (saturating: any durations are safe).
    fn round_trip_bound(&self) -> Duration {
        let options = self.redis.options();
        options
            .connection_timeout
            .saturating_add(options.response_timeout.saturating_mul(2))
    }
}

/// The bus of one node among nodes sharing a Redis: a unique [`NodeTag`] while it lives,
/// broadcasts over Redis pub/sub, directed messages through an inbox stream per node.
///
/// It needs a standalone Redis 7 or later (a primary, possibly failed over by Sentinel), not
/// Redis Cluster: its scripts touch keys of several slots and build some key names.
///
/// ```no_run
/// # async fn demo() -> Result<(), barrel_mcp::store::StoreError> {
/// use barrel_mcp::store::redis::{Redis, RedisOptions};
/// use barrel_mcp::store::{Bus, BusOptions, RedisBus, Topic};
///
/// let redis = Redis::connect("redis://127.0.0.1:6379/", RedisOptions::default()).await?;
/// let bus = RedisBus::start(redis, BusOptions::default()).await?;
/// let mut changes = bus.subscribe(&Topic::Registry).await?;
/// bus.publish(&Topic::Registry, "tools changed".into()).await?;
/// # let _ = changes.try_recv();
/// bus.stop().await;
/// # Ok(())
/// # }
/// ```
///
/// Its `Debug` shows the prefix, tag and name, never a password.
pub struct RedisBus {
    shared: Arc<Shared>,
    listener: mpsc::UnboundedSender<Catch>,
    inbox: Mutex<Option<Inbox>>,
    tasks: TaskTracker,
    next_message: AtomicU64,
}

impl fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBus")
            .field("prefix", &self.shared.keys.prefix())
            .field("node", &*self.shared.tag.borrow())
            .field("name", &self.shared.options.name)
            .finish_non_exhaustive()
    }
}

impl RedisBus {
    /// Joins the nodes on `redis` (under its prefix): claims a tag, opens the pub/sub and inbox
    /// connections, and starts the background tasks.
    ///
    /// Fails as [`StoreError::Unavailable`] when `options` cannot work (see
    /// [`BusOptions::validate`]; checked before anything is written) or Redis cannot be
    /// reached (nothing is left running).
    pub async fn start(redis: Redis, options: BusOptions) -> Result<Self, StoreError> {
        options.validate()?;
        let mut random = [0u8; 8];
        getrandom::fill(&mut random)
            .map_err(|_| StoreError::Unavailable("the random source failed".into()))?;
        let instance: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let record =
            serde_json::json!({"i": instance, "n": options.name, "t": started}).to_string();
        let (listener, requests) = mpsc::unbounded_channel();
        let emptied = listener.clone();
        let fanout = Fanout::new(
            options.subscription_capacity,
            Some(Box::new(move || {
                let _ = emptied.send(Catch {
                    topic: None,
                    reply: None,
                });
            })),
        );
        let mut shared = Shared {
            keys: Keys::new(redis.prefix()),
            redis,
            options,
            record,
            instance,
            instance_id: random,
            tag: watch::Sender::new(NodeTag::LOCAL),
            fanout,
            stop: CancellationToken::new(),
        };
        let tag = node::claim(&shared).await?;
        shared.tag = watch::Sender::new(tag);
        let connections = async {
            let pubsub = pubsub::connect(&shared).await?;
            let reader = inbox::connect(&shared).await?;
            Ok::<_, StoreError>((pubsub, reader))
        };
        let (pubsub, reader) = match connections.await {
            Ok(made) => made,
            Err(error) => {
                let _ = node::leave(&shared, tag).await;
                return Err(error);
            }
        };
        let shared = Arc::new(shared);
        let (deliver, delivered) = mpsc::channel(inbox::DELIVERY_BUFFER);
        let tasks = TaskTracker::new();
        tasks.spawn(node::run(shared.clone()));
        tasks.spawn(Listener::new(shared.clone(), requests).run(pubsub));
        tasks.spawn(inbox::run(shared.clone(), reader, deliver));
        tasks.close();
        tracing::debug!(node = %tag, prefix = shared.keys.prefix(), "joined the bus");
        Ok(Self {
            shared,
            listener,
            inbox: Mutex::new(Some(Inbox::new(delivered))),
            tasks,
            next_message: AtomicU64::new(0),
        })
    }

    /// Leaves the bus: ends the background tasks and their connections, gives up the
    /// membership (the node is at once no longer alive) and its inbox, and ends every
    /// subscription and the inbox. Waits at most the connection plus twice the response
    /// timeout. Every later call fails as unavailable. Dropping the bus does the same without
    /// waiting.
    pub async fn stop(&self) {
        self.shared.stop.cancel();
        let bound = self.shared.round_trip_bound();
        if tokio::time::timeout(bound, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::debug!("the bus's tasks did not end within {bound:?}");
        }
    }

    /// How many of its background tasks still run (none once stopped).
    pub fn running_tasks(&self) -> usize {
        self.tasks.len()
    }

    fn running(&self) -> Result<(), StoreError> {
        if self.shared.stop.is_cancelled() {
            Err(StoreError::Unavailable("the bus is stopped".into()))
        } else {
            Ok(())
        }
    }

    async fn publish_now(&self, topic: &Topic, body: Bytes) -> Result<(), StoreError> {
        self.running()?;
        let payload = header::encode(self.node(), &self.shared.instance_id, &body);
        let _: i64 = redis::cmd("PUBLISH")
            .arg(self.shared.keys.channel(topic))
            .arg(payload)
            .query_async(&mut self.shared.redis.commands())
            .await
            .map_err(|e| self.shared.redis.fail(&e))?;
        Ok(())
    }

    async fn subscribe_now(&self, topic: &Topic) -> Result<Subscription, StoreError> {
        self.running()?;
        let subscription = self
            .shared
            .fanout
            .register(topic)
            .ok_or_else(|| StoreError::Unavailable("the bus is stopped".into()))?;
        let (reply, confirmed) = oneshot::channel();
        self.listener
            .send(Catch {
                topic: Some(topic.clone()),
                reply: Some(reply),
            })
            .map_err(|_| StoreError::Unavailable("the bus is stopped".into()))?;
        let bound = self.shared.round_trip_bound();
        match tokio::time::timeout(bound, confirmed).await {
            Ok(Ok(Ok(()))) => Ok(subscription),
            Ok(Ok(Err(error))) => Err(error),
            Ok(Err(_)) => Err(StoreError::Unavailable("the bus is stopped".into())),
            Err(_) => Err(StoreError::Unavailable(format!(
                "the subscription was not confirmed within {bound:?}"
            ))),
        }
    }

    async fn send_now(&self, to: NodeTag, body: Bytes) -> Result<bool, StoreError> {
        self.running()?;
        let n = self.next_message.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}.{n}", self.shared.instance);
        inbox::send(&self.shared, to, &id, &body).await
    }

    async fn alive_now(&self, node: NodeTag) -> Result<bool, StoreError> {
        self.running()?;
        let exists: i64 = redis::cmd("EXISTS")
            .arg(self.shared.keys.node(node))
            .query_async(&mut self.shared.redis.commands())
            .await
            .map_err(|e| self.shared.redis.fail(&e))?;
        Ok(exists == 1)
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

impl Bus for RedisBus {
    fn node(&self) -> NodeTag {
        *self.shared.tag.borrow()
    }

    fn node_changes(&self) -> watch::Receiver<NodeTag> {
        self.shared.tag.subscribe()
    }

    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        body: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.publish_now(topic, body))
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a Topic,
    ) -> BoxFuture<'a, Result<Subscription, StoreError>> {
        Box::pin(self.subscribe_now(topic))
    }

    fn send(&self, to: NodeTag, body: Bytes) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(self.send_now(to, body))
    }

    fn inbox(&self) -> Option<Inbox> {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn alive(&self, node: NodeTag) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(self.alive_now(node))
    }
}
