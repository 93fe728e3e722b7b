//! The MCP server: one registry of tools, resources, templates and prompts, served to every
//! connection in every protocol revision.
//!
//! A [`Server`] is a cheap `Clone` handle on a shared registry. Build one with
//! [`Server::builder`], then serve it on any transport with [`Server::serve`] (one connection)
//! or [`Server::serve_stdio`]. Tools, resources and prompts can be added and removed at run time;
//! connected clients learn of it through `notifications/*/list_changed`.
//!
//! Handlers are written once. They receive a [`Ctx`] with progress, cancellation, logging, the
//! request's `_meta`, what the client declared about itself, and one API to ask the client for
//! input ([`Ctx::elicit`], [`Ctx::create_message`], [`Ctx::list_roots`]). In a session
//! (2024-11-05 to 2025-11-25) that API sends a request to the client and waits for its answer.
//! In the stateless revision (2026-07-28) it ends the round with an `input_required` result; the
//! client retries with the answers and the handler runs again from the start, this time getting
//! its answers at once. So a handler should ask for input before it does anything it would not
//! want to do twice.

mod announcer;
mod builder;
mod completion;
mod connection;
mod context;
pub mod cursor;
mod custom;
mod dispatch;
mod events;
mod handler;
mod initialize_cache;
mod input;
mod invoke;
mod listen;
mod local;
mod registry;
pub mod request_state;
mod session;
mod session_handle;
mod stateless;
mod task_extension;
mod task_input;
mod tasks;
mod typed;
pub mod uri_template;
pub mod validation;

#[cfg(feature = "http-server")]
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use barrel_mcp_types::{
    CacheScope, Implementation, Prompt, Resource, ResourceTemplate, ServerCapabilities, Tool,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::peer::{self, PeerConfig};
use crate::transport::Transport;

pub use builder::ServerBuilder;
pub use completion::{Completer, CompletionRequest};
#[cfg(feature = "http-server")]
pub(crate) use connection::{SessionEvents, SessionStart, SessionSync};
#[cfg(feature = "http-server")]
pub(crate) use context::Scope;
pub use context::{Ctx, KeyedInput};
pub use custom::RequestHandler;
pub(crate) use events::{NodeNews, ServerEvent};
pub use handler::{
    IntoToolResult, Json, PromptArguments, PromptHandler, ResourceHandler, ResourceRequest,
    ToolHandler,
};
use registry::Registry;
use request_state::RequestStateCodec;
#[cfg(feature = "http-server")]
pub(crate) use session::hex_id;
#[cfg(feature = "http-server")]
pub(crate) use session::{negotiate, read_initialize, serve_sessionless};
pub use session_handle::SessionHandle;
#[cfg(feature = "http-server")]
pub(crate) use stateless::{Envelope, claims_version, request_meta, serve as serve_stateless};
pub use typed::{IntoPromptResult, IntoResourceContents};

/// Limits and defaults of a server. Every field has a documented default.
///
/// Example: [`Server`].
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Items per page of `tools/list`, `resources/list`, `resources/templates/list` and
    /// `prompts/list`. Default 100. Zero means one page with everything.
    pub page_size: usize,
    /// How long a request to the client (sampling, elicitation, roots) may take. Default 5 min.
    pub client_request_timeout: Duration,
    /// The most input rounds one stateless request may take. Default 16.
    pub max_input_rounds: u32,
    /// How long a sealed `requestState` stays valid. Default 10 min.
    pub request_state_ttl: Duration,
    /// `ttlMs` put on cacheable results in 2026-07-28. Default 0 (stale at once).
    pub cache_ttl_ms: u64,
    /// `cacheScope` put on cacheable results in 2026-07-28. Default private.
    pub cache_scope: CacheScope,
    /// Validate tool results against the tool's `outputSchema`. Default true.
    pub validate_output: bool,
    /// The most `subscriptions/listen` requests open at once, over all connections. Default
    /// 1024; one more is answered -32603.
    pub max_subscriptions: usize,
    /// The most resources one session may be subscribed to (`resources/subscribe`), and the
    /// most URIs one `subscriptions/listen` filter may name. Default 256; one more is -32602.
    pub max_resource_subscriptions: usize,
    /// The longest resource URI accepted in a subscription, in bytes. Default 8 KiB; longer is
    /// -32602.
    pub max_subscription_uri_length: usize,
    /// The most requests whose handlers run at once, over every connection and transport
    /// (`subscriptions/listen`, capped by [`max_subscriptions`](Self::max_subscriptions), is not
    /// counted). One more is answered -32603 "server busy" at once. Default 4096.
    pub max_running_handlers: usize,
    /// How long one request's handler may run before it is dropped and the request answered
    /// -32001 (`subscriptions/listen` excepted). Default none: a handler runs until it returns,
    /// the client cancels it, or its connection ends.
    pub handler_timeout: Option<Duration>,
    /// The bounds of tasks (per requestor and in all, TTLs, the poll interval). Default
    /// [`TaskLimits::default`](crate::task::TaskLimits::default).
    pub task_limits: crate::task::TaskLimits,
    /// Refuse (as not found) a URI that a resource template matches only with a `..` path
    /// segment in a variable's decoded value (`file:///{path}` with `%2E%2E%2Fetc`): handlers
    /// that join values into paths then never see one. Default true; a server whose values may
    /// hold `..` legitimately turns it off and checks values itself.
    pub reject_dot_segments: bool,
    /// Connection limits of the JSON-RPC peer.
    pub peer: PeerConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            page_size: 100,
            client_request_timeout: Duration::from_secs(300),
            max_input_rounds: 16,
            request_state_ttl: Duration::from_secs(600),
            cache_ttl_ms: 0,
            cache_scope: CacheScope::Private,
            validate_output: true,
            max_subscriptions: 1024,
            max_resource_subscriptions: 256,
            max_subscription_uri_length: 8 * 1024,
            max_running_handlers: 4096,
            handler_timeout: None,
            task_limits: crate::task::TaskLimits::default(),
            reject_dot_segments: true,
            peer: PeerConfig::default(),
        }
    }
}

