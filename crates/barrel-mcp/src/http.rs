//! The Streamable HTTP server transport (feature `http-server`).
//!
//! One endpoint serves both protocol eras, chosen per request:
//!
//! - **Sessionful** (2024-11-05 to 2025-11-25): `initialize` opens a session named by the
//!   `Mcp-Session-Id` response header. Each request is answered with an SSE stream (priming
//!   event first, then the request's notifications and server-to-client requests, then its
//!   response) or one JSON body; notifications and responses get 202; GET opens the session's
//!   stream for server-initiated messages and resumes any stream with `Last-Event-ID`; DELETE
//!   ends the session.
//! - **Stateless** (2026-07-28): a POST whose body claims the revision in `params._meta`, with
//!   the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers checked against the body;
//!   answered with JSON, or with an SSE stream once the handler sends a notification. No session
//!   is created; GET and DELETE get 405; a client that goes away cancels its request.
//!
//! - **Legacy HTTP+SSE** (2024-11-05, on by default, [`HttpConfig::legacy_sse`]): GET `/sse`
//!   opens a session whose one stream starts with an `endpoint` event naming
//!   `/messages?sessionId=…`; POSTs there get 202 and every answer rides the stream.
//!
//! Every request first passes the `Host` and `Origin` checks (DNS rebinding), then the size and
//! time limits, before anything is allocated for it. Every limit is a field of [`HttpConfig`].
//! With the `tls` feature, `serve_tls` serves HTTPS, HTTP/1.1 and HTTP/2 on one port (ALPN).
//!
//! # Use
//!
//! ```no_run
//! use barrel_mcp::http::{HttpConfig, StreamableHttp};
//! # async fn run(server: barrel_mcp::server::Server) -> barrel_mcp::Result<()> {
//! let http = StreamableHttp::new(server, HttpConfig::default());
//! // Either mount the router in your own axum app (and `.layer()` it)...
//! let app = axum::Router::new().merge(http.router());
//! # drop(app);
//! // ...or use the ready listener, which shuts down gracefully when the future resolves.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
//! barrel_mcp::http::serve(listener, http, std::future::pending()).await
//! # }
//! ```
//!
//! The router is a tower `Service` too (`axum::Router` implements it), so it can be served
//! by any hyper-compatible stack. When it is, call [`StreamableHttp::shutdown`] on the way down
//! so sessions end and their streams close.

// Early answers travel as `Err(Response)` through the request ladder; boxing them would only
// add an allocation on the refusal path.
#![allow(clippy::result_large_err)]

#[cfg(feature = "auth")]
mod auth;
mod config;
mod durable;
mod endpoint;
mod follow;
mod forward;
mod guard;
mod journal;
mod legacy;
mod legacy_nodes;
mod listener;
mod prefixed;
mod relay;
mod replica;
mod reply;
mod routing;
mod service;
mod session;
mod session_table;
mod sessionful;
mod sessionless;
mod sessions;
mod shared;
mod sse;
mod stateless;
mod streams;
#[cfg(feature = "tls")]
mod tls;
mod version_header;
mod watchdog;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::server::Server;

pub use config::{Http2Config, HttpConfig, PrincipalResolver};
pub use listener::{serve, serve_connection};
pub use shared::SharedSessions;
#[cfg(feature = "tls")]
pub use tls::{TlsConfig, serve_tls};

/// The `Mcp-Session-Id` header.
pub const MCP_SESSION_ID: http::HeaderName = reply::SESSION_ID;
/// The `MCP-Protocol-Version` header.
pub const MCP_PROTOCOL_VERSION: http::HeaderName = reply::PROTOCOL_VERSION;

/// The crate-private parsers the fuzz targets reach (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzzing {
    /// `Host` parsing.
    pub(crate) fn split_host(text: &str) -> Option<(&str, Option<u16>)> {
        super::guard::split_host(text)
    }

    /// `Origin` matching under the default configuration.
    pub(crate) fn origin_allowed(origin: &str) -> bool {
        super::guard::origin_allowed(&super::HttpConfig::default(), origin)
    }

    /// `Last-Event-ID` parsing.
    pub(crate) fn parse_event_id(text: &str) -> Option<(u64, u64)> {
        super::sse::parse_event_id(text)
    }
}

/// The address the request's connection came from: set by the ready listeners, and by axum's
/// `into_make_service_with_connect_info::<SocketAddr>()` for apps that serve the router
/// themselves.
pub(crate) fn peer_address(parts: &http::request::Parts) -> Option<std::net::IpAddr> {
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip())
}

/// A server exposed over Streamable HTTP: the sessions, the streams and the limits. Cheap to
/// clone; every clone is the same endpoint.
#[derive(Clone, Debug)]
pub struct StreamableHttp {
    state: Arc<State>,
}

