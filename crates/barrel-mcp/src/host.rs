//! The host role (feature `host`): what an LLM application writes around its MCP clients.
//!
//! This first part holds the pieces a host is made of, each usable on its own:
//! - [`names`]: exposed tool and prompt names for many servers, as a table valid for every
//!   model API at once and reversible exactly;
//! - [`uri`]: resource URIs of many servers in one namespace (`prefix+uri`), rewritten wherever
//!   they travel;
//! - [`host::format`](mod@crate::host::format): tool definitions, tool calls and tool results in the formats of Anthropic,
//!   OpenAI (Chat Completions and Responses) and Gemini.
//!
//! The `Host` over a set of supervised clients (one catalog, routing, health) builds on them.

pub mod format;
pub mod names;
pub mod uri;
