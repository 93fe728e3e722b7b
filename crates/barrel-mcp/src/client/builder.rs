//! [`ClientBuilder`], [`ClientConfig`] and [`VersionMode`]: what a client says about itself,
//! which revision it speaks, and its limits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::{ClientCapabilities, Implementation, ProtocolVersion};

use super::Client;
use super::handler::{ClientHandler, DynHandler, Erased, NoHandler};
use crate::Result;
use crate::peer::PeerConfig;
use crate::task::TaskLimits;
use crate::transport::Transport;

/// Which protocol revision a client speaks.
///
/// Example: [`ClientBuilder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionMode {
    /// Probe with `server/discover` (2026-07-28); fall back to `initialize` (the newest
    /// sessionful revision the server accepts) on any answer that is not a usable discover
    /// result, and on a probe timeout when [`ClientConfig::fallback_on_probe_timeout`] is set.
    #[default]
    Auto,
    /// Speak exactly this revision; connecting fails when the server does not.
    Pinned(ProtocolVersion),
}

/// Periodic liveness checks.
///
/// Example: [`ClientBuilder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Time between pings; each ping also times out after it.
    pub interval: Duration,
    /// Consecutive failed pings after which the client closes the connection.
    pub failure_threshold: u32,
}

/// Limits and defaults of a client. Every field has a documented default.
///
/// Example: [`ClientBuilder`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// How long the `server/discover` probe may take. Default 10 s.
    pub probe_timeout: Duration,
    /// Fall back to `initialize` when the probe times out. Right for stdio, where an old server
    /// may simply not answer; an HTTP transport turns it off. Default true.
    pub fallback_on_probe_timeout: bool,
    /// The most `input_required` rounds one call may take before it fails. Default 10.
    pub max_input_rounds: u32,
    /// The most pages a "list everything" call fetches before it fails. Default 100.
    pub max_pages: usize,
    /// Server notifications buffered for the handler; more are dropped with a warning.
    /// Default 1024.
    pub notification_queue: usize,
    /// Fill in schema `default`s missing from accepted form elicitations. Default true.
    pub apply_elicitation_defaults: bool,
    /// Periodic pings; `None` (the default) sends none.
    pub keepalive: Option<Keepalive>,
    /// The JSON-RPC connection's limits (request timeout 60 s, maximum 10 min, ...).
    pub peer: PeerConfig,
    /// Results kept by the 2026-07-28 response cache (list pages and resource reads, for the
    /// `ttlMs` the server gave); 0 turns the cache off. Default 256.
    pub response_cache_entries: usize,
    /// Run the server's sampling and elicitation requests as tasks when it asks (2025-11-25;
    /// see [`ClientBuilder::task_requests`]). Default false.
    pub task_requests: bool,
    /// The bounds of the tasks a connection runs for its server (see
    /// [`ClientBuilder::task_requests`]): at most `max_per_owner` (and `max_tasks`) tasks
    /// held at once, finished ones counting until their TTL passes; the TTL granted
    /// (`min_ttl`..`max_ttl`, `default_ttl` when the server asks for none); the `pollInterval`
    /// suggested; the largest result kept; the `tasks/list` page size. `max_anonymous` and
    /// `purge_interval` do not apply. Default: [`TaskLimits::default`] with 100 tasks.
    pub task_limits: TaskLimits,
}

/// The default cap on the tasks one connection runs for its server.
const DEFAULT_MAX_TASKS: usize = 100;

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            probe_timeout: Duration::from_secs(10),
            fallback_on_probe_timeout: true,
            max_input_rounds: 10,
            max_pages: 100,
            notification_queue: 1024,
            apply_elicitation_defaults: true,
            keepalive: None,
            peer: PeerConfig::default(),
            response_cache_entries: 256,
            task_requests: false,
            task_limits: TaskLimits {
                max_per_owner: DEFAULT_MAX_TASKS,
                max_tasks: DEFAULT_MAX_TASKS,
                ..TaskLimits::default()
            },
        }
    }
}