/// A handle on an MCP server. Cheap to clone; every clone serves the same registry.
///
/// # Example
///
/// Limits set at build time, a tool added and removed at run time, and a session reached by
/// its id (see [`SessionHandle`] for one kept by a background task):
///
/// ```
/// use barrel_mcp::server::{Ctx, Server, ServerConfig, ToolHandler};
/// use barrel_mcp::types::Tool;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> barrel_mcp::Result<()> {
/// let server = Server::builder()
///     .name("demo", "0.1.0")
///     .config(ServerConfig { page_size: 50, ..ServerConfig::default() })
///     .build()?;
/// assert_eq!(server.info().name, "demo");
/// assert_eq!(server.config().page_size, 50);
///
/// // Connected sessions hear `notifications/tools/list_changed`.
/// let handler = ToolHandler::raw(|_: Ctx, _| async move { Ok("pong") });
/// server.add_tool(Tool::new("ping", Tool::empty_input_schema()), handler)?;
/// assert_eq!(server.call_tool("ping", json!({})).await?.text_content(), "pong");
/// assert!(server.remove_tool("ping"));
/// // A change the registry cannot see (a tool hidden by state kept elsewhere): say so.
/// server.tools_list_changed();
///
/// // No client is connected: there is no session to reach.
/// assert!(server.live_sessions().is_empty());
/// assert!(server.session("no-such-id").is_none());
/// # Ok(())
/// # }
/// ```
///
/// Serving: [`Server::serve_stdio`] for a process a client spawns, [`Server::serve`] with any
/// [`Transport`], or the `http` module's router for Streamable HTTP.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

