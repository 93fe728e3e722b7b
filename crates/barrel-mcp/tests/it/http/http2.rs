//! HTTP/2 limits on the ready listener (cleartext HTTP/2 by prior knowledge, raw `h2` frames):
//! the concurrent-stream cap, and "Rapid Reset" (streams opened and reset at once, CVE-2023-44487)
//! ending the connection with `GOAWAY` while other connections are served.

use std::time::Duration;

use barrel_mcp::http::{Http2Config, HttpConfig};
use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request, StatusCode};
use tokio::net::TcpStream;

use super::TestServer;
use crate::support::within;

/// An HTTP/2 connection to `server`; the connection task runs in the background and its end
/// (with the error, if any) is returned by the handle.
async fn connect(
    server: &TestServer,
) -> (
    SendRequest<Bytes>,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
) {
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let (sender, connection) = within(h2::client::handshake(tcp))
        .await
        .expect("h2 handshake");
    (sender, tokio::spawn(connection))
}

/// A request for the legacy SSE endpoint, whose stream stays open until the client goes.
fn legacy_stream(server: &TestServer) -> Request<()> {
    Request::builder()
        .method(Method::GET)
        .uri(format!("http://localhost:{}/sse", server.addr.port()))
        .header("accept", "text/event-stream")
        .body(())
        .expect("request")
}

#[tokio::test]
async fn streams_beyond_the_cap_wait_until_one_closes() {
    let config = HttpConfig {
        http2: Http2Config {
            max_concurrent_streams: 2,
            ..Http2Config::default()
        },
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let (sender, _connection) = connect(&server).await;

    // Two long-lived streams take the two slots.
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut sender = within(sender.clone().ready()).await.expect("ready");
        let (response, _) = sender
            .send_request(legacy_stream(&server), true)
            .expect("send");
        let response = within(response).await.expect("response");
        assert_eq!(response.status(), StatusCode::OK);
        open.push(response);
    }
    assert_eq!(
        sender.current_max_send_streams(),
        2,
        "advertised in SETTINGS"
    );

    // A third waits for a free slot...
    let third = sender.clone();
    let request = legacy_stream(&server);
    let mut waiting = tokio::spawn(async move {
        let mut sender = third.ready().await.expect("ready");
        let (response, _) = sender.send_request(request, true).expect("send");
        response.await.expect("response").status()
    });
    let early = tokio::time::timeout(Duration::from_millis(300), &mut waiting).await;
    assert!(early.is_err(), "a stream opened beyond the cap");

    // ...and is served once one of the two closes.
    drop(open.pop());
    let status = within(waiting).await.expect("join");
    assert_eq!(status, StatusCode::OK);
}

/// Opens streams and resets them at once, up to `count` times or until the server ends the
/// connection; returns how many went out. Each request has a body that never comes, so nothing
/// is ever answered: only the resets count.
async fn rapid_reset(server: &TestServer, sender: &mut SendRequest<Bytes>, count: usize) -> usize {
    let uri = format!("http://localhost:{}/mcp", server.addr.port());
    for sent in 0..count {
        let Ok(Ok(ready)) =
            tokio::time::timeout(Duration::from_secs(5), sender.clone().ready()).await
        else {
            return sent; // the server has ended the connection
        };
        *sender = ready;
        let request = Request::builder()
            .method(Method::POST)
            .uri(&uri)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(())
            .expect("request");
        let Ok((_response, mut body)) = sender.send_request(request, false) else {
            return sent;
        };
        body.send_reset(h2::Reason::CANCEL);
        tokio::task::yield_now().await;
    }
    count
}

/// Whether the connection still serves a request.
async fn serves(server: &TestServer, sender: SendRequest<Bytes>) -> bool {
    let Ok(Ok(mut sender)) = tokio::time::timeout(Duration::from_secs(5), sender.ready()).await
    else {
        return false;
    };
    let Ok((response, _)) = sender.send_request(legacy_stream(server), true) else {
        return false;
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(5), response).await,
        Ok(Ok(response)) if response.status() == StatusCode::OK
    )
}

#[tokio::test]
async fn a_rapid_reset_flood_ends_the_connection_and_others_are_served() {
    let server = TestServer::start(HttpConfig::default()).await;
    let (mut sender, connection) = connect(&server).await;
    rapid_reset(&server, &mut sender, 1_000).await;
    // The server ended the connection: GOAWAY (ENHANCE_YOUR_CALM), seen as such or as the
    // socket closing under the client's next write.
    let ended = within(connection).await.expect("join");
    let error = ended.expect_err("the server ended the connection");
    if error.is_go_away() {
        assert_eq!(
            error.reason(),
            Some(h2::Reason::ENHANCE_YOUR_CALM),
            "{error}"
        );
    } else {
        assert!(error.is_io(), "{error}");
    }
    assert!(!serves(&server, sender).await);

    // The listener goes on serving everybody else.
    let (sender, _connection) = connect(&server).await;
    assert!(serves(&server, sender).await);
}

#[tokio::test]
async fn the_reset_limit_is_what_ends_the_connection() {
    // The same flood under a limit above it: the connection survives and still serves.
    let config = HttpConfig {
        http2: Http2Config {
            max_pending_accept_reset_streams: 10_000,
            ..Http2Config::default()
        },
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let (mut sender, connection) = connect(&server).await;
    assert_eq!(rapid_reset(&server, &mut sender, 1_000).await, 1_000);
    assert!(serves(&server, sender).await);
    assert!(!connection.is_finished());
}

/// A HEAD answer carries no body over HTTP/2 either: a refusal of the front door (here a
/// `Host` not allowed) reaches the client as its status, not as a reset stream.
#[tokio::test]
async fn a_head_refusal_over_http2_has_no_body() {
    let server = TestServer::start(HttpConfig::default()).await;
    let (sender, _connection) = connect(&server).await;
    let mut sender = within(sender.ready()).await.expect("ready");
    for (authority, refused) in [("evil.example", true), ("localhost", false)] {
        let request = Request::builder()
            .method(Method::HEAD)
            .uri(format!("http://{authority}:{}/mcp", server.addr.port()))
            .body(())
            .expect("request");
        let (response, _) = sender.send_request(request, true).expect("sent");
        let response = within(response).await.expect("answered");
        if refused {
            assert_eq!(response.status(), StatusCode::FORBIDDEN);
        } else {
            assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        }
        let mut body = response.into_body();
        let mut received = 0;
        while let Some(chunk) = within(body.data()).await {
            received += chunk.expect("no stream error").len();
        }
        assert_eq!(received, 0, "{authority}");
    }
}
