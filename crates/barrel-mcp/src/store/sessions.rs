//! Where sessions live: the [`SessionStore`] trait, the [`SessionRecord`] it keeps, and its
//! two implementations, [`MemorySessionStore`] (one process, the default) and, with feature
//! `redis`, `RedisSessionStore` (every node of a service).
//!
//! A record holds the durable facts of one HTTP session (protocol revisions 2024-11-05 to
//! 2025-11-25, `Mcp-Session-Id`): what a node needs to serve a session another node started.
//! The contract every store keeps:
//! - `create` makes the session durable before it returns, and checks the caps of
//!   [`SessionLimits`] atomically with the write (across every node sharing the store);
//! - a session lives `idle_ttl` past its creation or its last `touch`; an expired session is
//!   absent everywhere (`load` gives `None`, `update`/`touch`/`delete` find nothing) and no
//!   longer counts against any cap;
//! - `delete` frees the session's share of the caps at once;
//! - an outage is [`StoreError::Unavailable`], never "no such session".

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use barrel_mcp_types::{ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion};

use super::{NodeTag, StoreError};
use crate::peer::BoxFuture;

mod memory;
#[cfg(feature = "redis")]
mod redis_store;

pub use self::memory::MemorySessionStore;
#[cfg(feature = "redis")]
pub use self::redis_store::RedisSessionStore;

/// The durable facts of one session: what a node needs to serve it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The session id (`Mcp-Session-Id`, or the legacy transport's `sessionId`).
    pub id: String,
    /// Who authenticated, if anyone.
    pub principal: Option<String>,
    /// The share of sessions it counts against (`p:alice`, `a:192.0.2.7`, ...), capped at
    /// [`SessionLimits::max_per_quota`]; `None`: no per-quota cap, only the total one.
    pub quota: Option<String>,
    /// A 2024-11-05 HTTP+SSE session.
    pub legacy: bool,
    /// The negotiated protocol revision.
    pub version: ProtocolVersion,
    /// What the client declared in `initialize`.
    pub client_capabilities: ClientCapabilities,
    /// Who the client said it is in `initialize`.
    pub client_info: Implementation,
    /// `notifications/initialized` was received.
    pub initialized: bool,
    /// The level `logging/setLevel` asked for, if any.
    pub log_level: Option<LoggingLevel>,
    /// The URIs of `resources/subscribe`.
    pub subscriptions: BTreeSet<String>,
    /// The node that owns the session's GET stream, if any.
    pub get_owner: Option<NodeTag>,
    /// When the session was created (kept to the nanosecond).
    pub created: SystemTime,
}

impl SessionRecord {
    /// A fresh session `id` that negotiated `version` with a client that declared
    /// `client_capabilities` and `client_info`: no principal, no quota, not legacy, not yet
    /// initialized, no log level, no subscriptions, no GET owner, created now.
    pub fn new(
        id: impl Into<String>,
        version: ProtocolVersion,
        client_capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        Self {
            id: id.into(),
            principal: None,
            quota: None,
            legacy: false,
            version,
            client_capabilities,
            client_info,
            initialized: false,
            log_level: None,
            subscriptions: BTreeSet::new(),
            get_owner: None,
            created: SystemTime::now(),
        }
    }
}

/// One change to a stored session, applied atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChange {
    /// `notifications/initialized` was received.
    Initialized,
    /// `logging/setLevel`.
    LogLevel(LoggingLevel),
    /// `resources/subscribe` of a URI (refused past the session's subscription cap).
    Subscribe(String),
    /// `resources/unsubscribe` of a URI (not subscribed: nothing to do, still applied).
    Unsubscribe(String),
    /// A node takes over the session's GET stream, as a compare-and-set: applied only when
    /// the stored owner is `expected` (`None`: no owner yet), else [`Updated::Conflict`] and
    /// nothing is written. Of several nodes taking over from the same owner at once, exactly
    /// one wins.
    GetOwner {
        /// The owner the caller saw (the record it loaded).
        expected: Option<NodeTag>,
        /// The new owner (usually the caller's own tag).
        new: NodeTag,
    },
}

