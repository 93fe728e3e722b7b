//! The integration tests of barrel-mcp, in one binary.
//!
//! `support` holds the shared helpers: a step timeout, a scriptable handler, and drivers that
//! speak raw JSON lines or raw messages to a peer under test, and (feature `redis`) a real
//! `redis-server`. `task_store` runs one store suite against every task store.

mod bus;
mod client;
mod doc_examples;
mod event_store;
mod example_headers;
#[cfg(feature = "host")]
mod host;
#[cfg(feature = "http-server")]
mod http;
mod peer;
mod readme_server;
mod server;
mod session_store;
mod skills;
mod source_rules;
mod support;
mod task_store;
