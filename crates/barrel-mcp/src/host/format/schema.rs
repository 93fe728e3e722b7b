//! Schema shaping, both ways: an MCP tool's `inputSchema` shaped into the JSON Schema subset a
//! model API takes ([`shape`]), a report of every lossy change ([`SchemaChange`]), and the
//! reverse transform ([`restore`]) that turns the arguments a model wrote against the shaped
//! schema back into what the original schema expects.
//!
//! Every target gets the common steps: a root that is not an object schema becomes one;
//! `$schema`, `$id`, `$comment`, `$anchor` and `$defs`/`definitions` go; every `$ref` is
//! resolved inside the schema (`#`, `#/$defs/...`, `#/definitions/...`) and inlined. A `$ref`
//! to anything else is never fetched: it becomes a permissive schema (`{}`), reported. A
//! recursive `$ref` is expanded once and cut at its second appearance on one path, a schema
//! deeper than [`MAX_DEPTH`] levels is cut there, and a tool's shaped schema has at most
//! [`MAX_NODES`] subschemas (a `$ref` used many times cannot blow it up); each cut is a
//! permissive schema and a report entry. A root `$ref` that names anything but an object
//! schema is replaced like a root of another type. Then, per provider (for OpenAI strict mode
//! and Gemini, object keywords on a schema typed otherwise, and array keywords likewise, are
//! dropped first):
//!
//! - **Anthropic**: the rest passes through (its API takes JSON Schema 2020-12).
//! - **OpenAI** (Chat Completions and Responses): strict mode when the schema allows it. Every
//!   object gets `additionalProperties: false` and every property in `required`, an optional
//!   one made nullable (`type: [T, "null"]`); `oneOf` is read as `anyOf`; `allOf` is merged;
//!   keywords strict mode refuses (`minLength`, `uniqueItems`, `default`, formats beyond its
//!   list, ...) are dropped and reported. When a schema cannot be strict at all (a map
//!   through `additionalProperties`, an object without properties, a subschema without a type,
//!   a cut, more than 10 levels of objects, 5,000 properties or 1,000 enum values, a root
//!   `anyOf`), the tool is sent non-strict with only the common steps, and the report says why.
//! - **Gemini**: its subset (what `google-genai`'s `JSONSchema` and `Schema` take): `type`,
//!   `format` (`date-time`, `enum`, `float`, `double`, `int32`, `int64`), `title`,
//!   `description`, `default`, `enum` of strings, `properties`, `required`, `items`,
//!   `anyOf`, and the length, item, property-count and `minimum`/`maximum` bounds. Non-string
//!   enums (and `const`) become string enums, reversed by [`restore`]; `oneOf` becomes
//!   `anyOf`; `allOf` is merged; exclusive bounds move into the description;
//!   `additionalProperties` and every other keyword are dropped and reported.
//!
//! [`restore`] is provider-independent: it only ever changes a value the original schema
//! refuses, and only in the ways shaping introduced (a `null` for an optional property that
//! does not take `null` becomes absent; a string standing for a non-string enum value becomes
//! that value). Arguments that already satisfy the original schema pass unchanged, so one
//! reverse transform serves every provider.

use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value, json};

use super::Provider;

mod restore;
mod rules;

pub use restore::restore;
pub(crate) use restore::restore_in_place;

/// The deepest a shaped schema goes; a subschema below is cut to `{}`.
pub const MAX_DEPTH: usize = 32;
/// The most subschemas one tool's shaped schema holds; the rest are cut to `{}`.
pub const MAX_NODES: usize = 10_000;

/// What a lossy change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeKind {
    /// A keyword the provider does not take was removed.
    Dropped,
    /// A keyword was rewritten into one that means less (`oneOf` read as `anyOf`, a bound
    /// moved into the description, conflicting `allOf` branches merged).
    Rewritten,
    /// A subschema became permissive (`{}`): a remote or unresolvable `$ref`, a cycle, a
    /// schema too deep or too large, a root that was not an object schema.
    Permissive,
    /// OpenAI strict mode is off for this tool (the pointer says where it could not be).
    StrictOff,
}

/// One lossy change shaping made to a tool's schema, for a host to log or show.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaChange {
    /// The tool's exposed name.
    pub tool: String,
    /// Where, as a JSON pointer into the shaped schema (through inlined `$ref`s; `""` is the
    /// root).
    pub pointer: String,
    /// What kind of change.
    pub kind: ChangeKind,
    /// What was dropped or changed, and why.
    pub detail: String,
}

impl fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{} {at}: {}", self.tool, self.detail)
    }
}

