//! Hostile HTTP/1.1 input over real sockets: duplicated and conflicting `Host`, `Origin` and
//! `Mcp-Session-Id` headers, non-ASCII and folded header values, a body that stalls, a 1 MiB
//! header value, bodies that are not one JSON-RPC message, and the keep-alive comments an idle
//! SSE stream must carry.
//!
//! Most requests are written byte for byte on a [`TcpStream`], since a well-formed client cannot
//! produce them, and their answers are read back raw. After each hostile input the tests check
//! that no session was created and that the server still serves a valid request.

use std::net::SocketAddr;
use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{TestServer, initialize, session_id};
use crate::support::within;

/// An answer read off a raw socket.
#[derive(Debug)]
struct RawAnswer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl RawAnswer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {}\n{}",
                self.head,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts a JSON-RPC error answer with `status`, `code` and `id`, and no session id.
    fn assert_error(&self, status: u16, code: i64, id: &Value, case: &str) {
        assert_eq!(self.status, status, "{case}: {}", self.head);
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{case}"
        );
        assert!(self.header("mcp-session-id").is_none(), "{case}");
        let answer = self.json();
        assert_eq!(answer["jsonrpc"], "2.0", "{case}: {answer}");
        assert_eq!(&answer["id"], id, "{case}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{case}: {answer}");
    }
}

/// Reads one answer: the head, then as many body bytes as its `Content-Length` names (without
/// one, only what came with the head). `None` when the connection ended (closed or reset)
/// before any byte arrived; an answer cut short inside its head fails the test.
async fn read_answer(stream: &mut TcpStream) -> Option<RawAnswer> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut ended = false;
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no status line: {head}"));
            let mut answer = RawAnswer {
                status,
                head,
                body: buffer[end + 4..].to_vec(),
            };
            let length = answer
                .header("content-length")
                .map(|v| v.parse::<usize>().expect("Content-Length"));
            match length {
                Some(length) if answer.body.len() >= length => {
                    answer.body.truncate(length);
                    return Some(answer);
                }
                // A streamed body (SSE) may never end: the head is enough.
                None => return Some(answer),
                Some(_) if ended => panic!("answer cut short: {answer:?}"),
                Some(_) => {}
            }
        } else if ended {
            assert!(
                buffer.is_empty(),
                "connection ended inside a head: {}",
                String::from_utf8_lossy(&buffer)
            );
            return None;
        }
        match within(stream.read(&mut chunk)).await {
            Ok(0) | Err(_) => ended = true,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Writes `bytes` on a fresh connection and reads the answer.
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Option<RawAnswer> {
    let mut stream = within(TcpStream::connect(addr)).await.expect("connect");
    within(stream.write_all(bytes)).await.expect("write");
    read_answer(&mut stream).await
}

/// A raw HTTP/1.1 request: `target` as written in the request line, then the header `lines`
/// (any bytes), `Connection: close`, a `Content-Length` and the body.
fn raw_request(method: &str, target: &str, lines: &[&[u8]], body: &[u8]) -> Vec<u8> {
    let mut bytes = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"connection: close\r\n");
    bytes.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// POSTs `body` as JSON to `target` with the extra header `lines`; expects an answer.
async fn post_raw(addr: SocketAddr, target: &str, lines: &[&[u8]], body: &[u8]) -> RawAnswer {
    let mut all: Vec<&[u8]> = lines.to_vec();
    all.push(b"content-type: application/json");
    all.push(b"accept: application/json, text/event-stream");
    let request = raw_request("POST", target, &all, body);
    exchange(addr, &request).await.expect("an answer")
}

/// Checks that the server still serves: a fresh client initializes a session.
async fn still_serves(server: &TestServer) {
    let before = server.http.session_count();
    let mut client = server.client();
    let result = client.initialize().await;
    assert!(result["result"]["serverInfo"].is_object(), "{result}");
    assert_eq!(server.http.session_count(), before + 1);
}

/// A request the guard refuses: its name, its request target, its header lines, the status.
type HeaderCase<'a> = (&'a str, String, Vec<&'a [u8]>, u16);

#[tokio::test]
async fn duplicated_conflicting_or_non_ascii_host_and_origin_are_refused() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let host = format!("host: {addr}");
    let host = host.as_bytes();
    let port = addr.port();
    let other_port = format!("host: localhost:{}", port.wrapping_add(1));
    let init = initialize(1).to_string();
    let null = Value::Null;
    // Every refusal comes from the guard, before the body is read: -32600 with a null id.
    let cases: Vec<HeaderCase<'_>> = vec![
        (
            "two Host headers, both loopback",
            "/mcp".into(),
            vec![host, b"host: localhost"],
            400,
        ),
        (
            "two Host headers, the second foreign",
            "/mcp".into(),
            vec![host, b"host: evil.example"],
            400,
        ),
        (
            "two Origin headers, both loopback",
            "/mcp".into(),
            vec![
                host,
                b"origin: http://localhost:3000",
                b"origin: http://127.0.0.1:3000",
            ],
            400,
        ),
        (
            "two Origin headers, the second foreign",
            "/mcp".into(),
            vec![
                host,
                b"origin: http://localhost:3000",
                b"origin: http://evil.example",
            ],
            400,
        ),
        (
            "absolute-form target naming another authority than Host",
            "http://evil.example/mcp".into(),
            vec![b"host: localhost"],
            400,
        ),
        (
            "absolute-form target differing from Host only in the port",
            format!("http://localhost:{port}/mcp"),
            vec![other_port.as_bytes()],
            400,
        ),
        (
            "absolute-form target and Host agreeing on a foreign name",
            "http://evil.example/mcp".into(),
            vec![b"host: evil.example"],
            403,
        ),
        (
            "Host with non-ASCII bytes",
            "/mcp".into(),
            vec![b"host: local\xffhost"],
            400,
        ),
        (
            "Origin with non-ASCII bytes",
            "/mcp".into(),
            vec![host, b"origin: http://local\xe9host:3000"],
            403,
        ),
    ];
    for (case, target, lines, status) in cases {
        let answer = post_raw(addr, &target, &lines, init.as_bytes()).await;
        answer.assert_error(status, -32600, &null, case);
        assert_eq!(server.http.session_count(), 0, "{case}");
    }
    // The same target in absolute form with the Host it names is served.
    let same = format!("http://{addr}/mcp");
    let answer = post_raw(addr, &same, &[host], init.as_bytes()).await;
    assert_eq!(answer.status, 200, "{}", answer.head);
    assert!(answer.header("mcp-session-id").is_some());
    assert_eq!(server.http.session_count(), 1);
    still_serves(&server).await;
}

