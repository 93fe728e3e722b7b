//! The MCP messages the benchmark sends, and checks of the replies.
//!
//! Sessionful requests speak `2025-11-25`, the newest revision every peer accepts through
//! `initialize`; stateless ones speak `2026-07-28` with the per-request `_meta` envelope and the
//! `Mcp-Method`/`Mcp-Name` headers; sessionless ones speak `2025-11-25` with neither a session
//! nor an `initialize` first, to a server that serves that revision without sessions.

use std::fmt::Write as _;

use crate::http::{Conn, Response, Target, find};

/// The revision negotiated by `initialize`.
pub const SESSION_VERSION: &str = "2025-11-25";
/// The stateless revision.
pub const STATELESS_VERSION: &str = "2026-07-28";
/// What the echo tool is asked to send back; a reply without it is an error.
pub const MESSAGE: &str = "hello-bench";

/// How requests are sent: inside a session, or stateless with the per-request envelope, or
/// stateless as a task of the tasks extension (`echo_task`: the call, then `tasks/get` until
/// the task is completed, is one operation), or in `2025-11-25` without a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Session,
    Stateless,
    Task,
    Sessionless,
}

/// The `tasks/get` polls one task operation may make before it counts as an error.
const MAX_TASK_POLLS: u32 = 1_000;

/// Everything needed to build requests for one server.
#[derive(Clone, Debug)]
pub struct Client {
    pub target: Target,
    pub accept: String,
    /// Sent with every request (`Authorization` for the authenticated cases).
    pub headers: Vec<(String, String)>,
}

impl Client {
    fn post(&self, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
        let mut req = String::with_capacity(256 + body.len());
        let _ = write!(
            req,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {}\r\nContent-Length: {}\r\n",
            self.target.path,
            self.target.authority,
            self.accept,
            body.len()
        );
        let fixed = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        for (name, value) in extra.iter().copied().chain(fixed) {
            let _ = write!(req, "{name}: {value}\r\n");
        }
        req.push_str("\r\n");
        req.push_str(body);
        req.into_bytes()
    }

    /// `initialize` then `notifications/initialized`; returns the session id.
    pub async fn open_session(&self, conn: &mut Conn) -> Result<String, String> {
        let reply = conn
            .roundtrip(&self.post(&[], &initialize_body()))
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        if reply.status != 200 || find(&reply.body, b"\"result\"").is_none() {
            return Err(format!("initialize: {}", describe(&reply)));
        }
        let session = reply
            .session
            .ok_or_else(|| "initialize: no Mcp-Session-Id in the reply".to_owned())?;
        let headers = [
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", SESSION_VERSION),
        ];
        let reply = conn
            .roundtrip(&self.post(&headers, INITIALIZED))
            .await
            .map_err(|e| format!("initialized: {e}"))?;
        if !(200..300).contains(&reply.status) {
            return Err(format!("initialized: {}", describe(&reply)));
        }
        Ok(session)
    }

    /// Ends a session with DELETE.
    pub async fn close_session(&self, conn: &mut Conn, session: &str) -> Result<(), String> {
        let mut req = format!(
            "DELETE {} HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: {SESSION_VERSION}\r\n",
            self.target.path, self.target.authority
        );
        for (name, value) in &self.headers {
            let _ = write!(req, "{name}: {value}\r\n");
        }
        req.push_str("\r\n");
        let reply = conn
            .roundtrip(req.as_bytes())
            .await
            .map_err(|e| format!("DELETE: {e}"))?;
        if !(200..300).contains(&reply.status) {
            return Err(format!("DELETE: {}", describe(&reply)));
        }
        Ok(())
    }

