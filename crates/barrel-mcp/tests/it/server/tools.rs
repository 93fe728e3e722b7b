//! Tools in a session: typed calls, validation, tool errors, progress, cancellation, logging,
//! `_meta`, and asking the client for input (sampling, elicitation, roots).

use barrel_mcp::peer::RequestOptions;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{connect, fixture, text_of};
use crate::support::within;

async fn session() -> (super::TestClient, std::sync::Arc<fixture::Probe>) {
    let (server, probe) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    (client, probe)
}

async fn call(client: &super::TestClient, name: &str, arguments: Value) -> Value {
    client
        .request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
        .unwrap_or_else(|e| panic!("{name} failed: {e}"))
}

#[tokio::test]
async fn typed_tools_answer_with_text_and_structured_content() {
    let (client, _) = session().await;
    assert_eq!(
        text_of(&call(&client, "echo", json!({ "message": "hi" })).await),
        "hi"
    );
    let sum = call(&client, "add", json!({ "a": 2, "b": 40 })).await;
    assert_eq!(sum["structuredContent"], json!({ "sum": 42 }));
    assert_eq!(text_of(&sum), r#"{"sum":42}"#);
    assert!(sum.get("isError").is_none());
}

#[tokio::test]
async fn invalid_arguments_are_tool_errors_naming_the_problem() {
    let (client, _) = session().await;
    let result = call(&client, "add", json!({ "a": "two", "b": 1 })).await;
    assert_eq!(result["isError"], true);
    let text = text_of(&result);
    assert!(text.contains("/a"), "names the field: {text}");
    let result = call(&client, "echo", json!({})).await;
    assert_eq!(result["isError"], true);
    assert!(text_of(&result).contains("message"), "{}", text_of(&result));
}

#[tokio::test]
async fn tool_failures_stay_in_their_plane() {
    let (client, _) = session().await;
    let failed = call(&client, "fail", json!({})).await;
    assert_eq!(failed["isError"], true);
    assert_eq!(text_of(&failed), "this tool always fails");
    let errored = call(&client, "boom", json!({})).await;
    assert_eq!(errored["isError"], true);
    // A Rust error's text stays in the server log; the handler's own words pass.
    let text = text_of(&errored);
    assert!(
        !text.contains("/srv/secret") && !text.contains("boom"),
        "{text}"
    );
    assert_eq!(text, "the tool failed (the server's log has the details)");
    let refused = call(&client, "refuse", json!({})).await;
    assert_eq!(refused["isError"], true);
    assert_eq!(text_of(&refused), "not today");
    let unknown = client
        .request("tools/call", json!({ "name": "nope", "arguments": {} }))
        .await
        .expect_err("unknown tool");
    assert_eq!(unknown.code.0, -32602);
    let bad_output = client
        .request(
            "tools/call",
            json!({ "name": "bad_output", "arguments": {} }),
        )
        .await
        .expect_err("output fails its schema");
    assert_eq!(bad_output.code.0, -32603);
    assert!(
        bad_output.message.contains("outputSchema"),
        "{}",
        bad_output.message
    );
}

#[tokio::test]
async fn meta_flows_in_and_out() {
    let (client, _) = session().await;
    let result = client
        .request(
            "tools/call",
            json!({ "name": "fancy", "arguments": {}, "_meta": { "example.com/echo": "ping" } }),
        )
        .await
        .expect("fancy");
    assert_eq!(result["_meta"]["example.com/echoed"], "ping");
    let listed = client.request("tools/list", json!({})).await.expect("list");
    let fancy = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "fancy")
        .cloned()
        .expect("fancy");
    assert_eq!(fancy["_meta"]["example.com/kind"], "fancy");
    assert_eq!(fancy["annotations"]["readOnlyHint"], true);
}

/// `_meta`, `requestState` and `inputResponses` reach the handler's context moved out of the
/// params: of the wrong type they are still invalid params (-32602), as for any field, on
/// `tools/call`, `resources/read` and `prompts/get`; `null` is absent.
#[tokio::test]
async fn round_fields_of_the_wrong_type_are_invalid_params() {
    let (client, _) = session().await;
    let requests = [
        (
            "tools/call",
            json!({ "name": "echo", "arguments": { "message": "m" } }),
        ),
        ("resources/read", json!({ "uri": "test://readme" })),
        (
            "prompts/get",
            json!({ "name": "greet", "arguments": { "name": "n" } }),
        ),
    ];
    for (method, params) in requests {
        for (field, bad) in [
            ("_meta", json!(5)),
            ("_meta", json!("text")),
            ("requestState", json!(7)),
            ("inputResponses", json!("x")),
        ] {
            let mut sent = params.clone();
            sent[field] = bad.clone();
            let error = client.request(method, sent).await.expect_err("refused");
            assert_eq!(
                error.code,
                barrel_mcp_types::ErrorCode::INVALID_PARAMS,
                "{method} {field}: {bad} -> {error:?}"
            );
            assert!(error.message.starts_with("invalid params"), "{error:?}");
        }
        let mut with_nulls = params.clone();
        with_nulls["_meta"] = Value::Null;
        with_nulls["requestState"] = Value::Null;
        client
            .request(method, with_nulls)
            .await
            .unwrap_or_else(|e| panic!("{method} with null fields: {e:?}"));
    }
}

