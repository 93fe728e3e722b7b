//! barrel-mcp: the Model Context Protocol toolkit for Rust.
//!
//! One library for the three MCP roles: a server (tools, resources, prompts, completions,
//! logging, progress, cancellation, and asking the client for input), a client and a host. Every
//! protocol revision in use is served from the same API: the stateless 2026-07-28 and the
//! sessionful 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05.
//!
//! # Quick start
//!
//! ```no_run
//! use barrel_mcp::server::{Ctx, Json, Server};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     a: i64,
//!     b: i64,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Sum {
//!     sum: i64,
//! }
//!
//! # async fn run() -> barrel_mcp::Result<()> {
//! let server = Server::builder()
//!     .name("example", "0.1.0")
//!     .tool("add", "Add two integers", |_: Ctx, args: AddArgs| async move {
//!         Ok(Json(Sum { sum: args.a + args.b }))
//!     })
//!     .build()?;
//! server.serve_stdio().await
//! # }
//! ```
//!
//! # Modules
//!
//! | module | what |
//! |---|---|
//! | [`auth`] | who is calling and what they may do: [`auth::AuthInfo`], authenticators (feature `auth`) |
//! | [`client`] | the client: typed calls in every revision, a handler for what servers ask, federation |
//! | [`server`] | the registry, handlers and [`server::Ctx`], served in both protocol eras |
//! | [`skills`] | the skills extension (SEP-2640): serve a folder of skills, load them verified |
//! | [`peer`] | the JSON-RPC engine every role runs on |
//! | [`task`] | the task model (both wire forms) and the task store |
//! | [`transport`] | in-memory, stdio and child-process transports; the HTTP client transports |
//! | `http` | the Streamable HTTP server: an axum router and a listener (feature `http-server`) |
//! | `host` | names, URIs and model API formats for a host over many servers (feature `host`) |
//! | [`types`] | the wire model (`barrel-mcp-types`) |
//!
//! # Features
//!
//! None is on by default: the server, the client, stdio, child processes and the in-memory
//! transport are always built. Each feature only adds API.
//!
//! | feature | adds |
//! |---|---|
//! | `http-server` | `http`: Streamable HTTP (every revision), legacy HTTP+SSE, the listener |
//! | `tls` | `http::serve_tls`: rustls (ring), HTTP/1.1 and HTTP/2 on one port (implies `http-server`) |
//! | `http-client` | `transport::http_client`: Streamable HTTP and legacy HTTP+SSE clients, `http://` |
//! | `http-client-tls` | `https://` for both HTTP clients, with Mozilla's roots (implies `http-client`) |
//! | `auth` | `auth::server`: authenticators, scopes, protected-resource metadata for the HTTP server (implies `http-server`, `http-client-tls`) |
//! | `oauth-client` | `auth::client::oauth`: the OAuth 2.1 client, DPoP, a loopback redirect, a token file (implies `http-client-tls`) |
//! | `host` | `host`: exposed names, namespaced URIs, Anthropic / OpenAI / Gemini tool formats |
//!
//! # Cancel safety
//!
//! [`server::Server::serve`] and [`peer::Peer::request`] may be dropped at any await point:
//! dropping a request sends `notifications/cancelled` for it; dropping `serve` stops the
//! connection and cancels its in-flight handlers.

pub mod auth;
pub mod client;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "host")]
pub mod host;
#[cfg(feature = "http-server")]
pub mod http;
pub mod peer;
pub mod server;
mod shrink;
pub mod skills;
pub mod store;
pub mod task;
pub mod transport;

pub use barrel_mcp_types as types;
pub use error::{Error, HttpError, Result};

/// The README's Rust examples, compiled as doctests so they stay true.
#[cfg(all(doctest, feature = "auth", feature = "oauth-client", feature = "host"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
