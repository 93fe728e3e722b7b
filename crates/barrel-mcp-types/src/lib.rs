//! The Model Context Protocol wire model, with no IO.
//!
//! This crate holds the JSON-RPC 2.0 envelope ([`jsonrpc`]), the protocol revisions and what
//! each one has ([`version`]), and every MCP request, result, notification and data type.
//! The runtime crate `barrel-mcp` moves these types over transports; this crate never touches a
//! socket, a file or a clock.
//!
//! The types hold the union of every revision from 2024-11-05 to 2026-07-28. Method names and the
//! typed method markers live in [`method`]; [`shape::Shape`] removes from a value what an older
//! revision lacks before it is sent.
//!
//! ```
//! use barrel_mcp_types::{CallToolResult, ProtocolVersion, Shape, Tool};
//!
//! let tool = Tool::new("add", Tool::empty_input_schema()).with_title("Add two numbers");
//! let old = tool.clone().shaped(ProtocolVersion::V2025_03_26);
//! assert_eq!(old.title, None);
//! let result = CallToolResult::text("3");
//! assert_eq!(serde_json::to_value(&result).unwrap()["content"][0]["text"], "3");
//! ```

pub mod completion;
pub mod content;
pub mod elicitation;
pub mod header_params;
pub mod jsonrpc;
pub mod lifecycle;
pub mod listen;
pub mod logging;
pub mod meta;
pub mod method;
pub mod mrtr;
pub mod progress;
pub mod prompts;
pub mod replay;
pub mod resources;
pub mod roots;
pub mod sampling;
pub mod shape;
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod version;

pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use jsonrpc::{
    ErrorCode, ErrorObject, Message, Notification, Payload, Request, RequestId, Response,
};
pub use lifecycle::*;
pub use listen::*;
pub use logging::*;
pub use meta::{JsonObject, Meta};
pub use method::{NotificationMethod, RequestMethod};
pub use mrtr::*;
pub use progress::*;
pub use prompts::*;
pub use replay::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use shape::Shape;
pub use tasks::*;
pub use tools::*;
pub use version::{Feature, ProtocolVersion};
