//! 2026-07-28 over HTTP: header checks, status codes, 405s, no session, SSE upgrade on the
//! first notification, a multi round-trip, and a client disconnect cancelling its request.

use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Client, SseReader, TestServer, body_json, enveloped, session_id};
use crate::support::within;

/// POSTs an enveloped request with the standard 2026-07-28 headers (method and, when given,
/// name), plus `extra` (which may repeat or contradict them).
async fn post(
    client: &Client,
    body: &Value,
    name: Option<&str>,
    extra: &[(&str, &str)],
) -> super::Response {
    let method = body["method"].as_str().expect("method").to_owned();
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if !extra.iter().any(|(k, _)| *k == "mcp-protocol-version") {
        headers.push(("mcp-protocol-version", "2026-07-28"));
    }
    if !extra.iter().any(|(k, _)| *k == "mcp-method") {
        headers.push(("mcp-method", method.as_str()));
    }
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    headers.extend_from_slice(extra);
    client
        .send(Method::POST, &headers, Some(&body.to_string()))
        .await
}

fn code(body: &Value) -> i64 {
    body["error"]["code"].as_i64().unwrap_or(0)
}

#[tokio::test]
async fn answers_without_a_session() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let body = enveloped(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hey"}}),
    );
    let response = post(
        &client,
        &body,
        Some("echo"),
        &[("mcp-session-id", "ignored")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(session_id(response.headers()).is_none());
    assert_eq!(response.headers()["content-type"], "application/json");
    let answer = body_json(response).await;
    assert_eq!(answer["result"]["content"][0]["text"], "hey");
    assert_eq!(answer["result"]["resultType"], "complete");
    // Finished from the text the tool's result was written to: the server says who it is.
    assert_eq!(
        answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        serde_json::json!({ "name": "fixture", "version": "1.0.0" })
    );
    // The name may come base64-encoded.
    let encoded = post(&client, &body, Some("=?base64?ZWNobw==?="), &[]).await;
    assert_eq!(encoded.status(), StatusCode::OK);
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn header_and_envelope_errors() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let list = enveloped(1, "tools/list", json!({}));
    let call = enveloped(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "x"}}),
    );
    type Case<'a> = (
        Value,
        Option<&'a str>,
        Vec<(&'a str, &'a str)>,
        StatusCode,
        i64,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            list.clone(),
            None,
            vec![("mcp-method", "prompts/list")],
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (
            list.clone(),
            None,
            vec![("mcp-protocol-version", "2025-11-25")],
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (call.clone(), None, vec![], StatusCode::BAD_REQUEST, -32020),
        (
            call.clone(),
            Some("add"),
            vec![],
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (
            call.clone(),
            Some("echo"),
            vec![("mcp-name", "echo")],
            StatusCode::BAD_REQUEST,
            -32020,
        ),
        (
            enveloped(3, "no/such", json!({})),
            None,
            vec![],
            StatusCode::NOT_FOUND,
            -32601,
        ),
        (
            enveloped(4, "ping", json!({})),
            None,
            vec![],
            StatusCode::NOT_FOUND,
            -32601,
        ),
    ];
    for (body, name, extra, status, expected) in cases {
        let response = post(&client, &body, name, &extra).await;
        assert_eq!(response.status(), status, "{body} {extra:?}");
        assert_eq!(
            code(&body_json(response).await),
            expected,
            "{body} {extra:?}"
        );
    }
    // The envelope: a missing capabilities key, a future revision.
    let mut missing = list.clone();
    missing["params"]["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let response = post(&client, &missing, None, &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(code(&body_json(response).await), -32602);
    let mut future = list.clone();
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let response = post(
        &client,
        &future,
        None,
        &[("mcp-protocol-version", "2099-01-01")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error = body_json(response).await;
    assert_eq!(code(&error), -32022);
    assert_eq!(error["error"]["data"]["requested"], "2099-01-01");
    // A 2026-07-28 header without the envelope.
    let bare = json!({"jsonrpc":"2.0","id":9,"method":"tools/list"});
    let response = post(&client, &bare, None, &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(code(&body_json(response).await), -32602);
    // A missing required capability is 400 / -32021.
    let mut no_caps = enveloped(
        5,
        "tools/call",
        json!({"name": "ask_name", "arguments": {}}),
    );
    no_caps["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let response = post(&client, &no_caps, Some("ask_name"), &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(code(&body_json(response).await), -32021);
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn get_and_delete_are_405() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    for method in [Method::GET, Method::DELETE] {
        let response = client
            .send(
                method.clone(),
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-session-id", "whatever"),
                    ("accept", "text/event-stream"),
                ],
                None,
            )
            .await;
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}"
        );
        assert_eq!(response.headers()["allow"], "POST");
    }
}

#[tokio::test]
async fn notifications_upgrade_the_answer_to_sse() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let mut body = enveloped(
        1,
        "tools/call",
        json!({"name": "countdown", "arguments": {"steps": 2}}),
    );
    body["params"]["_meta"]["progressToken"] = json!("p");
    let response = post(&client, &body, Some("countdown"), &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);
    let first = stream.next_event().await.expect("event");
    assert!(first.id.is_none(), "2026-07-28 events carry no id");
    let first: Value = serde_json::from_str(&first.data).expect("json");
    assert_eq!(first["method"], "notifications/progress");
    assert_eq!(
        stream.next_message().await["method"],
        "notifications/progress"
    );
    assert_eq!(stream.next_message().await["id"], 1);
    assert!(
        stream.next_event().await.is_none(),
        "the response ends the stream"
    );
}

#[tokio::test]
async fn multi_round_trip_over_http() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    let params = json!({"name": "ask_name", "arguments": {}});
    let first = post(
        &client,
        &enveloped(1, "tools/call", params.clone()),
        Some("ask_name"),
        &[],
    )
    .await;
    assert_eq!(first.status(), StatusCode::OK);
    let first = body_json(first).await;
    assert_eq!(first["result"]["resultType"], "input_required");
    let requests = first["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests");
    let (key, request) = requests.iter().next().expect("one question");
    assert_eq!(request["method"], "elicitation/create");
    let mut retry = params.clone();
    retry["inputResponses"] = json!({ key: {"action": "accept", "content": {"name": "Ada"}} });
    retry["requestState"] = first["result"]["requestState"].clone();
    let done = post(
        &client,
        &enveloped(2, "tools/call", retry),
        Some("ask_name"),
        &[],
    )
    .await;
    let done = body_json(done).await;
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_its_request() {
    let (fixture, probe) = crate::server::fixture::server();
    let server = TestServer::start_with(fixture, HttpConfig::default()).await;
    let client = server.client();
    let body = enveloped(1, "tools/call", json!({"name": "slow", "arguments": {}}));
    let pending = tokio::spawn({
        let client = client.clone();
        async move { post(&client, &body, Some("slow"), &[]).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    pending.abort();
    within(async {
        while !probe.saw_cancel() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn annotated_arguments_must_match_their_param_headers() {
    use barrel_mcp::server::{Server, ToolHandler};
    use barrel_mcp::types::Tool;

    let schema = json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "count": { "type": "integer", "x-mcp-header": "Count" }
        }
    });
    let tool = Tool::new("routed", schema.as_object().cloned().unwrap_or_default());
    let server = Server::builder()
        .name("params", "1.0.0")
        .raw_tool(tool, ToolHandler::raw(|_, _| async { Ok("routed") }))
        .build()
        .expect("valid tool");
    let server = TestServer::start_with(server, HttpConfig::default()).await;
    let client = server.client();
    let body = enveloped(
        1,
        "tools/call",
        json!({"name": "routed", "arguments": {"region": "Hello", "count": 42}}),
    );
    let ok = [("mcp-param-region", "Hello"), ("mcp-param-count", "42.0")];
    let response = post(&client, &body, Some("routed"), &ok).await;
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "integers compare as numbers"
    );
    let encoded = [
        ("mcp-param-region", "=?base64?SGVsbG8=?="),
        ("mcp-param-count", "42"),
    ];
    let response = post(&client, &body, Some("routed"), &encoded).await;
    assert_eq!(response.status(), StatusCode::OK, "base64 form decodes");
    let cases: [&[(&str, &str)]; 4] = [
        &[("mcp-param-count", "42")],
        &[
            ("mcp-param-region", "=?base64?SGVsbG8?="),
            ("mcp-param-count", "42"),
        ],
        &[
            ("mcp-param-region", "=?base64?SGVs!!!bG8=?="),
            ("mcp-param-count", "42"),
        ],
        &[("mcp-param-region", "World"), ("mcp-param-count", "42")],
    ];
    for headers in cases {
        let response = post(&client, &body, Some("routed"), headers).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{headers:?}");
        assert_eq!(code(&body_json(response).await), -32020, "{headers:?}");
    }
    // No value in the body: no header needed.
    let bare = enveloped(2, "tools/call", json!({"name": "routed", "arguments": {}}));
    assert_eq!(
        post(&client, &bare, Some("routed"), &[]).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn params_of_the_wrong_json_type_are_invalid_params_over_http() {
    let server = TestServer::start(HttpConfig::default()).await;
    let client = server.client();
    for bad in [json!([1]), json!("x"), json!(3)] {
        let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":bad});
        let response = post(&client, &body, None, &[]).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        let answer = body_json(response).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    // In a session too (the HTTP layer decodes the envelope: 400 with the request's id).
    let mut session = server.client();
    session.initialize().await;
    for bad in [json!([1]), json!("x"), json!(3)] {
        let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":bad});
        let response = session.post(&body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        let answer = body_json(response).await;
        assert_eq!(answer["error"]["code"], -32602, "{bad}: {answer}");
        assert_eq!(answer["id"], 9);
    }
}
