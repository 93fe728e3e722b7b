//! Tests of how `tools/call` params are read: the usual shape taken as it is, every other shape
//! decoded as the typed params decode.

use serde_json::json;

use super::*;

/// Reads `raw` both ways and checks each gives what a full decode gives.
fn read_both_ways(raw: &Value) -> Result<CallToolParams, ErrorObject> {
    let decoded: Result<CallToolParams, ErrorObject> = decode_ref(raw);
    let mut kept = raw.clone();
    let copied = call_params(&mut kept, true);
    assert_eq!(&kept, raw, "a kept request keeps its params");
    let mut taken = raw.clone();
    let moved = call_params(&mut taken, false);
    assert_eq!(copied, decoded);
    assert_eq!(moved, decoded);
    decoded
}

#[test]
fn usual_params_read_as_a_decode_would() {
    let params = read_both_ways(&json!({"name": "echo", "arguments": {"a": [1, {"b": null}]}}))
        .expect("usual params");
    assert_eq!(params.name, "echo");
    assert_eq!(
        params.arguments,
        Some(
            json!({"a": [1, {"b": null}]})
                .as_object()
                .cloned()
                .unwrap_or_default()
        )
    );
    for raw in [
        json!({"name": "x"}),
        json!({"name": "x", "arguments": null}),
    ] {
        let params = read_both_ways(&raw).expect("no arguments");
        assert_eq!((params.name.as_str(), params.arguments), ("x", None));
    }
    let mut raw = json!({"name": "x", "arguments": {"k": 1}});
    call_params(&mut raw, false).expect("usual params");
    assert_eq!(
        raw,
        json!({}),
        "moved out of a request that needs them no more"
    );
}

#[test]
fn other_shapes_are_decoded() {
    let task = read_both_ways(&json!({"name": "x", "task": {"ttl": 5}})).expect("a task");
    assert_eq!(task.task, Some(json!({"ttl": 5})));
    let extra = read_both_ways(&json!({"name": "x", "other": 1})).expect("unknown members");
    assert_eq!(extra.name, "x");
    for bad in [
        json!({"arguments": {}}),
        json!({"name": 1}),
        json!({"name": "x", "arguments": [1]}),
        json!({"name": "x", "arguments": "text"}),
        json!([1]),
        json!("x"),
    ] {
        let error = read_both_ways(&bad).expect_err("invalid params");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{bad}");
    }
}
