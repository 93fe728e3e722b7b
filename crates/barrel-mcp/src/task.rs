//! Tasks: long-running operations a requestor polls instead of waiting on, in one model
//! spoken in both wire forms (the 2025-11-25 core tasks, and the 2026-07-28
//! `io.modelcontextprotocol/tasks` extension).
//!
//! This part holds the model and its storage:
//! - [`TaskRecord`]: one task, its state machine (terminal states never change), and its wire
//!   fields in each era (`Task` with `ttl`/`pollInterval`; the extension's `ttlMs`,
//!   `pollIntervalMs`, and the `DetailedTask` with the result, error or questions inline);
//! - [`TaskStore`]: where tasks live, with [`MemoryTaskStore`] as the default and
//!   [`TaskLimits`] (per-owner and total caps, TTL bounds, the poll interval); with feature
//!   `redis`, `RedisTaskStore` shares them between server processes;
//! - the runner's lease: the server that runs a task's work renews the task's lease
//!   ([`TaskStore::renew`], every third of [`TaskLimits::lease`]); any read of a task not
//!   finished whose lease ran out fails it first (-32603, [`RUNNER_STOPPED`]), so a task whose
//!   node died is seen failed on every node instead of working until its TTL;
//! - [`new_task_id`]: unguessable ids (192 random bits, base64url: they act as bearer handles);
//! - the receiver's answers to `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`
//!   over a store, shared by the server and the client (crate-private).
//!
//! A task is visible only to the owner that created it and only in its era; anyone else gets
//! "unknown task" (-32602), exactly as for an id that never existed.

mod record;
pub(crate) mod serve;
mod store;
mod time;

pub use record::{Era, RUNNER_STOPPED, Refused, TaskOutcome, TaskRecord};
#[cfg(feature = "redis")]
pub use store::RedisTaskStore;
pub use store::{MemoryTaskStore, StoreRefusal, TaskChange, TaskLimits, TaskStore, cursor_after};
pub use time::rfc3339;

use base64::Engine as _;

/// The identifier of the 2026-07-28 tasks extension, declared under `capabilities.extensions`
/// by a client and a server that speak it.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A fresh task id: 192 bits from the operating system, base64url (32 characters, valid in an
/// `Mcp-Name` header).
pub fn new_task_id() -> Result<String, crate::Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)
        .map_err(|e| crate::Error::Protocol(format!("no randomness for a task id: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}
