//! Two fixture nodes of one service behind the round-robin proxy, driven by a real barrel-mcp
//! client: their sessions in one `MemorySessionStore`, their news on one in-process
//! `LocalHub` (what Redis gives separate processes). A sampling request made on one node is
//! answered through the other; a client whose session the store lost (a Redis restarted
//! without its data) initializes again, once, and goes on; the tool a trigger adds on one node
//! is listed by both.

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp::client::{Client, ClientHandler, HandlerContext};
use barrel_mcp::http::{HttpConfig, SharedSessions, StreamableHttp};
use barrel_mcp::store::{Bus, LocalHub, MemorySessionStore, NodeTag, SessionStore};
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::types::{
    CallToolParams, ClientCapabilities, CreateMessageParams, CreateMessageResult, ErrorObject,
    ProtocolVersion, SamplingCapability,
};
use barrel_mcp_conformance::fixture;
use barrel_mcp_conformance::rr_proxy::{Proxy, Record};

use crate::rr_proxy::backend::within;
use crate::rr_proxy::proxy;

/// A client's model: answers every sampling request with "answered".
struct Model;

impl ClientHandler for Model {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(SamplingCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn create_message(
        &self,
        _: CreateMessageParams,
        _: HandlerContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Ok(CreateMessageResult::text("test-model", "answered"))
    }
}

/// Two nodes sharing `store` (sessions idle out after `idle`) behind a proxy; node `i` is
/// backend `i`, tagged `i + 1` on the hub.
async fn service(store: Arc<MemorySessionStore>, idle: Duration) -> Proxy {
    let hub = LocalHub::new();
    let mut backends = Vec::new();
    for _ in 0..2 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        backends.push(format!("http://{}", listener.local_addr().expect("addr")));
        let bus: Arc<dyn Bus> = Arc::new(hub.join());
        let config = HttpConfig {
            shared_sessions: Some(SharedSessions::new(store.clone(), bus.clone())),
            session_idle_timeout: idle,
            ..HttpConfig::default()
        };
        let server = fixture::builder_on(Some(bus.clone()))
            .build()
            .expect("the fixture");
        fixture::replicated::follow(server.clone(), bus)
            .await
            .expect("the hub listens");
        let http = StreamableHttp::new(server, config);
        tokio::spawn(async move {
            let _ = barrel_mcp::http::serve(listener, http, std::future::pending()).await;
        });
    }
    proxy(&backends).await
}

async fn connect(proxy: &Proxy) -> Client {
    let transport = HttpClientTransport::new(&format!("{}/mcp", proxy.url())).expect("transport");
    Client::builder()
        .pin(ProtocolVersion::V2025_11_25)
        .handler(Model)
        .connect_http(transport)
        .await
        .expect("initialize through the proxy")
}

fn sorted(proxy: &Proxy) -> Vec<Record> {
    let mut records = proxy.records();
    records.sort_by_key(|record| record.n);
    records
}

#[tokio::test]
async fn a_sampling_request_is_answered_through_the_other_node() {
    within(async {
        let proxy = service(Arc::new(MemorySessionStore::new()), Duration::from_secs(60)).await;
        let client = connect(&proxy).await;
        for _ in 0..4 {
            let params = CallToolParams::new("test_sampling").with_arguments(
                serde_json::json!({"prompt": "Say something"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
            let result = client.call_tool(params).await.expect("a sampled call");
            assert_eq!(result.text_content(), "LLM response: answered");
        }
        // The answers' ids name the node that asked; the proxy took some to the other one.
        let answers: Vec<(NodeTag, usize)> = sorted(&proxy)
            .iter()
            .filter(|r| r.method == "POST" && r.rpc_method.is_none())
            .filter_map(|r| {
                let asker = r
                    .rpc_id
                    .as_ref()?
                    .as_i64()
                    .and_then(NodeTag::of_request_id)?;
                Some((asker, r.backend?))
            })
            .collect();
        assert_eq!(answers.len(), 4, "{answers:?}");
        assert!(
            answers
                .iter()
                .any(|(asker, backend)| asker.get() as usize != backend + 1),
            "no answer reached the other node: {answers:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_session_the_store_lost_is_initialized_again_once() {
    within(async {
        let store = Arc::new(MemorySessionStore::new());
        // A copy asks the store at most once per eighth of the idle timeout: 500 ms here
        // (long enough that no stall of a loaded machine expires the session by itself).
        let proxy = service(store.clone(), Duration::from_secs(4)).await;
        let client = connect(&proxy).await;
        let simple = || CallToolParams::new("test_simple_text");
        client.call_tool(simple()).await.expect("a first call");
        let session = sorted(&proxy)
            .iter()
            .find_map(|r| r.new_session.clone())
            .expect("a session was opened");
        // The store loses it (Redis restarted without its data).
        assert!(
            store
                .delete(&session)
                .await
                .expect("the memory store answers")
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        for _ in 0..3 {
            let result = client
                .call_tool(simple())
                .await
                .expect("a call after the loss");
            assert_eq!(
                result.text_content(),
                "This is a simple text response for testing."
            );
        }
        let records = sorted(&proxy);
        let opened: Vec<&Record> = records
            .iter()
            .filter(|r| r.rpc_method.as_deref() == Some("initialize"))
            .collect();
        assert_eq!(opened.len(), 2, "initialized again once: {records:#?}");
        assert!(
            records.iter().any(|r| r.status == 404),
            "the lost session was 404: {records:#?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_tool_added_on_one_node_is_listed_by_both() {
    within(async {
        let proxy = service(Arc::new(MemorySessionStore::new()), Duration::from_secs(60)).await;
        let client = connect(&proxy).await;
        let trigger = CallToolParams::new("test_trigger_tool_change");
        client.call_tool(trigger).await.expect("the trigger");
        let listed = |tools: &[barrel_mcp::types::Tool]| {
            tools.iter().any(|tool| tool.name == "test_triggered_tool")
        };
        // The other node applies it once the news arrives; then every listing has it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut in_a_row = 0;
        while in_a_row < 4 {
            let tools = client.list_all_tools().await.expect("tools/list");
            if listed(&tools) {
                in_a_row += 1;
            } else {
                in_a_row = 0;
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "never on both nodes"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let nodes: std::collections::BTreeSet<usize> = sorted(&proxy)
            .iter()
            .filter(|r| r.rpc_method.as_deref() == Some("tools/list"))
            .filter_map(|r| r.backend)
            .collect();
        assert_eq!(nodes.len(), 2, "both nodes listed: {nodes:?}");
    })
    .await;
}
