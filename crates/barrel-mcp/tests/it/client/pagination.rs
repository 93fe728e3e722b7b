//! Paginated walks from the client: several pages in order, a forged cursor refused by the
//! server, and a server that repeats or cycles its cursors stopped by the pager.

use barrel_mcp::server::{Server, ServerConfig, ToolHandler};
use barrel_mcp::types::{ErrorObject, ListToolsResult, ProtocolVersion, Tool};
use serde_json::json;

use super::{builder, connect_fake, connect_to};

fn server_with_tools(count: usize) -> Server {
    let server = Server::builder()
        .name("pages", "1.0.0")
        .config(ServerConfig {
            page_size: 2,
            ..ServerConfig::default()
        })
        .build()
        .expect("server");
    for index in 0..count {
        let tool = Tool::new(format!("tool_{index}"), Tool::empty_input_schema());
        server
            .add_tool(tool, ToolHandler::raw(|_, _| async { Ok("ok") }))
            .expect("tool");
    }
    server
}

#[tokio::test]
async fn a_walk_visits_every_page_in_order_and_a_forged_cursor_is_refused() {
    let server = server_with_tools(5);
    let client = connect_to(&server, builder(None)).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("all pages")
        .into_iter()
        .map(|tool| tool.name)
        .collect();
    assert_eq!(names, ["tool_0", "tool_1", "tool_2", "tool_3", "tool_4"]);
    let mut pager = client.pages::<ListToolsResult>();
    let mut sizes = Vec::new();
    while let Some(page) = pager.next_page().await.expect("page") {
        sizes.push(page.len());
    }
    assert_eq!(sizes, [2, 2, 1]);
    let forged = client
        .list_page::<ListToolsResult>(Some("not-a-cursor".to_owned()))
        .await
        .expect_err("forged");
    assert_eq!(forged.as_rpc().map(|e| e.code.0), Some(-32602));
}

/// A fake server whose `tools/list` always answers with `next(cursor)` as the next cursor.
async fn cursor_server(next: fn(Option<&str>) -> &'static str) -> barrel_mcp::client::Client {
    connect_fake(
        builder(Some(ProtocolVersion::V2025_11_25)),
        move |request, _| {
            Box::pin(async move {
                match request.method.as_str() {
                    "initialize" => Ok(json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "fake", "version": "0" }
                    })),
                    "tools/list" => {
                        let cursor = request
                            .params
                            .as_ref()
                            .and_then(|p| p.get("cursor"))
                            .and_then(|c| c.as_str());
                        Ok(json!({ "tools": [], "nextCursor": next(cursor) }))
                    }
                    other => Err(ErrorObject::method_not_found(other)),
                }
            })
        },
    )
    .await
}

#[tokio::test]
async fn a_repeated_or_cycling_cursor_ends_the_walk_with_an_error() {
    let repeating = cursor_server(|_| "same").await;
    let error = repeating.list_all_tools().await.expect_err("repeats");
    assert!(error.to_string().contains("same cursor twice"), "{error}");
    // A cycle of two never repeats back to back; the page cap stops it.
    let cycling = cursor_server(|cursor| if cursor == Some("a") { "b" } else { "a" }).await;
    let error = cycling.list_all_tools().await.expect_err("cycles");
    assert!(error.to_string().contains("max_pages"), "{error}");
}