/// The bounds of a session store. Every field has a documented default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// How long a session lives past its creation or its last `touch` (at least 1 ms, at
    /// most [`LONGEST_TTL`]; the same bounds hold for the TTL given to `touch`). Default 30
    /// minutes.
    pub idle_ttl: Duration,
    /// Live sessions in the store at once (every node together). Default 10,000.
    pub max_sessions: usize,
    /// Live sessions of one quota ([`SessionRecord::quota`]) at once. Default 100.
    pub max_per_quota: usize,
    /// Subscriptions one session may hold. It is kept with the session when it is created, so
    /// the cap a session was admitted under holds for its whole life, on every node.
    /// Default 1,000.
    pub max_subscriptions: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            idle_ttl: Duration::from_secs(30 * 60),
            max_sessions: 10_000,
            max_per_quota: 100,
            max_subscriptions: 1_000,
        }
    }
}

/// The longest life a store grants a session at once: longer TTLs are cut to it (100 years).
pub const LONGEST_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `ttl` within the bounds every store grants: at least 1 ms, at most [`LONGEST_TTL`].
fn bounded(ttl: Duration) -> Duration {
    ttl.clamp(Duration::from_millis(1), LONGEST_TTL)
}

/// What [`SessionStore::create`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The session is stored; every node finds it.
    Created,
    /// A live session has this id already; nothing was written.
    Exists,
    /// The session's quota holds [`SessionLimits::max_per_quota`] live sessions; nothing was
    /// written.
    QuotaFull,
    /// The store holds [`SessionLimits::max_sessions`] live sessions; nothing was written.
    Full,
}

/// What [`SessionStore::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updated {
    /// The change is stored.
    Applied,
    /// No such session (unknown, expired or deleted); nothing was written.
    Unknown,
    /// A [`SessionChange::Subscribe`] of a new URI while the session holds
    /// [`SessionLimits::max_subscriptions`] others; nothing was written.
    SubscriptionsFull,
    /// A [`SessionChange::GetOwner`] whose `expected` is not the stored owner (another node
    /// took the GET stream meanwhile); nothing was written. Load the record again to see who
    /// owns it.
    Conflict,
}

/// Where sessions live.
///
/// Object-safe: a server holds an `Arc<dyn SessionStore>`. Every method fails with
/// [`StoreError::Unavailable`] when the store cannot answer, and with [`StoreError::Corrupt`]
/// when it holds something this version cannot read; neither ever looks like "no such
/// session".
pub trait SessionStore: Send + Sync + 'static {
    /// Stores a new session, durably before it returns, unless a live session has its id or a
    /// cap forbids it (checked atomically with the write). It lives `limits.idle_ttl`, and its
    /// subscriptions are capped at `limits.max_subscriptions` for life. The quota cap is
    /// checked before the total one.
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        limits: &'a SessionLimits,
    ) -> BoxFuture<'a, Result<Created, StoreError>>;

    /// The session `id`; `None` when it is unknown, expired or deleted.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>>;

    /// Applies `change` to the session `id`, atomically. Its life is not extended (that is
    /// [`touch`](Self::touch)).
    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
    ) -> BoxFuture<'a, Result<Updated, StoreError>>;

    /// Gives the session `id` another `idle_ttl` from now (its record, its subscriptions and
    /// its places under the caps); false when there is no such session.
    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Forgets the session `id` and frees its share of the caps at once; false when there was
    /// no such session.
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes the session `id` as [`delete`](Self::delete) does, but only while its
    /// `notifications/initialized` has not been received, checked atomically with the
    /// deletion (a node giving up on a session it created never deletes one that another
    /// node has just seen initialized); false when it was not deleted.
    fn delete_uninitialized<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// A shared store is a store: keep an `Arc` to look into the one a server uses.
impl<T: SessionStore + ?Sized> SessionStore for Arc<T> {
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        limits: &'a SessionLimits,
    ) -> BoxFuture<'a, Result<Created, StoreError>> {
        (**self).create(record, limits)
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        (**self).load(id)
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
    ) -> BoxFuture<'a, Result<Updated, StoreError>> {
        (**self).update(id, change)
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).touch(id, idle_ttl)
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).delete(id)
    }

    fn delete_uninitialized<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).delete_uninitialized(id)
    }
}
