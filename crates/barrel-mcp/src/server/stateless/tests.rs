//! `finish_text` against `finish`: the same JSON, whichever form the result took.

use serde_json::{Value, json};

use super::*;

fn server() -> Server {
    Server::builder()
        .name("finisher", "1.2.3")
        .build()
        .expect("a server")
}

/// `result` finished as text and as a value: the same JSON. `borrowed`: whether the text
/// path kept it text (else it fell back to a value).
fn both(result: &Value, borrowed: bool) -> (Value, Value) {
    let server = server();
    let text = serde_json::to_string(result).expect("text");
    let finished = finish_text(&text, &server).expect("finished");
    assert_eq!(matches!(finished, Payload::Text(_)), borrowed, "{result}");
    let from_text = finished.into_value().expect("JSON");
    (from_text, finish(result.clone(), &server))
}

#[test]
fn text_is_finished_as_a_value_is() {
    let info = json!({ "name": "finisher", "version": "1.2.3" });
    // No `_meta`, no `resultType`: both are added.
    let (text, value) = both(
        &json!({ "content": [{ "type": "text", "text": "hi" }] }),
        true,
    );
    assert_eq!(text, value);
    assert_eq!(text["resultType"], "complete");
    assert_eq!(text["_meta"][SERVER_INFO_KEY], info);
    // A `_meta` of the handler's keeps its keys; a `resultType` already set is kept.
    let (text, value) = both(
        &json!({
            "resultType": "input_required",
            "_meta": { "app/trace": [1, 2], SERVER_INFO_KEY: "stale" },
        }),
        true,
    );
    assert_eq!(text, value);
    assert_eq!(text["resultType"], "input_required");
    assert_eq!(text["_meta"]["app/trace"], json!([1, 2]));
    assert_eq!(text["_meta"][SERVER_INFO_KEY], info);
    // Names with an escape cannot be borrowed: finished through a value, the same.
    let (text, value) = both(&json!({ "a\"b": 1, "_meta": { "k\\n": true } }), false);
    assert_eq!(text, value);
    // A name with an escape: through a value; many members: the map path. The same.
    let (text, value) = both(&json!({ "a\"b": 1, "c": 2 }), false);
    assert_eq!(text, value);
    let many: serde_json::Map<String, Value> =
        (0..40).map(|i| (format!("m{i}"), json!(i))).collect();
    let (text, value) = both(&Value::Object(many), true);
    assert_eq!(text, value);
    // A `_meta` that is not an object is left as `finish` leaves it.
    let (text, value) = both(&json!({ "_meta": 5 }), false);
    assert_eq!(text, value);
}

#[test]
fn a_member_named_twice_keeps_its_last_value_as_a_parsed_value_does() {
    let server = server();
    let Payload::Text(text) = finish_text(r#"{"a":1,"b":2,"a":3}"#, &server).expect("finished")
    else {
        panic!("finished as text");
    };
    // Through the map path: each name once, the last value, in name order.
    assert_eq!(
        text.get(),
        r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"finisher","version":"1.2.3"}},"a":3,"b":2,"resultType":"complete"}"#
    );
}

#[test]
fn a_result_of_many_members_is_finished_in_name_order() {
    let server = server();
    let object = |n: usize| {
        let members: Vec<String> = (0..n).map(|i| format!(r#""m{i:02}":{i}"#)).collect();
        format!("{{{}}}", members.join(","))
    };
    let text_of = |n: usize| match finish_text(&object(n), &server).expect("finished") {
        Payload::Text(text) => text.get().to_owned(),
        Payload::Value(value) => panic!("finished as a value: {value}"),
    };
    // Up to 32 members: appended after them; past it, the map path, `_meta` first.
    assert!(text_of(32).starts_with(r#"{"m00":0,"#));
    assert!(text_of(32).ends_with(r#""resultType":"complete"}"#));
    assert!(text_of(33).starts_with(r#"{"_meta":"#));
    assert!(text_of(40).starts_with(r#"{"_meta":"#));
}

#[test]
fn members_come_out_compact_appended_or_in_name_order() {
    let server = server();
    let text_of = |result: &str| match finish_text(result, &server).expect("finished") {
        Payload::Text(text) => text.get().to_owned(),
        Payload::Value(value) => panic!("finished as a value: {value}"),
    };
    // Neither member of its own: the members as written, then `_meta` and `resultType`.
    assert_eq!(
        text_of(r#"{ "z": 1, "content": [ ] , "a": {"b" : 2} }"#),
        r#"{"z":1,"content":[ ],"a":{"b" : 2},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"finisher","version":"1.2.3"}},"resultType":"complete"}"#
    );
    assert_eq!(
        text_of("{}"),
        r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"finisher","version":"1.2.3"}},"resultType":"complete"}"#
    );
    // Either of its own: merged, in name order.
    assert_eq!(
        text_of(r#"{"z":1,"_meta":{"k":true}}"#),
        r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"finisher","version":"1.2.3"},"k":true},"resultType":"complete","z":1}"#
    );
    assert_eq!(
        text_of(r#"{"z":1,"resultType":"input_required"}"#),
        r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"finisher","version":"1.2.3"}},"resultType":"input_required","z":1}"#
    );
}