/// Builds a [`Client`]. Cheap to clone, and reusable: each [`ClientBuilder::connect`] makes a
/// new connection with the same settings and handler.
///
/// # Example
///
/// ```no_run
/// use std::time::Duration;
///
/// use barrel_mcp::client::Client;
/// use barrel_mcp::transport::child::ChildCommand;
/// use barrel_mcp::types::ProtocolVersion;
///
/// # async fn run() -> barrel_mcp::Result<()> {
/// let builder = Client::builder()
///     .name("example", "1.0")
///     .pin(ProtocolVersion::V2025_11_25)
///     .request_timeout(Duration::from_secs(30))
///     // Ping every 15 s; three missed pings in a row close the connection.
///     .keepalive(Duration::from_secs(15), 3);
/// let client = builder.connect(ChildCommand::new("my-server").spawn()?).await?;
/// // The same settings, a second connection.
/// let other = builder.connect(ChildCommand::new("other-server").spawn()?).await?;
/// # let _ = (client, other);
/// # Ok(())
/// # }
/// ```
///
/// A handler for what servers ask: [`ClientHandler`](super::ClientHandler).
#[derive(Clone)]
pub struct ClientBuilder {
    pub(crate) info: Implementation,
    pub(crate) capabilities: Option<ClientCapabilities>,
    pub(crate) handler: Arc<dyn DynHandler>,
    pub(crate) mode: VersionMode,
    pub(crate) config: ClientConfig,
    /// Woken when what the server offers may have changed: a `list_changed` notification, or
    /// (under a [`Clients`](super::Clients) registry) a connection made or lost. The host
    /// rebuilds its catalog on it.
    pub(crate) changes: Option<Arc<tokio::sync::Notify>>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("capabilities", &self.capabilities)
            .field("mode", &self.mode)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            info: Implementation::new("barrel-mcp", env!("CARGO_PKG_VERSION")),
            capabilities: None,
            handler: Arc::new(Erased(Arc::new(NoHandler))),
            changes: None,
            mode: VersionMode::Auto,
            config: ClientConfig::default(),
        }
    }
}

