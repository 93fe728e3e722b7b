//! The provider formats: definitions, calls out of responses shaped like each API's, and the
//! content matrix of results.

use barrel_mcp_types::{
    Annotations, BlobResourceContents, CallToolResult, ContentBlock, EmbeddedResource,
    ImageContent, ResourceContents, ResourceLink, Role, TextContent,
};
use serde_json::{Value, json};

use super::*;

fn spec() -> ToolSpec {
    ToolSpec::new(
        "github__search",
        Some("Search code".into()),
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
               "properties": {"q": {"type": "string"}}, "required": ["q"]}),
    )
}

#[test]
fn definitions_for_each_provider() {
    let anthropic = tools(Provider::Anthropic, &[spec()]);
    assert_eq!(anthropic[0]["name"], "github__search");
    assert_eq!(anthropic[0]["input_schema"]["type"], "object");
    assert!(anthropic[0]["input_schema"].get("$schema").is_none());
    let chat = tools(Provider::OpenAiChat, &[spec()]);
    assert_eq!(chat[0]["type"], "function");
    assert_eq!(chat[0]["function"]["name"], "github__search");
    assert_eq!(chat[0]["function"]["parameters"]["required"], json!(["q"]));
    assert_eq!(chat[0]["function"]["strict"], true);
    let responses = tools(Provider::OpenAiResponses, &[spec()]);
    assert_eq!(responses[0]["name"], "github__search");
    assert_eq!(responses[0]["strict"], true);
    assert_eq!(responses[0]["parameters"]["additionalProperties"], false);
    // A schema strict mode cannot hold is sent non-strict, and `strict` says so.
    let map = ToolSpec::new(
        "m",
        None,
        json!({"additionalProperties": {"type": "string"}}),
    );
    let (responses, report) =
        tools_with_report(Provider::OpenAiResponses, std::slice::from_ref(&map));
    assert_eq!(responses[0]["strict"], false);
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].kind, ChangeKind::StrictOff);
    assert!(
        tools(Provider::OpenAiChat, &[map])[0]["function"]
            .get("strict")
            .is_none()
    );
    let gemini = tools(Provider::Gemini, &[spec()]);
    let declaration = &gemini[0]["functionDeclarations"][0];
    assert_eq!(declaration["name"], "github__search");
    assert!(declaration["parametersJsonSchema"].get("$schema").is_none());
    // A schema-less tool, or one whose schema is not an object, still gets an object schema.
    for schema in [
        Value::Null,
        json!({"type": "string"}),
        json!({"type": ["object", "null"]}),
    ] {
        let odd = ToolSpec::new("t", None, schema);
        assert_eq!(
            tools(Provider::Anthropic, &[odd])[0]["input_schema"],
            json!({"type": "object", "properties": {}})
        );
    }
}

#[test]
fn calls_out_of_each_providers_response() {
    let anthropic = json!({"role": "assistant", "stop_reason": "tool_use", "content": [
        {"type": "thinking", "thinking": "…"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "github__search", "input": {"q": "x"}}
    ]});
    let calls_a = calls(Provider::Anthropic, &anthropic);
    assert_eq!(calls_a.len(), 1);
    assert_eq!(calls_a[0].id.as_deref(), Some("toolu_1"));
    assert_eq!(calls_a[0].arguments.to_object().unwrap()["q"], "x");

    let chat = json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant",
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{\"q\":1}"}},
        {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": ""}},
        {"id": "call_3", "type": "function", "function": {"name": "c", "arguments": "{\"q\":"}}
    ]}}]});
    let calls_c = calls(Provider::OpenAiChat, &chat);
    assert_eq!(calls_c.len(), 3);
    assert_eq!(calls_c[0].arguments.to_object().unwrap()["q"], 1);
    assert!(calls_c[1].arguments.to_object().unwrap().is_empty());
    let broken = calls_c[2].arguments.to_object().unwrap_err();
    assert!(broken.contains("not valid JSON"), "{broken}");

    let responses = json!({"output": [
        {"type": "reasoning", "id": "rs_1"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "a",
         "arguments": "{}", "status": "completed"}
    ]});
    let calls_r = calls(Provider::OpenAiResponses, &responses);
    assert_eq!(calls_r.len(), 1);
    assert_eq!(calls_r[0].id.as_deref(), Some("call_9"));

    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "ok", "thoughtSignature": "abc"},
        {"functionCall": {"name": "a", "args": {"q": "x"}}},
        {"functionCall": {"id": "g2", "name": "b"}}
    ]}}]});
    let calls_g = calls(Provider::Gemini, &gemini);
    assert_eq!(calls_g.len(), 2);
    assert_eq!(calls_g[0].id, None);
    assert_eq!(calls_g[1].arguments, Arguments::Absent);
    // Nothing to find is no call, never a panic.
    for provider in Provider::ALL {
        assert!(calls(provider, &json!("garbage")).is_empty());
        assert!(calls(provider, &json!({"content": 3, "output": {}})).is_empty());
    }
}

const PNG: &str = "iVBORw0KGgo="; // 8 bytes
const PDF: &str = "JVBERi0xLjQ="; // "%PDF-1.4"