#[tokio::test]
async fn progress_arrives_in_order_before_the_result() {
    let (client, _) = session().await;
    let (tx, mut rx) = mpsc::channel(16);
    let options = RequestOptions {
        progress: Some(tx),
        ..RequestOptions::default()
    };
    let params = json!({ "name": "countdown", "arguments": { "steps": 5 } });
    let result = within(client.peer.request("tools/call", Some(params), options))
        .await
        .expect("countdown");
    assert_eq!(text_of(&result), "done");
    let mut seen = Vec::new();
    while let Ok(progress) = rx.try_recv() {
        seen.push(progress["progress"].as_f64().expect("progress number"));
        assert_eq!(progress["total"], 5.0);
        assert_eq!(progress["message"], "working");
    }
    assert_eq!(
        seen,
        [1.0, 2.0, 3.0, 4.0, 5.0],
        "all progress before the result, in order"
    );
}

#[tokio::test]
async fn progress_tokens_keep_their_json_type() {
    let (client, _) = session().await;
    for token in [json!("tok-1"), json!(17)] {
        let params = json!({ "name": "countdown", "arguments": { "steps": 1 }, "_meta": { "progressToken": token } });
        client
            .request("tools/call", params)
            .await
            .expect("countdown");
        let note = client.notification().await;
        assert_eq!(note.method, "notifications/progress");
        assert_eq!(note.params.expect("params")["progressToken"], token);
    }
}