#[tokio::test]
async fn folded_header_lines_are_refused_by_the_parser() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let host = format!("host: {addr}");
    let init = initialize(1).to_string();
    // obs-fold (RFC 9112 §5.2): a server must refuse it or unfold it; hyper refuses it with a bare
    // 400 of its own (no JSON-RPC body) and closes the connection, before the endpoint runs.
    let folds: [&[&[u8]]; 3] = [
        &[host.as_bytes(), b"x-note: one\r\n two"],
        &[b"host: localhost\r\n :1"],
        &[
            host.as_bytes(),
            b"origin: http://localhost:3000\r\n\thttp://evil.example",
        ],
    ];
    for lines in folds {
        let answer = post_raw(addr, "/mcp", lines, init.as_bytes()).await;
        assert_eq!(answer.status, 400, "{lines:?}: {}", answer.head);
        assert!(answer.body.is_empty(), "{lines:?}");
        assert!(answer.header("mcp-session-id").is_none());
    }
    assert_eq!(server.http.session_count(), 0);
    still_serves(&server).await;
}

/// `Mcp-Session-Id` names one session: a request naming two is ambiguous (an intermediary may
/// route or authorize on one value while the server acts on the other), so it is refused like a
/// duplicated `Host` or `Origin`, whichever value comes first.
#[tokio::test]
async fn two_session_ids_are_refused_on_every_method() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let mut client = server.client();
    client.initialize().await;
    let id = client.session.clone().expect("session id");
    let host = format!("host: {addr}");
    let ours = format!("mcp-session-id: {id}");
    let forged = b"mcp-session-id: 00000000000000000000000000000000";
    let ping = json!({"jsonrpc":"2.0","id":7,"method":"ping"}).to_string();
    let null = Value::Null;
    for (order, lines) in [
        ("ours first", [host.as_bytes(), ours.as_bytes(), forged]),
        ("forged first", [host.as_bytes(), forged, ours.as_bytes()]),
    ] {
        // A POST naming two sessions is ambiguous: refused, not served on either of them.
        let answer = post_raw(addr, "/mcp", &lines, ping.as_bytes()).await;
        answer.assert_error(400, -32600, &null, &format!("POST, {order}"));
        let mut get_lines = lines.to_vec();
        get_lines.push(b"accept: text/event-stream");
        let get = exchange(addr, &raw_request("GET", "/mcp", &get_lines, b""))
            .await
            .expect("an answer");
        get.assert_error(400, -32600, &null, &format!("GET, {order}"));
        // A DELETE naming two sessions must not end the real one.
        let delete = exchange(addr, &raw_request("DELETE", "/mcp", &lines, b""))
            .await
            .expect("an answer");
        delete.assert_error(400, -32600, &null, &format!("DELETE, {order}"));
        assert_eq!(server.http.session_count(), 1, "{order}");
    }
    // The session is alive and still answers with its one id.
    let pong = client.call_json(8, "ping", json!({})).await;
    assert_eq!(pong["id"], 8, "{pong}");
    assert_eq!(server.http.session_count(), 1);
}

