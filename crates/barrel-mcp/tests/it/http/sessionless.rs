//! A sessionless server (`HttpConfig::sessionless`, barrel_mcp's `session_enabled => false`):
//! `initialize` opens nothing, every request of the sessionful revisions is served on its own in
//! the revision it names, what needs a session is neither offered nor kept, and the client of
//! this crate works against it.

use barrel_mcp::client::Client as McpClient;
use barrel_mcp::http::HttpConfig;
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::types::{CallToolParams, ProtocolVersion};
use http::{Method, StatusCode};
use serde_json::json;

use super::{Response, SseReader, TestServer, body_json, initialize, session_id};
use crate::support::within;

/// The JSON-RPC answer of a response, whether sent as JSON or as an SSE stream.
async fn answer(response: Response) -> serde_json::Value {
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if sse {
        SseReader::new(response).next_message().await
    } else {
        body_json(response).await
    }
}

fn sessionless() -> HttpConfig {
    HttpConfig {
        sessionless: true,
        ..HttpConfig::default()
    }
}

#[tokio::test]
async fn initialize_opens_nothing_and_each_request_is_served_on_its_own() {
    let server = TestServer::start(sessionless()).await;
    let client = server.client();
    let response = client.post(&initialize(1)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(session_id(response.headers()), None, "no Mcp-Session-Id");
    let result = answer(response).await["result"].clone();
    assert_eq!(result["protocolVersion"], "2025-11-25");
    // Nothing that needs a session is offered.
    let capabilities = &result["capabilities"];
    assert!(
        capabilities["tools"].get("listChanged").is_none(),
        "{capabilities}"
    );
    assert!(
        capabilities["resources"].get("subscribe").is_none(),
        "{capabilities}"
    );
    assert!(capabilities.get("tasks").is_none(), "{capabilities}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        client.post(&initialized).await.status(),
        StatusCode::ACCEPTED
    );

    // Later requests carry no session, only the revision.
    let version = [("mcp-protocol-version", "2025-06-18")];
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"message": "alone"}}});
    let response = client.post_with(&call, &version).await;
    assert_eq!(response.status(), StatusCode::OK);
    let reply = answer(response).await;
    assert_eq!(reply["result"]["content"][0]["text"], "alone", "{reply}");
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let response = client.post(&list).await; // no header at all: 2025-03-26
    assert_eq!(response.status(), StatusCode::OK);
    let reply = answer(response).await;
    assert!(
        reply["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    // Progress travels on the request's own stream, before its result.
    let countdown = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "countdown", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}}});
    let response = client.post_with(&countdown, &version).await;
    let mut stream = SseReader::new(response);
    let mut progress = 0;
    loop {
        let message = stream.next_message().await;
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p");
            progress += 1;
        } else {
            assert_eq!(message["id"], 4, "{message}");
            break;
        }
    }
    assert_eq!(progress, 3);
    assert_eq!(server.http.session_count(), 0, "no session was made");
}

#[tokio::test]
async fn what_needs_a_session_is_refused_clearly() {
    let server = TestServer::start(sessionless()).await;
    let client = server.client();
    let version = [("mcp-protocol-version", "2025-11-25")];
    // No GET stream, no DELETE.
    let get = client
        .send(
            Method::GET,
            &[("accept", "text/event-stream"), version[0]],
            None,
        )
        .await;
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let delete = client.send(Method::DELETE, &version, None).await;
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED);
    // The legacy HTTP+SSE transport is a session by nature: not served.
    let legacy = client
        .send_to(
            Method::GET,
            "/sse",
            &[("accept", "text/event-stream")],
            None,
        )
        .await;
    assert_eq!(legacy.status(), StatusCode::NOT_FOUND);
    // No subscription.
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                           "params": {"uri": "test://static"}});
    let reply = answer(client.post_with(&subscribe, &version).await).await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    // A question to the client: it declared nothing, so the tool fails at once.
    let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "ask_name", "arguments": {}}});
    let reply = within(async { answer(client.post_with(&ask, &version).await).await }).await;
    let refused = reply.get("error").is_some() || reply["result"]["isError"] == true;
    assert!(refused, "{reply}");
    // A revision that is not a sessionful one.
    let bad = client
        .post_with(&subscribe, &[("mcp-protocol-version", "1999-01-01")])
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    // A task-augmented call is served as a plain one.
    let task = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"message": "now"}, "task": {}}});
    let reply = answer(client.post_with(&task, &version).await).await;
    assert_eq!(reply["result"]["content"][0]["text"], "now", "{reply}");
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn the_client_of_this_crate_works_against_a_sessionless_server() {
    let server = TestServer::start(sessionless()).await;
    let url = format!("http://{}/mcp", server.addr);
    let transport = HttpClientTransport::new(&url).expect("transport");
    let client = within(
        McpClient::builder()
            .name("sessionless-test", "1.0.0")
            .pin(ProtocolVersion::V2025_11_25)
            .connect(transport),
    )
    .await
    .expect("connects");
    let tools = within(client.list_all_tools()).await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "echo"));
    let mut call = CallToolParams::new("echo");
    call = call.with_arguments(
        json!({"message": "hi"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let result = within(client.call_tool(call)).await.expect("call");
    assert_eq!(result.text_content(), "hi");
    assert_eq!(server.http.session_count(), 0);
}
