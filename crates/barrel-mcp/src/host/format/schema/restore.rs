//! The reverse transform: a model's arguments, written against a shaped schema, back in the
//! terms of the original one (see the [`schema`](super) module docs).

use std::cell::Cell;

use serde_json::{Map, Value};

use super::{MAX_DEPTH, resolve_local};

/// The most subschema visits one restore makes: a schema built to branch exponentially
/// (`allOf` of two `$ref`s to `allOf`s of two ...) costs bounded time, and what is left
/// unvisited is left as the model wrote it.
const MAX_STEPS: usize = 100_000;

/// One restore: the original schema and the visits left.
struct Walk<'a> {
    root: &'a Value,
    steps: Cell<usize>,
}

impl Walk<'_> {
    /// Takes one step; false when none are left.
    fn step(&self) -> bool {
        let left = self.steps.get();
        self.steps.set(left.saturating_sub(1));
        left > 0
    }
}

/// `arguments` a model wrote against any provider's shaped form of `schema` (the tool's
/// original `inputSchema`), as the original expects them: a `null` for an optional property
/// whose schema does not take `null` is removed (OpenAI strict mode sends one for every
/// optional property left out), and a string standing for a non-string enum or `const` value
/// becomes that value (Gemini's enums are strings). Nothing the original schema already takes
/// is changed; `$ref`s are followed inside the schema only.
pub fn restore(schema: &Value, arguments: Map<String, Value>) -> Map<String, Value> {
    let mut value = Value::Object(arguments);
    restore_in_place(schema, &mut value);
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// [`restore`] on arguments already held as one JSON value.
pub(crate) fn restore_in_place(schema: &Value, arguments: &mut Value) {
    let walk = Walk {
        root: schema,
        steps: Cell::new(MAX_STEPS),
    };
    restore_value(&walk, schema, arguments, 0);
}

/// `schema` itself, or what its `$ref` names (followed a bounded number of times).
fn resolved<'a>(root: &'a Value, mut schema: &'a Value) -> Option<&'a Value> {
    for _ in 0..MAX_DEPTH {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => schema = resolve_local(root, reference)?,
            None => return Some(schema),
        }
    }
    None
}

fn restore_value(walk: &Walk<'_>, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH || !walk.step() {
        return;
    }
    let root = walk.root;
    let Some(schema) = resolved(root, schema) else {
        return;
    };
    for branch in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        restore_value(walk, branch, value, depth + 1);
    }
    for key in ["anyOf", "oneOf"] {
        let branches = schema.get(key).and_then(Value::as_array);
        if let Some(branch) = branches.and_then(|b| pick_branch(root, b, value)) {
            restore_value(walk, branch, value, depth + 1);
        }
    }
    enum_value(schema, value);
    match value {
        Value::Object(map) => restore_object(walk, schema, map, depth),
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            for (i, item) in items.iter_mut().enumerate() {
                let sub = prefix
                    .and_then(|p| p.get(i))
                    .or_else(|| schema.get("items").filter(|s| s.is_object()));
                if let Some(sub) = sub {
                    restore_value(walk, sub, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn restore_object(walk: &Walk<'_>, schema: &Value, map: &mut Map<String, Value>, depth: usize) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = |name: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|n| n == name))
    };
    let extra = schema.get("additionalProperties").filter(|s| s.is_object());
    let names: Vec<String> = map.keys().cloned().collect();
    for name in names {
        let sub = properties.and_then(|p| p.get(&name)).or(extra);
        let Some(sub) = sub else {
            continue;
        };
        let is_null = map.get(&name).is_some_and(Value::is_null);
        if is_null && !required(&name) && !takes_null(walk, sub, depth) {
            map.remove(&name);
        } else if let Some(value) = map.get_mut(&name) {
            restore_value(walk, sub, value, depth + 1);
        }
    }
}

/// A string standing for a non-string enum (or `const`) value, as that value.
fn enum_value(schema: &Value, value: &mut Value) {
    let allowed: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().collect(),
        (_, Some(constant)) => vec![constant],
        _ => return,
    };
    let Value::String(text) = &*value else {
        return;
    };
    if allowed.contains(&&*value) {
        return;
    }
    let mut matches = allowed
        .iter()
        .filter(|v| !v.is_string() && v.to_string() == *text);
    if let (Some(original), None) = (matches.next(), matches.next()) {
        *value = (*original).clone();
    }
}

/// The branch of `anyOf`/`oneOf` a value was written for: the first whose type fits it (for
/// an object, one that names all its keys if any does).
fn pick_branch<'a>(root: &'a Value, branches: &'a [Value], value: &Value) -> Option<&'a Value> {
    let fits = |branch: &&'a Value| {
        resolved(root, branch).is_some_and(|b| type_fits(b.get("type"), value))
    };
    if let Value::Object(map) = value {
        let names_all = branches.iter().filter(fits).find(|branch| {
            let props = resolved(root, branch).and_then(|b| b.get("properties"));
            props
                .and_then(Value::as_object)
                .is_some_and(|p| map.keys().all(|k| p.contains_key(k)))
        });
        if names_all.is_some() {
            return names_all;
        }
    }
    branches.iter().find(fits)
}

fn type_fits(declared: Option<&Value>, value: &Value) -> bool {
    let name = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let one = |t: &Value| t == name || (name == "integer" && t == "number");
    match declared {
        None => true,
        Some(Value::Array(types)) => types.iter().any(one),
        Some(t) => one(t),
    }
}

/// Whether `schema` may take `null`; true when unsure, so nothing valid is ever removed.
fn takes_null(walk: &Walk<'_>, schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH || !walk.step() {
        return true;
    }
    let Some(schema) = resolved(walk.root, schema) else {
        return true;
    };
    let Value::Object(map) = schema else {
        return schema != &Value::Bool(false);
    };
    let any = |key: &str| {
        map.get(key)
            .and_then(Value::as_array)
            .map(|b| b.iter().any(|s| takes_null(walk, s, depth + 1)))
    };
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.contains(&Value::Null);
    }
    if let Some(constant) = map.get("const") {
        return constant.is_null();
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        return true;
    }
    if let Some(declared) = map.get("type") {
        return type_fits(Some(declared), &Value::Null);
    }
    if let Some(answer) = any("anyOf").or_else(|| any("oneOf")) {
        return answer;
    }
    if let Some(Value::Array(all)) = map.get("allOf") {
        return all.iter().all(|s| takes_null(walk, s, depth + 1));
    }
    true
}
