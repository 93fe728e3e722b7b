//! Anthropic Messages: `tools[]` of `{name, description, input_schema}`; calls are `tool_use`
//! content blocks; results are `tool_result` blocks in one `user` message.

use barrel_mcp_types::CallToolResult;
use serde_json::{Map, Value, json};

use super::schema::Shaped;
use super::{Arguments, Piece, ToolCall, ToolSpec, failed, pieces};

pub(super) fn tools(specs: &[(&ToolSpec, Shaped)]) -> Value {
    Value::Array(
        specs
            .iter()
            .map(|(spec, shaped)| {
                let mut tool = json!({
                    "name": spec.name,
                    "input_schema": shaped.schema,
                });
                if let Some(description) = &spec.description {
                    tool["description"] = json!(description);
                }
                tool
            })
            .collect(),
    )
}

pub(super) fn calls(response: &Value) -> Vec<ToolCall> {
    // The whole message, or its `content` array.
    let content = response
        .get("content")
        .and_then(Value::as_array)
        .or_else(|| response.as_array());
    content
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|block| {
            Some(ToolCall {
                id: block.get("id").and_then(Value::as_str).map(str::to_owned),
                name: block.get("name")?.as_str()?.to_owned(),
                arguments: match block.get("input") {
                    Some(Value::Object(map)) => Arguments::Object(map.clone()),
                    Some(Value::Null) | None => Arguments::Absent,
                    Some(other) => Arguments::Json(other.to_string()),
                },
            })
        })
        .collect()
}

pub(super) fn results(outcomes: &[(ToolCall, CallToolResult)]) -> Vec<Value> {
    let blocks: Vec<Value> = outcomes
        .iter()
        .map(|(call, result)| {
            // Anthropic refuses empty text blocks (a tool that returned "" is common).
            let content: Vec<Value> = pieces(result)
                .iter()
                .filter(|piece| !matches!(piece, Piece::Text(text) if text.trim().is_empty()))
                .map(block)
                .collect();
            let mut item = Map::new();
            item.insert("type".into(), json!("tool_result"));
            item.insert(
                "tool_use_id".into(),
                json!(call.id.clone().unwrap_or_default()),
            );
            // No content at all: the block says so by having none.
            if !content.is_empty() {
                item.insert("content".into(), Value::Array(content));
            }
            if failed(result) {
                item.insert("is_error".into(), json!(true));
            }
            Value::Object(item)
        })
        .collect();
    vec![json!({ "role": "user", "content": blocks })]
}

fn block(piece: &Piece) -> Value {
    match piece {
        Piece::Text(text) => json!({ "type": "text", "text": text }),
        Piece::TextDocument { uri, text } => json!({
            "type": "document",
            "source": { "type": "text", "media_type": "text/plain", "data": text },
            "title": uri,
        }),
        Piece::Image { mime, data } => json!({
            "type": "image",
            "source": { "type": "base64", "media_type": mime, "data": data },
        }),
        Piece::Pdf { uri, data } => json!({
            "type": "document",
            "source": { "type": "base64", "media_type": "application/pdf", "data": data },
            "title": uri,
        }),
    }
}