    /// A stateless request of the tasks extension (the extension declared).
    fn task_request(&self, id: u64, method: &str, name: &str, params: &str) -> Vec<u8> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{STATELESS_VERSION}","io.modelcontextprotocol/clientCapabilities":{{"extensions":{{"io.modelcontextprotocol/tasks":{{}}}}}},"io.modelcontextprotocol/clientInfo":{{"name":"loadgen","version":"0.0.0"}}}}}}}}"#
        );
        let headers = [
            ("MCP-Protocol-Version", STATELESS_VERSION),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ];
        self.post(&headers, &body)
    }

    /// `echo_task` as a task, then `tasks/get` until it is completed with the echo inline.
    async fn call_task(&self, conn: &mut Conn, id: u64) -> Result<bool, String> {
        let params = format!(r#""name":"echo_task","arguments":{{"message":"{MESSAGE}"}}"#);
        let created = conn
            .roundtrip(&self.task_request(id, "tools/call", "echo_task", &params))
            .await
            .map_err(|e| e.to_string())?;
        let task_id = (created.status == 200)
            .then(|| string_member(&created.body, b"\"taskId\":\""))
            .flatten()
            .ok_or_else(|| format!("no task: {}", describe(&created)))?;
        let params = format!(r#""taskId":"{task_id}""#);
        for _ in 0..MAX_TASK_POLLS {
            let got = conn
                .roundtrip(&self.task_request(id, "tasks/get", &task_id, &params))
                .await
                .map_err(|e| e.to_string())?;
            if got.status != 200 || find(&got.body, b"\"error\"").is_some() {
                return Err(describe(&got));
            }
            if find(&got.body, b"\"status\":\"completed\"").is_some() {
                return if find(&got.body, MESSAGE.as_bytes()).is_some() {
                    Ok(got.is_sse())
                } else {
                    Err(describe(&got))
                };
            }
        }
        Err(format!(
            "task {task_id} did not complete in {MAX_TASK_POLLS} polls"
        ))
    }

    /// One `tools/call` of `echo`, checked; returns whether the reply was an SSE stream.
    pub async fn call(
        &self,
        conn: &mut Conn,
        mode: Mode,
        session: Option<&str>,
        id: u64,
    ) -> Result<bool, String> {
        if mode == Mode::Task {
            return self.call_task(conn, id).await;
        }
        let request = match (session, mode) {
            (Some(session), _) => {
                let headers = [
                    ("Mcp-Session-Id", session),
                    ("MCP-Protocol-Version", SESSION_VERSION),
                ];
                self.post(&headers, &call_body(id))
            }
            (None, Mode::Sessionless) => {
                self.post(&[("MCP-Protocol-Version", SESSION_VERSION)], &call_body(id))
            }
            (None, _) => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{MESSAGE}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{STATELESS_VERSION}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"loadgen","version":"0.0.0"}}}}}}}}"#
                );
                let headers = [
                    ("MCP-Protocol-Version", STATELESS_VERSION),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "echo"),
                ];
                self.post(&headers, &body)
            }
        };
        let reply = conn.roundtrip(&request).await.map_err(|e| e.to_string())?;
        if reply.status == 200 && is_echo(&reply.body) {
            Ok(reply.is_sse())
        } else {
            Err(describe(&reply))
        }
    }
}

/// A `tools/call` of `echo` in a sessionful revision (no `_meta` envelope).
pub fn call_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{MESSAGE}"}}}}}}"#
    )
}

/// `initialize` in [`SESSION_VERSION`], with id 0.
pub fn initialize_body() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{SESSION_VERSION}","capabilities":{{}},"clientInfo":{{"name":"loadgen","version":"0.0.0"}}}}}}"#
    )
}

/// `notifications/initialized`.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// True when `reply` is the successful answer of an echo call: a `result` carrying the echoed
/// text, not flagged as an error.
pub fn is_echo(reply: &[u8]) -> bool {
    find(reply, b"\"result\"").is_some()
        && find(reply, MESSAGE.as_bytes()).is_some()
        && find(reply, b"\"isError\":true").is_none()
}

/// The JSON string that follows `prefix` in `body` (no escapes: ids are base64url).
fn string_member(body: &[u8], prefix: &[u8]) -> Option<String> {
    let start = find(body, prefix)? + prefix.len();
    let len = body[start..].iter().position(|&b| b == b'"')?;
    String::from_utf8(body[start..start + len].to_vec()).ok()
}

fn describe(reply: &Response) -> String {
    let body = String::from_utf8_lossy(&reply.body);
    let body: String = body.chars().take(300).collect();
    format!("HTTP {} {}: {body}", reply.status, reply.content_type)
}
