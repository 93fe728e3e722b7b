//! The request log: one [`Record`] per request, written as one JSON line (a single `write` on a
//! file opened for appending, so lines never interleave) when the response head is known, which
//! for a stream is before its body ends.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LogTo;

/// One proxied request, as logged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The request's sequence number, from 1, in arrival order across all connections.
    pub n: u64,
    /// The index (from 0, in `--backend` order) of the backend that answered, or had the
    /// request when it failed or the client went away; `null` when none did (413, 408, 400, or
    /// 502 when every backend refused).
    pub backend: Option<usize>,
    /// Backends that refused the connection and were skipped, in the order tried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<usize>,
    /// The HTTP method.
    pub method: String,
    /// The request path (without the query).
    pub path: String,
    /// The request's `Mcp-Session-Id` header.
    pub session: Option<String>,
    /// The response's `Mcp-Session-Id` header (an `initialize` that created a session).
    pub new_session: Option<String>,
    /// The JSON-RPC `method` of a POST body that parses as JSON (a batch: its first item);
    /// `null` for a response (an answer to a server-to-client request) or another body.
    pub rpc_method: Option<String>,
    /// The JSON-RPC `id` likewise: a request's, or the id a response answers.
    pub rpc_id: Option<Value>,
    /// The response status sent to the client; 499 when the client went away before the
    /// response head.
    pub status: u16,
    /// Why the proxy answered itself (413, 408, 400, 502), or why nothing was sent (499).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Record {
    /// Parses one log line.
    pub fn parse_line(line: &str) -> serde_json::Result<Self> {
        serde_json::from_str(line)
    }
}

/// Reads a log file written by `rr-proxy --log FILE`: one record per non-empty line.
pub fn read_log(path: &Path) -> anyhow::Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the proxy log {}", path.display()))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| Record::parse_line(line).with_context(|| format!("a proxy log line: {line:?}")))
        .collect()
}

/// Where the records go.
#[derive(Debug)]
enum Sink {
    Stderr,
    File(File),
    Memory(Vec<Record>),
}

/// The proxy's log, shared by every connection.
#[derive(Debug)]
pub(crate) struct Log(Mutex<Sink>);

impl Log {
    pub(crate) fn open(to: &LogTo) -> anyhow::Result<Self> {
        let sink = match to {
            LogTo::Stderr => Sink::Stderr,
            LogTo::Memory => Sink::Memory(Vec::new()),
            LogTo::File(path) => Sink::File(
                File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening the log file {}", path.display()))?,
            ),
        };
        Ok(Self(Mutex::new(sink)))
    }

    /// Writes one record. A failed write is dropped: the log must never fail a request.
    pub(crate) fn write(&self, record: Record) {
        let mut sink = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *sink {
            Sink::Memory(records) => records.push(record),
            Sink::Stderr => {
                if let Some(line) = line(&record) {
                    let _ = std::io::stderr().lock().write_all(line.as_bytes());
                }
            }
            Sink::File(file) => {
                if let Some(line) = line(&record) {
                    let _ = file.write_all(line.as_bytes());
                }
            }
        }
    }

    pub(crate) fn records(&self) -> Vec<Record> {
        match &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            Sink::Memory(records) => records.clone(),
            Sink::Stderr | Sink::File(_) => Vec::new(),
        }
    }
}

/// A record as one JSON line, newline included.
fn line(record: &Record) -> Option<String> {
    let mut line = serde_json::to_string(record).ok()?;
    line.push('\n');
    Some(line)
}

/// The JSON-RPC `method` and `id` of a body, when it parses: an object, or a batch's first
/// item. A `method` that is not a string is left out; so is an `id` of `null`.
pub(crate) fn peek_json_rpc(body: &[u8]) -> (Option<String>, Option<Value>) {
    #[derive(Deserialize)]
    struct Message {
        #[serde(default)]
        method: Option<Value>,
        #[serde(default)]
        id: Option<Value>,
    }
    let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
    let message = match first {
        Some(b'{') => serde_json::from_slice::<Message>(body).ok(),
        Some(b'[') => serde_json::from_slice::<Vec<Message>>(body)
            .ok()
            .and_then(|batch| batch.into_iter().next()),
        _ => None,
    };
    match message {
        Some(Message { method, id }) => (
            method.and_then(|method| method.as_str().map(str::to_owned)),
            id.filter(|id| !id.is_null()),
        ),
        None => (None, None),
    }
}
