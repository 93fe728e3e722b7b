//! Headers and status copied both ways except hop-by-hop headers; `Host` kept as sent.

use bytes::Bytes;
use http::Request;
use http_body_util::Full;

use super::backend::{Backend, OneConnection, text, within};
use super::proxy;

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