/// A result with one of every content kind.
fn everything() -> CallToolResult {
    CallToolResult {
        content: vec![
            ContentBlock::text("hello"),
            ContentBlock::Image(ImageContent {
                data: PNG.into(),
                mime_type: "image/png".into(),
                ..ImageContent::default()
            }),
            ContentBlock::Image(ImageContent {
                data: PNG.into(),
                mime_type: "image/svg+xml".into(),
                ..ImageContent::default()
            }),
            ContentBlock::Audio(barrel_mcp_types::AudioContent {
                data: PNG.into(),
                mime_type: "audio/wav".into(),
                ..Default::default()
            }),
            ContentBlock::ResourceLink(ResourceLink {
                mime_type: Some("text/markdown".into()),
                size: Some(42),
                ..ResourceLink::new("docs+file:///readme.md", "readme")
            }),
            ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::text("docs+file:///a.txt", "inside"),
                annotations: None,
                meta: None,
            }),
            ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents::Blob(BlobResourceContents {
                    uri: "docs+file:///report.pdf".into(),
                    mime_type: Some("application/pdf".into()),
                    blob: PDF.into(),
                    meta: None,
                }),
                annotations: None,
                meta: None,
            }),
            ContentBlock::Text(TextContent {
                text: "for the user only".into(),
                annotations: Some(Annotations {
                    audience: Some(vec![Role::User]),
                    ..Annotations::default()
                }),
                ..TextContent::default()
            }),
        ],
        ..CallToolResult::default()
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: Some(id.into()),
        name: "docs__fetch".into(),
        arguments: Arguments::Absent,
    }
}

#[test]
fn the_content_matrix() {
    let outcome = [(call("c1"), everything())];

    let anthropic = results(Provider::Anthropic, &outcome);
    assert_eq!(anthropic.len(), 1);
    assert_eq!(anthropic[0]["role"], "user");
    let result = &anthropic[0]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "c1");
    let kinds: Vec<&str> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "text", "image", "text", "text", "text", "document", "document"
        ]
    );
    let text = result.to_string();
    assert!(text.contains("image/svg+xml image, 8 bytes: this model API does not accept it"));
    assert!(text.contains("audio/wav audio, 8 bytes"));
    assert!(text.contains("[resource: readme docs+file:///readme.md (text/markdown, 42 bytes)]"));
    assert!(!text.contains("for the user only"));
    assert!(result.get("is_error").is_none());

    let chat = results(Provider::OpenAiChat, &outcome);
    assert_eq!(chat[0]["role"], "tool");
    assert_eq!(chat[0]["tool_call_id"], "c1");
    let content = chat[0]["content"].as_str().unwrap();
    assert!(content.starts_with("hello\n\n[image/png image, 8 bytes"));
    assert!(content.contains("--- docs+file:///a.txt ---\ninside"));
    assert!(content.contains("application/pdf document"));

    let responses = results(Provider::OpenAiResponses, &outcome);
    assert_eq!(responses[0]["type"], "function_call_output");
    assert_eq!(responses[0]["call_id"], "c1");
    let parts = responses[0]["output"].as_array().unwrap();
    assert_eq!(
        parts[1]["image_url"],
        format!("data:image/png;base64,{PNG}")
    );
    let file = parts.iter().find(|p| p["type"] == "input_file").unwrap();
    assert_eq!(file["filename"], "report.pdf");
    let signed = CallToolResult {
        content: vec![ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Blob(BlobResourceContents {
                uri: "https://x.example/r?sig=secret".into(),
                mime_type: Some("application/pdf".into()),
                blob: PDF.into(),
                meta: None,
            }),
            annotations: None,
            meta: None,
        })],
        ..CallToolResult::default()
    };
    let named = results(Provider::OpenAiResponses, &[(call("f"), signed)]);
    assert_eq!(named[0]["output"][0]["filename"], "r.pdf");

    let gemini = results(Provider::Gemini, &outcome);
    let response = &gemini[0]["parts"][0]["functionResponse"];
    assert_eq!(response["id"], "c1");
    assert_eq!(response["name"], "docs__fetch");
    assert!(
        response["response"]["output"]
            .as_str()
            .unwrap()
            .starts_with("hello")
    );
    let media: Vec<&str> = response["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["inlineData"]["mimeType"].as_str().unwrap())
        .collect();
    assert_eq!(media, ["image/png", "application/pdf"]);
}

#[test]
fn errors_and_structured_content() {
    let failure = error_result("boom");
    let structured = CallToolResult {
        structured_content: Some(json!({"temperature": 21})),
        ..CallToolResult::default()
    };
    let outcomes = [(call("e"), failure), (call("s"), structured)];

    let anthropic = results(Provider::Anthropic, &outcomes);
    assert_eq!(anthropic[0]["content"][0]["is_error"], true);
    assert_eq!(
        anthropic[0]["content"][1]["content"][0]["text"],
        r#"{"temperature":21}"#
    );
    let chat = results(Provider::OpenAiChat, &outcomes);
    assert_eq!(chat[0]["content"], "Error: boom");
    assert_eq!(chat[1]["content"], r#"{"temperature":21}"#);
    let responses = results(Provider::OpenAiResponses, &outcomes);
    assert_eq!(responses[0]["output"][0]["text"], "Error:");
    let gemini = results(Provider::Gemini, &outcomes);
    assert_eq!(
        gemini[0]["parts"][0]["functionResponse"]["response"],
        json!({"error": "boom"})
    );
    assert_eq!(
        gemini[0]["parts"][1]["functionResponse"]["response"],
        json!({"output": {"temperature": 21}})
    );
}

#[test]
fn empty_results_are_shapes_each_api_takes() {
    let empty = CallToolResult {
        content: vec![ContentBlock::text("")],
        ..CallToolResult::default()
    };
    let outcomes = [(call("e"), empty)];
    let anthropic = results(Provider::Anthropic, &outcomes);
    assert!(anthropic[0]["content"][0].get("content").is_none());
    let responses = results(
        Provider::OpenAiResponses,
        &[(call("n"), CallToolResult::default())],
    );
    assert_eq!(responses[0]["output"], "");
}

#[test]
fn provider_names_round_trip() {
    for provider in Provider::ALL {
        assert_eq!(Provider::parse(provider.name()), Some(provider));
    }
    assert_eq!(Provider::parse("palm"), None);
}
