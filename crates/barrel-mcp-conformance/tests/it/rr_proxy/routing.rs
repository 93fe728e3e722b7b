//! Strict alternation per request, whatever the connection; a refusing backend skipped; 502
//! when every backend refuses.

use bytes::Bytes;

use super::backend::{Backend, DeadPort, OneConnection, request, within};
use super::{backends_of, proxy};

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
