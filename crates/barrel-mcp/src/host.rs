//! The host role (feature `host`): what an LLM application writes around its MCP clients.
//!
//! This first part holds the pieces a host is made of, each usable on its own:
//! - [`names`]: exposed tool and prompt names for many servers, as a table valid for every
//!   model API at once and reversible exactly;
//! - [`uri`]: resource URIs of many servers in one namespace (`prefix+uri`), rewritten wherever
//!   they travel;
//! - [`host::format`](mod@crate::host::format): tool definitions, tool calls and tool results in the formats of Anthropic,
//!   OpenAI (Chat Completions and Responses) and Gemini, each tool's schema shaped into what
//!   the provider takes, with a report of every lossy change and the reverse transform for
//!   the model's arguments ([`format::schema`]).
//!
//! On them: [`Host`], one catalog ([`Catalog`]) over the servers of a
//! [`Clients`](crate::client::Clients) registry, and the routing of a model's tool calls back to
//! them:
//!
//! ```no_run
//! # async fn turn(host: barrel_mcp::host::Host, response: serde_json::Value) -> barrel_mcp::Result<()> {
//! use barrel_mcp::host::format::{self, Provider};
//!
//! let catalog = host.refresh().await?;
//! let tools = format::tools(Provider::Anthropic, &catalog.specs()); // into the request
//! // ... the model answers with `response` ...
//! let calls = format::calls(Provider::Anthropic, &response);
//! let outcomes = host.call_all(&calls).await;
//! let next_messages = format::results(Provider::Anthropic, &outcomes); // into the next request
//! # let _ = (tools, next_messages); Ok(()) }
//! ```

mod catalog;
pub mod format;
pub mod names;
mod routing;
mod sampling;
mod subscription;
pub mod uri;

pub use catalog::{Catalog, CatalogPrompt, CatalogResource, CatalogTool, ServerItems};
pub use routing::{CallFailure, DEFAULT_DEBOUNCE, DEFAULT_LIST_TIMEOUT, Host};
pub use sampling::SamplingHandler;
pub use subscription::HostSubscription;