/// A tool's schema shaped for one provider.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Shaped {
    /// The schema to send.
    pub schema: Value,
    /// Whether it is an OpenAI strict-mode schema (send `strict: true`).
    pub strict: bool,
    /// Every lossy change, in schema order.
    pub changes: Vec<SchemaChange>,
}

/// `schema` (the `inputSchema` of the tool exposed as `tool`) shaped for `provider` (see the
/// module docs).
pub fn shape(provider: Provider, tool: &str, schema: &Value) -> Shaped {
    match provider {
        Provider::Anthropic => shape_for(Target::Plain, tool, schema),
        Provider::Gemini => shape_for(Target::Gemini, tool, schema),
        Provider::OpenAiChat | Provider::OpenAiResponses => {
            let strict = shape_for(Target::Strict, tool, schema);
            if strict.strict {
                return strict;
            }
            // Sent non-strict: only the common steps, and why strict mode is off.
            let mut plain = shape_for(Target::Plain, tool, schema);
            let blockers = strict
                .changes
                .into_iter()
                .filter(|c| c.kind == ChangeKind::StrictOff);
            plain.changes.extend(blockers);
            plain
        }
    }
}

/// What a schema is shaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The common steps only.
    Plain,
    /// OpenAI strict mode.
    Strict,
    /// Gemini's subset.
    Gemini,
}

fn shape_for(target: Target, tool: &str, schema: &Value) -> Shaped {
    let mut shaper = Shaper {
        target,
        tool,
        root: schema,
        changes: Vec::new(),
        refs: Vec::new(),
        nodes: 0,
        blocked_at: HashSet::new(),
        properties: 0,
        enum_values: 0,
        blocked: false,
    };
    let root = match schema {
        Value::Object(map) => {
            let is_object = match map.get("type") {
                None => true,
                Some(t) => t == "object",
            };
            if is_object {
                schema.clone()
            } else {
                // Every provider takes an object: a schema of anything else cannot describe
                // named arguments, and one such tool would fail the whole request.
                shaper.change(
                    "",
                    ChangeKind::Permissive,
                    "the root is not an object schema: replaced by an empty object schema",
                );
                json!({})
            }
        }
        Value::Null => json!({}),
        _ => {
            shaper.change(
                "",
                ChangeKind::Permissive,
                "the schema is not a JSON object: replaced by an empty object schema",
            );
            json!({})
        }
    };
    let mut root = root;
    if let Value::Object(map) = &mut root
        && !map.contains_key("$ref")
    {
        // Written before the walk, so the rules see an object (a `$ref` root gets its target's).
        map.entry("type").or_insert_with(|| json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
    }
    let mut shaped = shaper.node(&root, "", 0);
    if shaped.get("type").is_some_and(|t| t != "object") {
        let detail = "the root $ref names a schema that is not an object: replaced by an empty object schema";
        shaper.change("", ChangeKind::Permissive, detail);
        shaper.block("", "the root is not an object schema");
        shaped = json!({});
    }
    if let Value::Object(map) = &mut shaped {
        map.entry("type").or_insert_with(|| json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
    }
    if target == Target::Strict {
        rules::strict_root(&mut shaper, &shaped);
    }
    Shaped {
        schema: shaped,
        strict: target == Target::Strict && !shaper.blocked,
        changes: shaper.changes,
    }
}

/// One walk over one tool's schema.
pub(crate) struct Shaper<'a> {
    pub(crate) target: Target,
    tool: &'a str,
    root: &'a Value,
    pub(crate) changes: Vec<SchemaChange>,
    /// The `$ref`s being expanded on the current path.
    refs: Vec<String>,
    nodes: usize,
    /// Properties and enum values seen so far (OpenAI's limits are per schema).
    pub(crate) properties: usize,
    pub(crate) enum_values: usize,
    /// Strict mode is impossible for this schema.
    pub(crate) blocked: bool,
    /// Where it was found impossible.
    blocked_at: HashSet<String>,
}

/// Keywords whose value is one subschema.
const ONE: [&str; 9] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
];
/// Keywords whose value is a list of subschemas.
const LIST: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const NAMED: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];
/// Keywords removed everywhere, silently: identity and comments, and `$defs` once inlined.
const META: [&str; 6] = [
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "$defs",
    "definitions",
];

