//! Schema shaping for every provider over a hostile matrix, the report, and the round trip:
//! arguments written against the shaped schema, restored, validated by the original.

use serde_json::{Value, json};

use super::*;
use crate::server::validation::SchemaValidator;

/// One schema with everything providers disagree on.
fn hostile() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.test/hostile",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"city": {"type": "string", "minLength": 1}},
                "required": ["city"]
            },
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                },
                "required": ["value"]
            }
        },
        "properties": {
            "query": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 100},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "level": {"enum": [1, 2, 3]},
            "when": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "format": "uri"},
            "count": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
            "home": {"$ref": "#/$defs/address", "description": "Where"},
            "tree": {"$ref": "#/$defs/node"},
            "remote": {"$ref": "https://example.test/other.json"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {"allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "boolean"}}}
            ]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "fixed": {"const": 7}
        },
        "required": ["query"]
    })
}

fn details(shaped: &Shaped) -> Vec<String> {
    shaped.changes.iter().map(ToString::to_string).collect()
}

fn has(shaped: &Shaped, pointer: &str, kind: ChangeKind) -> bool {
    shaped
        .changes
        .iter()
        .any(|c| c.pointer == pointer && c.kind == kind && c.tool == "t")
}

#[test]
fn anthropic_inlines_refs_and_keeps_the_rest() {
    let shaped = shape(Provider::Anthropic, "t", &hostile());
    let s = &shaped.schema;
    assert!(!shaped.strict);
    for key in ["$schema", "$id", "$defs"] {
        assert!(s.get(key).is_none(), "{key}");
    }
    assert_eq!(
        s["properties"]["home"]["properties"]["city"]["minLength"],
        1
    );
    assert_eq!(s["properties"]["home"]["description"], "Where");
    // The recursive node is expanded once, then cut.
    let children = &s["properties"]["tree"]["properties"]["children"];
    assert_eq!(children["items"], json!({}));
    assert!(has(
        &shaped,
        "/properties/tree/properties/children/items",
        ChangeKind::Permissive
    ));
    // The remote one is never fetched.
    assert_eq!(s["properties"]["remote"], json!({}));
    assert!(has(&shaped, "/properties/remote", ChangeKind::Permissive));
    assert!(details(&shaped).iter().any(|d| d.contains("never fetched")));
    // Everything else passes through.
    assert_eq!(
        s["properties"]["labels"]["additionalProperties"]["type"],
        "string"
    );
    assert!(s["properties"]["pick"].get("oneOf").is_some());
    assert_eq!(s["properties"]["count"]["exclusiveMaximum"], 10);
    assert_eq!(shaped.changes.len(), 2, "{:?}", details(&shaped));
    assert!(!s.to_string().contains("$ref"));
}

#[test]
fn openai_turns_strict_when_it_can() {
    let schema = json!({
        "type": "object",
        "$defs": {"unit": {"type": "string", "enum": ["c", "f"]}},
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"$ref": "#/$defs/unit"},
            "days": {"type": "integer", "default": 1},
            "at": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "site": {"type": "string", "format": "uri"}
        },
        "required": ["city"]
    });
    let shaped = shape(Provider::OpenAiChat, "t", &schema);
    assert!(shaped.strict, "{:?}", details(&shaped));
    let s = &shaped.schema;
    assert_eq!(s["additionalProperties"], false);
    assert_eq!(
        s["required"],
        json!(["at", "city", "days", "pick", "site", "unit"])
    );
    assert_eq!(s["properties"]["city"]["type"], "string");
    assert_eq!(s["properties"]["unit"]["type"], json!(["string", "null"]));
    assert_eq!(s["properties"]["unit"]["enum"], json!(["c", "f", null]));
    assert_eq!(s["properties"]["at"]["additionalProperties"], false);
    assert_eq!(s["properties"]["at"]["required"], json!(["lat"]));
    assert_eq!(
        s["properties"]["at"]["properties"]["lat"]["type"],
        json!(["number", "null"])
    );
    assert_eq!(s["properties"]["pick"]["anyOf"][2], json!({"type": "null"}));
    for (pointer, kind) in [
        ("/properties/city/minLength", ChangeKind::Dropped),
        ("/properties/days/default", ChangeKind::Dropped),
        ("/properties/pick/oneOf", ChangeKind::Rewritten),
        ("/properties/site/format", ChangeKind::Dropped),
    ] {
        assert!(
            has(&shaped, pointer, kind),
            "{pointer}: {:?}",
            details(&shaped)
        );
    }
    // Both OpenAI APIs shape alike.
    assert_eq!(shape(Provider::OpenAiResponses, "t", &schema), shaped);
}

