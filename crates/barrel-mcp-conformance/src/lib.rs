//! The programs the official MCP conformance suite (`@modelcontextprotocol/conformance`) runs
//! against: `conformance-server` serves [`fixture::server`] over Streamable HTTP.
//!
//! Not published; `scripts/conformance` builds and runs it.

pub mod fixture;
