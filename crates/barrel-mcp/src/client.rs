//! The MCP client: one typed call for every client-to-server method of every revision.
//!
//! Build a client with [`Client::builder`] and connect it over any
//! [`Transport`](crate::transport::Transport): an in-memory pair, a child process
//! ([`transport::child`](crate::transport::child)), or the process's own stdio. The
//! [`Client`] it returns is a cheap `Clone` handle; every clone shares the one connection.
//!
//! ```no_run
//! use barrel_mcp::client::Client;
//! use barrel_mcp::transport::child::ChildCommand;
//! use barrel_mcp::types::CallToolParams;
//!
//! # async fn run() -> barrel_mcp::Result<()> {
//! let transport = ChildCommand::new("my-server").arg("--stdio").spawn()?;
//! let client = Client::builder().name("example", "1.0").connect(transport).await?;
//! println!("{} speaks {}", client.server_info().name, client.protocol_version());
//! for tool in client.list_all_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let mut args = serde_json::Map::new();
//! args.insert("message".into(), "hi".into());
//! let result = client.call_tool(CallToolParams::new("echo").with_arguments(args)).await?;
//! println!("{result:?}");
//! client.close();
//! # Ok(())
//! # }
//! ```
//!
//! # Revisions
//!
//! [`VersionMode::Auto`] (the default) probes with `server/discover` and falls back to
//! `initialize`; [`ClientBuilder::pin`] speaks one revision. In 2026-07-28 every request carries
//! the `_meta` envelope (revision, client capabilities, client info); `input_required` results
//! are answered through the [`ClientHandler`] and the request is retried with the answers, up to
//! [`ClientConfig::max_input_rounds`]. Calls the server did not advertise, or that the revision
//! lacks, fail with [`Error::Unsupported`](crate::Error::Unsupported) before anything is sent.
//!
//! # Cancel safety
//!
//! Every call may be dropped at any await point: the request is cancelled
//! (`notifications/cancelled`) and forgotten.

mod builder;
mod cache;
mod calls;
mod clients;
mod connect;
mod custom;
mod defaults;
mod dispatch;
mod handler;
mod input;
mod keepalive;
mod notification;
mod options;
mod pages;
mod request;
mod servers_file;
mod skills;
mod subscription;
mod task_receiver;
mod tasks;

use std::fmt;
use std::sync::Arc;

use barrel_mcp_types::{ClientCapabilities, Implementation, ProtocolVersion, ServerCapabilities};
use tokio::sync::broadcast;

pub use builder::{ClientBuilder, ClientConfig, Keepalive, VersionMode};
pub use clients::{Backoff, Clients, ServerStatus};
pub use handler::{ClientHandler, HandlerContext, NoHandler};
pub use notification::ServerNotification;
pub use options::{CallOptions, ProgressCallback};
pub use pages::{Listing, Pager};
pub use servers_file::{ServerEntry, ServersFile};
pub use skills::LoadedSkill;
pub use subscription::ResourceSubscription;
pub use tasks::{TaskHandle, ToolTask};

use crate::peer::Peer;
use connect::Negotiated;
use dispatch::Event;
use handler::DynHandler;
use request::Envelope;

