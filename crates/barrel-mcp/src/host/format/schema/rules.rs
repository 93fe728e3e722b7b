//! The per-provider rules, applied to each subschema after its own subschemas are shaped:
//! OpenAI strict mode and Gemini's subset (see the [`schema`](super) module docs).

use serde_json::{Map, Value, json};

use super::{ChangeKind, Shaper, escape};

/// Keywords OpenAI strict mode takes (subschema keywords are shaped before this runs).
const STRICT_KEYS: [&str; 19] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];
/// The string formats OpenAI strict mode takes.
const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// OpenAI strict mode's limits: object nesting, properties, enum values.
const STRICT_MAX_NESTING: usize = 10;
const STRICT_MAX_PROPERTIES: usize = 5_000;
const STRICT_MAX_ENUM_VALUES: usize = 1_000;

/// Keywords Gemini takes (`google-genai`'s `JSONSchema` fields that its `Schema` keeps).
const GEMINI_KEYS: [&str; 19] = [
    "type",
    "format",
    "title",
    "description",
    "default",
    "enum",
    "properties",
    "required",
    "items",
    "anyOf",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minProperties",
    "maxProperties",
];
/// The formats Gemini takes.
const GEMINI_FORMATS: [&str; 6] = ["date-time", "enum", "float", "double", "int32", "int64"];

pub(super) fn strict(shaper: &mut Shaper<'_>, out: &mut Map<String, Value>, at: &str) {
    one_of_as_any_of(shaper, out, at);
    drop_unknown(shaper, out, at, &STRICT_KEYS, "OpenAI strict mode");
    if let Some(format) = out.get("format").and_then(Value::as_str)
        && !STRICT_FORMATS.contains(&format)
    {
        let detail = format!("dropped format {format:?}: OpenAI strict mode does not take it");
        out.remove("format");
        shaper.change(&format!("{at}/format"), ChangeKind::Dropped, detail);
    }
    drop_misplaced(shaper, out, at);
    let is_object = match out.get("type") {
        Some(Value::Array(types)) => types.contains(&json!("object")),
        Some(t) => t == "object",
        None => out.contains_key("properties"),
    };
    if is_object {
        out.entry("type").or_insert_with(|| json!("object"));
        strict_object(shaper, out, at);
    } else if !["type", "anyOf", "enum", "const"]
        .iter()
        .any(|k| out.contains_key(*k))
    {
        shaper.block(at, "a subschema without a type");
    }
    // The limits hold for the whole schema.
    let before = shaper.enum_values;
    shaper.enum_values += out
        .get("enum")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if before <= STRICT_MAX_ENUM_VALUES && shaper.enum_values > STRICT_MAX_ENUM_VALUES {
        shaper.block(at, "more than 1,000 enum values in the schema");
    }
}

fn strict_object(shaper: &mut Shaper<'_>, out: &mut Map<String, Value>, at: &str) {
    match out.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) if out.contains_key("properties") => {}
        Some(_) => {
            shaper.block(at, "a map (additionalProperties) has no strict form");
            return;
        }
    }
    let Some(Value::Object(properties)) = out.get_mut("properties") else {
        shaper.block(at, "an object without properties has no strict form");
        return;
    };
    if at.matches("/properties/").count() >= STRICT_MAX_NESTING {
        shaper.block(at, "objects nested more than 10 levels");
    }
    let before = shaper.properties;
    shaper.properties += properties.len();
    if before <= STRICT_MAX_PROPERTIES && shaper.properties > STRICT_MAX_PROPERTIES {
        shaper.block(at, "more than 5,000 properties in the schema");
    }
    let required: Vec<String> = out
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut blockers = Vec::new();
    let Some(Value::Object(properties)) = out.get_mut("properties") else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        if !required.contains(name) && !make_nullable(property) {
            blockers.push(format!("{at}/properties/{}", escape(name)));
        }
    }
    let all: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
    for pointer in blockers {
        shaper.block(
            &pointer,
            "an optional property that cannot be made nullable",
        );
    }
    out.insert("required".into(), Value::Array(all));
    out.insert("additionalProperties".into(), json!(false));
}

/// `property` also taking `null` (strict mode's optional); false when it has no form for it.
fn make_nullable(property: &mut Value) -> bool {
    let Value::Object(map) = property else {
        return false;
    };
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match map.get_mut("type") {
        Some(Value::String(t)) if t == "null" => true,
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
            true
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
            true
        }
        Some(_) => false,
        None => {
            if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
                if !branches
                    .iter()
                    .any(|b| b.get("type") == Some(&json!("null")))
                {
                    branches.push(json!({"type": "null"}));
                }
                return true;
            }
            if map.contains_key("enum") {
                return true;
            }
            // A constant or nothing: an enum of it and null (`restore` drops the null).
            match map.remove("const") {
                Some(constant) => {
                    map.insert("enum".into(), json!([constant, null]));
                    true
                }
                None => false,
            }
        }
    }
}

/// The root of a strict schema: an object, not an `anyOf`.
pub(super) fn strict_root(shaper: &mut Shaper<'_>, root: &Value) {
    if root.get("anyOf").is_some() {
        shaper.block("", "a root anyOf has no strict form");
    }
}

