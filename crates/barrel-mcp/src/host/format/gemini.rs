//! Gemini `generateContent` (REST field names): one `tools[]` entry holding every
//! `functionDeclarations` item (with `parametersJsonSchema`); calls are `functionCall` parts;
//! results are `functionResponse` parts of one `user` content: `response.output` (the text, or
//! the structured content as it is), `response.error` for a failure, and images and PDFs as
//! `inlineData` parts of the function response.

use barrel_mcp_types::CallToolResult;
use serde_json::{Map, Value, json};

use super::schema::Shaped;
use super::{Arguments, Piece, ToolCall, ToolSpec, as_text, failed, pieces};

pub(super) fn tools(specs: &[(&ToolSpec, Shaped)]) -> Value {
    let declarations: Vec<Value> = specs
        .iter()
        .map(|(spec, shaped)| {
            let mut declaration = json!({
                "name": spec.name,
                "parametersJsonSchema": shaped.schema,
            });
            if let Some(description) = &spec.description {
                declaration["description"] = json!(description);
            }
            declaration
        })
        .collect();
    json!([{ "functionDeclarations": declarations }])
}

pub(super) fn calls(response: &Value) -> Vec<ToolCall> {
    // A whole response, a candidate, a content, or its parts.
    let parts = response
        .pointer("/candidates/0/content/parts")
        .or_else(|| response.pointer("/content/parts"))
        .or_else(|| response.get("parts"))
        .and_then(Value::as_array)
        .or_else(|| response.as_array());
    parts
        .into_iter()
        .flatten()
        .filter_map(|part| {
            let call = part.get("functionCall")?;
            Some(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                name: call.get("name")?.as_str()?.to_owned(),
                arguments: match call.get("args") {
                    Some(Value::Object(map)) => Arguments::Object(map.clone()),
                    Some(Value::Null) | None => Arguments::Absent,
                    Some(other) => Arguments::Json(other.to_string()),
                },
            })
        })
        .collect()
}

pub(super) fn results(outcomes: &[(ToolCall, CallToolResult)]) -> Vec<Value> {
    let parts: Vec<Value> = outcomes
        .iter()
        .map(|(call, result)| {
            let pieces = pieces(result);
            let media: Vec<Value> = pieces
                .iter()
                .filter_map(|piece| match piece {
                    Piece::Image { mime, data } => Some(inline(mime, data)),
                    Piece::Pdf { data, .. } => Some(inline("application/pdf", data)),
                    _ => None,
                })
                .collect();
            let text_only: Vec<Piece> = pieces
                .into_iter()
                .filter(|p| matches!(p, Piece::Text(_) | Piece::TextDocument { .. }))
                .collect();
            let response = if failed(result) {
                json!({ "error": as_text(&text_only) })
            } else if let Some(structured) = &result.structured_content {
                json!({ "output": structured })
            } else {
                json!({ "output": as_text(&text_only) })
            };
            let mut function_response = Map::new();
            if let Some(id) = &call.id {
                function_response.insert("id".into(), json!(id));
            }
            function_response.insert("name".into(), json!(call.name));
            function_response.insert("response".into(), response);
            if !media.is_empty() {
                function_response.insert("parts".into(), Value::Array(media));
            }
            json!({ "functionResponse": function_response })
        })
        .collect();
    vec![json!({ "role": "user", "parts": parts })]
}

fn inline(mime: &str, data: &str) -> Value {
    json!({ "inlineData": { "mimeType": mime, "data": data } })
}
