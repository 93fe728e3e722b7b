//! One Redis, shared by the Redis stores of a node (feature `redis`): the URL, the timeouts,
//! the key prefix, and the multiplexed connection every command goes through.
//!
//! No blocking command (`XREAD BLOCK`, `SUBSCRIBE`) ever runs on [`Redis::commands`]: it would
//! stall every command pipelined behind it. Those get their own connections from
//! [`Redis::client`].

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ErrorKind, RedisError};

use super::StoreError;

/// The oldest Redis major version the stores' scripts run on.
pub const MIN_REDIS_MAJOR: u32 = 7;

/// How the stores talk to Redis. Every field has a documented default.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// What every key starts with (`prefix:s:{id}`, ...): services sharing one Redis, or
    /// tests, keep apart by prefix. Default `mcp`.
    pub prefix: String,
    /// How long one command may take before the store reports it unavailable. Default 500 ms.
    pub response_timeout: Duration,
    /// How long connecting may take. Default 1 s.
    pub connection_timeout: Duration,
    /// Reconnection attempts after the connection broke (in the background, with a backoff up
    /// to `max_reconnect_delay`); commands meanwhile fail fast as unavailable. Default 2.
    pub reconnect_retries: usize,
    /// The longest pause between reconnection attempts. Default 500 ms.
    pub max_reconnect_delay: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            prefix: "mcp".to_owned(),
            response_timeout: Duration::from_millis(500),
            connection_timeout: Duration::from_secs(1),
            reconnect_retries: 2,
            max_reconnect_delay: Duration::from_millis(500),
        }
    }
}

/// A connected Redis: cheap to clone, one multiplexed connection behind every clone.
/// Its `Debug` shows the address and prefix, never a password.
#[derive(Clone)]
pub struct Redis {
    commands: ConnectionManager,
    client: redis::Client,
    options: RedisOptions,
    /// `host:port` (or the socket path).
    address: String,
    /// The URL's password, blanked out of error messages should a driver error quote it.
    secret: Option<String>,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis")
            .field("address", &self.address)
            .field("prefix", &self.options.prefix)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// Connects to the Redis at `url` (`redis://[user:password@]host:port/db`; `rediss://`
    /// needs a TLS feature of `redis`) and checks that it is Redis 7 or later.
    ///
    /// Fails with [`StoreError::Unavailable`] when the URL is invalid, Redis cannot be reached
    /// or is too old; the message never holds the password.
    pub async fn connect(url: &str, options: RedisOptions) -> Result<Self, StoreError> {
        let client = redis::Client::open(url)
            .map_err(|e| StoreError::Unavailable(format!("invalid Redis URL ({:?})", e.kind())))?;
        let info = client.get_connection_info();
        let address = info.addr().to_string();
        let secret = info.redis_settings().password().map(str::to_owned);
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(options.response_timeout))
            .set_connection_timeout(Some(options.connection_timeout))
            .set_number_of_retries(options.reconnect_retries)
            .set_max_delay(options.max_reconnect_delay);
        let commands = ConnectionManager::new_with_config(client.clone(), config)
            .await
            .map_err(|e| unavailable(&e, secret.as_deref()))?;
        let redis = Self {
            commands,
            client,
            options,
            address,
            secret,
        };
        redis.check_server().await?;
        Ok(redis)
    }

    /// The multiplexed connection for commands (never a blocking one).
    pub fn commands(&self) -> ConnectionManager {
        self.commands.clone()
    }

    /// The client, to open dedicated connections (pub/sub, blocking reads) with.
    pub fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The options it was connected with.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.options.prefix
    }

    /// `error` as [`StoreError::Unavailable`], with the password blanked out.
    pub fn fail(&self, error: &RedisError) -> StoreError {
        unavailable(error, self.secret.as_deref())
    }

    /// Refuses a Redis older than [`MIN_REDIS_MAJOR`], and warns when it may evict keys: every
    /// key the stores write has a TTL, so under a `volatile-*` or `allkeys-*` policy Redis could
    /// drop a live session's record under memory pressure, and the session would read as
    /// unknown (a 404 that makes its client start over). Run it with `noeviction`.
    async fn check_server(&self) -> Result<(), StoreError> {
        let info: String = redis::cmd("INFO")
            .arg("server")
            .arg("memory")
            .query_async(&mut self.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        let field = |name: &str| {
            info.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        if let Some(policy) = field("maxmemory_policy").filter(|p| *p != "noeviction") {
            tracing::warn!(
                address = %self.address,
                policy,
                "Redis may evict the stores' keys under memory pressure; \
                 set maxmemory-policy noeviction"
            );
        }
        let version = field("redis_version").unwrap_or("unknown");
        let major = version
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        if major.is_some_and(|major| major >= MIN_REDIS_MAJOR) {
            Ok(())
        } else {
            Err(StoreError::Unavailable(format!(
                "the stores need Redis {MIN_REDIS_MAJOR} or later; this one is {version}"
            )))
        }
    }
}

/// `error` as [`StoreError::Unavailable`], with `secret` blanked out of the message.
pub(crate) fn unavailable(error: &RedisError, secret: Option<&str>) -> StoreError {
    let mut message = format!("Redis: {error}");
    if let Some(secret) = secret.filter(|s| !s.is_empty()) {
        message = message.replace(secret, "***");
    }
    StoreError::Unavailable(message)
}

/// `error` as a [`StoreError`], the one rule of every Redis store: a key of the wrong type
/// under the store's prefix (`WRONGTYPE`, for a command, a script or one inside a `MULTI`) or
/// an answer of an unexpected shape is [`StoreError::Corrupt`] (retrying will not help); anything
/// else is [`StoreError::Unavailable`] ([`Redis::fail`]: no password in the message). The
/// message names the prefix and the kind of error, never a key (keys hold session ids).
pub(crate) fn classify(redis: &Redis, error: &RedisError) -> StoreError {
    const WRONG_TYPE: &str = "WRONGTYPE";
    let wrong_type = error.code() == Some(WRONG_TYPE)
        || error
            .clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, e)| e.code() == WRONG_TYPE));
    if wrong_type || error.kind() == ErrorKind::UnexpectedReturnType {
        StoreError::Corrupt(format!(
            "a key under {:?} holds something this store did not write ({})",
            redis.prefix(),
            error.category()
        ))
    } else {
        redis.fail(error)
    }
}