/// Sessions by name. Every name is drawn at random by the server or digested from an id it
/// drew (never chosen by a peer), so a fast hasher is enough: SipHash over a 32-character
/// name was paid three times per session (listed, then looked up and removed at its end).
type SessionsById = std::collections::HashMap<String, SessionHandle, foldhash::fast::RandomState>;

struct Inner {
    info: Implementation,
    /// `info` as JSON, made once: every 2026-07-28 result carries it (as a value, or as text
    /// for a result written as text).
    info_json: serde_json::Value,
    info_text: Box<serde_json::value::RawValue>,
    instructions: Option<String>,
    config: ServerConfig,
    registry: RwLock<Registry>,
    events: broadcast::Sender<ServerEvent>,
    /// Ids of the 2026-07-28 tasks that changed, for listen streams that watch them: apart
    /// from registry events, so a chatty task never makes a listen stream fall behind on those.
    task_events: broadcast::Sender<String>,
    state_codec: RequestStateCodec,
    /// `subscriptions/listen` requests open now.
    open_subscriptions: std::sync::atomic::AtomicUsize,
    /// One permit per running handler ([`ServerConfig::max_running_handlers`]).
    running: Arc<tokio::sync::Semaphore>,
    /// The live sessions, by id; a connection's session is removed when it ends.
    sessions: std::sync::Mutex<SessionsById>,
    /// The task store and the running task work of this process.
    tasks: tasks::Tasks,
    /// Where the changes announced on this server also go: the other nodes of a service
    /// (set once, by an HTTP endpoint that shares its sessions).
    relay: std::sync::OnceLock<tokio::sync::mpsc::Sender<NodeNews>>,
    /// A change could not be queued for the relay (it was full).
    relay_lost: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts building a server.
    ///
    /// Example: [`Server`].
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The server's name, version and other self-description.
    ///
    /// Example: [`Server`].
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The server's limits and defaults.
    ///
    /// Example: [`Server`].
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// What this server advertises to clients.
    ///
    /// Example: [`Server`].
    pub fn capabilities(&self) -> ServerCapabilities {
        self.read_registry().capabilities()
    }

    /// Serves one connection until its transport ends. Cancel-safe: dropping the future ends
    /// the connection; in-flight handlers see their cancellation token fire.
    ///
    /// Example: [`Server`].
    pub async fn serve<T: Transport>(&self, transport: T) -> crate::Result<()> {
        self.serve_until(transport, CancellationToken::new()).await
    }

    /// [`Server::serve`] until `stop` is cancelled: then the connection closes (running handlers
    /// are cancelled, queued messages are written within a short grace) and this returns once
    /// the connection's tasks have all ended.
    ///
    /// Example: [`Server`].
    pub async fn serve_until<T: Transport>(
        &self,
        transport: T,
        stop: CancellationToken,
    ) -> crate::Result<()> {
        let connection = connection::Connection::new(self.clone(), None)
            .with_results_as_text(!transport.passes_messages_as_they_are());
        self.serve_connection(connection, transport, stop).await
    }

