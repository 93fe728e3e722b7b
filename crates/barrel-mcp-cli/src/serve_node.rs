//! `barrel-mcp serve` as one node of several behind one address: tasks in Redis (`--redis`,
//! `--redis-prefix`), the node's name (`--node-name`), and the `requestState` keys every node
//! shares (`--request-state-key-file`, or `BARREL_MCP_REQUEST_STATE_KEYS`).
//!
//! The keys come from configuration only, never from Redis: whoever reads Redis could
//! otherwise forge states. Without keys a node seals with a random key of its own, as a single
//! server does; with `--redis` that is warned about, since the other nodes would then refuse
//! its tokens.

use std::path::PathBuf;

use anyhow::Context;
use std::time::Duration;

use barrel_mcp::server::request_state::KeyRing;
use barrel_mcp::server::{ServerBuilder, ServerConfig};

/// The longest node name.
const MAX_NODE_NAME: usize = 64;

/// The flags of `serve` for running several nodes.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct NodeArgs {
    /// Keep tasks and HTTP sessions in the Redis at this URL
    /// (redis://[user:password@]host:port/db), shared by every node given the same URL and
    /// --redis-prefix: a session opened on one node continues on any other. Stream replay and
    /// server-to-client requests stay with the node that made them. The URL may hold a
    /// password: prefer the environment variable to the command line. Connecting is retried
    /// for 10 s.
    #[arg(
        long,
        value_name = "URL",
        env = "BARREL_MCP_REDIS_URL",
        hide_env_values = true
    )]
    redis: Option<String>,
    /// What every Redis key starts with (default mcp): services sharing one Redis keep apart
    /// by prefix.
    #[arg(long, value_name = "PREFIX", requires = "redis", value_parser = parse_prefix)]
    redis_prefix: Option<String>,
    /// This node's name in logs (letters, digits, '.', '_', '-'; at most 64). Default: the
    /// host name and the process id.
    #[arg(long, value_name = "NAME", value_parser = parse_node_name)]
    node_name: Option<String>,
    /// The keys that seal and open requestState, the same file on every node: one key a line,
    /// the sealing key first, in base64 (standard or URL-safe, padded or not) or hex after
    /// `hex:` (at least 32 bytes each); blank lines and # comments are skipped. Default: the
    /// comma-separated keys of BARREL_MCP_REQUEST_STATE_KEYS, else a random key per process.
    #[arg(long, value_name = "FILE")]
    request_state_key_file: Option<PathBuf>,
    /// Seconds a task's runner lease lasts (default 10; at least 0.03): a task whose node
    /// stopped, or stalled longer than this, is failed on its next read on any node. The node
    /// running a task renews its lease every third of it.
    #[arg(long, value_name = "SECONDS", value_parser = parse_lease)]
    task_lease: Option<Duration>,
}

/// The node, ready to configure the server with.
#[derive(Debug)]
pub(crate) struct Node {
    /// Its name, for logs.
    pub(crate) name: String,
    /// `--task-lease`; none: the default.
    lease: Option<Duration>,
    /// The configured keys; none: a random key.
    keys: Option<KeyRing>,
    /// Tasks and sessions in Redis, when `--redis` was given.
    #[cfg(feature = "redis")]
    shared: Option<crate::serve_redis::Shared>,
}

impl Node {
    /// `builder` with this node's task store and keys.
    pub(crate) fn configure(self, builder: ServerBuilder) -> ServerBuilder {
        let builder = match self.lease {
            Some(lease) => {
                let mut config = ServerConfig::default();
                config.task_limits.lease = lease;
                builder.config(config)
            }
            None => builder,
        };
        let builder = match self.keys {
            Some(ring) => builder.request_state_keys(ring),
            None => builder,
        };
        #[cfg(feature = "redis")]
        let builder = match self.shared {
            Some(shared) => builder.task_store(shared.tasks),
            None => builder,
        };
        builder
    }

    /// The sessions this node shares with the others (`--redis`), for the HTTP layer; taken
    /// once, before [`configure`](Self::configure).
    #[cfg(feature = "http-server")]
    pub(crate) fn take_shared_sessions(&mut self) -> Option<barrel_mcp::http::SharedSessions> {
        #[cfg(feature = "redis")]
        return self.shared.as_mut().map(|shared| shared.sessions.clone());
        #[cfg(not(feature = "redis"))]
        None
    }
}

