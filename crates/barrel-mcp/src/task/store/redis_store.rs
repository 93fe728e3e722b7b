//! [`RedisTaskStore`]: tasks in Redis, shared by every server process that points at it
//! (feature `redis`).
//!
//! It keeps the [`TaskStore`] contract exactly as [`MemoryTaskStore`](super::MemoryTaskStore)
//! does, across processes:
//! - `create` returns once Redis has the task (any node's `get` finds it), after checking the
//!   caps in the same atomic script that writes it;
//! - `update` is an optimistic compare-and-set: read the record and its version, apply the
//!   change locally, write only if the version is unchanged, else read again and reapply (a
//!   bounded number of times, then `Unavailable`); terminal states stay terminal because the
//!   change is always applied to the latest record;
//! - a task's keys expire with its TTL in Redis itself, so nothing outlives it even if no node
//!   purges; `purge` drops the index entries of expired tasks;
//! - the runner's lease is a field beside the record (`lease.rs`): `renew` is one script call;
//!   a read that finds a lease run out fails the task with the same compare-and-set, which
//!   also checks the lease is still out, so one reader of many makes the change and a renewal
//!   that got there first wins;
//! - any Redis failure is [`StoreRefusal::Unavailable`], never `NotFound` (a store outage must
//!   not look like an unknown task), and its message names no credential.
//!
//! The key layout is in `keys.rs`, the scripts in `scripts.rs`, the stored form in
//! `stored.rs`, `list` and `purge` in `scan.rs`. Timestamps, expiries and leases come from the
//! nodes' clocks: keep them in sync (NTP); a node whose clock runs ahead by more than a
//! fraction of the lease sees other nodes' leases run out early.

mod keys;
mod lease;
mod scan;
mod scripts;
mod stored;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::RedisError;
use redis::aio::ConnectionManager;

use self::keys::Keys;
use self::scripts::Scripts;
use super::{StoreRefusal, TaskChange, TaskLimits, TaskStore, keep_lease, same_identity};
use crate::peer::BoxFuture;
use crate::store::StoreError;
use crate::store::redis::RedisOptions;
use crate::task::record::{Era, Refused, TaskRecord};

/// How often `update` reads again after a concurrent change won the race.
const MAX_UPDATE_ATTEMPTS: u32 = 64;
/// Expired tasks `purge` forgets per script run (each run blocks Redis while it lasts).
const PURGE_BATCH: usize = 256;

/// Tasks in Redis 7 or later, shared by every server process that uses the same Redis and key
/// prefix.
///
/// ```no_run
/// # async fn demo() -> Result<(), barrel_mcp::task::StoreRefusal> {
/// use barrel_mcp::task::{RedisTaskStore, TaskLimits};
///
/// let store = RedisTaskStore::connect("redis://127.0.0.1:6379/", TaskLimits::default())
///     .await?
///     .with_prefix("my-service");
/// let server = barrel_mcp::server::Server::builder().task_store(store);
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
///
/// The caps of [`TaskLimits`] hold across all processes (`max_tasks` counts every task under
/// the prefix). Its `Debug` shows the address and prefix, never a password.
pub struct RedisTaskStore {
    redis: ConnectionManager,
    keys: Keys,
    limits: TaskLimits,
    scripts: Arc<Scripts>,
    /// `host:port` (or the socket path), for `Debug`; none for a given connection manager.
    address: Option<String>,
    /// The URL's password, blanked out of error messages should a driver error quote it.
    secret: Option<String>,
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field(
                "address",
                &self.address.as_deref().unwrap_or("(given connection)"),
            )
            .field("prefix", &self.keys.prefix())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl RedisTaskStore {
    /// The key prefix unless [`with_prefix`](Self::with_prefix) sets another.
    pub const DEFAULT_PREFIX: &'static str = "mcp";

    /// Connects to the Redis at `url` (`redis://[user:password@]host:port/db`; `rediss://`
    /// needs a TLS feature of `redis`), checks that it is Redis 7 or later, and keeps one
    /// multiplexed, reconnecting connection, with a 500 ms response timeout and a 1 s connection
    /// timeout. The key prefix is [`DEFAULT_PREFIX`](Self::DEFAULT_PREFIX).
    ///
    /// Fails with [`StoreRefusal::Unavailable`] when the URL is invalid, Redis cannot be
    /// reached or is too old; the message never holds the password.
    pub async fn connect(url: &str, limits: TaskLimits) -> Result<Self, StoreRefusal> {
        let redis = crate::store::redis::Redis::connect(url, RedisOptions::default())
            .await
            .map_err(|error| match error {
                StoreError::Unavailable(why) | StoreError::Corrupt(why) => {
                    StoreRefusal::Unavailable(why)
                }
            })?;
        Ok(Self::on(&redis, limits).with_prefix(Self::DEFAULT_PREFIX))
    }

    /// A store on the connection `redis` (shared with the other stores of the node), under its
    /// key prefix ([`RedisOptions::prefix`]).
    pub fn on(redis: &crate::store::redis::Redis, limits: TaskLimits) -> Self {
        let info = redis.client().get_connection_info();
        let mut store = Self::with_manager(redis.commands(), limits).with_prefix(redis.prefix());
        store.address = Some(info.addr().to_string());
        store.secret = info.redis_settings().password().map(str::to_owned);
        store
    }

    /// A store on a connection manager configured elsewhere (its timeouts are then yours to
    /// set; without a response timeout, a stalled Redis stalls requests). Redis must be 7 or
    /// later. The key prefix is [`DEFAULT_PREFIX`](Self::DEFAULT_PREFIX).
    pub fn with_manager(manager: ConnectionManager, limits: TaskLimits) -> Self {
        Self {
            redis: manager,
            keys: Keys::new(Self::DEFAULT_PREFIX),
            limits,
            scripts: Arc::new(Scripts::new()),
            address: None,
            secret: None,
        }
    }

    /// Puts every key under `prefix` instead (`prefix:t:{id}`, ...): services sharing one
    /// Redis, or tests, keep apart by prefix.
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.keys = Keys::new(&prefix.into());
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        self.keys.prefix()
    }

