//! The MCP headers of one POST, read from the message itself.

use std::collections::HashMap;

pub(super) use barrel_mcp_types::header_params::HeaderParam;
use barrel_mcp_types::header_params::header_params;
use barrel_mcp_types::meta::PROTOCOL_VERSION_KEY;
use barrel_mcp_types::{Message, Request};
use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(super) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(super) const METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(super) const NAME: HeaderName = HeaderName::from_static("mcp-name");
pub(super) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The revision a 2026-07-28 request claims in `params._meta`, if it does.
pub(super) fn claimed_version(message: &Message) -> Option<&str> {
    let params = match message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        Message::Response(_) => None,
    }?;
    params.get("_meta")?.get(PROTOCOL_VERSION_KEY)?.as_str()
}

/// `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` of a 2026-07-28 request.
pub(super) fn modern(
    request: &Request,
    tools: &HashMap<String, Vec<HeaderParam>>,
    headers: &mut HeaderMap,
) {
    if let Ok(method) = HeaderValue::try_from(request.method.as_str()) {
        headers.insert(METHOD, method);
    }
    let params = request.params.as_ref();
    let name_key = barrel_mcp_types::header_params::name_header_field(&request.method);
    let name = name_key
        .and_then(|key| params?.get(key))
        .and_then(Value::as_str);
    if let Some(value) = name.and_then(|name| encode(name).ok()) {
        headers.insert(NAME, value);
    }
    if request.method != "tools/call" {
        return;
    }
    let Some(annotated) = name.and_then(|name| tools.get(name)) else {
        return;
    };
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .unwrap_or(&Value::Null);
    for param in annotated {
        let text = match param.value_in(arguments) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        let name = format!("mcp-param-{}", param.name.to_ascii_lowercase());
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), encode(&text)) {
            headers.insert(name, value);
        }
    }
}

/// The most tools whose `x-mcp-header` arguments the client remembers (a server could list
/// endlessly many).
pub(super) const MAX_TOOLS_WITH_HEADERS: usize = 4096;

/// The `x-mcp-header` arguments of each tool in a `tools/list` result, and the names of the
/// tools whose annotations break the rules (logged; the spec has HTTP clients drop them).
pub(super) fn tool_params(result: &Value) -> (Vec<(String, Vec<HeaderParam>)>, Vec<String>) {
    let mut invalid = Vec::new();
    let Some(tools) = result.get("tools").and_then(Value::as_array) else {
        return (Vec::new(), invalid);
    };
    let mut found = Vec::new();
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let Some(schema) = tool.get("inputSchema").and_then(Value::as_object) else {
            continue;
        };
        match header_params(schema) {
            Ok(params) if params.is_empty() => {}
            Ok(params) => found.push((name.to_owned(), params)),
            Err(why) => {
                tracing::warn!(
                    tool = name,
                    "invalid x-mcp-header annotation; tool dropped: {why}"
                );
                invalid.push(name.to_owned());
            }
        }
    }
    (found, invalid)
}

/// A header value as is when it is plain visible ASCII, else `=?base64?…?=`.
pub(super) fn encode(value: &str) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        HeaderValue::try_from(value)
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        HeaderValue::try_from(format!("=?base64?{encoded}?="))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_form_only_when_needed() {
        assert_eq!(encode("deploy_service").unwrap(), "deploy_service");
        assert_eq!(encode("a b").unwrap(), "a b");
        assert_eq!(encode(" lead").unwrap(), "=?base64?IGxlYWQ=?=");
        assert_eq!(encode("héllo").unwrap(), "=?base64?aMOpbGxv?=");
        assert_eq!(
            encode("=?base64?x?=").unwrap(),
            "=?base64?PT9iYXNlNjQ/eD89?="
        );
    }
}