#[tokio::test]
async fn cancellation_reaches_the_handler_and_no_response_follows() {
    let (client, probe) = session().await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = RequestOptions {
        cancel: Some(cancel.clone()),
        ..RequestOptions::default()
    };
    let params = json!({ "name": "slow", "arguments": {} });
    let peer = client.peer.clone();
    let pending =
        tokio::spawn(async move { peer.request("tools/call", Some(params), options).await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    cancel.cancel();
    let outcome = within(pending).await.expect("join");
    assert!(
        matches!(outcome, Err(barrel_mcp::Error::Cancelled)),
        "{outcome:?}"
    );
    within(async {
        while !probe.saw_cancel() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    // The connection still serves.
    assert_eq!(
        text_of(&call(&client, "echo", json!({ "message": "after" })).await),
        "after"
    );
}

#[tokio::test]
async fn session_asks_the_client_for_sampling_elicitation_and_roots() {
    let (client, _) = session().await;
    assert_eq!(
        text_of(&call(&client, "ask_name", json!({})).await),
        "Hello, Ada!"
    );
    assert_eq!(
        text_of(&call(&client, "summarize", json!({})).await),
        "Summary: short"
    );
    assert_eq!(
        text_of(&call(&client, "roots", json!({})).await),
        "file:///work"
    );
    assert_eq!(
        text_of(&call(&client, "ask_twice", json!({})).await),
        "Ada/short"
    );
    let asked: Vec<String> = client
        .asked
        .lock()
        .expect("asked")
        .iter()
        .map(|(m, _)| m.clone())
        .collect();
    assert_eq!(
        asked,
        [
            "elicitation/create",
            "sampling/createMessage",
            "roots/list",
            "elicitation/create",
            "sampling/createMessage"
        ]
    );
    let elicit = &client.asked.lock().expect("asked")[0].1;
    assert_eq!(elicit["message"], "Name?");
    assert_eq!(elicit["requestedSchema"]["type"], "object");
}

#[tokio::test]
async fn input_needs_the_declared_capability() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client
        .request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bare", "version": "1" } }),
        )
        .await
        .expect("initialize");
    let refused = client
        .request("tools/call", json!({ "name": "ask_name", "arguments": {} }))
        .await
        .expect_err("no elicitation capability");
    assert_eq!(refused.code.0, -32600);
    assert!(refused.message.contains("elicitation"));
    assert!(
        client.asked.lock().expect("asked").is_empty(),
        "nothing was sent to the client"
    );
}

#[tokio::test]
async fn log_messages_follow_the_session_level() {
    let (client, _) = session().await;
    call(
        &client,
        "log",
        json!({ "level": "debug", "message": "first" }),
    )
    .await;
    let note = client.notification().await;
    assert_eq!(note.method, "notifications/message");
    assert_eq!(note.params.expect("params")["data"], "first");
    client
        .request("logging/setLevel", json!({ "level": "warning" }))
        .await
        .expect("setLevel");
    call(
        &client,
        "log",
        json!({ "level": "info", "message": "hidden" }),
    )
    .await;
    call(
        &client,
        "log",
        json!({ "level": "error", "message": "shown" }),
    )
    .await;
    let note = client.notification().await;
    let params = note.params.expect("params");
    assert_eq!(params["data"], "shown");
    assert_eq!(params["level"], "error");
    assert!(client.drain_notifications().is_empty());
}

#[tokio::test]
async fn url_elicitation_and_sampling_with_tools_in_a_session() {
    let (client, _) = session().await;
    assert_eq!(
        text_of(&call(&client, "open_url", json!({})).await),
        "Accept"
    );
    assert_eq!(
        text_of(&call(&client, "sample_tools", json!({})).await),
        "short"
    );
    let asked = client.asked.lock().expect("asked").clone();
    let (method, url) = &asked[0];
    assert_eq!(method, "elicitation/create");
    assert_eq!(url["mode"], "url");
    assert_eq!(url["url"], "https://example.com/login");
    assert!(
        url["elicitationId"]
            .as_str()
            .is_some_and(|id| id.len() >= 16),
        "2025-11-25 gets an elicitationId"
    );
    assert_eq!(asked[1].1["tools"][0]["name"], "lookup");
}

#[tokio::test]
async fn url_elicitation_needs_the_url_capability() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let caps = json!({ "elicitation": { "form": {} }, "sampling": {} });
    client
        .request(
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": { "name": "form-only", "version": "1" } }),
        )
        .await
        .expect("initialize");
    for tool in ["open_url", "sample_tools"] {
        let refused = client
            .request("tools/call", json!({ "name": tool, "arguments": {} }))
            .await
            .expect_err("capability missing");
        assert_eq!(refused.code.0, -32600, "{tool}");
    }
    assert!(client.asked.lock().expect("asked").is_empty());
}

#[tokio::test]
async fn running_handlers_are_capped_over_every_connection() {
    let config = barrel_mcp::server::ServerConfig {
        max_running_handlers: 1,
        ..barrel_mcp::server::ServerConfig::default()
    };
    let (server, probe) = fixture::server_with(config);
    let first = connect(&server);
    first.initialize("2025-11-25").await;
    let second = connect(&server);
    second.initialize("2025-11-25").await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = RequestOptions {
        cancel: Some(cancel.clone()),
        ..RequestOptions::default()
    };
    let peer = first.peer.clone();
    let slow = tokio::spawn(async move {
        peer.request(
            "tools/call",
            Some(json!({ "name": "slow", "arguments": {} })),
            options,
        )
        .await
    });
    // Once the slow call runs, another connection's call is refused at once.
    let refused = within(async {
        loop {
            match second
                .request(
                    "tools/call",
                    json!({ "name": "echo", "arguments": { "message": "x" } }),
                )
                .await
            {
                Err(error) => break error,
                Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    })
    .await;
    assert_eq!(refused.code.0, -32603);
    assert!(refused.message.contains("busy"), "{}", refused.message);
    cancel.cancel();
    let _ = slow.await;
    within(async {
        while !probe.saw_cancel() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    // The permit is back.
    within(async {
        loop {
            let answer = second
                .request(
                    "tools/call",
                    json!({ "name": "echo", "arguments": { "message": "x" } }),
                )
                .await;
            if answer.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_handler_past_the_server_deadline_is_answered_with_a_timeout() {
    let config = barrel_mcp::server::ServerConfig {
        handler_timeout: Some(std::time::Duration::from_millis(100)),
        ..barrel_mcp::server::ServerConfig::default()
    };
    let (server, _) = fixture::server_with(config);
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let error = within(client.request("tools/call", json!({ "name": "slow", "arguments": {} })))
        .await
        .expect_err("timed out");
    assert_eq!(error.code.0, -32001);
    assert_eq!(
        text_of(&call(&client, "echo", json!({ "message": "still here" })).await),
        "still here"
    );
}
