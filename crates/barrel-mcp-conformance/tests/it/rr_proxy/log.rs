//! The request log: the JSON lines of a log file (sessions, JSON-RPC method and id), and the
//! record of a request whose client went away.

use std::time::Duration;

use barrel_mcp_conformance::rr_proxy::{LogTo, read_log};
use serde_json::json;

use super::backend::{Backend, OneConnection, request, within};
use super::{proxy, proxy_with};

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
