//! Local calls on a `Server`: no transport to set up, and the same checks as a remote call.

use barrel_mcp::Error;
use barrel_mcp::types::{ContentBlock, ResourceContents};
use serde_json::json;

use super::{fixture, text_of};

#[tokio::test]
async fn local_calls_validate_like_remote_ones() {
    let (server, _) = fixture::server();
    let sum = server
        .call_tool("add", json!({ "a": 2, "b": 40 }))
        .await
        .expect("add");
    assert_eq!(sum.structured_content, Some(json!({ "sum": 42 })));
    // The same schema check as over a transport: an isError result naming the field.
    let bad = server
        .call_tool("add", json!({ "a": "two", "b": 1 }))
        .await
        .expect("a tool error, not a call error");
    assert_eq!(bad.is_error, Some(true));
    let bad = serde_json::to_value(&bad).expect("json");
    assert!(text_of(&bad).contains("/a"), "{bad}");
    let unknown = server.call_tool("nope", ()).await.expect_err("unknown");
    assert_eq!(unknown.as_rpc().map(|e| e.code.0), Some(-32602));
    let not_an_object = server.call_tool("add", [1, 2]).await.expect_err("array");
    assert!(matches!(not_an_object, Error::Rpc(_)), "{not_an_object}");
}

#[tokio::test]
async fn local_reads_prompts_and_lists() {
    let (server, _) = fixture::server();
    let tools = server.list_tools().await.expect("tools");
    assert!(tools.iter().any(|tool| tool.name == "add"));
    assert!(!server.list_resources().await.expect("resources").is_empty());
    assert!(!server.list_prompts().await.expect("prompts").is_empty());
    let readme = server.read_resource("test://readme").await.expect("read");
    match &readme.contents[0] {
        ResourceContents::Text(text) => assert_eq!(text.text, "read me"),
        other => panic!("{other:?}"),
    }
    let missing = server.read_resource("test://missing").await;
    assert!(missing.is_err());
    let greeting = server
        .get_prompt("greet", [("name", "Ada")])
        .await
        .expect("prompt");
    let text = match &greeting.messages[0].content {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(text.contains("Ada"), "{text}");
    // A missing required argument is refused, as for a remote caller.
    let no_name = server
        .get_prompt("greet", std::iter::empty::<(String, String)>())
        .await;
    assert!(no_name.is_err());
}
