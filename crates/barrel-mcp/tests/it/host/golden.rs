//! Golden files: the `tools` value and the schema report for each provider over a hostile
//! matrix of tool schemas, in `tests/it/host/golden/PROVIDER.json`, and the result messages
//! for each provider over the content matrix (every MCP content kind, structured content, a
//! tool error), in `tests/it/host/golden/results-PROVIDER.json`. `UPDATE_GOLDEN=1` rewrites
//! them; review the diff.

use std::path::PathBuf;

use barrel_mcp::host::format::{self, Arguments, Provider, ToolCall, ToolSpec};
use barrel_mcp::types::CallToolResult;
use serde_json::{Value, json};

fn matrix() -> Vec<ToolSpec> {
    let hostile = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "place": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1}},
                      "required": ["city"]},
            "node": {"type": "object", "properties": {"value": {"type": "integer"},
                     "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        },
        "properties": {
            "query": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 100},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "level": {"enum": [1, 2, 3]},
            "fixed": {"const": 7},
            "when": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "format": "uri"},
            "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 2},
            "home": {"$ref": "#/$defs/place", "description": "Where"},
            "tree": {"$ref": "#/$defs/node"},
            "remote": {"$ref": "https://example.test/other.json"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {"allOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["a"]}]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "note": {"type": ["string", "null"]},
            "nested": {"type": "object", "properties": {"inner": {"type": "object",
                       "properties": {"flag": {"type": "boolean"}}}}}
        },
        "required": ["query"]
    });
    let strict = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1},
            "unit": {"enum": ["c", "f"]},
            "at": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                   "required": ["lat", "lon"]}
        },
        "required": ["city"]
    });
    vec![
        ToolSpec::new("t__hostile", Some("Everything".into()), hostile),
        ToolSpec::new("t__strict", None, strict),
        ToolSpec::new("t__empty", None, Value::Null),
        ToolSpec::new("t__string", None, json!({"type": "string"})),
    ]
}

/// Compares `got` with the golden file `name`, or rewrites it under `UPDATE_GOLDEN`.
fn golden(name: &str, got: &Value) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/host/golden");
    let path = dir.join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        let text = serde_json::to_string_pretty(got).unwrap();
        std::fs::write(&path, text + "\n").unwrap();
        return;
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        *got,
        want,
        "{} (UPDATE_GOLDEN=1 rewrites it)",
        path.display()
    );
}

#[test]
fn shaped_tools_and_reports_match_the_golden_files() {
    for provider in Provider::ALL {
        let (tools, report) = format::tools_with_report(provider, &matrix());
        let report: Vec<String> = report.iter().map(ToString::to_string).collect();
        golden(
            &format!("{}.json", provider.name()),
            &json!({"tools": tools, "report": report}),
        );
    }
}

const PNG: &str = "iVBORw0KGgo="; // 8 bytes
const PDF: &str = "JVBERi0xLjQ="; // "%PDF-1.4"

/// Three outcomes: one of every content kind; structured content beside its text; a tool
/// error.
fn outcomes() -> Vec<(ToolCall, CallToolResult)> {
    let everything = json!({"content": [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "image", "data": PNG, "mimeType": "image/svg+xml"},
        {"type": "audio", "data": PNG, "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "docs+file:///readme.md", "name": "readme",
         "mimeType": "text/markdown", "size": 42},
        {"type": "resource", "resource": {"uri": "docs+file:///a.txt", "text": "inside"}},
        {"type": "resource", "resource": {"uri": "docs+file:///report.pdf",
         "mimeType": "application/pdf", "blob": PDF}},
        {"type": "text", "text": "for the user only", "annotations": {"audience": ["user"]}}
    ]});
    let structured = json!({"content": [{"type": "text", "text": "{\"temp\":21}"}],
                            "structuredContent": {"temp": 21}});
    let failed = json!({"content": [{"type": "text", "text": "no such city"}], "isError": true});
    [("c1", everything), ("c2", structured), ("c3", failed)]
        .into_iter()
        .map(|(id, result)| {
            let call = ToolCall::new(Some(id.into()), "docs__fetch", Arguments::Absent);
            (call, serde_json::from_value(result).unwrap())
        })
        .collect()
}

#[test]
fn result_messages_for_the_content_matrix_match_the_golden_files() {
    let outcomes = outcomes();
    for provider in Provider::ALL {
        let messages = format::results(provider, &outcomes);
        golden(
            &format!("results-{}.json", provider.name()),
            &Value::Array(messages),
        );
    }
}
