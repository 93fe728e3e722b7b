//! Limits added around the listener and the 2026-07-28 envelope: the cap on concurrent
//! connections (and silent ones dropped after the header timeout), and a malformed `clientInfo` or `logLevel` refused like a missing key.

use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{TestServer, body_json, enveloped};
use crate::support::within;

#[tokio::test]
async fn over_the_connection_cap_the_listener_waits_for_a_free_slot() {
    let config = HttpConfig {
        max_connections: 1,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    // An idle connection takes the one slot.
    let idle = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let client = server.client();
    let mut waiting = tokio::spawn(async move { client.send(Method::GET, &[], None).await });
    let early = tokio::time::timeout(Duration::from_millis(300), &mut waiting).await;
    assert!(early.is_err(), "served beyond the cap");
    // The slot frees up when the idle connection goes: the waiting one is served.
    drop(idle);
    let response = within(waiting).await.expect("join");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn malformed_client_info_or_log_level_is_400_with_invalid_params() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let post = |body: Value| {
        let client = client.clone();
        async move {
            client
                .send(
                    Method::POST,
                    &[
                        ("content-type", "application/json"),
                        ("accept", "application/json, text/event-stream"),
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", "tools/list"),
                    ],
                    Some(&body.to_string()),
                )
                .await
        }
    };
    let with_meta = |key: &str, value: Value| {
        let mut body = enveloped(1, "tools/list", json!({}));
        body["params"]["_meta"][key] = value;
        body
    };
    let info = "io.modelcontextprotocol/clientInfo";
    let level = "io.modelcontextprotocol/logLevel";
    for bad in [
        with_meta(info, json!("me")),
        with_meta(info, json!({"name": 1, "version": "1"})),
        with_meta(info, json!({"version": "1"})),
        with_meta(level, json!("loud")),
        with_meta(level, json!(3)),
    ] {
        let response = post(bad.clone()).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        let answer = body_json(response).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert_eq!(answer["id"], 1, "{answer}");
    }
    let mut good = with_meta(info, json!({"name": "c", "version": "1"}));
    good["params"]["_meta"][level] = json!("debug");
    let response = post(good).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(body_json(response).await["result"]["tools"].is_array());
}

#[tokio::test]
async fn silent_connections_and_half_a_preface_lose_their_slot_after_the_header_timeout() {
    let config = HttpConfig {
        max_connections: 4,
        header_read_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut hogs = Vec::new();
    for index in 0..4 {
        let mut socket = tokio::net::TcpStream::connect(server.addr)
            .await
            .expect("connect");
        if index % 2 == 1 {
            // Half of the HTTP/2 preface, then nothing.
            socket
                .write_all(b"PRI * HTTP/2.0\r\n")
                .await
                .expect("write");
        }
        hogs.push(socket);
    }
    // Every slot is taken; the hogs are dropped after the timeout and a client is served.
    let client = server.client();
    let response = within(client.send(Method::GET, &[], None)).await;
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    for mut hog in hogs {
        let mut byte = [0u8; 1];
        let read = within(hog.read(&mut byte)).await;
        assert!(
            matches!(read, Ok(0) | Err(_)),
            "the server closed the connection"
        );
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let config = HttpConfig {
        header_read_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut socket = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let request = format!("GET /mcp HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr);
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut answer = vec![0u8; 4096];
    let read = within(socket.read(&mut answer)).await.expect("read");
    assert!(String::from_utf8_lossy(&answer[..read]).starts_with("HTTP/1.1 405"));
    // Kept alive, then idle: the server closes it.
    let started = std::time::Instant::now();
    let read = within(socket.read(&mut answer)).await;
    assert!(matches!(read, Ok(0) | Err(_)), "closed");
    assert!(started.elapsed() < Duration::from_secs(5));
}
