//! [`RedisSessionStore`]: sessions in Redis, shared by every node of a service (feature
//! `redis`).
//!
//! It keeps the [`SessionStore`] contract exactly as
//! [`MemorySessionStore`](super::MemorySessionStore) does, across nodes:
//! - `create` is one script that checks the caps and writes, so the caps hold however many
//!   nodes create at once, and it returns once Redis has the session;
//! - `load` is one round trip (`HGETALL` and `SMEMBERS` in one `MULTI`); `update`, `touch` and
//!   `delete` one script each;
//! - every key expires in Redis itself, `idle_ttl` after the last `create` or `touch`; a cap
//!   entry is scored with the same expiry, so an expired session stops counting at once;
//! - any Redis failure is [`StoreError::Unavailable`] (never `None` or `false`), with no
//!   credential in its message; a key of the wrong type or a hash this code did not write is
//!   [`StoreError::Corrupt`].
//!
//! The key layout is in `keys.rs`, the scripts in `scripts.rs`, the hash's fields in
//! `stored.rs`. Expiries are Redis's clock, not the nodes'.

mod keys;
mod scripts;
mod stored;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::RedisError;

use self::keys::Keys;
use self::scripts::Scripts;
use super::{Created, SessionChange, SessionLimits, SessionRecord, SessionStore, Updated, bounded};
use crate::peer::BoxFuture;
use crate::store::StoreError;
use crate::store::redis::{Redis, classify};

/// Sessions in Redis 7 or later, shared by every node that uses the same Redis and key
/// prefix ([`Redis::prefix`]).
///
/// ```no_run
/// # async fn demo() -> Result<(), barrel_mcp::store::StoreError> {
/// use barrel_mcp::store::redis::{Redis, RedisOptions};
/// use barrel_mcp::store::RedisSessionStore;
///
/// let redis = Redis::connect("redis://127.0.0.1:6379/", RedisOptions::default()).await?;
/// let sessions = RedisSessionStore::new(redis);
/// # let _ = sessions;
/// # Ok(())
/// # }
/// ```
///
/// The caps of [`SessionLimits`] hold across all nodes. Its `Debug` shows the address and
/// prefix, never a password.
pub struct RedisSessionStore {
    redis: Redis,
    keys: Keys,
    scripts: Arc<Scripts>,
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("redis", &self.redis)
            .finish_non_exhaustive()
    }
}

impl RedisSessionStore {
    /// A store on `redis`, under its prefix.
    pub fn new(redis: Redis) -> Self {
        Self {
            keys: Keys::new(redis.prefix()),
            redis,
            scripts: Arc::new(Scripts::new()),
        }
    }

    /// `error` as a [`StoreError`] (the rule every Redis store shares: [`classify`]).
    fn fail(&self, error: &RedisError) -> StoreError {
        classify(&self.redis, error)
    }

    async fn create_now(
        &self,
        record: &SessionRecord,
        limits: &SessionLimits,
    ) -> Result<Created, StoreError> {
        let fields = stored::encode(record, limits.max_subscriptions)
            .map_err(|e| StoreError::Corrupt(format!("a session did not encode: {e}")))?;
        let mut invocation = self.scripts.create.prepare_invoke();
        invocation
            .key(self.keys.session(&record.id))
            .key(self.keys.subscriptions(&record.id))
            .key(self.keys.all());
        if let Some(quota) = &record.quota {
            invocation.key(self.keys.quota(&keys::quota_tag(quota)));
        }
        invocation
            .arg(millis(limits.idle_ttl))
            .arg(limits.max_sessions)
            .arg(limits.max_per_quota)
            .arg(&record.id)
            .arg(record.subscriptions.len());
        for uri in &record.subscriptions {
            invocation.arg(uri);
        }
        for (field, value) in &fields {
            invocation.arg(*field).arg(value);
        }
        let created: i64 = invocation
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        match created {
            0 => Ok(Created::Created),
            1 => Ok(Created::Exists),
            2 => Ok(Created::QuotaFull),
            3 => Ok(Created::Full),
            other => Err(unexpected("create", other)),
        }
    }