#[test]
fn openai_stays_non_strict_when_it_cannot() {
    let hostile = shape(Provider::OpenAiResponses, "t", &hostile());
    assert!(!hostile.strict);
    assert!(
        hostile
            .changes
            .iter()
            .any(|c| c.kind == ChangeKind::StrictOff)
    );
    // Non-strict: the common steps only, and nothing strict-only.
    assert!(hostile.schema.get("additionalProperties").is_none());
    assert_eq!(hostile.schema["required"], json!(["query"]));
    for (schema, pointer) in [
        (
            json!({"properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            "/properties/m",
        ),
        (json!({"properties": {"any": {}}}), "/properties/any"),
        (
            json!({"properties": {"o": {"type": "object"}}}),
            "/properties/o",
        ),
        (
            json!({"anyOf": [{"properties": {"a": {"type": "string"}}}]}),
            "",
        ),
    ] {
        let shaped = shape(Provider::OpenAiChat, "t", &schema);
        assert!(!shaped.strict, "{schema}");
        let off: Vec<&SchemaChange> = shaped
            .changes
            .iter()
            .filter(|c| c.kind == ChangeKind::StrictOff)
            .collect();
        assert!(
            off.iter().any(|c| c.pointer == pointer),
            "{schema}: {off:?}"
        );
    }
    // 1,001 enum values over two properties are too many, and so are 5,001 properties over
    // two objects.
    let half: Vec<Value> = (0..501).map(|i| json!(format!("v{i}"))).collect();
    let enums = json!({"properties": {"a": {"enum": half}, "b": {"enum": half}}});
    assert!(!shape(Provider::OpenAiChat, "t", &enums).strict);
    let many: serde_json::Map<String, Value> = (0..2_501)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let wide = json!({"properties": {"a": {"type": "object", "properties": many},
                                     "b": {"type": "object", "properties": many}}});
    assert!(!shape(Provider::OpenAiChat, "t", &wide).strict);
    // Eleven levels of objects are too many.
    let mut deep =
        json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]});
    for _ in 0..11 {
        deep = json!({"type": "object", "properties": {"x": deep}, "required": ["x"]});
    }
    assert!(!shape(Provider::OpenAiChat, "t", &deep).strict);
}

#[test]
fn gemini_gets_its_subset() {
    let shaped = shape(Provider::Gemini, "t", &hostile());
    let s = &shaped.schema;
    let text = s.to_string();
    for gone in [
        "$ref",
        "$defs",
        "additionalProperties",
        "oneOf",
        "allOf",
        "const",
        "uniqueItems",
        "exclusiveMaximum",
        "\"uri\"",
    ] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
    let p = &s["properties"];
    assert_eq!(
        p["level"],
        json!({"enum": ["1", "2", "3"], "type": "string"})
    );
    assert_eq!(p["fixed"], json!({"enum": ["7"], "type": "string"}));
    assert_eq!(p["when"]["format"], "date-time");
    assert_eq!(p["count"]["description"], "must be < 10");
    assert_eq!(p["pick"]["anyOf"].as_array().map(Vec::len), Some(2));
    assert_eq!(p["both"]["required"], json!(["a"]));
    assert!(p["both"]["properties"]["b"].is_object());
    assert_eq!(p["labels"], json!({"type": "object"}));
    assert_eq!(p["query"]["pattern"], "^[a-z]+$");
    for (pointer, kind) in [
        ("/properties/count/exclusiveMaximum", ChangeKind::Rewritten),
        (
            "/properties/labels/additionalProperties",
            ChangeKind::Dropped,
        ),
        ("/properties/pick/oneOf", ChangeKind::Rewritten),
        ("/properties/site/format", ChangeKind::Dropped),
        ("/properties/tags/uniqueItems", ChangeKind::Dropped),
        ("/properties/remote", ChangeKind::Permissive),
    ] {
        assert!(
            has(&shaped, pointer, kind),
            "{pointer}: {:?}",
            details(&shaped)
        );
    }
    // A nullable type stays a type list (google-genai reads it as `nullable`).
    let nullable = json!({"properties": {"n": {"type": ["string", "null"]}}});
    let shaped = shape(Provider::Gemini, "t", &nullable);
    assert_eq!(
        shaped.schema["properties"]["n"]["type"],
        json!(["string", "null"])
    );
    assert!(shaped.changes.is_empty());
}

