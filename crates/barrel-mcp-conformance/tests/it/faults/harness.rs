//! The processes of the failure tests and what drives them: a `redis-server` that can be
//! killed, restarted with or without its data, paused and resumed; `conformance-server` nodes,
//! killed when dropped; the proxy in front of them; a small RESP client for Redis commands;
//! and raw HTTP requests sent straight to one node.

use std::future::Future;
use std::io::{BufRead as _, BufReader as StdBufReader};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use barrel_mcp::client::Client;
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport};
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use barrel_mcp_conformance::rr_proxy::{Proxy, Record};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

/// How long Redis or a node may take to come up.
const START_WITHIN: Duration = Duration::from_secs(15);
/// How long one Redis command or one raw HTTP exchange may take.
const EXCHANGE_WITHIN: Duration = Duration::from_secs(5);
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
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A fresh number, unique in this test process.
fn unique() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Sends `signal` (`STOP`, `CONT`, ...) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// A `redis-server` on a free port, saving only when told (`SHUTDOWN SAVE`) into a scratch
/// directory, so it can be restarted on the same port with its data or without.
pub(crate) struct RedisServer {
    process: Option<Reaped>,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    async fn start() -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "faults-{}-{}",
            std::process::id(),
            unique()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let mut redis = Self {
            process: None,
            port: free_port(),
            dir,
        };
        redis.launch().await;
        redis
    }

    /// Starts `redis-server` on the port, loading `dump.rdb` from the directory if there is
    /// one, and waits for its `PONG`.
    async fn launch(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args([
                "--dbfilename",
                "dump.rdb",
                "--maxmemory-policy",
                "noeviction",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/test installs it)");
        self.process = Some(Reaped(child));
        let deadline = Instant::now() + START_WITHIN;
        loop {
            if let Ok(Resp::Simple(pong)) = self.command(&["PING"]).await
                && pong == "PONG"
            {
                return;
            }
            assert!(Instant::now() < deadline, "redis-server never answered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn pid(&self) -> u32 {
        self.process.as_ref().expect("redis runs").0.id()
    }

    /// Kills Redis (SIGKILL: nothing saved) and starts a new one on the same port, empty.
    pub(crate) async fn restart_empty(&mut self) {
        self.process = None;
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.launch().await;
    }

    /// Stops Redis with `SHUTDOWN SAVE` (its data written to `dump.rdb`) and starts a new one
    /// on the same port that loads it.
    pub(crate) async fn restart_with_data(&mut self) {
        // Redis closes the connection instead of answering when the shutdown succeeds.
        let answer = self.command(&["SHUTDOWN", "SAVE"]).await;
        assert!(
            !matches!(answer, Ok(Resp::Error(_))),
            "SHUTDOWN SAVE refused: {answer:?}"
        );
        let mut process = self.process.take().expect("redis runs");
        let deadline = Instant::now() + START_WITHIN;
        while process.0.try_wait().expect("waitable").is_none() {
            assert!(Instant::now() < deadline, "redis-server did not shut down");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            self.dir.join("dump.rdb").exists(),
            "SHUTDOWN SAVE wrote no dump"
        );
        self.launch().await;
    }

    /// Stops the Redis process (SIGSTOP): connections stay open, nothing is answered.
    pub(crate) fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    /// Resumes it (SIGCONT).
    pub(crate) fn resume(&self) {
        signal(self.pid(), "CONT");
    }

    /// One command on a connection of its own.
    pub(crate) async fn command(&self, args: &[&str]) -> std::io::Result<Resp> {
        tokio::time::timeout(EXCHANGE_WITHIN, command(self.port, args))
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    }

    /// Every key under `prefix:` (`SCAN`), sorted.
    pub(crate) async fn keys(&self, prefix: &str) -> Vec<String> {
        let pattern = format!("{prefix}:*");
        let mut cursor = "0".to_owned();
        let mut keys = Vec::new();
        loop {
            let answer = self
                .command(&["SCAN", &cursor, "MATCH", &pattern, "COUNT", "1000"])
                .await
                .expect("SCAN answered");
            let Resp::Array(Some(parts)) = answer else {
                panic!("SCAN: {answer:?}")
            };
            let [Resp::Bulk(Some(next)), Resp::Array(Some(found))] = parts.as_slice() else {
                panic!("SCAN: {parts:?}")
            };
            keys.extend(found.iter().filter_map(|key| match key {
                Resp::Bulk(Some(key)) => Some(key.clone()),
                _ => None,
            }));
            if next == "0" {
                break;
            }
            cursor.clone_from(next);
        }
        keys.sort();
        keys
    }
}

/// A RESP reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<String>),
    Array(Option<Vec<Resp>>),
}

async fn command(port: u16, args: &[&str]) -> std::io::Result<Resp> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes()).await?;
    read_reply(&mut BufReader::new(stream)).await
}

fn read_reply(
    reader: &mut BufReader<TcpStream>,
) -> Pin<Box<dyn Future<Output = std::io::Result<Resp>> + Send + '_>> {
    Box::pin(async move {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches("\r\n");
        let (kind, rest) = line.split_at(1.min(line.len()));
        let number = || {
            rest.parse::<i64>()
                .map_err(|_| std::io::Error::other(format!("not RESP: {line:?}")))
        };
        Ok(match kind {
            "+" => Resp::Simple(rest.to_owned()),
            "-" => Resp::Error(rest.to_owned()),
            ":" => Resp::Int(number()?),
            "$" => match usize::try_from(number()?) {
                Err(_) => Resp::Bulk(None),
                Ok(len) => {
                    let mut data = vec![0; len + 2];
                    reader.read_exact(&mut data).await?;
                    data.truncate(len);
                    Resp::Bulk(Some(String::from_utf8_lossy(&data).into_owned()))
                }
            },
            "*" => match usize::try_from(number()?) {
                Err(_) => Resp::Array(None),
                Ok(len) => {
                    let mut items = Vec::with_capacity(len);
                    for _ in 0..len {
                        items.push(read_reply(reader).await?);
                    }
                    Resp::Array(Some(items))
                }
            },
            _ => return Err(std::io::Error::other(format!("not RESP: {line:?}"))),
        })
    })
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
        let pid = self.process.as_ref().expect("the node runs").0.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("procfs");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
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
