//! barrel-mcp: the Model Context Protocol toolkit for Rust.
//!
//! One library for the three MCP roles: a server (tools, resources, prompts, completions,
//! logging, progress, cancellation, and asking the client for input), a client and a host. Every
//! protocol revision in use is served from the same API: the stateless 2026-07-28 and the
//! sessionful 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05.

pub mod error;
pub mod peer;
pub mod server;
pub mod transport;

pub use barrel_mcp_types as types;
pub use error::{Error, Result};