#[test]
fn odd_roots_deep_schemas_and_blow_ups_are_bounded() {
    for provider in Provider::ALL {
        for (schema, reported) in [
            (Value::Null, false),
            (json!("text"), true),
            (json!({"type": "string"}), true),
            (json!({"type": ["object", "null"]}), true),
        ] {
            let shaped = shape(provider, "t", &schema);
            assert_eq!(shaped.schema["type"], "object", "{provider:?} {schema}");
            assert_eq!(
                shaped.changes.iter().any(|c| c.pointer.is_empty()),
                reported
            );
        }
        // 200 levels deep: cut at MAX_DEPTH, never a stack overflow.
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        let shaped = shape(provider, "t", &deep);
        assert!(
            shaped
                .changes
                .iter()
                .any(|c| c.detail.contains("deeper than"))
        );
        // A `$ref` used twice at every level: 2^40 expansions, bounded by MAX_NODES.
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..=40 {
            let r = format!("#/$defs/d{}", i - 1);
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {"a": {"$ref": r}, "b": {"$ref": r}}}),
            );
        }
        let bomb = json!({"$defs": defs, "properties": {"x": {"$ref": "#/$defs/d40"}}});
        let shaped = shape(provider, "t", &bomb);
        assert!(shaped.schema.to_string().len() < 2_000_000);
        assert!(
            shaped
                .changes
                .iter()
                .any(|c| c.detail.contains("subschemas: cut"))
        );
    }
}

/// What a model might write against each shaped form of `hostile()`, restored, must satisfy
/// the original schema.
#[test]
fn arguments_round_trip_to_the_original_schema() {
    let original = hostile();
    // The validator refuses remote references too: check against the rest.
    let mut checked = original.clone();
    checked["properties"]["remote"] = json!({});
    let validator = SchemaValidator::new(&checked).unwrap();
    // OpenAI strict style: every optional property present, null.
    let strict_like = json!({
        "query": "abc", "unit": null, "level": null, "when": null, "count": null,
        "home": {"city": "Paris"}, "pick": 3, "tags": null,
        "both": {"a": "x", "b": null}, "tree": {"value": 1, "children": [{"value": 2}]}
    });
    // Gemini style: enums as strings.
    let gemini_like = json!({"query": "abc", "level": "2", "fixed": "7", "unit": "celsius"});
    for written in [strict_like, gemini_like] {
        let Value::Object(arguments) = written.clone() else {
            unreachable!()
        };
        assert!(!validator.is_valid(&written), "{written}");
        let restored = Value::Object(restore(&original, arguments));
        assert_eq!(validator.validate(&restored), Ok(()), "{restored}");
    }
    let Value::Object(arguments) =
        json!({"query": "abc", "unit": null, "level": "2", "fixed": "7"})
    else {
        unreachable!()
    };
    assert_eq!(
        Value::Object(restore(&original, arguments)),
        json!({"query": "abc", "level": 2, "fixed": 7})
    );
}

