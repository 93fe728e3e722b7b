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

/// A review request.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Review {
    /// The code to review.
    code: String,
    /// How strict to be.
    strictness: Option<String>,
}

#[derive(serde::Deserialize)]
struct Note {
    id: u32,
}

#[tokio::test]
async fn typed_prompts_and_templates() {
    use barrel_mcp::server::{Ctx, Server};
    use barrel_mcp::types::ResourceTemplate;
    let server = Server::builder()
        .name("typed", "1.0.0")
        .typed_prompt("review", "Review code", |_: Ctx, args: Review| async move {
            let strictness = args.strictness.unwrap_or_else(|| "fair".to_owned());
            Ok(format!("{strictness}: {}", args.code))
        })
        .typed_template(
            ResourceTemplate::new("notes://{id}", "note").with_mime_type("text/plain"),
            |_: Ctx, note: Note| async move { Ok(format!("note number {}", note.id + 1)) },
        )
        .build()
        .expect("server");
    let prompts = server.list_prompts().await.expect("prompts");
    let arguments = prompts[0].arguments.clone().unwrap_or_default();
    let described: Vec<(&str, Option<bool>)> = arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(described, [("code", Some(true)), ("strictness", None)]);
    let result = server
        .get_prompt("review", [("code", "x = 1")])
        .await
        .expect("prompt");
    let text = match &result.messages[0].content {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text, "fair: x = 1");
    let note = server.read_resource("notes://41").await.expect("note");
    match &note.contents[0] {
        ResourceContents::Text(text) => {
            assert_eq!(text.text, "note number 42");
            assert_eq!(text.mime_type.as_deref(), Some("text/plain"));
        }
        other => panic!("{other:?}"),
    }
    // A variable that does not fit the struct is invalid params, not a panic.
    let bad = server
        .read_resource("notes://forty")
        .await
        .expect_err("not a number");
    assert_eq!(bad.as_rpc().map(|e| e.code.0), Some(-32602));
}

#[tokio::test]
async fn a_client_calls_with_any_serializable_arguments_and_reads_typed_results() {
    #[derive(serde::Serialize)]
    struct AddArgs {
        a: i64,
        b: i64,
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Sum {
        sum: i64,
    }
    let (server, _) = fixture::server();
    let client = server.connect_local().await.expect("client");
    let result = client
        .call("add", AddArgs { a: 2, b: 40 })
        .await
        .expect("add");
    assert_eq!(
        result.structured_as::<Sum>().expect("typed"),
        Sum { sum: 42 }
    );
    assert_eq!(result.text_content(), r#"{"sum":42}"#);
    let echoed = client
        .call("echo", json!({ "message": "hi" }))
        .await
        .expect("echo");
    assert_eq!(echoed.text_content(), "hi");
    assert!(
        echoed.structured_as::<Sum>().is_err(),
        "no structured content"
    );
    assert!(client.call("echo", "not an object").await.is_err());
}

/// A local call's outcome as JSON: the result, or the JSON-RPC error's code and message.
fn local_outcome<T: serde::Serialize>(outcome: barrel_mcp::Result<T>) -> serde_json::Value {
    match outcome {
        Ok(result) => serde_json::to_value(result).expect("json"),
        Err(Error::Rpc(error)) => json!({ "code": error.code.0, "message": error.message }),
        Err(other) => panic!("not a JSON-RPC error: {other}"),
    }
}

/// The same outcome of a raw request over a transport, as a remote client sees it.
fn remote_outcome(
    outcome: Result<serde_json::Value, barrel_mcp::types::ErrorObject>,
) -> serde_json::Value {
    match outcome {
        Ok(mut result) => {
            // `resultType` ("complete") is the 2026-07-28 round's marker, which the client
            // consumes; everything else must be the same.
            if let Some(object) = result.as_object_mut() {
                object.remove("resultType");
            }
            result
        }
        Err(error) => json!({ "code": error.code.0, "message": error.message }),
    }
}

#[tokio::test]
async fn local_and_remote_calls_give_the_same_answers() {
    let (server, _) = fixture::server();
    let remote = super::connect(&server);
    let caps = json!({});
    let tool_calls = [
        ("add", json!({ "a": 2, "b": 40 })),
        ("add", json!({ "a": "two", "b": 1 })),
        ("add", json!({ "a": 2 })),
        ("echo", json!({ "message": "hi" })),
        ("fail", json!({})),
        ("nope", json!({})),
    ];
    for (name, arguments) in tool_calls {
        let local = local_outcome(server.call_tool(name, arguments.clone()).await);
        let wire = remote_outcome(
            remote
                .stateless(
                    "tools/call",
                    json!({ "name": name, "arguments": arguments }),
                    caps.clone(),
                )
                .await,
        );
        assert_eq!(local, wire, "tools/call {name} {arguments}");
    }
    for uri in [
        "test://readme",
        "test://notes/7",
        "test://missing",
        "file:///a/../b",
    ] {
        let local = local_outcome(server.read_resource(uri).await);
        let wire = remote_outcome(
            remote
                .stateless("resources/read", json!({ "uri": uri }), caps.clone())
                .await,
        );
        assert_eq!(local, wire, "resources/read {uri}");
    }
    let prompt_calls: [(&str, &[(&str, &str)]); 3] =
        [("greet", &[("name", "Ada")]), ("greet", &[]), ("nope", &[])];
    for (name, arguments) in prompt_calls {
        let local = local_outcome(server.get_prompt(name, arguments.iter().copied()).await);
        let map: serde_json::Map<String, serde_json::Value> = arguments
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let wire = remote_outcome(
            remote
                .stateless(
                    "prompts/get",
                    json!({ "name": name, "arguments": map }),
                    caps.clone(),
                )
                .await,
        );
        assert_eq!(local, wire, "prompts/get {name}");
    }
    let local_tools = local_outcome(server.list_tools().await);
    let wire_tools = remote
        .stateless("tools/list", json!({}), caps.clone())
        .await
        .expect("tools/list");
    assert_eq!(local_tools, wire_tools["tools"]);
}
