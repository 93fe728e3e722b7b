//! A real barrel-mcp session through the proxy.

use barrel_mcp::client::Client;
use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use barrel_mcp_conformance::rr_proxy::Record;

use super::backend::{OneConnection, request, within};
use super::proxy;

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
