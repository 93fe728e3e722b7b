//! `jsonrpc::decode` over raw JSON: ids, params, message kinds and the error each bad frame gets.

use barrel_mcp_types::jsonrpc::{DecodeError, Message, decode};
use barrel_mcp_types::{ErrorCode, Payload, RequestId, Response};
use serde_json::{Value, json};

/// What a frame must decode to.
#[derive(Debug)]
enum Expect {
    /// A request with this id and params.
    Request(RequestId, Option<Value>),
    /// A notification with these params.
    Notification(Option<Value>),
    /// A successful response with this id.
    Result(RequestId),
    /// An error response with this id and code.
    ErrorResponse(Option<RequestId>, i32),
    /// A decode error with this code, answered to this id (`Some`) or not answered (`None`).
    Reject(i32, Option<Option<RequestId>>),
}

fn n(id: i64) -> RequestId {
    RequestId::Number(id)
}

fn s(id: &str) -> RequestId {
    RequestId::from(id)
}

fn check(text: &str, expect: Expect) {
    let got = decode(text);
    match (&got, &expect) {
        (Ok(Message::Request(r)), Expect::Request(id, params)) => {
            assert_eq!((&r.id, &r.params), (id, params), "{text}");
            assert_eq!(r.method, "m", "{text}");
        }
        (Ok(Message::Notification(n)), Expect::Notification(params)) => {
            assert_eq!(&n.params, params, "{text}");
        }
        (Ok(Message::Response(r)), Expect::Result(id)) => {
            assert_eq!(r.id.as_ref(), Some(id), "{text}");
            assert!(r.outcome.is_ok(), "{text}");
        }
        (Ok(Message::Response(r)), Expect::ErrorResponse(id, code)) => {
            assert_eq!(&r.id, id, "{text}");
            assert_eq!(
                r.outcome.as_ref().unwrap_err().code,
                ErrorCode(*code),
                "{text}"
            );
        }
        (Err(e), Expect::Reject(code, reply)) => check_reject(text, e, *code, reply),
        _ => panic!("{text}: expected {expect:?}, got {got:?}"),
    }
}

fn check_reject(text: &str, e: &DecodeError, code: i32, reply: &Option<Option<RequestId>>) {
    assert_eq!(e.error.code, ErrorCode(code), "{text}");
    match (e.to_response(), reply) {
        (None, None) => {}
        (Some(Message::Response(r)), Some(id)) => {
            assert_eq!(&r.id, id, "{text}");
            let wire: Value = serde_json::from_str(&Message::Response(r).to_json()).unwrap();
            assert_eq!(
                wire["id"],
                id.as_ref().map_or(Value::Null, RequestId::to_value)
            );
            assert_eq!(wire["error"]["code"], code);
        }
        (got, _) => panic!("{text}: reply {got:?}, expected {reply:?}"),
    }
}

const PARSE: i32 = -32700;
const INVALID: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

