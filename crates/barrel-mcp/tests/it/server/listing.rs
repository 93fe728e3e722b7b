//! Lists: deterministic order, cursor pagination, forged cursors, run-time changes announced
//! with `list_changed`, and resource subscriptions.

use barrel_mcp::server::{ServerConfig, ToolHandler};
use barrel_mcp::types::{Prompt, Resource, Tool};
use serde_json::{Value, json};

use super::{connect, fixture};

fn names(result: &Value, list: &str, key: &str) -> Vec<String> {
    result[list]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|item| item[key].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn pages_walk_the_whole_list_in_a_stable_order() {
    let config = ServerConfig {
        page_size: 3,
        ..ServerConfig::default()
    };
    let (server, _) = fixture::server_with(config);
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = client.request("tools/list", params).await.expect("page");
        let page_names = names(&page, "tools", "name");
        assert!(page_names.len() <= 3);
        all.extend(page_names);
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "deterministic order");
    assert!(all.contains(&"echo".to_owned()) && all.len() > 10);
    let other = connect(&server);
    other.initialize("2025-06-18").await;
    let first = other
        .request("tools/list", json!({}))
        .await
        .expect("first page");
    assert_eq!(
        names(&first, "tools", "name"),
        all[..3].to_vec(),
        "same order on every connection"
    );
}

#[tokio::test]
async fn forged_cursors_are_rejected_cleanly() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    for cursor in ["", "garbage", "Yzk6OTk5OTk6MA", "%%%", &"A".repeat(10_000)] {
        let error = client
            .request("tools/list", json!({ "cursor": cursor }))
            .await
            .expect_err("forged");
        assert_eq!(error.code.0, -32602, "cursor {cursor:?}");
    }
    assert!(
        client.request("tools/list", json!({})).await.is_ok(),
        "still serving"
    );
}

#[tokio::test]
async fn run_time_changes_are_announced() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    client.request("ping", json!({})).await.expect("ping");
    let tool = Tool {
        name: "late".into(),
        input_schema: json!({ "type": "object" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Tool::default()
    };
    server
        .add_tool(tool, ToolHandler::raw(|_, _| async { Ok("late") }))
        .expect("valid tool");
    assert_eq!(
        client.notification().await.method,
        "notifications/tools/list_changed"
    );
    let listed = client.request("tools/list", json!({})).await.expect("list");
    assert!(names(&listed, "tools", "name").contains(&"late".to_owned()));
    assert!(server.remove_tool("late"));
    assert_eq!(
        client.notification().await.method,
        "notifications/tools/list_changed"
    );
    assert!(!server.remove_tool("late"));

    server.add_prompt(
        Prompt::new("late"),
        barrel_mcp::server::PromptHandler::new(|_, _| async {
            Ok(barrel_mcp::types::GetPromptResult::new(vec![]))
        }),
    );
    assert_eq!(
        client.notification().await.method,
        "notifications/prompts/list_changed"
    );
    server.add_resource(
        Resource::new("test://late", "late"),
        barrel_mcp::server::ResourceHandler::new(|_, _| async { Ok(vec![]) }),
    );
    assert_eq!(
        client.notification().await.method,
        "notifications/resources/list_changed"
    );
    assert!(server.remove_resource("test://late") && server.remove_prompt("late"));
}

#[tokio::test]
async fn invalid_tool_names_are_refused() {
    let (server, _) = fixture::server();
    for bad in ["", "has space", "slash/name", &"x".repeat(129)] {
        let tool = Tool {
            name: bad.to_owned(),
            input_schema: json!({ "type": "object" })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Tool::default()
        };
        let refused = server.add_tool(tool, ToolHandler::raw(|_, _| async { Ok("x") }));
        assert!(
            matches!(refused, Err(barrel_mcp::Error::Definition(_))),
            "{bad:?}"
        );
    }
    let no_object = Tool {
        name: "ok_name".into(),
        input_schema: json!({ "type": "string" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Tool::default()
    };
    assert!(
        server
            .add_tool(no_object, ToolHandler::raw(|_, _| async { Ok("x") }))
            .is_err()
    );
}

#[tokio::test]
async fn subscribers_hear_about_updates() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    client
        .request("resources/subscribe", json!({ "uri": "test://readme" }))
        .await
        .expect("subscribe");
    server.notify_resource_updated("test://other");
    server.notify_resource_updated("test://readme");
    let note = client.notification().await;
    assert_eq!(note.method, "notifications/resources/updated");
    assert_eq!(note.params.expect("params")["uri"], "test://readme");
    client
        .request("resources/unsubscribe", json!({ "uri": "test://readme" }))
        .await
        .expect("unsubscribe");
    server.notify_resource_updated("test://readme");
    client.request("ping", json!({})).await.expect("ping");
    assert!(client.drain_notifications().is_empty());
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_still_hears_of_every_resource() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    for uri in ["test://readme", "test://blob"] {
        client
            .request("resources/subscribe", json!({ "uri": uri }))
            .await
            .expect("subscribe");
    }
    // Far more changes at once than a session's buffer holds: the blob's update is among the
    // ones pushed out before the session could forward it.
    server.notify_resource_updated("test://blob");
    for _ in 0..1_000 {
        server.notify_resource_updated("test://readme");
    }
    let mut heard = std::collections::BTreeSet::new();
    crate::support::within(async {
        while !(heard.contains("test://blob") && heard.contains("test://readme")) {
            let note = client.notification().await;
            if note.method == "notifications/resources/updated" {
                heard.insert(
                    note.params.expect("params")["uri"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned(),
                );
            }
        }
    })
    .await;
    assert_eq!(heard.len(), 2);
}
