//! A response body (SSE) streamed through as it comes, not when the backend ends it.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;

use super::backend::{Backend, OneConnection, request, within};
use super::proxy;

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