impl Shaper<'_> {
    pub(crate) fn change(&mut self, pointer: &str, kind: ChangeKind, detail: impl Into<String>) {
        self.changes.push(SchemaChange {
            tool: self.tool.to_owned(),
            pointer: pointer.to_owned(),
            kind,
            detail: detail.into(),
        });
    }

    /// Strict mode cannot hold: each place is reported, with its first reason.
    pub(crate) fn block(&mut self, pointer: &str, why: &str) {
        if self.target == Target::Strict && self.blocked_at.insert(pointer.to_owned()) {
            self.blocked = true;
            self.change(
                pointer,
                ChangeKind::StrictOff,
                format!("strict mode off: {why}"),
            );
        }
    }

    fn permissive(&mut self, pointer: &str, why: String) -> Value {
        self.change(pointer, ChangeKind::Permissive, why);
        self.block(pointer, "a subschema had to be made permissive");
        json!({})
    }

    /// `node` at `pointer`, shaped.
    fn node(&mut self, node: &Value, pointer: &str, depth: usize) -> Value {
        let map = match node {
            Value::Object(map) => map,
            Value::Bool(true) => return json!({}),
            other => {
                return self.permissive(
                    pointer,
                    format!("the subschema {other} is not an object: made permissive"),
                );
            }
        };
        if depth > MAX_DEPTH {
            return self.permissive(pointer, format!("deeper than {MAX_DEPTH} levels: cut"));
        }
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            // Reported once: the rest of the schema is cut the same way.
            if self.nodes == MAX_NODES + 1 {
                return self.permissive(
                    pointer,
                    format!("more than {MAX_NODES} subschemas: cut here and after"),
                );
            }
            return json!({});
        }
        if self.target != Target::Plain && map.contains_key("allOf") {
            // Merged before the walk, so each branch is not held to the rules on its own.
            let mut merged = map.clone();
            rules::merge_all_of(self, &mut merged, pointer);
            return self.node(&Value::Object(merged), pointer, depth + 1);
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, pointer, depth);
        }
        let mut out = Map::new();
        for (key, value) in map {
            if META.contains(&key.as_str()) {
                continue;
            }
            let at = format!("{pointer}/{}", escape(key));
            // `items` may also be a list (a tuple, before 2020-12).
            let listed = LIST.contains(&key.as_str()) || key == "items";
            let shaped = if ONE.contains(&key.as_str()) && !value.is_boolean() && !value.is_array()
            {
                self.node(value, &at, depth + 1)
            } else if let (true, Value::Array(items)) = (listed, value) {
                let branches = items.iter().enumerate();
                Value::Array(
                    branches
                        .map(|(i, b)| self.node(b, &format!("{at}/{i}"), depth + 1))
                        .collect(),
                )
            } else if let (true, Value::Object(named)) = (NAMED.contains(&key.as_str()), value) {
                let mut shaped = Map::new();
                for (name, sub) in named {
                    let at = format!("{at}/{}", escape(name));
                    shaped.insert(name.clone(), self.node(sub, &at, depth + 1));
                }
                Value::Object(shaped)
            } else {
                value.clone()
            };
            out.insert(key.clone(), shaped);
        }
        match self.target {
            Target::Plain => {}
            Target::Strict => rules::strict(self, &mut out, pointer),
            Target::Gemini => rules::gemini(self, &mut out, pointer),
        }
        Value::Object(out)
    }

    /// A `$ref` node: the target inlined, with the node's other keywords over it.
    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        pointer: &str,
        depth: usize,
    ) -> Value {
        let Some(text) = reference.as_str() else {
            return self.permissive(
                pointer,
                "a $ref that is not a string: made permissive".into(),
            );
        };
        let Some(target) = resolve_local(self.root, text) else {
            let why = if text.starts_with('#') {
                format!("$ref {text:?} does not resolve inside the schema: made permissive")
            } else {
                format!(
                    "$ref {text:?} points outside the schema and is never fetched: made permissive"
                )
            };
            return self.permissive(pointer, why);
        };
        if self.refs.iter().any(|r| r == text) {
            return self.permissive(pointer, format!("recursive $ref {text:?} cut"));
        }
        let mut merged = match target {
            Value::Object(target) => target.clone(),
            Value::Bool(true) => Map::new(),
            other => {
                return self.permissive(
                    pointer,
                    format!("$ref {text:?} is {other}, not a schema: made permissive"),
                );
            }
        };
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key.clone(), value.clone());
            }
        }
        self.refs.push(text.to_owned());
        let shaped = self.node(&Value::Object(merged), pointer, depth + 1);
        self.refs.pop();
        shaped
    }
}

/// The subschema a `#...` reference names inside `root`.
pub(crate) fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    if !fragment.starts_with('/') {
        return None;
    }
    root.pointer(&percent_decode(fragment))
}

/// `%XX` escapes in a URI fragment decoded (JSON pointers in `$ref`s are URI-encoded).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A name as a JSON pointer segment.
pub(crate) fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests;