    /// A session served over many exchanges (Streamable HTTP): each exchange hands its
    /// message to the returned inlet, what the server sends goes to `writer`, and the session
    /// hears of its life through `events`. It starts as `start` says: waiting for `initialize`,
    /// or restored from the record of a session another node opened. The returned
    /// [`SessionSync`] brings its state up to date with a newer record. The future runs the
    /// session to its end: when its input ends, or at once when `stop` is cancelled. Its
    /// requests to the client take ids carrying `node` (see [`peer::RequestIds::of_node`]).
    #[cfg(feature = "http-server")]
    pub(crate) fn open_session(
        &self,
        writer: Arc<dyn peer::DirectWriter>,
        stop: CancellationToken,
        events: Arc<dyn SessionEvents>,
        start: SessionStart<'_>,
        node: crate::store::NodeTag,
    ) -> (
        peer::Inlet,
        SessionSync,
        impl Future<Output = ()> + Send + 'static,
    ) {
        let (connection, initialized) = match start {
            SessionStart::Fresh { name, initialize } => (
                connection::Connection::new(self.clone(), Some(events))
                    .named(name)
                    .opened_with(initialize),
                None,
            ),
            SessionStart::Restored { name, record } => (
                connection::Connection::restored(self.clone(), name, record, events),
                Some(record.initialized),
            ),
        };
        let connection = Arc::new(connection);
        let sync = SessionSync::new(&connection);
        let handler: Arc<dyn peer::Handler> = connection.clone();
        let ids = peer::RequestIds::of_node(node);
        let (inlet, run) = peer::open(handler, self.inner.config.peer.clone(), writer, ids);
        if let Some(initialized) = initialized {
            connection.resume(inlet.peer(), initialized);
        }
        drop(connection);
        let peer = inlet.peer().clone();
        // Pinned on the heap, not inside `served`, where it would be held twice (captured, and
        // where it is polled) for the session's whole life.
        let run = Box::pin(run);
        let served = async move {
            let _close = CloseOnDrop(peer.clone());
            // Declared after `_close`, so a future dropped mid-way drops `run` first.
            let mut run = run;
            tokio::select! {
                () = &mut run => {}
                () = stop.cancelled() => {
                    peer.close();
                    run.await;
                }
            }
        };
        (inlet, sync, served)
    }

    async fn serve_connection<T: Transport>(
        &self,
        connection: connection::Connection,
        transport: T,
        stop: CancellationToken,
    ) -> crate::Result<()> {
        let handler = Arc::new(connection);
        let (peer, mut task) = peer::serve(transport, handler, self.inner.config.peer.clone());
        let _close = CloseOnDrop(peer.clone());
        let joined = tokio::select! {
            joined = &mut task => joined,
            () = stop.cancelled() => {
                peer.close();
                task.await
            }
        };
        match joined {
            Ok(result) => result,
            Err(join) => Err(crate::Error::Protocol(format!(
                "connection task failed: {join}"
            ))),
        }
    }

    /// Serves the process's stdin and stdout until stdin closes. Logs must go to stderr.
    ///
    /// Example: [`Server`].
    pub async fn serve_stdio(&self) -> crate::Result<()> {
        self.serve(crate::transport::stdio::StdioTransport::stdio())
            .await
    }

    /// The live session named `id` ([`Ctx::session_id`]), to reach it from outside a handler;
    /// `None` once it has ended (or for an id it never had).
    ///
    /// Example: [`Server`].
    pub fn session(&self, id: &str) -> Option<SessionHandle> {
        self.sessions().get(id).cloned()
    }