    /// The store's limits.
    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    fn fail(&self, error: &RedisError) -> StoreRefusal {
        unavailable(error, self.secret.as_deref())
    }

    async fn create_now(&self, record: TaskRecord) -> Result<(), StoreRefusal> {
        let json = stored::encode(&record)
            .map_err(|e| StoreRefusal::Unavailable(format!("a task did not encode: {e}")))?;
        let now = millis(SystemTime::now());
        // The record key expires after the TTL left (at least 1 ms); the index entries carry the
        // absolute expiry.
        let (ttl_ms, expiry) = match expiry_ms(&record) {
            Some(at) => (at.saturating_sub(now).max(1), at.to_string()),
            None => (0, "+inf".to_owned()),
        };
        let (cap, whose) = if record.anonymous {
            (self.limits.max_anonymous, "of anonymous callers")
        } else {
            (self.limits.max_per_owner, "per requestor")
        };
        let task = self.keys.task(&record.id);
        let quota = self.keys.quota(&record);
        let owned = self.keys.owned(&record.owner, record.era);
        let member = keys::list_member(&record);
        let entry = serde_json::json!([task, quota, owned, member, record.id]).to_string();
        let created: i64 = self
            .scripts
            .create
            .key(&task)
            .key(&quota)
            .key(self.keys.all())
            .key(&owned)
            .arg(json)
            .arg(ttl_ms)
            .arg(expiry)
            .arg(now)
            .arg(cap)
            .arg(self.limits.max_tasks)
            .arg(&record.id)
            .arg(entry)
            .arg(member)
            .arg(
                record
                    .lease_until
                    .map_or(String::new(), |at| millis(at).to_string()),
            )
            .invoke_async(&mut self.redis.clone())
            .await
            .map_err(|e| self.fail(&e))?;
        match created {
            1 => Ok(()),
            -1 => Err(StoreRefusal::Full(format!(
                "too many tasks (at most {cap} {whose})"
            ))),
            -2 => Err(StoreRefusal::Full("too many tasks on this server".into())),
            -3 => Err(StoreRefusal::Unavailable("duplicate task id".into())),
            other => Err(StoreRefusal::Unavailable(format!(
                "unexpected answer {other} from the create script"
            ))),
        }
    }

