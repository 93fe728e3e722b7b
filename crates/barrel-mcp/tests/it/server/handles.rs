//! Reaching a session from outside a handler: a [`SessionHandle`] kept by a background task
//! logs, reports progress, notifies and asks the client, on its own session only, with the
//! handler's rules; once the session ends it fails with `Error::Closed`.

use std::sync::{Arc, Mutex};

use barrel_mcp::Error;
use barrel_mcp::server::{Ctx, Server, SessionHandle};
use barrel_mcp::types::{
    CreateMessageParams, ElicitRequestParams, LoggingLevel, ProgressToken, SamplingMessage,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{connect, envelope};
use crate::support::within;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A server whose `remember` tool hands its session to the test, as a background job would
/// keep it.
fn server() -> (Server, Arc<Mutex<Option<SessionHandle>>>) {
    let kept = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&kept);
    let server = Server::builder()
        .name("handles", "1.0.0")
        .tool(
            "remember",
            "Keeps the session",
            move |ctx: Ctx, _: NoArgs| {
                let slot = Arc::clone(&slot);
                async move {
                    let id = ctx.session_id().map(str::to_owned);
                    *slot.lock().expect("slot") = ctx.session();
                    Ok(id.unwrap_or_else(|| "no session".to_owned()))
                }
            },
        )
        .build()
        .expect("server");
    (server, kept)
}

fn take(kept: &Mutex<Option<SessionHandle>>) -> SessionHandle {
    kept.lock()
        .expect("slot")
        .take()
        .expect("a session was kept")
}

async fn remember(client: &super::TestClient) -> String {
    let result = client
        .request("tools/call", json!({ "name": "remember", "arguments": {} }))
        .await
        .expect("remember");
    super::text_of(&result)
}

#[tokio::test]
async fn a_kept_handle_reaches_its_session_and_no_other() {
    let (server, kept) = server();
    let alice = connect(&server);
    alice.initialize("2025-11-25").await;
    let bob = connect(&server);
    bob.initialize("2025-11-25").await;
    let id = remember(&alice).await;
    let handle = take(&kept);
    assert_eq!(handle.id(), id);
    assert_eq!(server.live_sessions().len(), 2);
    assert_eq!(
        server.session(&id).map(|h| h.id().to_owned()),
        Some(id.clone())
    );

    // A background task keeps the handle and speaks after the tool has answered.
    let background = handle.clone();
    tokio::spawn(async move {
        background
            .log(LoggingLevel::Info, json!("from the background"))
            .await
    })
    .await
    .expect("the task ran")
    .expect("log");
    let note = alice.notification().await;
    assert_eq!(note.method, "notifications/message");
    assert_eq!(note.params.expect("params")["data"], "from the background");
    let token = ProgressToken::from("job-1".to_owned());
    handle
        .progress(&token, 1.0, Some(2.0), Some("half"))
        .await
        .expect("progress");
    let note = alice.notification().await;
    assert_eq!(note.method, "notifications/progress");
    assert_eq!(note.params.expect("params")["progressToken"], "job-1");
    handle.tools_list_changed().await.expect("list changed");
    assert_eq!(
        alice.notification().await.method,
        "notifications/tools/list_changed"
    );
    // Bob heard none of it: a round trip on his connection comes after anything the server
    // had queued for him before it.
    bob.request("ping", json!({})).await.expect("ping");
    assert!(bob.drain_notifications().is_empty());
}

#[tokio::test]
async fn a_handle_follows_the_session_level_and_capabilities() {
    let (server, kept) = server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    remember(&client).await;
    let handle = take(&kept);
    client
        .request("logging/setLevel", json!({ "level": "error" }))
        .await
        .expect("setLevel");
    handle
        .log(LoggingLevel::Info, "too quiet")
        .await
        .expect("filtered, not an error");
    handle.log(LoggingLevel::Error, "loud").await.expect("log");
    let note = client.notification().await;
    assert_eq!(note.params.expect("params")["data"], "loud");
    // Not subscribed: no update is sent.
    assert!(!handle.resource_updated("test://x").await.expect("no error"));

    let answer = handle
        .create_message(CreateMessageParams::new(
            vec![SamplingMessage::user("hi")],
            16,
        ))
        .await
        .expect("sampling");
    assert_eq!(answer.model, "test-model");
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let elicited = handle
        .elicit(ElicitRequestParams::form(
            "Name?",
            schema.as_object().cloned().unwrap_or_default(),
        ))
        .await
        .expect("elicit");
    assert_eq!(elicited.content.expect("content")["name"], "Ada");
    let roots = handle.list_roots().await.expect("roots");
    assert_eq!(roots.roots.len(), 1);
    let asked: Vec<String> = client
        .asked
        .lock()
        .expect("asked")
        .iter()
        .map(|(method, _)| method.clone())
        .collect();
    assert_eq!(
        asked,
        ["sampling/createMessage", "elicitation/create", "roots/list"]
    );
}

#[tokio::test]
async fn a_handle_asks_only_for_what_the_client_declared() {
    let (server, kept) = server();
    let client = connect(&server);
    client
        .request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "plain-client", "version": "1.0.0" }
            }),
        )
        .await
        .expect("initialize");
    within(client.peer.notify("notifications/initialized", None))
        .await
        .expect("initialized");
    remember(&client).await;
    let handle = take(&kept);
    let refused = [
        handle
            .create_message(CreateMessageParams::new(
                vec![SamplingMessage::user("hi")],
                16,
            ))
            .await
            .map(|_| ()),
        handle
            .elicit(ElicitRequestParams::form("Name?", Default::default()))
            .await
            .map(|_| ()),
        handle.list_roots().await.map(|_| ()),
    ];
    for outcome in refused {
        let error = outcome.expect_err("not declared");
        assert_eq!(error.as_rpc().map(|e| e.code.0), Some(-32600), "{error}");
    }
    // Nothing reached the client.
    assert!(client.asked.lock().expect("asked").is_empty());
}

#[tokio::test]
async fn a_handle_fails_once_its_session_ended() {
    let (server, kept) = server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let id = remember(&client).await;
    let handle = take(&kept);
    client.peer.close();
    within(handle.closed()).await;
    let error = handle
        .log(LoggingLevel::Error, "anyone?")
        .await
        .expect_err("closed");
    assert!(matches!(error, Error::Closed), "{error}");
    assert!(matches!(handle.list_roots().await, Err(Error::Closed)));
    within(async {
        while server.session(&id).is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(server.live_sessions().is_empty());
}

#[tokio::test]
async fn a_stateless_request_has_no_session() {
    let (server, kept) = server();
    let client = connect(&server);
    let result = client
        .request(
            "tools/call",
            envelope(json!({ "name": "remember", "arguments": {} }), json!({})),
        )
        .await
        .expect("remember");
    assert_eq!(super::text_of(&result), "no session");
    assert!(kept.lock().expect("slot").is_none());
}