    /// Every live session, in no particular order.
    ///
    /// Example: [`Server`].
    pub fn live_sessions(&self) -> Vec<SessionHandle> {
        self.sessions().values().cloned().collect()
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, SessionsById> {
        self.inner
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn register_session(&self, handle: SessionHandle) {
        self.sessions().insert(handle.id().to_owned(), handle);
    }

    /// Forgets `session`'s handle, unless another session took its name since (a session
    /// restored again under the same name).
    pub(crate) fn forget_session(&self, session: &session::Session) {
        let mut sessions = self.sessions();
        if sessions
            .get(&session.id)
            .is_some_and(|handle| handle.is_of(session))
        {
            sessions.remove(&session.id);
            crate::shrink::shrink_when_sparse(&mut sessions);
        }
    }

    /// Adds (or replaces) a tool at run time and tells connected clients the list changed.
    ///
    /// The tool's handler takes raw JSON arguments; see [`ServerBuilder::tool`] for typed ones.
    ///
    /// Example: [`Server`].
    pub fn add_tool(&self, tool: Tool, handler: handler::ToolHandler) -> Result<(), crate::Error> {
        let entry = registry::ToolEntry::new(tool, handler)?;
        self.write_registry().tools.insert(Arc::new(entry));
        self.emit(ServerEvent::ToolsChanged);
        Ok(())
    }

    /// Removes a tool; true when it existed. Connected clients are told the list changed.
    ///
    /// Example: [`Server`].
    pub fn remove_tool(&self, name: &str) -> bool {
        let removed = self.write_registry().tools.remove(name);
        if removed {
            self.emit(ServerEvent::ToolsChanged);
        }
        removed
    }

    /// Adds (or replaces) a resource at run time.
    ///
    /// Example: [`Server`].
    pub fn add_resource(&self, resource: Resource, handler: handler::ResourceHandler) {
        self.write_registry()
            .resources
            .insert(registry::ResourceEntry { resource, handler });
        self.emit(ServerEvent::ResourcesChanged);
    }

    /// Removes a resource by URI; true when it existed.
    ///
    /// Example: [`Server`].
    pub fn remove_resource(&self, uri: &str) -> bool {
        let removed = self.write_registry().resources.remove(uri);
        if removed {
            self.emit(ServerEvent::ResourcesChanged);
        }
        removed
    }

    /// Adds (or replaces) a resource template at run time.
    ///
    /// Example: [`Server`].
    pub fn add_resource_template(
        &self,
        template: ResourceTemplate,
        handler: handler::ResourceHandler,
    ) -> Result<(), crate::Error> {
        let entry = registry::TemplateEntry::new(template, handler)?;
        self.write_registry().templates.insert(entry);
        self.emit(ServerEvent::ResourcesChanged);
        Ok(())
    }

    /// Adds (or replaces) a prompt at run time.
    ///
    /// Example: [`Server`].
    pub fn add_prompt(&self, prompt: Prompt, handler: handler::PromptHandler) {
        self.write_registry()
            .prompts
            .insert(registry::PromptEntry { prompt, handler });
        self.emit(ServerEvent::PromptsChanged);
    }

    /// Removes a prompt by name; true when it existed.
    ///
    /// Example: [`Server`].
    pub fn remove_prompt(&self, name: &str) -> bool {
        let removed = self.write_registry().prompts.remove(name);
        if removed {
            self.emit(ServerEvent::PromptsChanged);
        }
        removed
    }

    /// The `Mcp-Param-{Name}` headers a `tools/call` of `tool` must carry, each with the path of
    /// the argument it mirrors; empty for an unknown tool.
    #[cfg_attr(not(feature = "http-server"), allow(dead_code))]
    pub(crate) fn header_params(
        &self,
        tool: &str,
    ) -> Vec<barrel_mcp_types::header_params::HeaderParam> {
        self.read_registry()
            .tools
            .get(tool)
            .map(|entry| entry.header_params.clone())
            .unwrap_or_default()
    }

    /// Tells the clients subscribed to `uri` that the resource changed
    /// (`notifications/resources/updated`).
    ///
    /// Example: [`Server`].
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.emit(ServerEvent::ResourceUpdated(uri.into()));
    }

    /// Tells every connected client that the tool list changed, when nothing was added or
    /// removed (tools shown or hidden by state kept elsewhere, a description reworded):
    /// each session gets `notifications/tools/list_changed`, and so does each 2026-07-28
    /// `subscriptions/listen` stream that asked for it. [`add_tool`](Self::add_tool) and
    /// [`remove_tool`](Self::remove_tool) send it themselves;
    /// [`SessionHandle::tools_list_changed`] tells one session only.
    ///
    /// Example: [`Server`].
    pub fn tools_list_changed(&self) {
        self.emit(ServerEvent::ToolsChanged);
    }

    /// [`tools_list_changed`](Self::tools_list_changed) for the resource and template lists.
    ///
    /// Example: [`Server`].
    pub fn resources_list_changed(&self) {
        self.emit(ServerEvent::ResourcesChanged);
    }

    /// [`tools_list_changed`](Self::tools_list_changed) for the prompt list.
    ///
    /// Example: [`Server`].
    pub fn prompts_list_changed(&self) {
        self.emit(ServerEvent::PromptsChanged);
    }

    /// Tells the listen streams watching task `id` that it changed.
    pub(crate) fn task_changed(&self, id: &str) {
        // No receiver means no one watches: nothing to tell.
        let _ = self.inner.task_events.send(id.to_owned());
    }

    /// Tells the other nodes that a question of task `id` was answered here (see
    /// `task_input.rs`). Not queued (the relay is full, or there is none), the answer waits in
    /// the store for the runner's next look.
    pub(crate) fn tell_task_answered(&self, id: &str) {
        if let Some(relay) = self.inner.relay.get()
            && let Err(tokio::sync::mpsc::error::TrySendError::Full(_)) =
                relay.try_send(NodeNews::TaskAnswered(id.to_owned()))
        {
            tracing::warn!(
                task = %id,
                "too much news waiting for the other nodes; a task's runner finds its answer at \
                 its next look"
            );
        }
    }

    /// Hands the answers to task `id` stored by other nodes to the questions of this process
    /// that wait on them (another node said it stored some), off the caller's path; nothing
    /// when no question of the task waits here.
    #[cfg(feature = "http-server")]
    pub(crate) fn task_answered_elsewhere(&self, id: &str) {
        task_input::look_soon(self, id);
    }

    /// Looks for stored answers to every task of this process that waits on one (news of
    /// other nodes may have been lost), `at_once` looks at a time.
    #[cfg(feature = "http-server")]
    pub(crate) async fn look_for_task_answers(&self, at_once: usize) {
        use futures_util::StreamExt;
        let waiting: Vec<String> = self.inner.tasks.waiting().keys().cloned().collect();
        futures_util::stream::iter(waiting)
            .for_each_concurrent(at_once, |id| async move {
                task_input::collect(self, &id).await;
            })
            .await;
    }

    fn emit(&self, event: ServerEvent) {
        if let Some(relay) = self.inner.relay.get() {
            match relay.try_send(NodeNews::Change(event.clone())) {
                Ok(()) => {}
                Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                    self.inner
                        .relay_lost
                        .store(true, std::sync::atomic::Ordering::Release);
                    tracing::warn!(
                        "too many changes waiting for the other nodes; every list is announced \
                         changed instead"
                    );
                }
                // The endpoint that relayed them has shut down.
                Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        self.emit_here(event);
    }

    /// Announces `event` to this server's own clients only (another node announced it).
    pub(crate) fn emit_here(&self, event: ServerEvent) {
        // Noted outside the map's lock: a walk over many sessions must not hold up sessions
        // opening and closing.
        let handles: Vec<SessionHandle> = self.sessions().values().cloned().collect();
        for handle in &handles {
            handle.note_change(&event);
        }
        // The listen streams (2026-07-28); none listening: nothing to tell.
        let _ = self.inner.events.send(event);
    }

    /// True once after a change could not be queued for the relay (and resets): the other
    /// nodes must be told every list changed.
    #[cfg(feature = "http-server")]
    pub(crate) fn relay_lost(&self) -> bool {
        self.inner
            .relay_lost
            .swap(false, std::sync::atomic::Ordering::AcqRel)
    }

    /// Sends every change announced on this server, and its other news, from now on to
    /// `relay` too (see
    /// `http/relay.rs`); false when a relay was set already.
    #[cfg(feature = "http-server")]
    pub(crate) fn relay_to(&self, relay: tokio::sync::mpsc::Sender<NodeNews>) -> bool {
        self.inner.relay.set(relay).is_ok()
    }

    fn read_registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.inner
            .registry
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The registry, to change it: the `initialize` answers made of it are forgotten first.
    fn write_registry(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        let mut registry = self
            .inner
            .registry
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        registry.initialize.clear();
        registry
    }
}

/// Ends a connection when the future serving it is dropped before it finishes: its handlers
/// see their cancellation and its pending requests fail.
struct CloseOnDrop(peer::Peer);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}
