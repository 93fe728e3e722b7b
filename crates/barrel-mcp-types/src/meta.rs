//! `_meta` maps: the type aliases, the reserved keys, and the key-format rules of 2026-07-28.
//!
//! Every MCP object that can carry metadata has a `meta: Option<Meta>` field serialized as `_meta`.
//! In 2026-07-28 the per-request envelope (protocol version, client capabilities, client info, log
//! level) travels in `params._meta` under the `io.modelcontextprotocol/` keys defined here.

use serde_json::Value;

use crate::jsonrpc::RequestId;
use crate::progress::ProgressToken;

/// The contents of a `_meta` field.
pub type Meta = serde_json::Map<String, Value>;

/// A JSON object with arbitrary members (schemas, arguments, capability settings).
pub type JsonObject = serde_json::Map<String, Value>;

/// `_meta` key of the protocol revision a 2026-07-28 request is made with (required on requests).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client capabilities of a 2026-07-28 request (required on requests).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client `Implementation` of a 2026-07-28 request.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the log level a 2026-07-28 request opts in to.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server `Implementation` stamped on 2026-07-28 results.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key tagging notifications delivered on a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key associating a message with a 2025-11-25 task.
pub const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";
/// `_meta` key of the progress token a request asks progress notifications for.
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";

/// The progress token in a `_meta` map, when present and a string or an integer.
pub fn progress_token(meta: &Meta) -> Option<ProgressToken> {
    meta.get(PROGRESS_TOKEN_KEY).and_then(RequestId::from_value)
}

/// The subscription id in a notification's `_meta`, when present and well formed.
pub fn subscription_id(meta: &Meta) -> Option<RequestId> {
    meta.get(SUBSCRIPTION_ID_KEY)
        .and_then(RequestId::from_value)
}

/// The protocol revision string in a 2026-07-28 request `_meta`, when present and a string.
pub fn protocol_version(meta: &Meta) -> Option<&str> {
    meta.get(PROTOCOL_VERSION_KEY).and_then(Value::as_str)
}

/// True when `key` follows the 2026-07-28 `_meta` key format.
///
/// A key is an optional prefix then a name. The prefix is one or more dot-separated labels followed
/// by `/`; a label starts with an ASCII letter, ends with a letter or digit, and has only letters,
/// digits and `-` inside. The name, unless empty, starts and ends with an ASCII alphanumeric and has
/// only alphanumerics, `-`, `_` and `.` inside. The spec lets the name be empty; this function
/// accepts an empty name only after a prefix (`"com.example/"`), never the empty key `""`.
pub fn is_valid_meta_key(key: &str) -> bool {
    let (prefix, name) = match key.rfind('/') {
        Some(slash) => (Some(&key[..slash]), &key[slash + 1..]),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if !prefix.split('.').all(is_valid_label) {
            return false;
        }
    } else if name.is_empty() {
        return false;
    }
    is_valid_name(name)
}

/// True when the key's prefix is reserved for MCP: its second label is `modelcontextprotocol` or `mcp`.
pub fn is_reserved_meta_key(key: &str) -> bool {
    let Some((prefix, _)) = key.rsplit_once('/') else {
        return false;
    };
    matches!(
        prefix.split('.').nth(1),
        Some("modelcontextprotocol" | "mcp")
    )
}

fn is_valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphabetic()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
}

fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return true;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_key_format() {
        for ok in [
            PROTOCOL_VERSION_KEY,
            PROGRESS_TOKEN_KEY,
            "traceparent",
            "com.example/my-key_1.v2",
            "a/b",
            "x1/",
            "org.modelcontextprotocol.api/x",
            "9lives",
        ] {
            assert!(is_valid_meta_key(ok), "{ok}");
        }
        for bad in [
            "",
            "/name",
            "1abc/name",
            "com-/name",
            "com..example/name",
            "com.example/-name",
            "com.example/name_",
            "com.example/na me",
            "com_example/name",
            "a/b/c",
            "naïve",
        ] {
            assert!(!is_valid_meta_key(bad), "{bad}");
        }
    }

    #[test]
    fn reserved_prefixes() {
        assert!(is_reserved_meta_key(SERVER_INFO_KEY));
        assert!(is_reserved_meta_key("dev.mcp/x"));
        assert!(is_reserved_meta_key("com.mcp.tools/x"));
        assert!(!is_reserved_meta_key("com.example.mcp/x"));
        assert!(!is_reserved_meta_key("progressToken"));
    }

    #[test]
    fn reads_progress_token() {
        let mut meta = Meta::new();
        assert_eq!(progress_token(&meta), None);
        meta.insert(PROGRESS_TOKEN_KEY.into(), Value::from(7));
        assert_eq!(progress_token(&meta), Some(RequestId::Number(7)));
        meta.insert(PROGRESS_TOKEN_KEY.into(), Value::from("t"));
        assert_eq!(progress_token(&meta), Some(RequestId::from("t")));
        meta.insert(PROGRESS_TOKEN_KEY.into(), Value::Null);
        assert_eq!(progress_token(&meta), None);
    }
}
