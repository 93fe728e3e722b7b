//! `serve --redis`: connecting to Redis (tasks, shared HTTP sessions, the nodes' bus),
//! retrying while Redis comes up, and the URL as messages show it (without its password).

#[cfg(feature = "redis")]
use std::time::Duration;

/// How long `serve --redis` keeps trying to reach Redis before it exits.
#[cfg(feature = "redis")]
pub(crate) const CONNECT_FOR: Duration = Duration::from_secs(10);
/// The first pause between two attempts; it doubles after each, up to [`MAX_PAUSE`].
#[cfg(feature = "redis")]
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between two attempts.
#[cfg(feature = "redis")]
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// What `serve --redis` keeps in Redis: tasks, and the HTTP sessions every node serves.
#[cfg(feature = "redis")]
pub(crate) struct Shared {
    /// The task store.
    pub(crate) tasks: barrel_mcp::task::RedisTaskStore,
    /// The session store and the bus the HTTP layer shares sessions through.
    pub(crate) sessions: barrel_mcp::http::SharedSessions,
}

#[cfg(feature = "redis")]
impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("tasks", &self.tasks)
            .finish_non_exhaustive()
    }
}

/// The Redis at `url` under `prefix`, with this node on its bus as `name`; connecting is
/// retried for [`CONNECT_FOR`] (each attempt bounded by the connection and response
/// timeouts), then an error naming the URL without its password. An invalid URL fails at once.
#[cfg(feature = "redis")]
pub(crate) async fn connect(url: &str, prefix: &str, name: &str) -> anyhow::Result<Shared> {
    use barrel_mcp::store::redis::{Redis, RedisOptions};
    use barrel_mcp::store::{BusOptions, StoreError};

    let shown = redact(url);
    let options = RedisOptions {
        prefix: prefix.to_owned(),
        ..RedisOptions::default()
    };
    let deadline = tokio::time::Instant::now() + CONNECT_FOR;
    let mut pause = FIRST_PAUSE;
    let mut why = "no answer".to_owned();
    let redis = loop {
        let attempt = tokio::time::timeout_at(deadline, Redis::connect(url, options.clone())).await;
        match attempt {
            Ok(Ok(redis)) => break redis,
            // An invalid URL does not become valid by waiting.
            Ok(Err(StoreError::Unavailable(said))) if said.starts_with("invalid Redis URL") => {
                anyhow::bail!("--redis {shown}: {said}")
            }
            Ok(Err(error)) => why = error.to_string(),
            // The deadline cut the attempt short: the last reason stands.
            Err(_) => {}
        }
        if tokio::time::Instant::now() + pause > deadline {
            anyhow::bail!(
                "cannot reach Redis at {shown} (tried for {} s): {why}",
                CONNECT_FOR.as_secs()
            );
        }
        tracing::warn!(url = %shown, error = %why, "Redis is not reachable yet; retrying");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    };
    let limits = barrel_mcp::server::ServerConfig::default().task_limits;
    let tasks = barrel_mcp::task::RedisTaskStore::on(&redis, limits);
    let bus = BusOptions {
        name: name.to_owned(),
        ..BusOptions::default()
    };
    let sessions = barrel_mcp::http::SharedSessions::redis(redis, bus)
        .await
        .map_err(|error| anyhow::anyhow!("joining the nodes on {shown}: {error}"))?;
    Ok(Shared { tasks, sessions })
}

/// `serve --redis` in a build without Redis: always an error.
#[cfg(not(feature = "redis"))]
pub(crate) fn no_redis(_runtime: &tokio::runtime::Runtime) -> anyhow::Result<()> {
    anyhow::bail!("this build has no Redis (feature `redis`)")
}

/// `url` with its password replaced by `***`: the password of the user information
/// (`redis://user:secret@host` shows as `redis://user:***@host`; user information without a
/// `:` is hidden whole), and the `pass` and `password` query parameters (`redis+unix://` URLs).
/// What cannot be told apart is hidden rather than shown.
pub(crate) fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let rest = match rest.rfind('@') {
        Some(at) => {
            let (userinfo, host) = (&rest[..at], &rest[at + 1..]);
            let user = userinfo
                .split_once(':')
                .map(|(user, _)| user)
                .filter(|user| !user.contains(['/', '?', '#']));
            match user {
                Some(user) => format!("{user}:***@{host}"),
                None => format!("***@{host}"),
            }
        }
        None => rest.to_owned(),
    };
    let shown = match rest.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _))
                        if name.eq_ignore_ascii_case("pass")
                            || name.eq_ignore_ascii_case("password") =>
                    {
                        format!("{name}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => rest,
    };
    format!("{scheme}{shown}")
}