#[tokio::test]
async fn a_non_ascii_session_id_is_an_unknown_session() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let mut client = server.client();
    client.initialize().await;
    let host = format!("host: {addr}");
    let ping = json!({"jsonrpc":"2.0","id":7,"method":"ping"}).to_string();
    let answer = post_raw(
        addr,
        "/mcp",
        &[host.as_bytes(), b"mcp-session-id: caf\xe9\xff"],
        ping.as_bytes(),
    )
    .await;
    answer.assert_error(404, -32600, &Value::Null, "non-ASCII Mcp-Session-Id");
    assert_eq!(server.http.session_count(), 1);
    let pong = client.call_json(8, "ping", json!({})).await;
    assert_eq!(pong["id"], 8, "{pong}");
}

#[tokio::test]
async fn a_stalled_body_gets_408_within_the_body_timeout() {
    let config = HttpConfig {
        body_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n",
        server.addr
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(b"{\"jsonrpc\"").await.expect("write");
    let started = tokio::time::Instant::now();
    // The other 90 bytes never come.
    let answer = tokio::time::timeout(Duration::from_secs(1), read_answer(&mut stream))
        .await
        .expect("408 within a second")
        .expect("an answer");
    let elapsed = started.elapsed();
    answer.assert_error(408, -32600, &Value::Null, "stalled body");
    assert!(
        elapsed >= Duration::from_millis(200),
        "answered before the body timeout: {elapsed:?}"
    );
    assert_eq!(server.http.session_count(), 0);
    still_serves(&server).await;
}

#[tokio::test]
async fn a_one_mebibyte_header_value_is_refused_and_the_server_goes_on() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let init = initialize(1).to_string();
    let big = "a".repeat(1024 * 1024);
    for name in ["mcp-session-id", "authorization"] {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             {name}: {big}\r\ncontent-length: {}\r\n\r\n{init}",
            init.len()
        );
        let stream = TcpStream::connect(addr).await.expect("connect");
        let (mut read, mut write) = stream.into_split();
        // The server may stop reading (and close) long before the megabyte is written.
        let writer = tokio::spawn(async move {
            let _ = write.write_all(head.as_bytes()).await;
            write
        });
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match within(read.read(&mut chunk)).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        drop(within(writer).await.expect("writer"));
        // hyper's read buffer (about 400 KiB) overflows inside the head: it answers 431 and
        // closes, or the reset for the unread bytes overtakes its answer. Nothing else.
        let text = String::from_utf8_lossy(&buffer);
        assert!(
            buffer.is_empty() || text.starts_with("HTTP/1.1 431 "),
            "{name}: {text}"
        );
        assert!(!text.contains("mcp-session-id"), "{name}: {text}");
        assert_eq!(server.http.session_count(), 0, "{name}");
    }
    still_serves(&server).await;
}