impl ClientBuilder {
    /// The client's name and version.
    ///
    /// Example: [`ClientBuilder`].
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info.name = name.into();
        self.info.version = version.into();
        self
    }

    /// The client's full self-description.
    ///
    /// Example: [`ClientBuilder`].
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Answers the server's questions and hears its notifications. The client declares
    /// [`ClientHandler::capabilities`] unless [`ClientBuilder::capabilities`] overrides it.
    ///
    /// Example: [`ClientBuilder`].
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Arc::new(Erased(Arc::new(handler)));
        self
    }

    /// Declares these capabilities instead of the handler's.
    ///
    /// Example: [`ClientBuilder`].
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// Picks the revision ([`VersionMode::Auto`] by default).
    ///
    /// Example: [`ClientBuilder`].
    pub fn version(mut self, mode: VersionMode) -> Self {
        self.mode = mode;
        self
    }

    /// Speaks exactly `version`.
    ///
    /// Example: [`ClientBuilder`].
    pub fn pin(self, version: ProtocolVersion) -> Self {
        self.version(VersionMode::Pinned(version))
    }

    /// Replaces every limit at once.
    ///
    /// Example: [`ClientBuilder`].
    pub fn config(mut self, config: ClientConfig) -> Self {
        self.config = config;
        self
    }

    /// How long a call waits for its answer by default.
    ///
    /// Example: [`ClientBuilder`].
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.peer.request_timeout = timeout;
        self
    }

    /// The longest a call ever waits, even when progress keeps resetting its timeout.
    ///
    /// Example: [`ClientBuilder`].
    pub fn max_request_timeout(mut self, max: Duration) -> Self {
        self.config.peer.max_request_timeout = max;
        self
    }

    /// How long the `server/discover` probe may take.
    ///
    /// Example: [`ClientBuilder`].
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.config.probe_timeout = timeout;
        self
    }

    /// Whether a probe timeout falls back to `initialize` (see [`ClientConfig`]).
    ///
    /// Example: [`ClientBuilder`].
    pub fn fallback_on_probe_timeout(mut self, fallback: bool) -> Self {
        self.config.fallback_on_probe_timeout = fallback;
        self
    }

    /// The most `input_required` rounds one call may take.
    ///
    /// Example: [`ClientBuilder`].
    pub fn max_input_rounds(mut self, rounds: u32) -> Self {
        self.config.max_input_rounds = rounds;
        self
    }

    /// The most pages a "list everything" call fetches.
    ///
    /// Example: [`ClientBuilder`].
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.config.max_pages = pages;
        self
    }

    /// Whether accepted form elicitations get the schema's defaults for missing fields.
    ///
    /// Example: [`ClientBuilder`].
    pub fn apply_elicitation_defaults(mut self, apply: bool) -> Self {
        self.config.apply_elicitation_defaults = apply;
        self
    }

    /// Pings every `interval` and closes the connection after `failure_threshold` failures in
    /// a row (at least one).
    ///
    /// Example: [`ClientBuilder`].
    pub fn keepalive(mut self, interval: Duration, failure_threshold: u32) -> Self {
        self.config.keepalive = Some(Keepalive {
            interval,
            failure_threshold: failure_threshold.max(1),
        });
        self
    }

    /// Runs the server's `sampling/createMessage` and `elicitation/create` as tasks when the
    /// server asks for one with `params.task` (2025-11-25). Off by default: a task keeps the
    /// handler's answer in memory until the task's TTL passes, and a server may poll for it
    /// much later, which an application opts into.
    ///
    /// When on, the client adds to the capabilities it declares (the handler's, or those of
    /// [`ClientBuilder::capabilities`]) `tasks.requests.sampling.createMessage` if it declares
    /// sampling, `tasks.requests.elicitation.create` if it declares elicitation, and
    /// `tasks.list` and `tasks.cancel`. Declaring `tasks` by hand in the capabilities works the
    /// same way, one kind at a time; this switch is only the shorthand.
    ///
    /// A task-augmented request is answered at once with a `CreateTaskResult`; the handler
    /// runs in the background with [`HandlerContext::task_id`](super::HandlerContext::task_id)
    /// set, and its [`HandlerContext::cancel`](super::HandlerContext::cancel) fires on
    /// `tasks/cancel`. The server reads the task with `tasks/get`, `tasks/result`,
    /// `tasks/list` and `tasks/cancel`, and hears `notifications/tasks/status` when it ends.
    /// Bounded by [`ClientConfig::task_limits`] (at most 100 tasks per connection by default:
    /// one more is refused with -32603 "too many tasks"). Revisions without core tasks ignore
    /// the switch.
    ///
    /// ```
    /// use barrel_mcp::client::{Client, ClientHandler, HandlerContext};
    /// use barrel_mcp::types::{
    ///     ClientCapabilities, CreateMessageParams, CreateMessageResult, ErrorObject,
    ///     SamplingCapability,
    /// };
    ///
    /// struct Sampler;
    ///
    /// impl ClientHandler for Sampler {
    ///     fn capabilities(&self) -> ClientCapabilities {
    ///         ClientCapabilities {
    ///             sampling: Some(SamplingCapability::default()),
    ///             ..ClientCapabilities::default()
    ///         }
    ///     }
    ///
    ///     async fn create_message(
    ///         &self,
    ///         _params: CreateMessageParams,
    ///         cx: HandlerContext,
    ///     ) -> Result<CreateMessageResult, ErrorObject> {
    ///         // Run as a task when the server asked for one: cx.task_id says which.
    ///         let _ = cx.task_id;
    ///         Err(ErrorObject::internal("no model in this example"))
    ///     }
    /// }
    ///
    /// // Sampling requests may come as tasks; at most 20 kept at once.
    /// let builder = Client::builder().handler(Sampler).task_requests(true).max_tasks(20);
    /// # let _ = builder;
    /// ```
    pub fn task_requests(mut self, enabled: bool) -> Self {
        self.config.task_requests = enabled;
        self
    }

    /// The most tasks one connection runs for its server at once, finished ones counting
    /// until their TTL passes (see [`ClientBuilder::task_requests`]). Default 100.
    ///
    /// Example: [`ClientBuilder::task_requests`].
    pub fn max_tasks(mut self, max: usize) -> Self {
        self.config.task_limits.max_per_owner = max;
        self.config.task_limits.max_tasks = max;
        self
    }

    /// Every bound of the tasks a connection runs for its server (see
    /// [`ClientConfig::task_limits`]).
    ///
    /// Example: [`ClientBuilder::task_requests`].
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.config.task_limits = limits;
        self
    }

    /// Wakes `changes` whenever what the server offers may have changed: a `list_changed`
    /// notification and, under a [`Clients`](super::Clients) registry, a connection made or
    /// lost. A host rebuilds its catalog on it (`host::Host::changes`, feature `host`).
    ///
    /// Example: [`ClientBuilder`].
    pub fn on_changes(mut self, changes: Arc<tokio::sync::Notify>) -> Self {
        self.changes = Some(changes);
        self
    }

    /// Connects over `transport`: starts the connection, agrees on a revision, and returns the
    /// client. On failure the connection is closed.
    ///
    /// Cancel safety: dropping the future closes the connection.
    ///
    /// Example: [`ClientBuilder`].
    pub async fn connect<T: Transport>(&self, transport: T) -> Result<Client> {
        super::connect::connect(self, transport).await
    }

    /// Connects over Streamable HTTP. Like [`ClientBuilder::connect`], except that a probe
    /// timeout is an error rather than a reason to fall back (an HTTP server that does not
    /// answer is not an old server).
    ///
    /// Example: [`ClientBuilder`].
    #[cfg(feature = "http-client")]
    pub async fn connect_http(
        &self,
        transport: crate::transport::http_client::HttpClientTransport,
    ) -> Result<Client> {
        let mut builder = self.clone();
        builder.config.fallback_on_probe_timeout = false;
        super::connect::connect(&builder, transport).await
    }
}
