//! The secure defaults: DNS rebinding (Host and Origin), CORS, media types, the body limit, and
//! a slow-header client being cut off.

use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use http::{Method, StatusCode};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{TestServer, initialize, session_id};
use crate::support::within;

#[tokio::test]
async fn bad_host_or_origin_is_refused_and_creates_no_session() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let init = initialize(1).to_string();
    let port = server.addr.port().to_string();
    let cases: Vec<(Vec<(&str, String)>, StatusCode)> = vec![
        (
            vec![("host", "evil.example.com".into())],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![
                ("host", format!("evil.example.com:{port}")),
                ("origin", format!("http://evil.example.com:{port}")),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![("origin", "http://evil.example".into())],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![("origin", "http://localhost.evil.com".into())],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![("origin", format!("http://localhost:{port}@evil.com"))],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![("host", "127.0.0.1.evil.com".into())],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![("host", format!("localhost:{port}@evil.com"))],
            StatusCode::BAD_REQUEST,
        ),
        (vec![("origin", "null".into())], StatusCode::FORBIDDEN),
    ];
    for (extra, expected) in cases {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        headers.extend(extra.iter().map(|(k, v)| (*k, v.as_str())));
        let response = client.send(Method::POST, &headers, Some(&init)).await;
        assert_eq!(response.status(), expected, "{extra:?}");
        assert!(session_id(response.headers()).is_none());
        // The same on GET, with no Origin at all (a rebound same-origin request).
        let get = client
            .send(
                Method::GET,
                &[
                    ("host", "evil.example.com"),
                    ("accept", "text/event-stream"),
                ],
                None,
            )
            .await;
        assert_eq!(get.status(), StatusCode::FORBIDDEN);
    }
    assert_eq!(server.http.session_count(), 0);

    // A loopback origin on any port, and no Origin at all, are fine.
    let ok = client
        .send(
            Method::POST,
            &[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("origin", "http://localhost:5173"),
            ],
            Some(&init),
        )
        .await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        "http://localhost:5173"
    );
    let exposed = ok.headers()["access-control-expose-headers"]
        .to_str()
        .expect("ascii");
    assert!(exposed.contains("mcp-session-id") && exposed.contains("mcp-protocol-version"));
    assert_eq!(server.http.session_count(), 1);
}

