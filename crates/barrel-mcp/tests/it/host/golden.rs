//! Golden files: the `tools` value and the schema report for each provider over a hostile
//! matrix of tool schemas, in `tests/it/host/golden/PROVIDER.json`. `UPDATE_GOLDEN=1`
//! rewrites them; review the diff.

use std::path::PathBuf;

use barrel_mcp::host::format::{self, Provider, ToolSpec};
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

#[test]
fn shaped_tools_and_reports_match_the_golden_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/host/golden");
    let bless = std::env::var_os("UPDATE_GOLDEN").is_some();
    for provider in Provider::ALL {
        let (tools, report) = format::tools_with_report(provider, &matrix());
        let report: Vec<String> = report.iter().map(ToString::to_string).collect();
        let got = json!({"tools": tools, "report": report});
        let path = dir.join(format!("{}.json", provider.name()));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            let text = serde_json::to_string_pretty(&got).unwrap();
            std::fs::write(&path, text + "\n").unwrap();
            continue;
        }
        let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            got,
            want,
            "{} (UPDATE_GOLDEN=1 rewrites it)",
            path.display()
        );
    }
}
