//! `barrel-mcp serve` as several nodes on one Redis: a task started on one node is followed
//! on another, a 2026-07-28 `input_required` round trip started on one node completes on
//! another that reads the same key file (and fails on a node without it), and an unreachable
//! Redis ends `serve` with exit code 1 after its 10 s of retries, naming the URL without its
//! password. Uses a real `redis-server` (installed by `scripts/test`) on a free port.
#![cfg(all(feature = "redis", feature = "http-server"))]

use std::io::{BufRead as _, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a node or Redis may take to come up.
const START_WITHIN: Duration = Duration::from_secs(20);

/// A child process killed when dropped, so a failing test leaves nothing behind.
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

/// A directory of this test process for key files and Redis.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("serve-nodes-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A `redis-server` without persistence on a free port; returns it and its URL.
fn start_redis() -> (Reaped, String) {
    let port = free_port();
    let dir = scratch("redis");
    let redis = Reaped(
        Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/test installs it)"),
    );
    let deadline = Instant::now() + START_WITHIN;
    loop {
        let pong = TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_millis(500)))?;
            s.write_all(b"PING\r\n")?;
            let mut answer = [0u8; 5];
            s.read_exact(&mut answer)?;
            Ok(answer == *b"+PONG")
        });
        if pong.unwrap_or(false) {
            return (redis, format!("redis://127.0.0.1:{port}/"));
        }
        assert!(Instant::now() < deadline, "redis-server never answered");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `barrel-mcp serve --http 127.0.0.1:0 ARGS` and waits for its serving line; returns
/// the node, its address, and what it said on stderr before.
fn start_node(args: &[&str]) -> (Reaped, String, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .env_remove("BARREL_MCP_REQUEST_STATE_KEYS")
        .env_remove("BARREL_MCP_REDIS_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the node starts");
    let stderr = child.stderr.take().expect("stderr");
    let node = Reaped(child);
    let (tx, rx) = mpsc::channel();
    // Every line goes to the channel, so the node never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + START_WITHIN;
    let mut before = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("the node never served ({e}); it said {before:?}"));
        if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
            let addr = url
                .trim_start_matches("http://")
                .trim_end_matches("/mcp")
                .to_owned();
            std::thread::spawn(move || rx.iter().for_each(drop));
            return (node, addr, before);
        }
        before.push(line);
    }
}

/// A 2026-07-28 `tools/call` of the demo's `ask_name` POSTed to `addr`, with `extra` params;
/// returns the JSON-RPC response.
fn ask_name(addr: &str, extra: Value) -> Value {
    let mut params = json!({
        "name": "ask_name",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": { "name": "cli-test", "version": "1" }
        }
    });
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let headers = "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
                   Mcp-Name: ask_name\r\n";
    post(addr, headers, &message).2
}

/// A 2025-11-25 message POSTed to `addr` in `session` (none: no `Mcp-Session-Id`); returns
/// the status line, the session id the answer names, and the JSON-RPC response.
fn post_in_session(
    addr: &str,
    session: Option<&str>,
    message: Value,
) -> (String, Option<String>, Value) {
    let session_header = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    let headers = format!("Mcp-Protocol-Version: 2025-11-25\r\n{session_header}");
    post(addr, &headers, &message)
}

/// `message` POSTed to `addr` with the extra `headers` (each line ending in CRLF), over
/// HTTP/1.0 so the answer ends with the connection; returns the status line, the session id
/// the answer names, and the JSON-RPC response: the JSON body, or the SSE data line carrying
/// it (`Null` for an empty body).
fn post(addr: &str, headers: &str, message: &Value) -> (String, Option<String>, Value) {
    let body = message.to_string();
    let mut stream = TcpStream::connect(addr).expect("the node listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    let request = format!(
        "POST /mcp HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("an answer");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not HTTP: {response}"));
    let status = head.lines().next().unwrap_or_default().to_owned();
    let named = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    let json = if body.trim().is_empty() {
        "null".to_owned()
    } else if body.trim_start().starts_with('{') {
        body.to_owned()
    } else {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.contains("\"id\""))
            .unwrap_or_else(|| panic!("no response in {body}"))
            .to_owned()
    };
    let answer = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (status, named, answer)
}

