//! Resource URIs of many servers in one namespace: `prefix+uri`.
//!
//! A server prefix is written with `-` for `_` (a URI scheme may hold letters, digits, `+`,
//! `-` and `.`, not `_`), so `docs+file:///a` is an absolute URI (scheme `docs+file`) and
//! opaque URIs (`urn:x`, `memo:insights`) and
//! templates (`docs+notes://{id}`) work the same way. Reading a URI that was never listed still
//! works: the prefix alone routes it. Rewriting is applied wherever a URI travels in a result:
//! resource contents, `resource_link` blocks and embedded resources.

use serde_json::Value;

/// A server prefix as it is written in URIs: `_` becomes `-`.
pub fn scheme_prefix(prefix: &str) -> String {
    prefix.replace('_', "-")
}

/// The exposed form of `uri` on the server with `prefix`.
pub fn expose(prefix: &str, uri: &str) -> String {
    format!("{}+{uri}", scheme_prefix(prefix))
}

/// The prefix (in its URI form, see [`scheme_prefix`]) and raw URI behind an exposed URI: the
/// part before the first `+` must look like one (`[a-z0-9-]`, starting with a letter).
pub fn resolve(exposed: &str) -> Option<(&str, &str)> {
    let (prefix, raw) = exposed.split_once('+')?;
    let valid = prefix
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase())
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (valid && !raw.is_empty()).then_some((prefix, raw))
}

/// Rewrites every URI in MCP content (a list of content blocks, or resource contents) with
/// `map`: `resource_link.uri`, `resource.uri` of embedded resources, and `uri` of resource
/// contents.
pub fn rewrite_content(items: &mut [Value], map: &dyn Fn(&str) -> String) {
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("resource_link") => rewrite_field(item, map),
            Some("resource") => {
                if let Some(resource) = item.get_mut("resource") {
                    rewrite_field(resource, map);
                }
            }
            // Resource contents (`resources/read`) have no type.
            None => rewrite_field(item, map),
            _ => {}
        }
    }
}

fn rewrite_field(value: &mut Value, map: &dyn Fn(&str) -> String) {
    if let Some(Value::String(uri)) = value.get_mut("uri") {
        *uri = map(uri);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn uris_round_trip() {
        for raw in [
            "file:///etc/x",
            "urn:isbn:1",
            "memo:insights",
            "notes://{id}",
        ] {
            let exposed = expose("docs", raw);
            assert_eq!(resolve(&exposed), Some(("docs", raw)));
        }
        assert_eq!(resolve("file:///no-prefix"), None);
        assert_eq!(expose("my_docs", "a:b"), "my-docs+a:b");
        assert_eq!(resolve("my-docs+a:b"), Some(("my-docs", "a:b")));
        assert_eq!(resolve("Bad+x:y"), None);
        assert_eq!(resolve("docs+"), None);
    }

    #[test]
    fn uris_are_rewritten_where_they_travel() {
        let mut content = vec![
            json!({"type": "text", "text": "uri: not this"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "text": "b"}}),
            json!({"uri": "file:///c", "text": "c"}),
        ];
        rewrite_content(&mut content, &|uri| expose("fs", uri));
        assert_eq!(content[0]["text"], "uri: not this");
        assert_eq!(content[1]["uri"], "fs+file:///a");
        assert_eq!(content[2]["resource"]["uri"], "fs+file:///b");
        assert_eq!(content[3]["uri"], "fs+file:///c");
    }
}