#[test]
fn restore_leaves_valid_arguments_alone() {
    let schema = json!({
        "properties": {
            "note": {"type": ["string", "null"]},
            "any": {},
            "code": {"enum": ["1", 1]},
            "must": {"type": "string"},
            "map": {"type": "object", "additionalProperties": {"enum": [1, 2]}},
            "either": {"anyOf": [{"type": "null"}, {"type": "integer"}]}
        },
        "required": ["must"]
    });
    let args = json!({"note": null, "any": null, "code": "1", "must": null, "either": null, "map": {"k": 2}});
    let Value::Object(map) = args.clone() else {
        unreachable!()
    };
    assert_eq!(Value::Object(restore(&schema, map)), args);
    // A map's values are restored too, and a recursive `$ref` is followed without looping.
    let Value::Object(map) = json!({"must": "x", "map": {"k": "2"}}) else {
        unreachable!()
    };
    assert_eq!(restore(&schema, map)["map"], json!({"k": 2}));
    let looped = json!({"$ref": "#"});
    let Value::Object(map) = json!({"a": null}) else {
        unreachable!()
    };
    assert_eq!(Value::Object(restore(&looped, map)), json!({"a": null}));
}

#[test]
fn restore_is_bounded_on_a_branching_schema() {
    // Each level an allOf of two references to the level below: 2^40 paths.
    let mut defs = serde_json::Map::new();
    defs.insert(
        "d0".into(),
        json!({"properties": {"x": {"type": "string"}}}),
    );
    for i in 1..=40 {
        let r = format!("#/$defs/d{}", i - 1);
        defs.insert(
            format!("d{i}"),
            json!({"allOf": [{"$ref": r}, {"$ref": r}]}),
        );
    }
    let schema = json!({"$defs": defs, "allOf": [{"$ref": "#/$defs/d40"}]});
    let Value::Object(map) = json!({"x": null, "y": "1"}) else {
        unreachable!()
    };
    let started = std::time::Instant::now();
    let _ = restore(&schema, map);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    for provider in Provider::ALL {
        let started = std::time::Instant::now();
        let _ = shape(provider, "t", &schema);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}

#[test]
fn tuple_items_stay_a_list() {
    let schema = json!({"properties": {"pair": {"type": "array",
        "items": [{"type": "string"}, {"$ref": "#/$defs/n"}]}}, "$defs": {"n": {"type": "integer"}}});
    let shaped = shape(Provider::Anthropic, "t", &schema);
    assert_eq!(
        shaped.schema["properties"]["pair"]["items"],
        json!([{"type": "string"}, {"type": "integer"}])
    );
    assert!(shaped.changes.is_empty());
}

#[test]
fn an_optional_constant_is_strict_and_its_null_restored() {
    let schema = json!({"properties": {"k": {"const": 7}}});
    let shaped = shape(Provider::OpenAiChat, "t", &schema);
    assert!(shaped.strict, "{:?}", details(&shaped));
    assert_eq!(shaped.schema["properties"]["k"], json!({"enum": [7, null]}));
    let Value::Object(map) = json!({"k": null}) else {
        unreachable!()
    };
    assert!(restore(&schema, map).is_empty());
}

/// A small deterministic generator (no new dependency).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below.max(1)
    }
}

fn random_schema(rng: &mut Lcg, depth: usize) -> Value {
    let leaf = [
        json!({"type": "string", "format": "email", "minLength": 2}),
        json!({"type": "integer", "exclusiveMaximum": 3}),
        json!({"enum": [1, "a", null, true]}),
        json!({"const": {"x": 1}}),
        json!({"$ref": "#/$defs/a"}),
        json!({"$ref": "#/$defs/missing"}),
        json!({"$ref": "https://example.test/x"}),
        json!({"$ref": 5}),
        json!(true),
        json!(false),
        json!(3),
        json!({}),
        json!({"type": ["number", "null"]}),
        json!({"type": 7}),
    ];
    if depth == 0 || rng.next(4) == 0 {
        return leaf[rng.next(leaf.len())].clone();
    }
    let mut node = serde_json::Map::new();
    for _ in 0..rng.next(4) {
        match rng.next(8) {
            0 => {
                let props: serde_json::Map<String, Value> = (0..rng.next(4))
                    .map(|i| (format!("p{i}/~"), random_schema(rng, depth - 1)))
                    .collect();
                node.insert("properties".into(), Value::Object(props));
                node.insert("required".into(), json!(["p0/~", "nope"]));
            }
            1 => {
                node.insert("items".into(), random_schema(rng, depth - 1));
            }
            2 => {
                let branches = (0..rng.next(3) + 1)
                    .map(|_| random_schema(rng, depth - 1))
                    .collect();
                let key = ["anyOf", "oneOf", "allOf"][rng.next(3)];
                node.insert(key.into(), Value::Array(branches));
            }
            3 => {
                node.insert("additionalProperties".into(), random_schema(rng, depth - 1));
            }
            4 => {
                node.insert(
                    "type".into(),
                    json!(["object", "array", "null"][rng.next(3)]),
                );
            }
            5 => {
                node.insert("not".into(), random_schema(rng, depth - 1));
            }
            6 => {
                node.insert("items".into(), json!([random_schema(rng, depth - 1)]));
            }
            _ => {
                node.insert("$ref".into(), json!("#"));
            }
        }
    }
    Value::Object(node)
}

