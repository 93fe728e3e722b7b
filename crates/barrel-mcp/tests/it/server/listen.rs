//! `subscriptions/listen`: the acknowledgement first, then only the opted-in notifications,
//! each tagged with the listen request's id; cancellation ends it; the number open is capped.

use std::time::Duration;

use barrel_mcp::peer::RequestOptions;
use barrel_mcp::server::{PromptHandler, ServerConfig, ToolHandler};
use barrel_mcp::types::{GetPromptResult, Prompt, Tool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{connect, envelope, fixture};
use crate::support::within;

/// Starts a listen request in the background; returns the token that cancels it.
fn start_listen(
    client: &super::TestClient,
    filter: Value,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<barrel_mcp::Result<Value>>,
) {
    let cancel = CancellationToken::new();
    let options = RequestOptions {
        cancel: Some(cancel.clone()),
        timeout: Some(Duration::from_secs(30)),
        ..RequestOptions::default()
    };
    let params = envelope(json!({ "notifications": filter }), json!({}));
    let peer = client.peer.clone();
    let task = tokio::spawn(async move {
        peer.request("subscriptions/listen", Some(params), options)
            .await
    });
    (cancel, task)
}

fn tool(name: &str) -> Tool {
    Tool::new(name, Tool::empty_input_schema())
}

#[tokio::test]
async fn acknowledges_then_delivers_only_what_was_asked() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let filter = json!({ "toolsListChanged": true, "resourceSubscriptions": ["test://readme"] });
    let (cancel, task) = start_listen(&client, filter.clone());
    let ack = client.notification().await;
    assert_eq!(ack.method, "notifications/subscriptions/acknowledged");
    let ack = ack.params.expect("params");
    assert_eq!(ack["notifications"], filter);
    let id = ack["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    assert!(id.is_i64(), "tagged with the listen request's id: {id}");

    server.add_prompt(
        Prompt::new("ignored"),
        PromptHandler::new(|_, _| async { Ok(GetPromptResult::new(vec![])) }),
    );
    server.notify_resource_updated("test://other");
    server
        .add_tool(tool("added"), ToolHandler::raw(|_, _| async { Ok("x") }))
        .expect("tool");
    server.notify_resource_updated("test://readme");

    let changed = client.notification().await;
    assert_eq!(changed.method, "notifications/tools/list_changed");
    assert_eq!(
        changed.params.expect("params")["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    let updated = client.notification().await;
    assert_eq!(updated.method, "notifications/resources/updated");
    let updated = updated.params.expect("params");
    assert_eq!(updated["uri"], "test://readme");
    assert_eq!(
        updated["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );

    cancel.cancel();
    let ended = within(task).await.expect("join");
    assert!(
        matches!(ended, Err(barrel_mcp::Error::Cancelled)),
        "{ended:?}"
    );
    // After the cancel nothing more is delivered, and the connection still serves.
    server
        .add_tool(tool("later"), ToolHandler::raw(|_, _| async { Ok("x") }))
        .expect("tool");
    client
        .stateless("tools/list", json!({}), json!({}))
        .await
        .expect("still serving");
    assert!(client.drain_notifications().is_empty());
}

#[tokio::test]
async fn an_empty_filter_subscribes_to_nothing() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let (cancel, _task) = start_listen(&client, json!({}));
    let ack = client.notification().await.params.expect("params");
    assert_eq!(ack["notifications"], json!({}));
    server
        .add_tool(tool("quiet"), ToolHandler::raw(|_, _| async { Ok("x") }))
        .expect("tool");
    client
        .stateless("tools/list", json!({}), json!({}))
        .await
        .expect("round trip");
    assert!(client.drain_notifications().is_empty());
    cancel.cancel();
}

#[tokio::test]
async fn open_subscriptions_are_capped_and_sessions_do_not_listen() {
    let config = ServerConfig {
        max_subscriptions: 1,
        ..ServerConfig::default()
    };
    let (server, _) = fixture::server_with(config);
    let client = connect(&server);
    let (cancel, _first) = start_listen(&client, json!({ "toolsListChanged": true }));
    client.notification().await;
    let refused = client
        .stateless(
            "subscriptions/listen",
            json!({ "notifications": {} }),
            json!({}),
        )
        .await
        .expect_err("over the cap");
    assert_eq!(refused.code.0, -32603);
    cancel.cancel();
    within(async {
        loop {
            let (again, task) = start_listen(&client, json!({}));
            tokio::time::sleep(Duration::from_millis(20)).await;
            if task.is_finished() {
                continue; // refused: the first slot is not free yet
            }
            let note = client.notification().await;
            assert_eq!(note.method, "notifications/subscriptions/acknowledged");
            again.cancel();
            break;
        }
    })
    .await;

    let session = connect(&server);
    session.initialize("2025-11-25").await;
    let error = session
        .request("subscriptions/listen", json!({ "notifications": {} }))
        .await
        .expect_err("no listen in a session");
    assert_eq!(error.code.0, -32601);
}

#[tokio::test]
async fn subscriptions_are_capped_per_session_and_per_filter() {
    let config = ServerConfig {
        max_resource_subscriptions: 2,
        max_subscription_uri_length: 64,
        ..ServerConfig::default()
    };
    let (server, _) = fixture::server_with(config);
    // A session: two subscriptions, then one more is refused; re-subscribing is not "more".
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    for uri in ["test://a", "test://b", "test://a"] {
        client
            .request("resources/subscribe", json!({ "uri": uri }))
            .await
            .expect("under the cap");
    }
    let refused = client
        .request("resources/subscribe", json!({ "uri": "test://c" }))
        .await
        .expect_err("over the cap");
    assert_eq!(refused.code.0, -32602);
    let long = format!("test://{}", "x".repeat(64));
    let refused = client
        .request("resources/subscribe", json!({ "uri": long }))
        .await
        .expect_err("too long");
    assert_eq!(refused.code.0, -32602);
    // After an unsubscribe there is room again.
    client
        .request("resources/unsubscribe", json!({ "uri": "test://b" }))
        .await
        .expect("unsubscribe");
    client
        .request("resources/subscribe", json!({ "uri": "test://c" }))
        .await
        .expect("room again");

    // A listen filter naming more URIs than the cap is refused before it is acknowledged.
    let stateless = connect(&server);
    let refused = stateless
        .stateless(
            "subscriptions/listen",
            json!({ "notifications": { "resourceSubscriptions": ["a://1", "a://2", "a://3"] } }),
            json!({}),
        )
        .await
        .expect_err("over the cap");
    assert_eq!(refused.code.0, -32602);
    assert!(
        stateless.drain_notifications().is_empty(),
        "no acknowledgement"
    );
}

// One thread: the changes are all noted before the session's sender first runs.
#[tokio::test(flavor = "current_thread")]
async fn changes_made_before_a_session_heard_them_are_announced_once_each_in_order() {
    let (server, _) = fixture::server();
    let alice = connect(&server);
    alice.initialize("2025-11-25").await;
    // Answered after `notifications/initialized` was read: the session hears changes now.
    alice.request("ping", json!({})).await.expect("pong");
    // Made at once, before the session's sender ran (this test's runtime has one thread).
    server.tools_list_changed();
    server.prompts_list_changed();
    server.tools_list_changed();
    for method in [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    ] {
        assert_eq!(alice.notification().await.method, method);
    }
    // Nothing else was kept: the next change is the next notification.
    server.resources_list_changed();
    assert_eq!(
        alice.notification().await.method,
        "notifications/resources/list_changed"
    );
    assert!(alice.drain_notifications().is_empty());
}

#[tokio::test]
async fn an_explicit_list_change_reaches_every_session_and_every_listen_stream_that_asked() {
    let (server, _) = fixture::server();
    let alice = connect(&server);
    alice.initialize("2025-11-25").await;
    let bob = connect(&server);
    bob.initialize("2025-06-18").await;
    let listener = connect(&server);
    let (cancel, _task) = start_listen(&listener, json!({ "promptsListChanged": true }));
    assert_eq!(
        listener.notification().await.method,
        "notifications/subscriptions/acknowledged"
    );

    server.tools_list_changed();
    for session in [&alice, &bob] {
        assert_eq!(
            session.notification().await.method,
            "notifications/tools/list_changed"
        );
    }
    server.prompts_list_changed();
    server.resources_list_changed();
    for session in [&alice, &bob] {
        assert_eq!(
            session.notification().await.method,
            "notifications/prompts/list_changed"
        );
        assert_eq!(
            session.notification().await.method,
            "notifications/resources/list_changed"
        );
    }
    // The listen stream asked for prompt changes only.
    let heard = listener.notification().await;
    assert_eq!(heard.method, "notifications/prompts/list_changed");
    listener
        .stateless("tools/list", json!({}), json!({}))
        .await
        .expect("round trip");
    assert!(listener.drain_notifications().is_empty());
    cancel.cancel();
}
