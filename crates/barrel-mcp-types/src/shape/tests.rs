//! Output of [`Shape`] for every revision.

use serde_json::{Value, json};

use super::*;
use crate::content::{AudioContent, ResourceLink};
use crate::lifecycle::{Icon, ToolsCapability};
use crate::tools::{ToolAnnotations, ToolExecution};

use ProtocolVersion::*;

fn schema() -> crate::meta::JsonObject {
    json!({"type": "object"})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn meta() -> crate::meta::Meta {
    json!({"k": "v"}).as_object().cloned().unwrap_or_default()
}

fn full_tool() -> Tool {
    Tool {
        name: "t".into(),
        title: Some("T".into()),
        description: Some("d".into()),
        input_schema: schema(),
        output_schema: Some(schema()),
        annotations: Some(ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        }),
        icons: Some(vec![Icon::new("https://i/x.png")]),
        execution: Some(ToolExecution {
            task_support: Some("optional".into()),
        }),
        meta: Some(meta()),
    }
}

fn json_for<T: Shape + serde::Serialize + Clone>(value: &T, version: ProtocolVersion) -> Value {
    serde_json::to_value(value.clone().shaped(version)).unwrap()
}

#[test]
fn tool_per_revision() {
    let tool = full_tool();
    let base = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}});
    assert_eq!(json_for(&tool, V2024_11_05), base);

    let mut v = base;
    v["annotations"] = json!({"readOnlyHint": true});
    assert_eq!(json_for(&tool, V2025_03_26), v);

    v["title"] = json!("T");
    v["outputSchema"] = json!({"type": "object"});
    v["_meta"] = json!({"k": "v"});
    assert_eq!(json_for(&tool, V2025_06_18), v);

    v["icons"] = json!([{"src": "https://i/x.png"}]);
    let mut with_execution = v.clone();
    with_execution["execution"] = json!({"taskSupport": "optional"});
    assert_eq!(json_for(&tool, V2025_11_25), with_execution);
    assert_eq!(json_for(&tool, V2026_07_28), v);
}

fn full_result() -> CallToolResult {
    CallToolResult {
        content: vec![
            ContentBlock::text("hi"),
            ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav")),
            ContentBlock::ResourceLink(ResourceLink {
                description: Some("the readme".into()),
                title: Some("Readme".into()),
                ..ResourceLink::new("file:///r.md", "readme")
            }),
        ],
        structured_content: Some(json!({"n": 1})),
        is_error: Some(false),
        meta: Some(meta()),
    }
}

#[test]
fn call_tool_result_per_revision() {
    let result = full_result();
    let link_text = json!({"type": "text", "text": "[resource: Readme <file:///r.md>] the readme"});
    let audio_text = json!({"type": "text", "text": "[audio content (audio/wav) omitted]"});
    let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
    let link = json!({
        "type": "resource_link", "uri": "file:///r.md", "name": "readme", "title": "Readme",
        "description": "the readme"
    });
    let text = json!({"type": "text", "text": "hi"});
    let expect = |content: Value, structured: bool| {
        let mut v = json!({"content": content, "isError": false, "_meta": {"k": "v"}});
        if structured {
            v["structuredContent"] = json!({"n": 1});
        }
        v
    };
    assert_eq!(
        json_for(&result, V2024_11_05),
        expect(json!([text, audio_text, link_text]), false)
    );
    assert_eq!(
        json_for(&result, V2025_03_26),
        expect(json!([text, audio, link_text]), false)
    );
    for v in [V2025_06_18, V2025_11_25, V2026_07_28] {
        assert_eq!(
            json_for(&result, v),
            expect(json!([text, audio, link]), true),
            "{v}"
        );
    }
}

fn full_initialize() -> InitializeResult {
    InitializeResult {
        protocol_version: "2025-11-25".into(),
        capabilities: ServerCapabilities {
            logging: Some(Default::default()),
            completions: Some(Default::default()),
            tools: Some(ToolsCapability {
                list_changed: Some(true),
            }),
            tasks: Some(json!({"list": {}})),
            extensions: Some(
                json!({"io.example/x": {}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
            ..ServerCapabilities::default()
        },
        server_info: Implementation::new("s", "1")
            .with_title("S")
            .with_description("server")
            .with_website_url("https://s")
            .with_icons(vec![Icon::new("https://s/i.png")]),
        instructions: Some("use it".into()),
        meta: None,
    }
}

#[test]
fn initialize_result_per_revision() {
    let init = full_initialize();
    let caps_old = json!({"logging": {}, "tools": {"listChanged": true}});
    let info_old = json!({"name": "s", "version": "1"});
    let expect = |caps: Value, info: Value| {
        json!({
            "protocolVersion": "2025-11-25", "capabilities": caps, "serverInfo": info,
            "instructions": "use it"
        })
    };
    assert_eq!(
        json_for(&init, V2024_11_05),
        expect(caps_old.clone(), info_old.clone())
    );

    let mut caps = caps_old;
    caps["completions"] = json!({});
    assert_eq!(
        json_for(&init, V2025_03_26),
        expect(caps.clone(), info_old.clone())
    );

    let mut info = info_old;
    info["title"] = json!("S");
    assert_eq!(
        json_for(&init, V2025_06_18),
        expect(caps.clone(), info.clone())
    );

    info["description"] = json!("server");
    info["websiteUrl"] = json!("https://s");
    info["icons"] = json!([{"src": "https://s/i.png"}]);
    let mut caps_tasks = caps.clone();
    caps_tasks["tasks"] = json!({"list": {}});
    assert_eq!(
        json_for(&init, V2025_11_25),
        expect(caps_tasks, info.clone())
    );

    caps["extensions"] = json!({"io.example/x": {}});
    assert_eq!(json_for(&init, V2026_07_28), expect(caps, info));
}

#[test]
fn list_tools_result_per_revision() {
    let list = ListToolsResult {
        tools: vec![full_tool()],
        next_cursor: Some("c2".into()),
        ttl_ms: Some(60_000),
        cache_scope: Some(crate::lifecycle::CacheScope::Public),
        meta: None,
    };
    for v in ProtocolVersion::ALL {
        let out = json_for(&list, v);
        assert_eq!(out["tools"][0], json_for(&full_tool(), v), "{v}");
        assert_eq!(out["nextCursor"], "c2");
        if v == V2026_07_28 {
            assert_eq!(out["ttlMs"], 60_000);
            assert_eq!(out["cacheScope"], "public");
        } else {
            assert!(
                out.get("ttlMs").is_none() && out.get("cacheScope").is_none(),
                "{v}"
            );
        }
    }
}

#[test]
fn client_capabilities_per_revision() {
    let caps: ClientCapabilities = serde_json::from_value(json!({
        "roots": {"listChanged": true},
        "sampling": {"tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }))
    .unwrap();
    let out = |v| serde_json::to_value(caps.clone().shaped(v)).unwrap();
    assert_eq!(
        out(V2024_11_05),
        json!({"roots": {"listChanged": true}, "sampling": {}})
    );
    assert_eq!(
        out(V2025_06_18),
        json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}})
    );
    assert_eq!(
        out(V2026_07_28),
        json!({
            "roots": {}, "sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        })
    );
}

#[test]
fn result_type_stamp() {
    let mut v = json!({"content": []});
    stamp_result_type(&mut v, V2026_07_28);
    assert_eq!(v["resultType"], "complete");
    stamp_result_type(&mut v, V2025_11_25);
    assert!(v.get("resultType").is_none());
    let mut v = json!({"resultType": "input_required"});
    stamp_result_type(&mut v, V2026_07_28);
    assert_eq!(v["resultType"], "input_required");
}
