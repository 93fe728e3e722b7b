//! The Model Context Protocol wire model, with no IO.
//!
//! This crate holds the JSON-RPC 2.0 envelope ([`jsonrpc`]), the protocol revisions and what
//! each one has ([`version`]), and every MCP request, result, notification and data type.
//! The runtime crate `barrel-mcp` moves these types over transports; this crate never touches a
//! socket, a file or a clock.

pub mod jsonrpc;
pub mod version;

pub use jsonrpc::{ErrorCode, ErrorObject, Message, Notification, Request, RequestId, Response};
pub use version::{Feature, ProtocolVersion};
