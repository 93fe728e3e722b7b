//! The round-robin proxy (`rr_proxy`, `rr-proxy`): alternation per request on one keep-alive
//! connection; SSE streamed through before the backend ends it; a refusing backend skipped and
//! 502 when all refuse; the request log (session, JSON-RPC method and id; 499 for a client that
//! left); headers and status copied except hop-by-hop ones, `Host` kept; the body cap and
//! timeout; a real barrel-mcp session through it; and the binary's command line.

mod backend;

use std::time::Duration;

use barrel_mcp::client::Client;
use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use barrel_mcp_conformance::rr_proxy::{Config, LogTo, Proxy, Record, read_log};
use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt as _, Full};
use serde_json::json;

use self::backend::{Backend, DeadPort, KillOnDrop, OneConnection, request, text, within};

/// A proxy on a free loopback port in front of `backends`, logging to memory.
async fn proxy(backends: &[String]) -> Proxy {
    proxy_with(backends, |_| {}).await
}

async fn proxy_with(backends: &[String], adjust: impl FnOnce(&mut Config)) -> Proxy {
    let backends = backends
        .iter()
        .map(|url| Config::backend(url).expect("a backend URL"))
        .collect();
    let mut config = Config::new("127.0.0.1:0".parse().expect("addr"), backends);
    config.log = LogTo::Memory;
    adjust(&mut config);
    Proxy::start(config).await.expect("the proxy starts")
}

fn backends_of(records: &[Record]) -> Vec<Option<usize>> {
    let mut records = records.to_vec();
    records.sort_by_key(|record| record.n);
    records.iter().map(|record| record.backend).collect()
}

#[tokio::test]
async fn requests_alternate_across_backends_on_one_keep_alive_connection() {
    within(async {
        let (a, b) = (Backend::start("A").await, Backend::start("B").await);
        let proxy = proxy(&[a.url(), b.url()]).await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        let methods = ["GET", "POST", "DELETE", "POST", "GET", "DELETE"];
        let mut answers = Vec::new();
        for (i, method) in methods.iter().enumerate() {
            let (status, body) = connection
                .call(request(method, &format!("/r{i}"), ""))
                .await;
            assert_eq!(status, 200);
            answers.push(body);
        }
        assert_eq!(answers, ["A", "B", "A", "B", "A", "B"]);
        let paths = |backend: &Backend| -> Vec<(String, String)> {
            backend
                .seen()
                .into_iter()
                .map(|seen| (seen.method, seen.target))
                .collect()
        };
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
                .collect()
        };
        assert_eq!(
            paths(&a),
            pairs(&[("GET", "/r0"), ("DELETE", "/r2"), ("GET", "/r4")])
        );
        assert_eq!(
            paths(&b),
            pairs(&[("POST", "/r1"), ("POST", "/r3"), ("DELETE", "/r5")])
        );

        // The turn is the proxy's, not the connection's: a second connection takes the next.
        let mut other = OneConnection::open(proxy.addr()).await;
        assert_eq!(other.call(request("GET", "/x", "")).await.1, "A");
        assert_eq!(connection.call(request("GET", "/y", "")).await.1, "B");

        let records = proxy.records();
        assert_eq!(
            backends_of(&records),
            [0, 1, 0, 1, 0, 1, 0, 1].map(Some).to_vec()
        );
        assert!(records.iter().all(|record| record.skipped.is_empty()));
    })
    .await;
}

#[tokio::test]
async fn an_sse_response_streams_through_before_the_backend_ends_it() {
    within(async {
        let backend = Backend::start("A").await;
        let proxy = proxy(&[backend.url()]).await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        let response = connection.send(request("GET", "/sse", "")).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert_eq!(response.headers()["cache-control"], "no-cache");
        let mut body = response.into_body();

        // The first event arrives while the backend still holds the stream open.
        let first = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("the first event arrives before the backend ends the stream")
            .expect("a frame")
            .expect("no error")
            .into_data()
            .expect("data");
        assert_eq!(first, Bytes::from("data: 1\n\n"));
        let nothing_yet = tokio::time::timeout(Duration::from_millis(200), body.frame()).await;
        assert!(nothing_yet.is_err(), "the stream is still open");
        // The request is logged once its response head is known, not when the stream ends.
        let records = proxy.records();
        assert_eq!(records.len(), 1);
        assert_eq!((records[0].backend, records[0].status), (Some(0), 200));

        backend.release();
        let rest = body.collect().await.expect("the rest").to_bytes();
        assert_eq!(rest, Bytes::from("data: 2\n\n"));
    })
    .await;
}