/// A connection to one MCP server. Cheap to clone; every clone shares the connection.
///
/// # Example
///
/// Connected in-process to a server (any transport works the same way: a child process, stdio,
/// Streamable HTTP with `connect_http`; `examples/client.rs` is a command-line client):
///
/// ```
/// use barrel_mcp::client::Client;
/// use barrel_mcp::server::{Ctx, Json, Server};
/// use barrel_mcp::types::{ReadResourceParams, Resource};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct AddArgs { a: i64, b: i64 }
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct Sum { sum: i64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> barrel_mcp::Result<()> {
/// let server = Server::builder()
///     .name("demo", "0.1.0")
///     .tool("add", "Add", |_: Ctx, args: AddArgs| async move {
///         Ok(Json(Sum { sum: args.a + args.b }))
///     })
///     .text_resource(Resource::new("demo://readme", "readme"), "# demo")
///     .build()?;
/// let (client_side, server_side) = barrel_mcp::transport::memory();
/// tokio::spawn(async move { server.serve(server_side).await });
/// let client = Client::builder().name("example", "1.0").connect(client_side).await?;
///
/// assert_eq!(client.server_info().name, "demo");
/// let tools = client.list_all_tools().await?;
/// assert_eq!(tools[0].name, "add");
/// // Arguments from any `Serialize`, the result read back as the tool's output type.
/// let sum: Sum = client.call("add", AddArgs { a: 2, b: 3 }).await?.structured_as()?;
/// assert_eq!(sum.sum, 5);
/// let readme = client.read_resource(ReadResourceParams::new("demo://readme")).await?;
/// assert_eq!(readme.contents.len(), 1);
/// client.ping().await?;
/// client.close();
/// assert!(client.is_closed());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    peer: Peer,
    /// What the handshake settled; replaced when a transport that lost its session has the
    /// handshake run again.
    negotiated: std::sync::RwLock<Negotiated>,
    /// The 2026-07-28 envelope; `None` in a session.
    envelope: Option<Envelope>,
    handler: Arc<dyn DynHandler>,
    client_info: Implementation,
    client_capabilities: ClientCapabilities,
    config: ClientConfig,
    events: broadcast::Sender<Event>,
    /// Set when the connection's task ends, with the HTTP failure that ended it, if any.
    ended: connect::Ended,
    /// The 2026-07-28 response cache (shared with the dispatch, which invalidates it).
    cache: Arc<cache::ResponseCache>,
}

impl Drop for Inner {
    /// The last handle is gone: nobody can use the connection any more.
    fn drop(&mut self) {
        self.peer.close();
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.server_info().name)
            .field("version", &self.protocol_version())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Starts building a client.
    ///
    /// Example: [`Client`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    fn negotiated(&self) -> std::sync::RwLockReadGuard<'_, Negotiated> {
        self.inner
            .negotiated
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The revision agreed with the server.
    ///
    /// What this and the next three methods return is the server's latest answer: when a
    /// Streamable HTTP server forgets the session and the handshake is run again, they
    /// change with it.
    ///
    /// Example: [`Client`].
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.negotiated().version
    }

    /// The server's self-description (from `initialize`, or the `serverInfo` of
    /// `server/discover`; empty when a 2026-07-28 server sent none).
    ///
    /// Example: [`Client`].
    pub fn server_info(&self) -> Arc<Implementation> {
        Arc::clone(&self.negotiated().server_info)
    }

    /// What the server advertised.
    ///
    /// Example: [`Client`].
    pub fn capabilities(&self) -> Arc<ServerCapabilities> {
        Arc::clone(&self.negotiated().capabilities)
    }

    /// The server's instructions for the model, if any.
    ///
    /// Example: [`Client`].
    pub fn instructions(&self) -> Option<Arc<str>> {
        self.negotiated().instructions.clone()
    }

    /// What this client said about itself.
    ///
    /// Example: [`Client`].
    pub fn client_info(&self) -> &Implementation {
        &self.inner.client_info
    }

    /// The capabilities this client declared.
    ///
    /// Example: [`Client`].
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// The client's limits.
    ///
    /// Example: [`Client`].
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The JSON-RPC connection underneath, for methods this client has no typed call for.
    ///
    /// Example: [`Client`].
    pub fn peer(&self) -> &Peer {
        &self.inner.peer
    }

    /// True once the connection has ended.
    ///
    /// Example: [`Client`].
    pub fn is_closed(&self) -> bool {
        self.inner.peer.is_closed()
    }

    /// Resolves when the connection ends (the server went away, or [`Client::close`]).
    /// Cancel-safe.
    ///
    /// Example: [`Client`].
    pub async fn closed(&self) {
        self.inner.peer.closed().await;
    }

    /// Ends the connection: calls in flight fail with [`Error::Closed`](crate::Error::Closed)
    /// and the transport is closed (for a child process, the shutdown ladder starts).
    ///
    /// Example: [`Client`].
    pub fn close(&self) {
        self.inner.peer.close();
    }
}