    async fn update_now(
        &self,
        id: &str,
        owner: &str,
        era: Era,
        change: TaskChange<'_>,
    ) -> Result<TaskRecord, StoreRefusal> {
        let task = self.keys.task(id);
        for attempt in 0..MAX_UPDATE_ATTEMPTS {
            let (record, version) = self.read(id, owner, era).await?;
            // Apply to a copy: a refused change writes nothing.
            let mut next = record.clone();
            change(&mut next).map_err(StoreRefusal::Refused)?;
            if !same_identity(&record, &next) {
                return Err(StoreRefusal::Refused(Refused::Invalid));
            }
            keep_lease(&record, &mut next);
            if next == record {
                // Nothing to write (a `tasks/update` naming no question the task asks).
                return Ok(next);
            }
            let json = stored::encode(&next)
                .map_err(|e| StoreRefusal::Unavailable(format!("a task did not encode: {e}")))?;
            let ends = if next.status.is_terminal() { "end" } else { "" };
            let written: i64 = self
                .scripts
                .write
                .key(&task)
                .arg(version)
                .arg(json)
                .arg(ends)
                .arg("")
                .invoke_async(&mut self.redis.clone())
                .await
                .map_err(|e| self.fail(&e))?;
            match written {
                1 => return Ok(next),
                -1 => return Err(StoreRefusal::NotFound),
                _ => backoff(attempt).await,
            }
        }
        Err(StoreRefusal::Unavailable(
            "the task kept changing under concurrent updates".into(),
        ))
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreRefusal>> {
        Box::pin(self.create_now(record))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>> {
        Box::pin(async move { self.read(id, owner, era).await.map(|(record, _)| record) })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>> {
        Box::pin(self.update_now(id, owner, era, change))
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        era: Era,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<TaskRecord>, StoreRefusal>> {
        Box::pin(self.list_now(owner, era, after, limit))
    }

    fn purge(&self, now: SystemTime) -> BoxFuture<'_, usize> {
        Box::pin(async move {
            match self.purge_now(now).await {
                Ok(purged) => purged,
                Err(refusal) => {
                    tracing::warn!(?refusal, "purging expired tasks from Redis failed");
                    0
                }
            }
        })
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        until: SystemTime,
    ) -> BoxFuture<'a, Result<(), StoreRefusal>> {
        Box::pin(self.renew_now(id, until))
    }
}

/// True when `record` is task `id` of `owner` in `era` and not expired at `now` (owners are
/// compared in full: keys carry only a digest of them).
///
/// Redis counts time in milliseconds: a task expires at the start of the millisecond its TTL
/// ends in ([`expiry_ms`]), so lookups, caps and `purge` agree on what has expired (never later
/// than the TTL, at most 1 ms earlier).
fn visible(record: &TaskRecord, id: &str, owner: &str, era: Era, now: SystemTime) -> bool {
    record.id == id
        && record.owner == owner
        && record.era == era
        && !record.expired(now)
        && expiry_ms(record).is_none_or(|at| millis(now) < at)
}

/// When `record` expires, in milliseconds since the epoch (rounded down); `None`: never.
fn expiry_ms(record: &TaskRecord) -> Option<u64> {
    record.ttl.map(|ttl| millis(record.created_at + ttl))
}

fn decode(json: &str) -> Result<TaskRecord, StoreRefusal> {
    stored::decode(json)
        .ok_or_else(|| StoreRefusal::Unavailable("a stored task did not decode".into()))
}

/// A Redis error as a refusal, without `secret` (the URL's password) should the driver's text
/// ever quote it.
fn unavailable(error: &RedisError, secret: Option<&str>) -> StoreRefusal {
    match crate::store::redis::unavailable(error, secret) {
        StoreError::Unavailable(why) | StoreError::Corrupt(why) => StoreRefusal::Unavailable(why),
    }
}

/// Waits a little before reading a task again after losing a race: nothing the first time, then
/// a random pause up to 0.1 ms times 2^attempt (at most 6.4 ms), so racers spread out.
async fn backoff(attempt: u32) {
    if attempt == 0 {
        tokio::task::yield_now().await;
        return;
    }
    let ceiling = 100u64 << attempt.min(6);
    let jitter = u64::from(getrandom::u32().unwrap_or(0)) % ceiling;
    tokio::time::sleep(Duration::from_micros(jitter)).await;
}

/// `at` in whole milliseconds since the epoch.
fn millis(at: SystemTime) -> u64 {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