#[tokio::test]
async fn a_refusing_backend_is_skipped_and_the_request_still_served() {
    within(async {
        let live = Backend::start("live").await;
        let dead = DeadPort::new();
        let proxy = proxy(&[dead.url.clone(), live.url()]).await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        for id in 1..=4 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let (status, answer) = connection.call(request("POST", "/mcp", &body)).await;
            assert_eq!((status.as_u16(), answer.as_str()), (200, "live"));
        }
        // Each request reached the live backend exactly once, body intact.
        let bodies: Vec<Bytes> = live.seen().into_iter().map(|seen| seen.body).collect();
        let expected: Vec<Bytes> = (1..=4)
            .map(|id| Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)))
            .collect();
        assert_eq!(bodies, expected);
        let mut records = proxy.records();
        records.sort_by_key(|record| record.n);
        // Odd requests start at the dead backend and skip it; even ones start at the live one.
        let skipped: Vec<Vec<usize>> = records.iter().map(|r| r.skipped.clone()).collect();
        assert_eq!(skipped, [vec![0], vec![], vec![0], vec![]]);
        assert_eq!(backends_of(&records), [Some(1); 4]);
    })
    .await;
}

#[tokio::test]
async fn a_client_that_goes_away_before_the_answer_is_logged_with_499() {
    within(async {
        let backend = Backend::start("A").await;
        let proxy = proxy(&[backend.url()]).await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        let body = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#;
        let waiting = connection.send(request("POST", "/hold", body));
        // Give up once the backend has the request.
        tokio::select! {
            _ = waiting => panic!("the backend holds the answer"),
            () = async {
                while backend.seen().is_empty() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            } => {}
        }
        drop(connection);
        let record = loop {
            if let Some(record) = proxy.records().pop() {
                break record;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!(record.status, 499);
        assert_eq!(record.backend, Some(0), "the backend that had it");
        assert_eq!(record.rpc_id, Some(json!(5)));
        backend.release();
    })
    .await;
}

#[tokio::test]
async fn every_backend_refusing_gives_502() {
    within(async {
        let (one, two) = (DeadPort::new(), DeadPort::new());
        let proxy = proxy(&[one.url.clone(), two.url.clone()]).await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        let (status, body) = connection.call(request("POST", "/mcp", "{}")).await;
        assert_eq!(status, 502);
        assert!(body.contains("no backend took the request"), "{body}");
        // The connection stays usable.
        let (status, _) = connection.call(request("GET", "/mcp", "")).await;
        assert_eq!(status, 502);
        let records = proxy.records();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].backend, None);
        assert_eq!(records[0].skipped, [0, 1]);
        assert_eq!(records[0].status, 502);
        assert_eq!(
            records[1].skipped,
            [1, 0],
            "the second request starts at the other"
        );
    })
    .await;
}