#[tokio::test]
async fn explicit_hosts_and_null_origin_when_allowed() {
    let config = HttpConfig {
        allow_loopback: false,
        allowed_hosts: vec!["mcp.example.com".into()],
        allowed_origins: vec!["null".into(), "https://app.example.com".into()],
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let client = server.client();
    let post = |host: &'static str, origin: &'static str| {
        let client = client.clone();
        async move {
            client
                .send(
                    Method::POST,
                    &[
                        ("host", host),
                        ("origin", origin),
                        ("content-type", "application/json"),
                    ],
                    Some(&initialize(1).to_string()),
                )
                .await
                .status()
        }
    };
    assert_eq!(post("mcp.example.com", "null").await, StatusCode::OK);
    assert_eq!(
        post("mcp.example.com:8443", "https://app.example.com").await,
        StatusCode::OK
    );
    assert_eq!(post("localhost", "null").await, StatusCode::FORBIDDEN);
    assert_eq!(
        post("mcp.example.com", "http://app.example.com").await,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn cors_preflight_echoes_only_allowed_origins() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let allowed = client
        .send(
            Method::OPTIONS,
            &[
                ("origin", "http://127.0.0.1:3000"),
                ("access-control-request-method", "POST"),
                (
                    "access-control-request-headers",
                    "content-type, mcp-param-region",
                ),
            ],
            None,
        )
        .await;
    assert_eq!(allowed.status(), StatusCode::NO_CONTENT);
    let headers = allowed.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "http://127.0.0.1:3000"
    );
    assert_eq!(headers["vary"], "origin");
    let allow_headers = headers["access-control-allow-headers"]
        .to_str()
        .expect("ascii");
    assert!(allow_headers.contains("mcp-session-id") && allow_headers.contains("mcp-param-region"));
    let refused = client
        .send(Method::OPTIONS, &[("origin", "https://evil.example")], None)
        .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(
        !refused
            .headers()
            .contains_key("access-control-allow-origin")
    );
}

#[test]
fn a_bind_beyond_loopback_needs_allowed_hosts() {
    let config = HttpConfig::default();
    let reason = config
        .check_bind("0.0.0.0:9090".parse().expect("addr"))
        .expect_err("refused");
    assert!(reason.contains("allowed hosts"), "{reason}");
    assert!(
        config
            .check_bind("127.0.0.1:9090".parse().expect("addr"))
            .is_ok()
    );
    assert!(
        config
            .check_bind("[::1]:9090".parse().expect("addr"))
            .is_ok()
    );
    let explicit = HttpConfig {
        allowed_hosts: vec!["mcp.example.com".into()],
        ..HttpConfig::default()
    };
    assert!(
        explicit
            .check_bind("0.0.0.0:9090".parse().expect("addr"))
            .is_ok()
    );
}

#[tokio::test]
async fn the_listener_refuses_a_public_bind() {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0")
        .await
        .expect("bind");
    let (server, _) = crate::server::fixture::server();
    let http = barrel_mcp::http::StreamableHttp::new(server, HttpConfig::default());
    let error = barrel_mcp::http::serve(listener, http, std::future::pending())
        .await
        .expect_err("refused");
    assert!(error.to_string().contains("DNS rebinding"), "{error}");
}

#[tokio::test]
async fn media_types_and_body_limit() {
    let config = HttpConfig {
        max_body_size: 1024,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let client = server.client();
    // A CORS "simple request" (text/plain) never reaches a handler.
    let plain = client
        .send(
            Method::POST,
            &[("content-type", "text/plain")],
            Some(&initialize(1).to_string()),
        )
        .await;
    assert_eq!(plain.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let not_acceptable = client
        .send(
            Method::POST,
            &[
                ("content-type", "application/json"),
                ("accept", "text/html"),
            ],
            Some(&initialize(1).to_string()),
        )
        .await;
    assert_eq!(not_acceptable.status(), StatusCode::NOT_ACCEPTABLE);
    let big =
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"x".repeat(2000)}});
    let too_large = client.post(&big).await;
    assert_eq!(too_large.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // A body that lies about its length is cut off at the limit too.
    let mut stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        server.addr
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let chunk = format!("{:x}\r\n{}\r\n", 4096, "x".repeat(4096));
    let _ = stream.write_all(chunk.as_bytes()).await;
    let mut answer = vec![0u8; 64];
    let n = within(stream.read(&mut answer)).await.expect("read");
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 413"));
    let garbage = client
        .send(
            Method::POST,
            &[("content-type", "application/json")],
            Some("{nope"),
        )
        .await;
    assert_eq!(garbage.status(), StatusCode::BAD_REQUEST);
    let batch = client
        .send(
            Method::POST,
            &[("content-type", "application/json")],
            Some("[]"),
        )
        .await;
    assert_eq!(batch.status(), StatusCode::BAD_REQUEST);
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn slow_headers_are_cut_off_and_header_count_is_capped() {
    let config = HttpConfig {
        header_read_timeout: Duration::from_millis(300),
        max_headers: 8,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut slow = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    slow.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let started = tokio::time::Instant::now();
    let mut buffer = [0u8; 256];
    // The server gives up on the unfinished head: it closes (after a 408 or silently).
    loop {
        let n = within(slow.read(&mut buffer)).await.unwrap_or(0);
        if n == 0 {
            break;
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));

    let mut many = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let mut head = String::from("GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for n in 0..20 {
        head.push_str(&format!("x-filler-{n}: y\r\n"));
    }
    head.push_str("\r\n");
    many.write_all(head.as_bytes()).await.expect("write");
    let n = within(many.read(&mut buffer)).await.unwrap_or(0);
    let text = String::from_utf8_lossy(&buffer[..n]);
    assert!(n == 0 || text.starts_with("HTTP/1.1 431"), "{text}");
}

#[tokio::test]
async fn the_default_header_cap_is_a_hundred() {
    let server = TestServer::start(HttpConfig::default()).await;
    let addr = server.addr;
    // A GET with `count` headers in all: within the cap it reaches the endpoint (405 without
    // a session's stream to open is not what is checked: any answer but 431 is).
    let status_line = |count: usize| async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut head = String::from("GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n");
        for n in 1..count {
            head.push_str(&format!("x-filler-{n}: y\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut buffer = [0u8; 64];
        let n = within(stream.read(&mut buffer)).await.unwrap_or(0);
        String::from_utf8_lossy(&buffer[..n]).into_owned()
    };
    let at_cap = status_line(100).await;
    assert!(
        at_cap.starts_with("HTTP/1.1 ") && !at_cap.starts_with("HTTP/1.1 431"),
        "{at_cap}"
    );
    let over = status_line(101).await;
    assert!(
        over.is_empty() || over.starts_with("HTTP/1.1 431"),
        "{over}"
    );
}

#[tokio::test]
async fn any_origin_and_required_origin_when_asked() {
    let open = HttpConfig {
        allow_any_origin: true,
        ..HttpConfig::default()
    };
    let server = TestServer::start(open).await;
    let client = server.client();
    let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
    let post = |origin: Option<&'static str>| {
        let client = client.clone();
        let ping = ping.clone();
        async move {
            let mut headers = vec![
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
            ];
            headers.extend(origin.map(|o| ("origin", o)));
            client.send(Method::POST, &headers, Some(&ping)).await
        }
    };
    let anywhere = post(Some("https://anywhere.example")).await;
    assert_ne!(anywhere.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        anywhere.headers()["access-control-allow-origin"],
        "https://anywhere.example",
        "echoed, never *"
    );

    let strict = HttpConfig {
        allow_missing_origin: false,
        ..HttpConfig::default()
    };
    let server = TestServer::start(strict).await;
    let client = server.client();
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let missing = client
        .send(Method::POST, &headers, Some(&initialize(1).to_string()))
        .await;
    assert_eq!(missing.status(), StatusCode::FORBIDDEN);
    let with_origin = client
        .post_with(&initialize(1), &[("origin", "http://localhost:3000")])
        .await;
    assert_eq!(with_origin.status(), StatusCode::OK);
    assert_eq!(server.http.session_count(), 1);
}

#[tokio::test]
async fn the_endpoint_is_also_at_the_root_when_asked() {
    let server = TestServer::start(HttpConfig {
        serve_at_root: true,
        ..HttpConfig::default()
    })
    .await;
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let at_root = server
        .client()
        .send_to(
            Method::POST,
            "/",
            &headers,
            Some(&initialize(1).to_string()),
        )
        .await;
    assert_eq!(at_root.status(), StatusCode::OK);
    assert!(session_id(at_root.headers()).is_some());
    let default = TestServer::start(HttpConfig::default()).await;
    let not_there = default
        .client()
        .send_to(
            Method::POST,
            "/",
            &headers,
            Some(&initialize(1).to_string()),
        )
        .await;
    assert_eq!(not_there.status(), StatusCode::NOT_FOUND);
}

/// A request's headers, as a test lists them.
type Headers<'a> = Vec<(&'a str, &'a str)>;

/// The ready listener sends the endpoint's own path straight to it and every other path
/// through the router: both answer every request alike (status, the headers a client acts on
/// and the JSON-RPC error code), the front door's refusals included, with the endpoint at `/`
/// too or not.
#[tokio::test]
async fn the_listener_and_the_router_answer_alike() {
    for serve_at_root in [false, true] {
        listener_and_router_alike(serve_at_root).await;
    }
}

async fn listener_and_router_alike(serve_at_root: bool) {
    use tower::ServiceExt;
    let config = || HttpConfig {
        serve_at_root,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config()).await;
    let (fixture, _) = crate::server::fixture::server();
    let router = barrel_mcp::http::StreamableHttp::new(fixture, config()).router();
    let host = server.addr.to_string();
    let json = ("content-type", "application/json");
    let accept = ("accept", "application/json, text/event-stream");
    let init = initialize(1).to_string();
    let discover = super::enveloped(2, "server/discover", json!({})).to_string();
    let cases: Vec<(Method, &str, Headers<'_>, &str)> = vec![
        (Method::POST, "/mcp", vec![json, accept], init.as_str()),
        (Method::POST, "/", vec![json, accept], init.as_str()),
        (Method::POST, "/mcp/", vec![json, accept], init.as_str()),
        (
            Method::POST,
            "/mcp",
            vec![json, accept, ("host", "evil.example")],
            "",
        ),
        (
            Method::POST,
            "/mcp",
            vec![json, accept, ("origin", "http://evil.example")],
            "",
        ),
        (
            Method::POST,
            "/mcp",
            vec![("content-type", "text/plain"), accept],
            "{}",
        ),
        (
            Method::POST,
            "/mcp",
            vec![json, ("accept", "text/html")],
            init.as_str(),
        ),
        (Method::POST, "/mcp", vec![json, accept], "{not json"),
        (
            Method::POST,
            "/mcp",
            vec![
                json,
                accept,
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "server/discover"),
            ],
            discover.as_str(),
        ),
        (
            Method::OPTIONS,
            "/mcp",
            vec![
                ("origin", "http://localhost:3000"),
                ("access-control-request-method", "POST"),
            ],
            "",
        ),
        (
            Method::GET,
            "/mcp",
            vec![("accept", "text/event-stream")],
            "",
        ),
        (
            Method::DELETE,
            "/mcp",
            vec![("mcp-session-id", "no-such-session")],
            "",
        ),
        (Method::PUT, "/mcp", vec![json], "{}"),
        (Method::HEAD, "/mcp", vec![], ""),
        (Method::POST, "/messages", vec![json], "{}"),
        (Method::GET, "/elsewhere", vec![], ""),
    ];
    // Compared by value; `mcp-session-id` (a fresh random id each time) by presence.
    let kept = [
        "content-type",
        "allow",
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-expose-headers",
        "connection",
        "cache-control",
    ];
    let summary = |status: StatusCode, headers: &http::HeaderMap, body: &[u8]| {
        let mut seen: Vec<(&str, Option<String>)> = kept
            .iter()
            .map(|name| {
                let value = headers
                    .get(*name)
                    .map(|v| v.to_str().unwrap_or("?").to_owned());
                (*name, value)
            })
            .collect();
        let session = headers.contains_key("mcp-session-id").then(String::new);
        seen.push(("mcp-session-id", session));
        let headers = seen;
        // A body is compared by its JSON-RPC error code, the part that does not vary.
        let code = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["error"]["code"].as_i64());
        (status, headers, code)
    };
    for (method, path, headers, body) in cases {
        let socket = server
            .client()
            .send_to(method.clone(), path, &headers, Some(body))
            .await;
        let (parts, bytes) = head_and_body(socket).await;
        let over_socket = summary(parts.status, &parts.headers, &bytes);
        let mut request = http::Request::builder().method(method.clone()).uri(path);
        if !headers.iter().any(|(k, _)| *k == "host") {
            request = request.header("host", host.as_str());
        }
        for (name, value) in &headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(axum::body::Body::from(body.to_owned()))
            .expect("request");
        let answer = router.clone().oneshot(request).await.expect("infallible");
        let (parts, bytes) = head_and_body(answer).await;
        let through_router = summary(parts.status, &parts.headers, &bytes);
        assert_eq!(
            over_socket, through_router,
            "{method} {path} {headers:?} (serve_at_root {serve_at_root})"
        );
    }
}

/// A response's head and, unless it is an event stream (which may stay open), its body.
async fn head_and_body<B>(response: http::Response<B>) -> (http::response::Parts, bytes::Bytes)
where
    B: hyper::body::Body<Data = bytes::Bytes>,
    B::Error: std::fmt::Debug,
{
    use http_body_util::BodyExt;
    let (parts, body) = response.into_parts();
    let streamed = parts
        .headers
        .get("content-type")
        .is_some_and(|v| v == "text/event-stream");
    let bytes = if streamed {
        bytes::Bytes::new()
    } else {
        body.collect().await.expect("body").to_bytes()
    };
    (parts, bytes)
}