/// What every request to the endpoint shares.
#[derive(Debug)]
pub(crate) struct State {
    server: Server,
    config: HttpConfig,
    sessions: Arc<sessions::Sessions>,
    /// The connections of 2026-07-28 requests.
    tasks: TaskTracker,
    /// Cancelled when the endpoint shuts down.
    shutdown: CancellationToken,
    /// Cancelled when a shutdown ran out of time: everything still running stops at once.
    halt: CancellationToken,
}

impl StreamableHttp {
    /// Exposes `server` with the limits of `config`.
    pub fn new(server: Server, config: HttpConfig) -> Self {
        Self {
            state: Arc::new(State {
                server,
                config,
                sessions: Arc::default(),
                tasks: TaskTracker::new(),
                shutdown: CancellationToken::new(),
                halt: CancellationToken::new(),
            }),
        }
    }

    /// The limits this endpoint runs with.
    pub fn config(&self) -> &HttpConfig {
        &self.state.config
    }

    /// An axum router serving the endpoint at [`HttpConfig::path`] (and `/` with
    /// [`HttpConfig::serve_at_root`]), and the legacy HTTP+SSE paths when
    /// [`HttpConfig::legacy_sse`] is on. Mount it (`merge`,
    /// `nest`) in an application and add layers (auth, tracing) as with any router.
    pub fn router(&self) -> axum::Router {
        let mut router = axum::Router::new();
        for path in self.state.config.endpoint_paths() {
            let state = Arc::clone(&self.state);
            router = router.route(
                path,
                axum::routing::any(move |request: axum::extract::Request| {
                    endpoint::handle(Arc::clone(&state), request)
                }),
            );
        }
        let router = router.merge(self.metadata_router());
        // The legacy transport is a session by nature: a sessionless server does not serve it.
        if !self.state.config.legacy_sse || self.state.config.sessionless {
            return router;
        }
        let (sse, messages) = (Arc::clone(&self.state), Arc::clone(&self.state));
        router
            .route(
                &self.state.config.legacy_sse_path,
                axum::routing::any(move |request: axum::extract::Request| {
                    legacy::handle(Arc::clone(&sse), legacy::Path::Sse, request)
                }),
            )
            .route(
                &self.state.config.legacy_messages_path,
                axum::routing::any(move |request: axum::extract::Request| {
                    legacy::handle(Arc::clone(&messages), legacy::Path::Messages, request)
                }),
            )
    }

    /// The RFC 9728 protected-resource metadata routes, when `HttpConfig::auth` names a
    /// resource (feature `auth`; empty otherwise): the path-suffixed well-known URL
    /// (`/.well-known/oauth-protected-resource/mcp`) and the root one. [`router`](Self::router)
    /// includes them; an application that nests the router under a prefix must merge these at
    /// its root as well, where clients look for them.
    pub fn metadata_router(&self) -> axum::Router {
        #[cfg(feature = "auth")]
        if let Some(resource) = self
            .state
            .config
            .auth
            .as_ref()
            .and_then(crate::auth::server::AuthConfig::protected_resource)
        {
            let mut router = axum::Router::new();
            let root = crate::auth::server::WELL_KNOWN.to_owned();
            let mut paths = vec![resource.metadata_path()];
            if paths[0] != root {
                paths.push(root);
            }
            for path in paths {
                let state = Arc::clone(&self.state);
                router = router.route(
                    &path,
                    axum::routing::any(move |request: axum::extract::Request| async move {
                        auth::metadata(&state, request)
                    }),
                );
            }
            return router;
        }
        axum::Router::new()
    }

    /// How many sessions are live.
    pub fn session_count(&self) -> usize {
        self.state.sessions.len()
    }

    /// Starts shutting down: new requests get 503; every session stops taking requests, answers
    /// those already running, then ends, which closes its streams; 2026-07-28 requests finish.
    /// Idempotent. [`serve`] calls it when its shutdown future resolves.
    pub fn shutdown(&self) {
        self.state.shutdown.cancel();
        self.state.sessions.shutdown();
        self.state.tasks.close();
    }

    /// Stops everything still running at once: sessions end and 2026-07-28 requests are
    /// dropped (their handlers see cancellation). [`serve`] calls it when a graceful shutdown
    /// outlasts [`HttpConfig::shutdown_timeout`].
    pub fn halt(&self) {
        self.shutdown();
        self.state.halt.cancel();
        self.state.sessions.kill_all();
    }

    /// Resolves once [`shutdown`](Self::shutdown) was called and every session and request has
    /// ended.
    pub async fn wait(&self) {
        self.state.shutdown.cancelled().await;
        self.state.sessions.tasks.wait().await;
        self.state.tasks.wait().await;
    }
}