/// Runs a client command of the binary; returns the exit code, stdout and stderr.
fn client(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn two_nodes_share_tasks_in_redis_and_request_state_through_the_key_file() {
    let (_redis, url) = start_redis();
    let keys = scratch("keys").join("request-state-keys");
    std::fs::write(
        &keys,
        "# the fleet's requestState key\nhex:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
    )
    .expect("the key file");
    let keys = keys.to_str().expect("a UTF-8 path");
    let shared = [
        "--redis",
        &url,
        "--redis-prefix",
        "cli-test",
        "--request-state-key-file",
        keys,
    ];
    let (_a, a, said_a) = start_node(&[&shared[..], &["--node-name", "a"]].concat());
    let (_b, b, _) = start_node(&[&shared[..], &["--node-name", "b"]].concat());
    let (_c, c, said_c) = start_node(&["--redis", &url, "--redis-prefix", "cli-test"]);
    let said_a = said_a.join("\n");
    assert!(
        said_a.contains(&format!(
            "node a: tasks and HTTP sessions in Redis at {url} (prefix cli-test"
        )) && said_a.contains("requestState keys "),
        "{said_a}"
    );
    let said_c = said_c.join("\n");
    assert!(
        said_c.contains("warning") && said_c.contains("random key"),
        "node c warns it shares no keys: {said_c}"
    );

    // A task started on A is followed to its end on B.
    let (code, out, err) = client(&[
        "call",
        "countdown",
        r#"{"steps":3}"#,
        "--task",
        "--detach",
        "--json",
        "--url",
        &format!("http://{a}/mcp"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let task: Value = serde_json::from_str(&out).expect("the task as JSON");
    let id = task["taskId"].as_str().expect("a task id");
    let (code, out, err) = client(&["task", id, "--wait", "--url", &format!("http://{b}/mcp")]);
    assert_eq!((code, out.as_str()), (Some(0), "done\n"), "{err}");

    // A session opened on A goes on on B: notifications/initialized and a call there.
    let (status, session, opened) = post_in_session(
        &a,
        None,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "cli-test", "version": "1" } } }),
    );
    assert!(status.contains(" 200 "), "{status}: {opened}");
    let session = session.expect("A names the session");
    let (status, _, _) = post_in_session(
        &b,
        Some(&session),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    );
    assert!(status.contains(" 202 "), "{status}");
    let (status, _, echoed) = post_in_session(
        &b,
        Some(&session),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": { "name": "echo", "arguments": { "message": "from A to B" } } }),
    );
    assert!(status.contains(" 200 "), "{status}: {echoed}");
    assert_eq!(
        echoed["result"]["content"][0]["text"], "from A to B",
        "{echoed}"
    );

    // Round 1 on A, round 2 on B: B opens A's requestState.
    let first = ask_name(&a, json!({}));
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let key = result["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("one input request");
    let retry = json!({
        "inputResponses": { key: { "action": "accept", "content": { "name": "Grace" } } },
        "requestState": result["requestState"],
    });
    let done = ask_name(&b, retry.clone());
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Grace!");
    // C, without the key file, refuses it as a forgery.
    let refused = ask_name(&c, retry);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("integrity check"), "{message}");
}

#[test]
fn an_unreachable_redis_ends_serve_after_10_s_without_showing_the_password() {
    let port = free_port();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--redis"])
        .arg(format!("redis://app:hunter2@127.0.0.1:{port}/"))
        .env_remove("BARREL_MCP_REQUEST_STATE_KEYS")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        (Duration::from_secs(8)..Duration::from_secs(20)).contains(&took),
        "gave up after {took:?}"
    );
    assert!(
        stderr.contains(&format!("redis://app:***@127.0.0.1:{port}/")),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(stderr.contains("refused"), "the reason is given: {stderr}");

    // An invalid URL fails at once, as unhelpful to retry.
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_barrel-mcp"))
        .args(["serve", "--stdio", "--redis", "redis://:hunter2@0.0.0.0:1/"])
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "{stderr}");
    assert!(
        stderr.contains("redis://:***@0.0.0.0:1/") && !stderr.contains("hunter2"),
        "{stderr}"
    );
}
