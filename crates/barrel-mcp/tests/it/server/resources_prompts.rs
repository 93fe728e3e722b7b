//! Resources, templates, prompts and completions.

use serde_json::json;

use super::{connect, fixture};

#[tokio::test]
async fn reads_text_blob_and_templates() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let text = client
        .request("resources/read", json!({ "uri": "test://readme" }))
        .await
        .expect("text");
    assert_eq!(
        text["contents"][0],
        json!({ "uri": "test://readme", "mimeType": "text/plain", "text": "read me" })
    );
    let blob = client
        .request("resources/read", json!({ "uri": "test://blob" }))
        .await
        .expect("blob");
    assert_eq!(blob["contents"][0]["blob"], "AAEC");
    let note = client
        .request("resources/read", json!({ "uri": "test://notes/42" }))
        .await
        .expect("note");
    assert_eq!(note["contents"][0]["text"], "id=42");
    let encoded = client
        .request("resources/read", json!({ "uri": "test://notes/a%20b" }))
        .await
        .expect("note");
    assert_eq!(
        encoded["contents"][0]["text"], "id=a b",
        "variables are percent-decoded"
    );
    let file = client
        .request("resources/read", json!({ "uri": "file:///etc/hosts" }))
        .await
        .expect("file");
    assert_eq!(file["contents"][0]["text"], "path=etc/hosts");
    let missing = client
        .request("resources/read", json!({ "uri": "test://nope" }))
        .await
        .expect_err("missing");
    assert_eq!(missing.code.0, -32002, "resource not found in a session");
    let templates = client
        .request("resources/templates/list", json!({}))
        .await
        .expect("templates");
    let listed: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(listed, ["file:///{+path}", "test://notes/{id}"]);
}

#[tokio::test]
async fn prompts_check_required_arguments() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let got = client
        .request(
            "prompts/get",
            json!({ "name": "greet", "arguments": { "name": "Ada", "style": "formal" } }),
        )
        .await
        .expect("greet");
    assert_eq!(got["messages"][0]["role"], "user");
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "Greet Ada in a formal way."
    );
    assert_eq!(got["messages"][1]["role"], "assistant");
    let missing = client
        .request("prompts/get", json!({ "name": "greet" }))
        .await
        .expect_err("no name");
    assert_eq!(missing.code.0, -32602);
    assert!(missing.message.contains("name"));
    let unknown = client
        .request("prompts/get", json!({ "name": "nope" }))
        .await
        .expect_err("unknown");
    assert_eq!(unknown.code.0, -32602);
    let listed = client
        .request("prompts/list", json!({}))
        .await
        .expect("list");
    let greet = &listed["prompts"][0];
    assert_eq!(greet["name"], "greet");
    assert_eq!(
        greet["arguments"][0],
        json!({ "name": "name", "required": true })
    );
}

#[tokio::test]
async fn completes_prompt_arguments_and_template_variables() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let style = client
        .request("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "greet" }, "argument": { "name": "style", "value": "f" } }))
        .await
        .expect("style");
    assert_eq!(style["completion"]["values"], json!(["formal", "friendly"]));
    let id = client
        .request("completion/complete", json!({ "ref": { "type": "ref/resource", "uri": "test://notes/{id}" }, "argument": { "name": "id", "value": "1" } }))
        .await
        .expect("id");
    assert_eq!(id["completion"]["values"], json!(["1", "10"]));
    let with_context = client
        .request(
            "completion/complete",
            json!({
                "ref": { "type": "ref/prompt", "name": "greet" },
                "argument": { "name": "name", "value": "A" },
                "context": { "arguments": { "style": "formal" } }
            }),
        )
        .await
        .expect("context");
    assert_eq!(with_context["completion"]["values"], json!(["Aformal"]));
    let none = client
        .request("completion/complete", json!({ "ref": { "type": "ref/resource", "uri": "file:///{+path}" }, "argument": { "name": "path", "value": "" } }))
        .await
        .expect("no completer");
    assert_eq!(none["completion"]["values"], json!([]));
    let unknown = client
        .request("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "nope" }, "argument": { "name": "x", "value": "" } }))
        .await
        .expect_err("unknown prompt");
    assert_eq!(unknown.code.0, -32602);
}

#[tokio::test]
async fn a_dot_segment_in_a_template_value_is_not_found_unless_allowed() {
    use barrel_mcp::server::{Ctx, ResourceRequest, Server, ServerConfig};
    use barrel_mcp::types::{ResourceContents, ResourceTemplate};

    let build = |reject: bool| {
        Server::builder()
            .name("files", "1.0.0")
            .config(ServerConfig {
                reject_dot_segments: reject,
                ..ServerConfig::default()
            })
            .resource_template(
                ResourceTemplate::new("file:///{name}", "file"),
                |_: Ctx, request: ResourceRequest| async move {
                    let name = request.variables.get("name").cloned().unwrap_or_default();
                    Ok(vec![ResourceContents::text(
                        request.uri,
                        format!("read {name}"),
                    )])
                },
            )
            .build()
            .expect("server")
    };
    let client = connect(&build(true));
    client.initialize("2025-11-25").await;
    let plain = client
        .request("resources/read", json!({"uri": "file:///notes.txt"}))
        .await
        .expect("a plain name");
    assert_eq!(plain["contents"][0]["text"], "read notes.txt");
    for escape in [
        "file:///..%2Fetc%2Fpasswd",
        "file:///a%2F..%2F..%2Fsecret",
        "file:///..",
    ] {
        let refused = client
            .request("resources/read", json!({"uri": escape}))
            .await
            .expect_err(escape);
        assert_eq!(refused.code.0, -32002, "{escape}");
    }
    // A name that merely holds dots is not a dot segment.
    let dots = client
        .request("resources/read", json!({"uri": "file:///a..b"}))
        .await
        .expect("dots in a name");
    assert_eq!(dots["contents"][0]["text"], "read a..b");
    let open = connect(&build(false));
    open.initialize("2025-11-25").await;
    let allowed = open
        .request("resources/read", json!({"uri": "file:///..%2Fetc"}))
        .await
        .expect("allowed when turned off");
    assert_eq!(allowed["contents"][0]["text"], "read ../etc");
}