/// Reads the keys and connects to Redis (retrying for 10 s); says on stderr what the node
/// runs with, and warns when nodes would not accept each other's `requestState`.
pub(crate) fn prepare(args: NodeArgs, runtime: &tokio::runtime::Runtime) -> anyhow::Result<Node> {
    let name = args.node_name.unwrap_or_else(default_node_name);
    let keys = read_keys(args.request_state_key_file.as_deref())?;
    let Some(url) = args.redis else {
        if let Some(ring) = &keys {
            eprintln!("barrel-mcp: node {name}: {}", describe_keys(ring));
        }
        return Ok(Node {
            name,
            lease: args.task_lease,
            keys,
            #[cfg(feature = "redis")]
            shared: None,
        });
    };
    let prefix = args.redis_prefix.unwrap_or_else(|| "mcp".to_owned());
    let shown = crate::serve_redis::redact(&url);
    let keys_said = match &keys {
        Some(ring) => describe_keys(ring),
        None => {
            eprintln!(
                "barrel-mcp: warning: node {name}: no --request-state-key-file and no {}: \
                 requestState is sealed with a random key of this process, so other nodes \
                 will refuse its tokens and it theirs",
                KeyRing::ENV_VAR
            );
            "requestState sealed with a random key".to_owned()
        }
    };
    #[cfg(feature = "redis")]
    let shared = runtime.block_on(crate::serve_redis::connect(&url, &prefix, &name))?;
    #[cfg(not(feature = "redis"))]
    crate::serve_redis::no_redis(runtime)?;
    eprintln!(
        "barrel-mcp: node {name}: tasks and HTTP sessions in Redis at {shown} (prefix \
         {prefix}); {keys_said}"
    );
    Ok(Node {
        name,
        lease: args.task_lease,
        keys,
        #[cfg(feature = "redis")]
        shared: Some(shared),
    })
}

/// The keys of `--request-state-key-file`, else of the environment, else none.
fn read_keys(file: Option<&std::path::Path>) -> anyhow::Result<Option<KeyRing>> {
    let Some(file) = file else {
        return KeyRing::from_env().map_err(anyhow::Error::from);
    };
    if std::env::var_os(KeyRing::ENV_VAR).is_some() {
        eprintln!(
            "barrel-mcp: warning: {} is ignored: --request-state-key-file is given",
            KeyRing::ENV_VAR
        );
    }
    KeyRing::from_file(file)
        .map(Some)
        .context("--request-state-key-file")
}

/// "requestState keys KID (sealing), KID": what the operator compares between nodes.
fn describe_keys(ring: &KeyRing) -> String {
    let mut kids = ring.kids();
    let mut said = format!(
        "requestState keys {} (sealing)",
        kids.next().unwrap_or_default()
    );
    for kid in kids {
        said.push_str(", ");
        said.push_str(kid);
    }
    said
}

/// The host name and the process id, such as `web-3-4711`.
fn default_node_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| if name_char(c) { c } else { '-' })
        .take(MAX_NODE_NAME - 12)
        .collect();
    let host = if host.is_empty() { "node" } else { &host };
    format!("{host}-{}", std::process::id())
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// `--node-name`: 1 to 64 letters, digits, '.', '_' or '-'.
fn parse_node_name(name: &str) -> Result<String, String> {
    if name.is_empty() || name.len() > MAX_NODE_NAME || !name.chars().all(name_char) {
        return Err(format!(
            "a node name is 1 to {MAX_NODE_NAME} letters, digits, '.', '_' or '-'"
        ));
    }
    Ok(name.to_owned())
}

/// `--redis-prefix`: not empty, no blanks, no `{`/`}` (the keys' hash tags).
fn parse_prefix(prefix: &str) -> Result<String, String> {
    if prefix.is_empty()
        || prefix.len() > MAX_NODE_NAME
        || prefix
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '{' | '}'))
    {
        return Err(format!(
            "a Redis prefix is 1 to {MAX_NODE_NAME} characters, without blanks or braces"
        ));
    }
    Ok(prefix.to_owned())
}

#[cfg(test)]
mod tests;

/// `--task-lease`: positive seconds, fractions allowed, at most a day.
fn parse_lease(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.03..=86_400.0).contains(&seconds) {
        return Err("a task lease is between 0.03 and 86400 seconds".to_owned());
    }
    Ok(Duration::from_secs_f64(seconds))
}