#[test]
fn ids() {
    use Expect::*;
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
        Request(n(1), None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":-7,"method":"m"}"#,
        Request(n(-7), None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"1","method":"m"}"#,
        Request(s("1"), None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":"","method":"m"}"#,
        Request(s(""), None),
    );
    // `1` and `"1"` are different ids.
    assert_ne!(n(1), s("1"));
    check(
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
    check(
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
        Reject(INVALID, Some(None)),
    );
}

#[test]
fn frames_that_are_not_messages() {
    use Expect::*;
    check("not json", Reject(PARSE, Some(None)));
    check("", Reject(PARSE, Some(None)));
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m""#,
        Reject(PARSE, Some(None)),
    );
    check(
        r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        Reject(INVALID, Some(None)),
    );
    check("[]", Reject(INVALID, Some(None)));
    check("42", Reject(INVALID, Some(None)));
    check(r#""text""#, Reject(INVALID, Some(None)));
    check("null", Reject(INVALID, Some(None)));
    check("{}", Reject(INVALID, None));
}

#[test]
fn jsonrpc_member() {
    use Expect::*;
    check(
        r#"{"id":3,"method":"m"}"#,
        Reject(INVALID, Some(Some(n(3)))),
    );
    check(
        r#"{"jsonrpc":"1.0","id":3,"method":"m"}"#,
        Reject(INVALID, Some(Some(n(3)))),
    );
    check(
        r#"{"jsonrpc":2.0,"id":"a","method":"m"}"#,
        Reject(INVALID, Some(Some(s("a")))),
    );
    // A notification or a response is never answered, even when malformed.
    check(r#"{"method":"m"}"#, Reject(INVALID, None));
    check(r#"{"id":3,"result":{}}"#, Reject(INVALID, None));
}

#[test]
fn params() {
    use Expect::*;
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
        Request(n(1), None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
        Request(n(1), None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#,
        Request(n(1), Some(json!({}))),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1]}}"#,
        Request(n(1), Some(json!({"a": [1]}))),
    );
    // Params that are not an object: invalid params, answered when the frame has an id.
    for params in ["[1]", r#""x""#, "7", "true"] {
        check(
            &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{params}}}"#),
            Reject(INVALID_PARAMS, Some(Some(n(1)))),
        );
    }
    check(
        r#"{"jsonrpc":"2.0","method":"m","params":[1]}"#,
        Reject(INVALID_PARAMS, None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
        Reject(INVALID, Some(Some(n(1)))),
    );
}

#[test]
fn requests_and_notifications() {
    use Expect::*;
    check(r#"{"jsonrpc":"2.0","method":"m"}"#, Notification(None));
    check(
        r#"{"jsonrpc":"2.0","method":"m","params":null}"#,
        Notification(None),
    );
    check(
        r#"{"jsonrpc":"2.0","method":"m","params":{"x":1}}"#,
        Notification(Some(json!({"x": 1}))),
    );
    check(
        r#"{"jsonrpc":"2.0","id":0,"method":"m","extra":true}"#,
        Request(n(0), None),
    );
}

#[test]
fn responses() {
    use Expect::*;
    check(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Result(n(1)));
    check(
        r#"{"jsonrpc":"2.0","id":"r","result":null}"#,
        Result(s("r")),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
        ErrorResponse(Some(n(1)), -32601),
    );
    check(
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}"#,
        ErrorResponse(None, -32700),
    );
    // The answer to an unreadable request carries `"id": null`.
    check(
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
        ErrorResponse(None, -32700),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m","data":{"x":1}}}"#,
        ErrorResponse(Some(n(1)), -32603),
    );
    check(
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        Reject(INVALID, None),
    );
    check(r#"{"jsonrpc":"2.0","result":{}}"#, Reject(INVALID, None));
    check(
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        Reject(INVALID, None),
    );
    check(
        r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
        Reject(INVALID, None),
    );
    check(r#"{"jsonrpc":"2.0","id":1}"#, Reject(INVALID, None));
    check(
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#,
        Reject(INVALID, None),
    );
}

#[test]
fn messages_serialize_back() {
    for text in [
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","id":"x","method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
    ] {
        let message = decode(text).unwrap();
        let back: Value = serde_json::from_str(&message.to_json()).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap(), "{text}");
    }
}

#[test]
fn a_result_written_as_text_is_sent_as_it_is() {
    let result = json!({ "content": [{ "type": "text", "text": "h\u{e9}\"llo" }], "n": 1.5 });
    let text = Payload::text_of(&result).unwrap();
    let as_text = Message::Response(Response::result(n(7), text.clone()));
    let as_value = Message::Response(Response::result(n(7), result.clone()));
    // Byte for byte what the value form writes.
    assert_eq!(as_text.to_json(), as_value.to_json());
    assert_eq!(
        as_text, as_value,
        "the two forms compare as the JSON they hold"
    );
    // Read back off the wire, a result is always a value.
    let Ok(Message::Response(read)) = decode(&as_text.to_json()) else {
        panic!("not a response");
    };
    let read = read.outcome.unwrap();
    assert_eq!(read.as_value(), Some(&result));
    assert_eq!(text.as_value(), None);
    assert_eq!(text.clone().into_value().unwrap(), result);
    #[derive(serde::Deserialize)]
    struct Counted {
        n: f64,
    }
    assert_eq!(text.decode::<Counted>().unwrap().n, 1.5);
    assert_ne!(
        Payload::text_of(&json!({ "n": 2 })).unwrap(),
        Payload::from(json!({ "n": 1 }))
    );
    // Compact: one line of a newline-delimited stream, whatever the strings hold.
    let Payload::Text(lines) = Payload::text_of(&json!({ "a": "x\ny", "b": [1, 2] })).unwrap()
    else {
        panic!("text_of writes text");
    };
    assert_eq!(lines.get(), r#"{"a":"x\ny","b":[1,2]}"#);
}