#[tokio::test]
async fn the_log_file_carries_sessions_and_json_rpc_methods_and_ids() {
    within(async {
        let (a, b) = (Backend::start("A").await, Backend::start("B").await);
        let path = std::env::temp_dir().join(format!(
            "rr-proxy-test-{}-{:?}.log",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let proxy = proxy_with(&[a.url(), b.url()], |config| {
            config.log = LogTo::File(path.clone());
        })
        .await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        let with_session = |method: &str, body: &str| {
            let mut request = request(method, "/mcp", body);
            request
                .headers_mut()
                .insert("mcp-session-id", "session-1".parse().expect("value"));
            request
        };
        let sent = [
            request(
                "POST",
                "/mcp",
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            ),
            with_session(
                "POST",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
            with_session(
                "POST",
                r#" [{"jsonrpc":"2.0","id":"x","method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
            ),
            with_session("POST", r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            with_session("POST", "not json"),
            with_session("GET", ""),
            with_session("DELETE", ""),
        ];
        for request in sent {
            assert_eq!(connection.call(request).await.0, 200);
        }
        let mut records = read_log(&path).expect("the log parses");
        let _ = std::fs::remove_file(&path);
        records.sort_by_key(|record| record.n);
        assert!(proxy.records().is_empty(), "a file log keeps nothing in memory");

        let summary: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.n,
                    r.backend,
                    r.method.as_str(),
                    r.path.as_str(),
                    r.rpc_method.as_deref(),
                    r.rpc_id.clone(),
                    r.status,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (1, Some(0), "POST", "/mcp", Some("initialize"), Some(json!(1)), 200),
                (2, Some(1), "POST", "/mcp", Some("notifications/initialized"), None, 200),
                (3, Some(0), "POST", "/mcp", Some("tools/list"), Some(json!("x")), 200),
                (4, Some(1), "POST", "/mcp", None, Some(json!(7)), 200),
                (5, Some(0), "POST", "/mcp", None, None, 200),
                (6, Some(1), "GET", "/mcp", None, None, 200),
                (7, Some(0), "DELETE", "/mcp", None, None, 200),
            ]
        );
        // The initialize carries no session and gets one; every later request names it, and
        // both backends served requests of that session.
        assert_eq!(records[0].session, None);
        assert_eq!(records[0].new_session.as_deref(), Some("session-1"));
        assert!(records[1..].iter().all(|r| r.session.as_deref() == Some("session-1")));
        for backend in [0, 1] {
            assert!(records[1..].iter().any(|r| r.backend == Some(backend)));
        }
    })
    .await;
}

#[tokio::test]
async fn headers_and_status_are_copied_except_hop_by_hop_ones_and_host_is_kept() {
    within(async {
        let backend = Backend::start("A").await;
        let proxy = proxy(&[backend.url()]).await;
        let mut connection = OneConnection::open(proxy.addr()).await;
        let request = Request::builder()
            .method("POST")
            .uri("/status/418?q=1")
            .header("host", "localhost:1234")
            .header("authorization", "Bearer token")
            .header("mcp-session-id", "s-9")
            .header("x-multi", "1")
            .header("x-multi", "2")
            .header("connection", "keep-alive, x-private")
            .header("x-private", "hop")
            .header("keep-alive", "timeout=5")
            .header("te", "trailers")
            .header("proxy-authorization", "Basic eDp5")
            .header("proxy-connection", "keep-alive")
            .body(Full::new(Bytes::from_static(b"{}")))
            .expect("request");
        let response = connection.send(request).await;

        let seen = backend.seen().pop().expect("the backend saw the request");
        assert_eq!(seen.target, "/status/418?q=1", "the query goes along");
        let got = |name: &str| -> Vec<String> {
            seen.headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().expect("text").to_owned())
                .collect()
        };
        assert_eq!(got("host"), ["localhost:1234"], "Host is kept");
        assert_eq!(got("authorization"), ["Bearer token"]);
        assert_eq!(got("mcp-session-id"), ["s-9"]);
        assert_eq!(got("x-multi"), ["1", "2"]);
        assert_eq!(got("content-length"), ["2"]);
        for hop in [
            "connection",
            "x-private",
            "keep-alive",
            "te",
            "proxy-authorization",
            "proxy-connection",
        ] {
            assert!(got(hop).is_empty(), "{hop} is not forwarded");
        }

        assert_eq!(response.status(), 418);
        let headers = response.headers();
        let values = |name: &str| -> Vec<&str> {
            headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().expect("text"))
                .collect()
        };
        assert_eq!(values("content-type"), ["text/x-teapot"]);
        assert_eq!(values("x-backend"), ["A"]);
        assert_eq!(values("x-multi"), ["a", "b"]);
        for hop in ["x-private", "keep-alive", "proxy-authenticate"] {
            assert!(values(hop).is_empty(), "{hop} is not sent back");
        }
        assert_eq!(text(response).await, "A");
        assert_eq!(
            proxy.records()[0].path,
            "/status/418",
            "the log leaves the query out"
        );
    })
    .await;
}