#[tokio::test]
async fn an_idle_get_stream_carries_keep_alive_comments() {
    let config = HttpConfig {
        keep_alive: Duration::from_millis(100),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut client = server.client();
    client.initialize().await;
    let response = client
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(session_id(response.headers()), client.session);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut raw = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(400);
    while let Ok(frame) = tokio::time::timeout_at(deadline, body.frame()).await {
        let frame = frame.expect("stream ended early").expect("body frame");
        if let Ok(data) = frame.into_data() {
            raw.extend_from_slice(&data);
        }
    }
    let text = String::from_utf8(raw).expect("utf-8");
    // The stream opens with its priming event, then idles: a bare `:` comment every 100 ms.
    assert!(text.starts_with("id: 0.0\nretry: "), "{text:?}");
    let comments = text.lines().filter(|line| line.starts_with(':')).count();
    assert!(
        comments >= 2,
        "{comments} keep-alive comments in 400 ms: {text:?}"
    );
    assert!(
        text.lines()
            .filter(|line| line.starts_with(':'))
            .all(|line| line == ":"),
        "{text:?}"
    );
    assert!(text.contains(":\n\n"), "{text:?}");
}

#[tokio::test]
async fn garbage_bodies_get_400_with_a_null_id() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let host = format!("host: {addr}");
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(initialize(1).to_string().as_bytes());
    let mut trailing_nul = json!({"jsonrpc":"2.0","id":1,"method":"ping"})
        .to_string()
        .into_bytes();
    trailing_nul.push(0);
    let parse = -32700;
    let invalid = -32600;
    let null = Value::Null;
    // (case, body, JSON-RPC code, id)
    let cases: Vec<(&str, Vec<u8>, i64, Value)> = vec![
        ("not JSON", b"dsdfs".to_vec(), parse, null.clone()),
        ("unfinished object", b"{".to_vec(), parse, null.clone()),
        ("empty object", b"{}".to_vec(), invalid, null.clone()),
        ("empty batch", b"[]".to_vec(), invalid, null.clone()),
        ("null", b"null".to_vec(), invalid, null.clone()),
        ("a string", b"\"x\"".to_vec(), invalid, null.clone()),
        ("a number", b"123".to_vec(), invalid, null.clone()),
        ("not UTF-8", b"\xff\xfe".to_vec(), parse, null.clone()),
        // RFC 8259 §8.1 lets a parser refuse a BOM; this one does, so nothing is initialized.
        ("BOM before initialize", bom, parse, null.clone()),
        ("NUL bytes", b"\0\0\0\0".to_vec(), parse, null.clone()),
        ("NUL after a message", trailing_nul, parse, null.clone()),
        (
            "JSON-RPC 1.0",
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.to_vec(),
            invalid,
            // The id was readable, so the error answers it (JSON-RPC 2.0 §5).
            json!(1),
        ),
        ("empty body", Vec::new(), parse, null.clone()),
    ];
    for (case, body, code, id) in cases {
        let answer = post_raw(addr, "/mcp", &[host.as_bytes()], &body).await;
        answer.assert_error(400, code, &id, case);
        assert_eq!(server.http.session_count(), 0, "{case}");
    }
    still_serves(&server).await;
}

/// Request smuggling shapes. A body length given twice with different values is answered 400
/// by the HTTP parser, before the MCP layer sees anything, and no session is made. A length
/// given two ways (`Content-Length` and `Transfer-Encoding`) is read as RFC 9112 §6.3 says
/// (the chunked body wins) and the connection is closed after the answer, so a request hidden
/// after it on the connection is never read.
#[tokio::test]
async fn smuggling_shapes_are_refused_or_closed_off() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    let body = initialize(1).to_string();
    let host = format!("host: {addr}");
    let length = format!("content-length: {}", body.len());
    let other_length = format!("content-length: {}", body.len() + 1);
    let head = |extra: &[&str]| {
        let mut text = format!(
            "POST /mcp HTTP/1.1\r\n{host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n"
        );
        for line in extra {
            text.push_str(line);
            text.push_str("\r\n");
        }
        text.push_str("\r\n");
        text
    };
    let cases: [(&str, String); 2] = [
        (
            "two different Content-Length values",
            head(&[&length, &other_length]) + &body,
        ),
        (
            "a Content-Length list",
            head(&[&format!(
                "content-length: {}, {}",
                body.len(),
                body.len() + 1
            )]) + &body,
        ),
    ];
    for (case, request) in cases {
        let answer = exchange(addr, request.as_bytes()).await;
        let status = answer.as_ref().map_or(0, |a| a.status);
        assert_eq!(status, 400, "{case}: {answer:?}");
        assert_eq!(server.http.session_count(), 0, "{case}");
    }
    // Both ways: a short Content-Length would leave a second request in the body for a proxy
    // that reads it; the server reads the chunks and closes, never reading the rest.
    let hidden = format!(
        "POST /mcp HTTP/1.1\r\n{host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n{hidden}", body.len());
    let request = head(&["content-length: 4", "transfer-encoding: chunked"]) + &chunked;
    let mut stream = within(TcpStream::connect(addr)).await.expect("connect");
    within(stream.write_all(request.as_bytes()))
        .await
        .expect("write");
    let mut all = Vec::new();
    within(stream.read_to_end(&mut all))
        .await
        .expect("the server closes");
    let text = String::from_utf8_lossy(&all);
    assert_eq!(
        text.matches("HTTP/1.1 ").count(),
        1,
        "one answer only: {text}"
    );
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    assert_eq!(
        server.http.session_count(),
        1,
        "the chunked request alone was served"
    );
    still_serves(&server).await;
}