    async fn load_now(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let (fields, subscriptions): (HashMap<String, String>, Vec<String>) = redis::pipe()
            .atomic()
            .cmd("HGETALL")
            .arg(self.keys.session(id))
            .cmd("SMEMBERS")
            .arg(self.keys.subscriptions(id))
            .query_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        if fields.is_empty() {
            return Ok(None);
        }
        stored::decode(id, fields, subscriptions)
            .map(Some)
            .map_err(|why| StoreError::Corrupt(format!("session record: {why}")))
    }

    async fn update_now(&self, id: &str, change: SessionChange) -> Result<Updated, StoreError> {
        let (what, operand, value) = match change {
            SessionChange::Initialized => ("h", stored::F_INITIALIZED.to_owned(), "1".to_owned()),
            SessionChange::LogLevel(level) => (
                "h",
                stored::F_LOG_LEVEL.to_owned(),
                level.as_str().to_owned(),
            ),
            SessionChange::GetOwner { expected, new } => (
                "g",
                expected
                    .map(|tag| tag.get().to_string())
                    .unwrap_or_default(),
                new.get().to_string(),
            ),
            SessionChange::Subscribe(uri) => ("s", uri, String::new()),
            SessionChange::Unsubscribe(uri) => ("u", uri, String::new()),
        };
        let updated: i64 = self
            .scripts
            .update
            .key(self.keys.session(id))
            .key(self.keys.subscriptions(id))
            .arg(what)
            .arg(operand)
            .arg(value)
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        match updated {
            1 => Ok(Updated::Applied),
            0 => Ok(Updated::Unknown),
            -1 => Ok(Updated::SubscriptionsFull),
            -3 => Ok(Updated::Conflict),
            -2 => Err(StoreError::Corrupt(
                "a session hash has no subscription cap or no expiry".into(),
            )),
            other => Err(unexpected("update", other)),
        }
    }

    async fn touch_now(&self, id: &str, idle_ttl: Duration) -> Result<bool, StoreError> {
        let touched: i64 = self
            .scripts
            .touch
            .key(self.keys.session(id))
            .key(self.keys.subscriptions(id))
            .key(self.keys.all())
            .arg(millis(idle_ttl))
            .arg(id)
            .arg(self.keys.quota_prefix())
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        flag("touch", touched)
    }

    /// `DELETE`; with `uninitialized_only`, not a session whose `initialized` was received.
    async fn delete_now(&self, id: &str, uninitialized_only: bool) -> Result<bool, StoreError> {
        let deleted: i64 = self
            .scripts
            .delete
            .key(self.keys.session(id))
            .key(self.keys.subscriptions(id))
            .key(self.keys.all())
            .arg(id)
            .arg(self.keys.quota_prefix())
            .arg(if uninitialized_only { "1" } else { "0" })
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        flag("delete", deleted)
    }
}

impl SessionStore for RedisSessionStore {
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        limits: &'a SessionLimits,
    ) -> BoxFuture<'a, Result<Created, StoreError>> {
        Box::pin(self.create_now(record, limits))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(self.load_now(id))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
    ) -> BoxFuture<'a, Result<Updated, StoreError>> {
        Box::pin(self.update_now(id, change))
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.touch_now(id, idle_ttl))
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.delete_now(id, false))
    }

    fn delete_uninitialized<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.delete_now(id, true))
    }
}

/// `ttl`, within the bounds, in whole milliseconds (at least 1).
fn millis(ttl: Duration) -> u64 {
    u64::try_from(bounded(ttl).as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

fn flag(script: &str, answer: i64) -> Result<bool, StoreError> {
    match answer {
        1 => Ok(true),
        0 => Ok(false),
        other => Err(unexpected(script, other)),
    }
}

fn unexpected(script: &str, answer: i64) -> StoreError {
    StoreError::Corrupt(format!(
        "unexpected answer {answer} from the {script} script"
    ))
}
