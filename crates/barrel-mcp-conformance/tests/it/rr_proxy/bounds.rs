//! The request body's bounds: its size (413) and the time to send it (408).

use std::time::Duration;

use bytes::Bytes;
use http::Request;

use super::backend::{Backend, OneConnection, request, within};
use super::{backends_of, proxy_with};

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
