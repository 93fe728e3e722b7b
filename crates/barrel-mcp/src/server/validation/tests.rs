//! Tests of schema compilation, validation messages and the refusal of external `$ref`s.

use serde_json::json;

use super::*;

fn validator(schema: Value) -> SchemaValidator {
    SchemaValidator::new(&schema).expect("schema compiles")
}

#[test]
fn accepts_valid_and_reports_invalid_instances() {
    let v = validator(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a"],
    }));
    assert_eq!(v.validate(&json!({"a": 1, "b": "x"})), Ok(()));
    assert!(v.is_valid(&json!({"a": 1})));
    assert_eq!(
        v.validate(&json!({"a": "x"})),
        Err(vec![r#"/a: "x" is not of type "integer""#.to_owned()])
    );
    let errors = v.validate(&json!({"b": 1})).expect_err("two violations");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("/: ") && e.contains("\"a\" is a required property"))
    );
    assert!(errors.iter().any(|e| e.starts_with("/b: ")));
    let root = v.validate(&json!([1])).expect_err("not an object");
    assert_eq!(root, [r#"/: [1] is not of type "object""#]);
}

#[test]
fn nested_errors_name_their_pointer() {
    let v = validator(json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {
            "type": "object",
            "properties": {"n": {"type": "number", "minimum": 0}},
        }}},
    }));
    let errors = v
        .validate(&json!({"items": [{"n": 1}, {"n": -1}, {"n": "z"}]}))
        .expect_err("invalid");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].starts_with("/items/1/n: "), "{errors:?}");
    assert!(errors[1].starts_with("/items/2/n: "), "{errors:?}");
}

#[test]
fn caps_and_shortens_messages() {
    let v = validator(json!({"type": "array", "items": {"type": "string"}}));
    let instance = Value::Array((0..50).map(Value::from).collect());
    let errors = v.validate(&instance).expect_err("invalid");
    assert_eq!(errors.len(), MAX_ERRORS);
    let big = validator(json!({"type": "string"}));
    let errors = big
        .validate(&json!(["x".repeat(10_000)]))
        .expect_err("invalid");
    assert_eq!(errors[0].chars().count(), MAX_MESSAGE_CHARS + 1);
    assert!(errors[0].ends_with('…'));
}

#[test]
fn defaults_to_2020_12() {
    // `prefixItems` is a 2020-12 keyword; older drafts would ignore it.
    let v = validator(json!({"prefixItems": [{"type": "integer"}]}));
    assert!(!v.is_valid(&json!(["x"])));
    assert!(format!("{v:?}").contains("Draft202012"));
    let draft7 = validator(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "prefixItems": [{"type": "integer"}],
    }));
    assert!(draft7.is_valid(&json!(["x"])));
}

#[test]
fn local_refs_resolve() {
    let v = validator(json!({
        "type": "object",
        "$defs": {"pos": {"type": "integer", "minimum": 1}},
        "properties": {"n": {"$ref": "#/$defs/pos"}},
    }));
    assert!(v.is_valid(&json!({"n": 3})));
    assert!(!v.is_valid(&json!({"n": 0})));
}

#[test]
fn external_refs_fail_to_compile_without_fetching() {
    for target in [
        "http://127.0.0.1:9/schema.json",
        "https://example.com/schema.json#/defs/x",
        "file:///etc/passwd",
        "other.json",
    ] {
        let schema = json!({"type": "object", "properties": {"a": {"$ref": target}}});
        match SchemaValidator::new(&schema) {
            Err(SchemaError::Invalid(message)) => assert!(!message.is_empty()),
            other => panic!("{target}: {other:?}"),
        }
        assert!(matches!(
            check_input_schema(&schema),
            Err(SchemaError::Invalid(_))
        ));
    }
}

#[test]
fn input_schemas_must_be_objects_of_type_object() {
    assert_eq!(check_input_schema(&json!({"type": "object"})), Ok(()));
    assert_eq!(
        check_input_schema(&json!({"type": "object", "properties": {"a": {"type": "string"}}})),
        Ok(())
    );
    assert_eq!(
        check_input_schema(&json!(true)),
        Err(SchemaError::NotAnObject)
    );
    assert_eq!(
        check_input_schema(&json!("object")),
        Err(SchemaError::NotAnObject)
    );
    assert_eq!(
        check_input_schema(&json!({})),
        Err(SchemaError::NotTypeObject)
    );
    assert_eq!(
        check_input_schema(&json!({"type": "string"})),
        Err(SchemaError::NotTypeObject)
    );
    assert_eq!(
        check_input_schema(&json!({"type": ["object", "null"]})),
        Err(SchemaError::NotTypeObject)
    );
    assert!(matches!(
        check_input_schema(&json!({"type": "object", "minProperties": "two"})),
        Err(SchemaError::Invalid(_))
    ));
    assert!(matches!(
        SchemaValidator::new(&json!({"type": "object", "properties": {"a": {"pattern": "("}}})),
        Err(SchemaError::Invalid(_))
    ));
}

#[test]
fn a_huge_offending_value_gives_a_short_message() {
    let validator = validator(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    let huge = "x".repeat(4 * 1024 * 1024);
    let problems = validator
        .validate(&json!({"n": huge}))
        .expect_err("a string is not an integer");
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with("/n: \"xxx"),
        "{}",
        &problems[0][..20]
    );
    assert!(problems[0].chars().count() <= MAX_MESSAGE_CHARS + 1);
    assert!(problems[0].ends_with('…'));
}
