//! Wire behaviour over newline-delimited JSON: malformed frames, ids, notifications, line
//! limits and framing, each checked as raw input against raw output.

use barrel_mcp::peer::PeerConfig;
use barrel_mcp::transport::{MessageReader, StdioTransport, Transport};
use barrel_mcp::types::Message;
use serde_json::{Value, json};

use crate::support::{assert_subset, serve_lines, within};

/// Sends each line and checks the answer, or that there is none: for "no answer" a sentinel
/// request follows and its response must be the next line.
#[tokio::test]
async fn raw_json_table() {
    let cases: &[(&str, Option<Value>)] = &[
        (
            r#"{"jsonrpc":"2.0","id":1,"#,
            Some(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700}})),
        ),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"echo"}]"#,
            Some(json!({"id":null,"error":{"code":-32600}})),
        ),
        (
            r#""just a string""#,
            Some(json!({"id":null,"error":{"code":-32600}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"echo"}"#,
            Some(json!({"id":null,"error":{"code":-32600}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}"#,
            Some(json!({"id":null,"error":{"code":-32600}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"echo"}"#,
            Some(json!({"id":null,"error":{"code":-32600}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"echo"}"#,
            Some(json!({"id":null,"error":{"code":-32600}})),
        ),
        (
            r#"{"id":2,"method":"echo"}"#,
            Some(json!({"id":2,"error":{"code":-32600}})),
        ),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"echo"}"#,
            Some(json!({"id":3,"error":{"code":-32600}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such"}"#,
            Some(json!({"id":4,"error":{"code":-32601}})),
        ),
        // Params by position (or any params that is not an object) are invalid params in MCP:
        // -32602, before the method is even looked at.
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"echo","params":[1,2]}"#,
            Some(json!({"id":5,"error":{"code":-32602}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"abc","method":"echo","params":{"x":1}}"#,
            Some(json!({"jsonrpc":"2.0","id":"abc","result":{"x":1}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"echo","params":{"y":[true]}}"#,
            Some(json!({"id":7,"result":{"y":[true]}})),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"7","method":"echo","params":null}"#,
            Some(json!({"id":"7","result":null})),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#,
            None,
        ),
        (r#"{"method":"notifications/initialized"}"#, None),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":99,"result":{}}"#, None),
        (
            r#"{"jsonrpc":"2.0","id":98,"error":{"code":-1,"message":"x"}}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":97,"error":"not an object"}"#, None),
        (r#"{"id":96,"result":{}}"#, None),
        ("", None),
        ("   \r", None),
    ];
    let (mut raw, _served) = serve_lines(PeerConfig::default(), None);
    for (n, (input, expected)) in cases.iter().enumerate() {
        raw.send(input).await;
        let sentinel = format!("sentinel-{n}");
        match expected {
            Some(expected) => assert_subset(&raw.recv().await, expected, input),
            None => {
                let line = json!({"jsonrpc":"2.0","id":sentinel,"method":"echo"});
                raw.send(&line.to_string()).await;
                assert_subset(
                    &raw.recv().await,
                    &json!({"id":sentinel,"result":null}),
                    input,
                );
            }
        }
    }
}

#[tokio::test]
async fn oversized_line_is_refused_then_serving_goes_on() {
    let (mut raw, _served) = serve_lines(PeerConfig::default(), Some(256));
    let padding = "x".repeat(20_000);
    let big = json!({"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":padding}});
    raw.send(&big.to_string()).await;
    let answer = raw.recv().await;
    assert_subset(
        &answer,
        &json!({"id":null,"error":{"code":-32600}}),
        "oversized",
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("too large"), "{message}");
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"echo","params":{"ok":1}}"#)
        .await;
    assert_subset(
        &raw.recv().await,
        &json!({"id":2,"result":{"ok":1}}),
        "after",
    );
}

#[tokio::test]
async fn invalid_utf8_is_a_parse_error_then_serving_goes_on() {
    let (mut raw, _served) = serve_lines(PeerConfig::default(), None);
    raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n")
        .await;
    assert_subset(
        &raw.recv().await,
        &json!({"id":null,"error":{"code":-32700}}),
        "utf8",
    );
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"echo"}"#)
        .await;
    assert_subset(&raw.recv().await, &json!({"id":2,"result":null}), "after");
}

#[tokio::test]
async fn stdio_framing_edges() {
    let input =
        "\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}";
    let (reader, _writer) = StdioTransport::new(input.as_bytes(), Vec::new()).split();
    let mut reader = reader;
    for method in ["a", "b"] {
        let frame = within(reader.recv()).await.expect("recv").expect("a frame");
        let expected = Message::notification(method, None);
        assert_eq!(frame.expect("decodes"), expected);
    }
    // A last line without a newline was a frame; then the input ends cleanly, and stays ended.
    assert!(within(reader.recv()).await.expect("recv").is_none());
    assert!(within(reader.recv()).await.expect("recv").is_none());
}

#[tokio::test]
async fn responses_are_one_line_each() {
    let (mut raw, _served) = serve_lines(PeerConfig::default(), None);
    let line = json!({"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"a\nb"}});
    raw.send(&line.to_string()).await;
    assert_subset(
        &raw.recv().await,
        &json!({"id":1,"result":{"text":"a\nb"}}),
        "newline",
    );
}
