//! `x-mcp-header` (2026-07-28): tool arguments that clients mirror into `Mcp-Param-{Name}` HTTP
//! headers, so intermediaries can route on them without reading the body.
//!
//! [`header_params`] reads the annotations of an `inputSchema` and checks them against the spec's
//! rules: the name is an RFC 9110 token, unique (ignoring case) within the schema, on a
//! `string`, `integer` or `boolean` property reached through `properties` alone. A server refuses
//! to register a tool whose annotations break a rule; a client drops such a tool.

use serde_json::{Map, Value};

/// The params field a 2026-07-28 request mirrors into its `Mcp-Name` header: `name` for
/// `tools/call` and `prompts/get`, `uri` for `resources/read`, and `taskId` for the tasks
/// extension's `tasks/get`, `tasks/update` and `tasks/cancel`. `None`: the method sends none.
pub fn name_header_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// One annotated argument: the header's `{Name}` and the path of property names to the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `{Name}` of the `Mcp-Param-{Name}` header.
    pub name: String,
    /// The property names leading from the arguments to the value.
    pub path: Vec<String>,
}

impl HeaderParam {
    /// The argument's value in `arguments`, if present and not null.
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        let mut value = arguments;
        for key in &self.path {
            value = value.get(key)?;
        }
        (!value.is_null()).then_some(value)
    }
}

/// The most annotated arguments one tool may have. A header per argument travels with every
/// call, so more than this is refused rather than checked (a hostile `tools/list` could carry
/// hundreds of thousands).
pub const MAX_HEADER_PARAMS: usize = 64;

/// The annotated arguments of an `inputSchema`, or why the annotations are invalid. Linear in
/// the size of the schema.
pub fn header_params(schema: &Map<String, Value>) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), &mut found)?;
    let mut seen = std::collections::HashSet::with_capacity(found.len());
    for param in &found {
        if !seen.insert(param.name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} is used twice", param.name));
        }
    }
    Ok(found)
}

fn collect(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Ok(());
    };
    for (key, property) in properties {
        let Value::Object(property) = property else {
            continue;
        };
        path.push(key.clone());
        if let Some(annotation) = property.get("x-mcp-header") {
            let name = annotation
                .as_str()
                .filter(|name| is_token(name))
                .ok_or_else(|| format!("x-mcp-header on {key:?} must be a non-empty token"))?;
            let kind = property.get("type").and_then(Value::as_str);
            if !matches!(kind, Some("string" | "integer" | "boolean")) {
                return Err(format!(
                    "x-mcp-header {name:?} must be on a string, integer or boolean property"
                ));
            }
            if found.len() == MAX_HEADER_PARAMS {
                return Err(format!(
                    "more than {MAX_HEADER_PARAMS} x-mcp-header annotations"
                ));
            }
            found.push(HeaderParam {
                name: name.to_owned(),
                path: path.clone(),
            });
        }
        collect(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// RFC 9110 `token`: one or more `tchar`.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn finds_annotations_through_properties_only() {
        let found = header_params(&schema(json!({
            "type": "object",
            "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "nested": { "type": "object", "properties": {
                    "id": { "type": "integer", "x-mcp-header": "Item-Id" } } },
                "list": { "type": "array", "items": { "type": "string", "x-mcp-header": "Ignored" } }
            }
        })))
        .expect("valid");
        let names: Vec<_> = found
            .iter()
            .map(|p| (p.name.as_str(), p.path.join(".")))
            .collect();
        assert_eq!(
            names,
            [
                ("Item-Id", "nested.id".to_owned()),
                ("Region", "region".to_owned())
            ]
        );
        let args = json!({ "region": "eu", "nested": { "id": 7 } });
        assert_eq!(found[1].value_in(&args), Some(&json!("eu")));
        assert_eq!(
            found[0].value_in(&json!({ "nested": { "id": null } })),
            None
        );
    }

    #[test]
    fn refuses_bad_annotations() {
        for bad in [
            json!({ "properties": { "a": { "type": "number", "x-mcp-header": "A" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "has space" } } }),
            json!({ "properties": {
                "a": { "type": "string", "x-mcp-header": "Dup" },
                "b": { "type": "string", "x-mcp-header": "dup" } } }),
        ] {
            assert!(header_params(&schema(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_flood_of_annotations_is_refused_at_the_cap() {
        let properties: Map<String, Value> = (0..100_000)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({ "type": "string", "x-mcp-header": format!("H{i}") }),
                )
            })
            .collect();
        let flood = schema(json!({ "properties": properties }));
        let error = header_params(&flood).expect_err("over the cap");
        assert!(error.contains("more than 64"), "{error}");
        let at_cap: Map<String, Value> = (0..MAX_HEADER_PARAMS)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({ "type": "string", "x-mcp-header": format!("H{i}") }),
                )
            })
            .collect();
        assert_eq!(
            header_params(&schema(json!({ "properties": at_cap })))
                .expect("at the cap")
                .len(),
            MAX_HEADER_PARAMS
        );
    }
}