/// Every object of a strict schema is closed with every property required.
fn assert_strict(schema: &Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                assert_eq!(map.get("additionalProperties"), Some(&json!(false)));
                let required: Vec<&str> = map["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
                names.sort_unstable();
                let mut sorted = required.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, names);
            }
            for key in ["allOf", "oneOf", "not", "$ref", "$defs"] {
                assert!(!map.contains_key(key), "{key} in a strict schema");
            }
            map.values().for_each(assert_strict);
        }
        Value::Array(items) => items.iter().for_each(assert_strict),
        _ => {}
    }
}

#[test]
fn generated_schemas_never_break_shaping_or_restore() {
    let mut rng = Lcg(0x5eed);
    for _ in 0..400 {
        let mut schema = random_schema(&mut rng, 5);
        if let Value::Object(map) = &mut schema {
            map.insert("$defs".into(), json!({"a": random_schema(&mut rng, 3)}));
        }
        for provider in Provider::ALL {
            let shaped = shape(provider, "t", &schema);
            assert_eq!(shaped.schema["type"], "object", "{schema}");
            if shaped.strict {
                assert_strict(&shaped.schema);
            }
            if provider == Provider::Gemini {
                let text = shaped.schema.to_string();
                for key in ["\"$ref\"", "\"oneOf\"", "\"allOf\"", "\"not\"", "\"const\""] {
                    assert!(!text.contains(key), "{key} in {text}");
                }
            }
        }
        let Value::Object(args) = json!({"p0/~": null, "p1/~": "1", "p2/~": [null, {"x": null}]})
        else {
            unreachable!()
        };
        let _ = restore(&schema, args);
    }
}

#[test]
fn a_root_ref_keeps_its_target() {
    let defs = json!({"args": {"type": "object", "properties": {"a": {"type": "string"}}},
                      "s": {"type": "string"}});
    let to_args = json!({"$ref": "#/$defs/args", "$defs": defs});
    for provider in Provider::ALL {
        let shaped = shape(provider, "t", &to_args);
        let want = if shaped.strict {
            json!(["string", "null"])
        } else {
            json!("string")
        };
        assert_eq!(
            shaped.schema["properties"]["a"]["type"], want,
            "{provider:?}"
        );
        assert!(
            shaped.changes.is_empty(),
            "{provider:?}: {:?}",
            details(&shaped)
        );
        let to_string = json!({"$ref": "#/$defs/s", "$defs": defs});
        let shaped = shape(provider, "t", &to_string);
        assert_eq!(shaped.schema["type"], "object");
        assert!(has(&shaped, "", ChangeKind::Permissive), "{provider:?}");
    }
}

#[test]
fn a_long_chain_of_refs_is_cut_at_the_depth_bound_not_the_stack() {
    // a0 -> a1 -> ... -> a19999: each `$ref` followed is one level deeper.
    let mut defs = serde_json::Map::new();
    for i in 0..20_000 {
        defs.insert(
            format!("a{i}"),
            json!({"$ref": format!("#/$defs/a{}", i + 1)}),
        );
    }
    defs.insert("a20000".into(), json!({"type": "string"}));
    let schema = json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/a0"}},
        "$defs": defs
    });
    for provider in Provider::ALL {
        let shaped = shape(provider, "t", &schema);
        assert!(
            shaped.changes.iter().any(|c| c.detail.contains("levels")),
            "{provider:?}: cut at the depth bound"
        );
    }
}
