//! The service of the failure tests: Redis (`redis_server`), two `conformance-server` nodes,
//! killed when dropped, and the proxy in front of them; the client; and raw HTTP requests sent
//! straight to one node.

use std::future::Future;
use std::io::{BufRead as _, BufReader as StdBufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use barrel_mcp::client::Client;
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport};
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use barrel_mcp_conformance::rr_proxy::{Proxy, Record};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use super::redis_server::RedisServer;

/// How long Redis or a node may take to come up.
pub(super) const START_WITHIN: Duration = Duration::from_secs(15);
/// How long one Redis command or one raw HTTP exchange may take.
pub(super) const EXCHANGE_WITHIN: Duration = Duration::from_secs(5);
/// The `requestState` key every node of a service shares.
const STATE_KEY: &str = "hex:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
/// The answer of `test_simple_text`.
pub(crate) const SIMPLE_TEXT: &str = "This is a simple text response for testing.";

/// Runs `test`, failing it if it takes longer than `limit`.
pub(crate) async fn within<T>(limit: Duration, test: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, test)
        .await
        .unwrap_or_else(|_| panic!("the test did not finish within {limit:?}"))
}

/// `test_simple_text`.
pub(crate) fn simple() -> CallToolParams {
    CallToolParams::new("test_simple_text")
}

/// `slow_compute` for `seconds`.
pub(crate) fn slow(seconds: f64) -> CallToolParams {
    CallToolParams::new("slow_compute").with_arguments(
        serde_json::json!({ "seconds": seconds })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

/// A child process killed (SIGKILL, which also ends a stopped one) when dropped.
pub(super) struct Reaped(pub(super) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A fresh number, unique in this test process.
pub(super) fn unique() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One `conformance-server` process on Redis, killed when dropped; what it writes to stderr
/// is kept for failure messages.
pub(crate) struct Node {
    process: Option<Reaped>,
    port: u16,
    said: Arc<Mutex<Vec<String>>>,
}

impl Node {
    /// Starts a node and waits until it serves. `knobs` are extra environment variables.
    async fn start(redis: &str, prefix: &str, knobs: &[(&str, &str)]) -> Self {
        // A port found free may be taken before the node binds it: then try another.
        for _ in 0..3 {
            let port = free_port();
            let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
                .env("PORT", port.to_string())
                .env("REDIS_URL", redis)
                .env("REDIS_PREFIX", prefix)
                .env("BARREL_MCP_REQUEST_STATE_KEYS", STATE_KEY)
                .env("RUST_LOG", "warn")
                .env_remove("TASK_LEASE_MS")
                .env_remove("SESSION_IDLE_MS")
                .env_remove("FINISHED_STREAM_MS")
                .envs(knobs.iter().copied())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the node starts");
            let stderr = child.stderr.take().expect("stderr");
            let said = Arc::new(Mutex::new(Vec::new()));
            let lines = Arc::clone(&said);
            // Every line is read, so the node never blocks on a full pipe.
            std::thread::spawn(move || {
                for line in StdBufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    lines
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(line);
                }
            });
            let mut node = Self {
                process: Some(Reaped(child)),
                port,
                said,
            };
            let deadline = Instant::now() + START_WITHIN;
            loop {
                if node.said().contains("serving http://") {
                    return node;
                }
                if node.has_exited() {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the node never served; it said {}",
                    node.said()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                node.said().contains("binding"),
                "the node stopped: {}",
                node.said()
            );
        }
        panic!("no free port for a node in three tries");
    }

    /// What the node wrote to stderr so far.
    pub(crate) fn said(&self) -> String {
        self.said
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("\n")
    }

    fn has_exited(&mut self) -> bool {
        self.process
            .as_mut()
            .is_none_or(|p| p.0.try_wait().ok().flatten().is_some())
    }

    /// True while the process runs.
    pub(crate) fn is_running(&mut self) -> bool {
        !self.has_exited()
    }

    /// Kills the node (SIGKILL: no graceful stop, its Redis keys stay until they expire).
    pub(crate) fn kill(&mut self) {
        self.process = None;
    }

    /// Its port on 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Its resident set (`VmRSS` of /proc/PID/status), in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// Its resident anonymous memory (`RssAnon`: the heap and stacks, not the pages of its
    /// binary), in KiB.
    pub(crate) fn anonymous_kib(&self) -> u64 {
        self.status_kib("RssAnon:")
    }

    /// A field of /proc/PID/status counted in kB.
    fn status_kib(&self, field: &str) -> u64 {
        let pid = self.process.as_ref().expect("the node runs").0.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("procfs");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/PID/status"))
    }
}

/// Redis, two nodes on it (node `i` is the proxy's backend `i`), and the proxy in front.
/// Dropped in that order: the proxy, the nodes, Redis.
pub(crate) struct Service {
    pub(crate) proxy: Proxy,
    pub(crate) nodes: Vec<Node>,
    pub(crate) redis: RedisServer,
    pub(crate) prefix: String,
}

impl Service {
    /// A service whose nodes get the extra environment `knobs`.
    pub(crate) async fn start(knobs: &[(&str, &str)]) -> Self {
        let redis = RedisServer::start().await;
        let prefix = format!("faults{}x{}", std::process::id(), unique());
        let mut nodes = Vec::new();
        for _ in 0..2 {
            nodes.push(Node::start(&redis.url(), &prefix, knobs).await);
        }
        let backends: Vec<String> = nodes
            .iter()
            .map(|node| format!("http://127.0.0.1:{}", node.port))
            .collect();
        let proxy = crate::rr_proxy::proxy(&backends).await;
        Self {
            proxy,
            nodes,
            redis,
            prefix,
        }
    }

    /// A client through the proxy, pinned to 2025-11-25.
    pub(crate) async fn connect(&self) -> Client {
        self.connect_with(HttpClientConfig::default()).await
    }

    /// A client through the proxy, pinned to 2025-11-25, its transport configured so.
    pub(crate) async fn connect_with(&self, config: HttpClientConfig) -> Client {
        let url = format!("{}/mcp", self.proxy.url());
        let transport = HttpClientTransport::new(&url)
            .expect("transport")
            .config(config);
        Client::builder()
            .pin(ProtocolVersion::V2025_11_25)
            .connect_http(transport)
            .await
            .expect("initialize through the proxy")
    }

    /// The proxy's records, in arrival order.
    pub(crate) fn records(&self) -> Vec<Record> {
        let mut records = self.proxy.records();
        records.sort_by_key(|record| record.n);
        records
    }

    /// How many `initialize` requests went through the proxy.
    pub(crate) fn initializes(&self) -> usize {
        self.records()
            .iter()
            .filter(|r| r.rpc_method.as_deref() == Some("initialize"))
            .count()
    }

    /// The session the first `initialize` opened.
    pub(crate) fn first_session(&self) -> String {
        self.records()
            .iter()
            .find_map(|r| r.new_session.clone())
            .expect("a session was opened")
    }

    /// What every node said, for failure messages.
    pub(crate) fn said(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, node)| format!("node {i}:\n{}", node.said()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Sends one HTTP/1.1 request (closing the connection) straight to the node on `port`, in
/// `session`, with `body` as JSON; returns the response status (the head is all that is read).
pub(crate) async fn raw_status(
    port: u16,
    method: &str,
    session: &str,
    body: Option<&Value>,
) -> u16 {
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).await?;
        std::io::Result::Ok(status)
    };
    let status = tokio::time::timeout(EXCHANGE_WITHIN, exchange)
        .await
        .expect("the node answered in time")
        .expect("the node answered");
    status
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status:?}"))
}
