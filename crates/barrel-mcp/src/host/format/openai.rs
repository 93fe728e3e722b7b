//! OpenAI, both APIs.
//!
//! - Chat Completions: `tools[]` of `{type: function, function: {name, description,
//!   parameters, strict?}}`; calls are `message.tool_calls[]` with JSON-text arguments; results are one
//!   `{role: tool, tool_call_id, content}` message per call, text only.
//! - Responses: `tools[]` of `{type: function, name, description, parameters, strict}`; calls
//!   are `function_call` output items; results are `function_call_output` input items whose
//!   output holds `input_text`, `input_image` (data URLs) and `input_file` (PDFs).

use barrel_mcp_types::CallToolResult;
use serde_json::{Value, json};

use super::schema::Shaped;
use super::{Arguments, Piece, ToolCall, ToolSpec, as_text, failed, pieces, with_header};

pub(super) fn chat_tools(specs: &[(&ToolSpec, Shaped)]) -> Value {
    Value::Array(
        specs
            .iter()
            .map(|(spec, shaped)| {
                let mut function = json!({
                    "name": spec.name,
                    "parameters": shaped.schema,
                });
                // Chat Completions stays non-strict unless told.
                if shaped.strict {
                    function["strict"] = json!(true);
                }
                if let Some(description) = &spec.description {
                    function["description"] = json!(description);
                }
                json!({ "type": "function", "function": function })
            })
            .collect(),
    )
}

pub(super) fn responses_tools(specs: &[(&ToolSpec, Shaped)]) -> Value {
    Value::Array(
        specs
            .iter()
            .map(|(spec, shaped)| {
                // Left out, `strict` would make Responses turn the schema strict (every property
                // required), which changes what the tool takes.
                let mut tool = json!({
                    "type": "function",
                    "name": spec.name,
                    "parameters": shaped.schema,
                    "strict": shaped.strict,
                });
                if let Some(description) = &spec.description {
                    tool["description"] = json!(description);
                }
                tool
            })
            .collect(),
    )
}

fn json_arguments(value: Option<&Value>) -> Arguments {
    match value {
        Some(Value::String(text)) => Arguments::Json(text.clone()),
        Some(Value::Object(map)) => Arguments::Object(map.clone()),
        Some(Value::Null) | None => Arguments::Absent,
        Some(other) => Arguments::Json(other.to_string()),
    }
}

pub(super) fn chat_calls(response: &Value) -> Vec<ToolCall> {
    // A whole completion, a choice, or the message itself.
    let message = response
        .pointer("/choices/0/message")
        .or_else(|| response.get("message"))
        .unwrap_or(response);
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|call| {
            let function = call.get("function")?;
            Some(ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                name: function.get("name")?.as_str()?.to_owned(),
                arguments: json_arguments(function.get("arguments")),
            })
        })
        .collect()
}

pub(super) fn responses_calls(response: &Value) -> Vec<ToolCall> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .or_else(|| response.as_array());
    output
        .into_iter()
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("function_call"))
        .filter_map(|item| {
            Some(ToolCall {
                id: item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                name: item.get("name")?.as_str()?.to_owned(),
                arguments: json_arguments(item.get("arguments")),
            })
        })
        .collect()
}

pub(super) fn chat_results(outcomes: &[(ToolCall, CallToolResult)]) -> Vec<Value> {
    outcomes
        .iter()
        .map(|(call, result)| {
            let mut text = as_text(&pieces(result));
            if failed(result) {
                text = format!("Error: {text}");
            }
            json!({
                "role": "tool",
                "tool_call_id": call.id.clone().unwrap_or_default(),
                "content": text,
            })
        })
        .collect()
}

pub(super) fn responses_results(outcomes: &[(ToolCall, CallToolResult)]) -> Vec<Value> {
    outcomes
        .iter()
        .map(|(call, result)| {
            let mut parts: Vec<Value> = pieces(result).iter().map(input_part).collect();
            if failed(result) {
                parts.insert(0, json!({ "type": "input_text", "text": "Error:" }));
            }
            // No content at all is an empty string, not an empty list.
            let output = if parts.is_empty() {
                json!("")
            } else {
                Value::Array(parts)
            };
            json!({
                "type": "function_call_output",
                "call_id": call.id.clone().unwrap_or_default(),
                "output": output,
            })
        })
        .collect()
}

fn input_part(piece: &Piece) -> Value {
    match piece {
        Piece::Text(text) => json!({ "type": "input_text", "text": text }),
        Piece::TextDocument { uri, text } => {
            json!({ "type": "input_text", "text": with_header(uri, text) })
        }
        Piece::Image { mime, data } => json!({
            "type": "input_image",
            "image_url": format!("data:{mime};base64,{data}"),
        }),
        Piece::Pdf { uri, data } => {
            // The last path segment, without query or fragment, ending in `.pdf`.
            let path = uri.split(['?', '#']).next().unwrap_or("");
            let base = path
                .rsplit('/')
                .next()
                .filter(|name| !name.is_empty())
                .unwrap_or("document");
            let filename = if base.to_ascii_lowercase().ends_with(".pdf") {
                base.to_owned()
            } else {
                format!("{base}.pdf")
            };
            json!({
                "type": "input_file",
                "filename": filename,
                "file_data": format!("data:application/pdf;base64,{data}"),
            })
        }
    }
}