#[tokio::test]
async fn a_body_over_the_cap_gets_413_and_reaches_no_backend() {
    within(async {
        let backend = Backend::start("A").await;
        let proxy = proxy_with(&[backend.url()], |config| config.max_body = 16).await;

        // Declared too long: refused before reading.
        let mut connection = OneConnection::open(proxy.addr()).await;
        let (status, body) = connection
            .call(request("POST", "/mcp", &"x".repeat(100)))
            .await;
        assert_eq!(status, 413);
        assert!(body.contains("larger than 16 bytes"), "{body}");

        // Chunked, no length: refused once the cap is passed.
        let stream = tokio::net::TcpStream::connect(proxy.addr())
            .await
            .expect("connect");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("handshake");
        tokio::spawn(connection);
        let (mut chunks, body) = http_body_util::channel::Channel::<Bytes>::new(4);
        tokio::spawn(async move {
            for _ in 0..4 {
                if chunks
                    .send_data(Bytes::from_static(b"0123456789"))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        let chunked = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", "localhost")
            .body(body)
            .expect("request");
        let response = sender.send_request(chunked).await.expect("a response");
        assert_eq!(response.status(), 413);

        // At the cap exactly: forwarded.
        let mut connection = OneConnection::open(proxy.addr()).await;
        let (status, _) = connection
            .call(request("POST", "/mcp", &"y".repeat(16)))
            .await;
        assert_eq!(status, 200);

        assert_eq!(
            backend.seen().len(),
            1,
            "only the body within the cap went through"
        );
        let records = proxy.records();
        assert_eq!(backends_of(&records), [None, None, Some(0)]);
        let statuses: Vec<u16> = records.iter().map(|r| r.status).collect();
        assert_eq!(statuses, [413, 413, 200]);
    })
    .await;
}

#[tokio::test]
async fn a_body_slower_than_the_body_timeout_gets_408() {
    within(async {
        let backend = Backend::start("A").await;
        let proxy = proxy_with(&[backend.url()], |config| {
            config.body_timeout = Duration::from_millis(200);
        })
        .await;
        let stream = tokio::net::TcpStream::connect(proxy.addr())
            .await
            .expect("connect");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("handshake");
        tokio::spawn(connection);
        let (mut chunks, body) = http_body_util::channel::Channel::<Bytes>::new(1);
        let stalled = tokio::spawn(async move {
            let _ = chunks.send_data(Bytes::from_static(b"{")).await;
            // Never finishes the body; the proxy gives up first.
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(chunks);
        });
        let request = Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", "localhost")
            .body(body)
            .expect("request");
        let response = sender.send_request(request).await.expect("a response");
        assert_eq!(response.status(), 408);
        assert!(backend.seen().is_empty());
        assert_eq!(proxy.records()[0].status, 408);
        stalled.abort();
    })
    .await;
}

#[tokio::test]
async fn a_barrel_mcp_session_runs_through_the_proxy() {
    within(async {
        // One real node listed twice: the session continues whichever index serves it, and
        // the alternation shows in the log. Host is kept, so the node's loopback check passes.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let node = format!("http://{}", listener.local_addr().expect("addr"));
        let server = barrel_mcp_conformance::fixture::server().expect("the fixture");
        let http = StreamableHttp::new(server, HttpConfig::default());
        let serving = tokio::spawn(async move {
            let _ = barrel_mcp::http::serve(listener, http, std::future::pending()).await;
        });
        let proxy = proxy(&[node.clone(), node]).await;

        let transport =
            HttpClientTransport::new(&format!("{}/mcp", proxy.url())).expect("transport");
        // 2025-11-25: a sessionful revision (2026-07-28 is stateless, with no session to follow).
        let client = Client::builder()
            .pin(ProtocolVersion::V2025_11_25)
            .connect_http(transport)
            .await
            .expect("initialize through the proxy");
        for _ in 0..3 {
            let result = client
                .call_tool(CallToolParams::new("test_simple_text"))
                .await
                .expect("a call through the proxy");
            assert_eq!(
                result.text_content(),
                "This is a simple text response for testing."
            );
        }

        let mut records = proxy.records();
        records.sort_by_key(|record| record.n);
        let initialize = records
            .iter()
            .find(|r| r.rpc_method.as_deref() == Some("initialize"))
            .unwrap_or_else(|| panic!("the initialize is logged: {records:#?}"));
        let session = initialize
            .new_session
            .clone()
            .expect("a session was created");
        let calls: Vec<&Record> = records
            .iter()
            .filter(|r| r.rpc_method.as_deref() == Some("tools/call"))
            .collect();
        assert_eq!(calls.len(), 3);
        assert!(
            calls
                .iter()
                .all(|r| r.session.as_deref() == Some(session.as_str()))
        );
        assert!(calls.iter().all(|r| r.status == 200));
        let served_by: Vec<_> = records
            .iter()
            .filter(|r| r.session.as_deref() == Some(session.as_str()))
            .filter_map(|r| r.backend)
            .collect();
        assert!(
            served_by.contains(&0) && served_by.contains(&1),
            "{served_by:?}"
        );

        // A foreign Host still reaches the node as sent, and the node refuses it.
        let mut connection = OneConnection::open(proxy.addr()).await;
        let mut foreign = request(
            "POST",
            "/mcp",
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        );
        foreign
            .headers_mut()
            .insert("host", "evil.example".parse().expect("value"));
        assert_eq!(connection.call(foreign).await.0, 403);

        client.close();
        serving.abort();
    })
    .await;
}

#[test]
fn the_command_line_parses_and_refuses_what_it_should() {
    let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let config = Config::from_args(args(&[
        "--listen",
        "127.0.0.1:0",
        "--backend",
        "http://127.0.0.1:4001",
        "--backend=http://localhost:4002/",
        "--log",
        "/tmp/x.log",
        "--max-body=10",
        "--connect-timeout-ms",
        "250",
    ]))
    .expect("valid");
    assert_eq!(config.listen.to_string(), "127.0.0.1:0");
    let backends: Vec<String> = config.backends.iter().map(|a| a.to_string()).collect();
    assert_eq!(backends, ["127.0.0.1:4001", "localhost:4002"]);
    assert!(matches!(&config.log, LogTo::File(path) if path.to_str() == Some("/tmp/x.log")));
    assert_eq!(config.max_body, 10);
    assert_eq!(config.connect_timeout, Duration::from_millis(250));

    for bad in [
        &["--backend", "http://127.0.0.1:1"][..],
        &["--listen", "127.0.0.1:0"],
        &["--listen", "nowhere", "--backend", "http://127.0.0.1:1"],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "https://127.0.0.1:1",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://127.0.0.1:1/mcp",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://u@127.0.0.1:1",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://127.0.0.1:1",
            "--max-body",
            "x",
        ],
        &[
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "http://127.0.0.1:1",
            "--what",
        ],
        &["--listen"],
    ] {
        assert!(Config::from_args(args(bad)).is_err(), "{bad:?} is refused");
    }
}

#[tokio::test]
async fn the_binary_prints_its_url_first_and_proxies() {
    within(async {
        let backend = Backend::start("A").await;
        let mut child = KillOnDrop(
            std::process::Command::new(env!("CARGO_BIN_EXE_rr-proxy"))
                .args(["--listen", "127.0.0.1:0", "--backend", &backend.url()])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("rr-proxy starts"),
        );
        let stderr = child.0.stderr.take().expect("stderr");
        let (first, stderr) = tokio::task::spawn_blocking(move || {
            use std::io::BufRead as _;
            let mut reader = std::io::BufReader::new(stderr);
            let mut line = String::new();
            reader.read_line(&mut line).expect("a line");
            (line, reader)
        })
        .await
        .expect("read");
        let url = first
            .trim_end()
            .strip_prefix("rr-proxy listening on ")
            .unwrap_or_else(|| panic!("the first line names the URL: {first:?}"))
            .to_owned();
        let addr = url
            .strip_prefix("http://")
            .expect("http")
            .parse()
            .expect("an address");
        let mut connection = OneConnection::open(addr).await;
        let mut initialize = request(
            "POST",
            "/mcp",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
        );
        initialize
            .headers_mut()
            .insert("host", "localhost".parse().expect("value"));
        let (status, body) = connection.call(initialize).await;
        assert_eq!((status.as_u16(), body.as_str()), (200, "A"));
        let line = tokio::task::spawn_blocking(move || {
            use std::io::BufRead as _;
            let mut reader = stderr;
            let mut line = String::new();
            reader.read_line(&mut line).expect("a line");
            line
        })
        .await
        .expect("read");
        let record = Record::parse_line(line.trim_end()).expect("a JSON record on stderr");
        assert_eq!(record.rpc_method.as_deref(), Some("initialize"));
        assert_eq!(record.new_session.as_deref(), Some("session-1"));
        drop(child);
    })
    .await;
}