pub(super) fn gemini(shaper: &mut Shaper<'_>, out: &mut Map<String, Value>, at: &str) {
    one_of_as_any_of(shaper, out, at);
    drop_misplaced(shaper, out, at);
    if let Some(constant) = out.remove("const") {
        out.insert("enum".into(), json!([constant]));
    }
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && values.iter().any(|v| !v.is_string())
    {
        // Gemini's enums are strings: the others are written as JSON text and read back by
        // `restore`.
        let had_null = values.contains(&Value::Null);
        let strings: Vec<Value> = values
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| json!(v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
        *values = strings;
        if let Some(default) = out.get_mut("default")
            && !default.is_string()
            && !default.is_null()
        {
            *default = json!(default.to_string());
        }
        let string = if had_null {
            json!(["string", "null"])
        } else {
            json!("string")
        };
        out.insert("type".into(), string);
    }
    if !out.contains_key("type")
        && let Some(Value::Array(values)) = out.get("enum")
        && values.iter().all(Value::is_string)
    {
        // Gemini's enums are typed strings.
        out.insert("type".into(), json!("string"));
    }
    for (key, relation) in [("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")] {
        if let Some(bound) = out.remove(key) {
            let note = format!("must be {relation} {bound}");
            let description = match out.get("description").and_then(Value::as_str) {
                Some(text) => format!("{text} ({note})"),
                None => note,
            };
            out.insert("description".into(), json!(description));
            let detail =
                format!("{key} {bound} moved into the description: Gemini does not take it");
            shaper.change(&format!("{at}/{key}"), ChangeKind::Rewritten, detail);
        }
    }
    match out.remove("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(_) => shaper.change(
            &format!("{at}/additionalProperties"),
            ChangeKind::Dropped,
            "dropped additionalProperties: Gemini takes no maps, only named properties",
        ),
    }
    if let Some(format) = out.get("format").and_then(Value::as_str)
        && !GEMINI_FORMATS.contains(&format)
    {
        let detail = format!("dropped format {format:?}: Gemini does not take it");
        out.remove("format");
        shaper.change(&format!("{at}/format"), ChangeKind::Dropped, detail);
    }
    drop_unknown(shaper, out, at, &GEMINI_KEYS, "Gemini");
}

/// Keywords of objects and of arrays, dropped from a schema whose type is neither (they
/// constrain nothing there, and both providers refuse some of them out of place).
fn drop_misplaced(shaper: &mut Shaper<'_>, out: &mut Map<String, Value>, at: &str) {
    let types: Vec<String> = match out.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => return,
    };
    let groups: [(&str, &[&str]); 2] = [
        (
            "object",
            &[
                "properties",
                "required",
                "additionalProperties",
                "minProperties",
                "maxProperties",
            ],
        ),
        (
            "array",
            &[
                "items",
                "prefixItems",
                "minItems",
                "maxItems",
                "uniqueItems",
            ],
        ),
    ];
    for (kind, keys) in groups {
        if types.iter().any(|t| t == kind) {
            continue;
        }
        for key in keys {
            if out.remove(*key).is_some() {
                let detail =
                    format!("dropped {key}: it applies to an {kind}, and the type is {types:?}");
                shaper.change(&format!("{at}/{key}"), ChangeKind::Dropped, detail);
            }
        }
    }
}

/// `oneOf` read as `anyOf` (a value matching two branches is no longer refused).
fn one_of_as_any_of(shaper: &mut Shaper<'_>, out: &mut Map<String, Value>, at: &str) {
    if let Some(branches) = out.remove("oneOf") {
        if out.contains_key("anyOf") {
            shaper.change(
                &format!("{at}/oneOf"),
                ChangeKind::Dropped,
                "dropped oneOf beside anyOf",
            );
            return;
        }
        out.insert("anyOf".into(), branches);
        let detail = "oneOf read as anyOf: the provider does not take oneOf";
        shaper.change(&format!("{at}/oneOf"), ChangeKind::Rewritten, detail);
    }
}

/// `allOf` merged into the schema: properties and required united, the other keywords taken
/// from the first that has them (a conflict is reported).
pub(super) fn merge_all_of(shaper: &mut Shaper<'_>, out: &mut Map<String, Value>, at: &str) {
    let Some(Value::Array(branches)) = out.remove("allOf") else {
        return;
    };
    for (i, branch) in branches.into_iter().enumerate() {
        let Value::Object(branch) = branch else {
            continue;
        };
        for (key, value) in branch {
            match (key.as_str(), out.get_mut(&key)) {
                (_, None) => {
                    out.insert(key, value);
                }
                ("properties", Some(Value::Object(mine))) => {
                    if let Value::Object(theirs) = value {
                        for (name, sub) in theirs {
                            mine.entry(name).or_insert(sub);
                        }
                    }
                }
                ("required", Some(Value::Array(mine))) => {
                    for name in value.as_array().into_iter().flatten() {
                        if !mine.contains(name) {
                            mine.push(name.clone());
                        }
                    }
                }
                (_, Some(mine)) if *mine == value => {}
                (_, Some(_)) => {
                    let detail =
                        format!("allOf merged: the branch's {key} conflicts and was dropped");
                    shaper.change(
                        &format!("{at}/allOf/{i}/{key}"),
                        ChangeKind::Rewritten,
                        detail,
                    );
                }
            }
        }
    }
}

fn drop_unknown(
    shaper: &mut Shaper<'_>,
    out: &mut Map<String, Value>,
    at: &str,
    keep: &[&str],
    who: &str,
) {
    let unknown: Vec<String> = out
        .keys()
        .filter(|k| !keep.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in unknown {
        let value = out.remove(&key).unwrap_or_default();
        let mut shown = value.to_string();
        if shown.len() > 60 {
            shown = "…".into();
        }
        let detail = format!("dropped {key} ({shown}): {who} does not take it");
        shaper.change(
            &format!("{at}/{}", escape(&key)),
            ChangeKind::Dropped,
            detail,
        );
    }
}
