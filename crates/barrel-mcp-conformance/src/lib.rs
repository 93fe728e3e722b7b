//! The programs the official MCP conformance suite (`@modelcontextprotocol/conformance`) runs
//! against: `conformance-server` serves [`fixture::server`] over Streamable HTTP; and the test
//! authorization server ([`auth_server`], `dev-auth-server`) the OAuth tests and the interop
//! runs use; and the round-robin proxy ([`rr_proxy`], `rr-proxy`) the multi-node tests put in
//! front of several servers.
//!
//! Not published; `scripts/conformance` builds and runs it.

pub mod auth_server;
pub mod fixture;
pub mod rr_proxy;
