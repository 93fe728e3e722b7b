//! 2026-07-28: the per-request envelope, result decoration, error codes, and multi round-trip
//! requests with a sealed `requestState`.

use barrel_mcp::server::request_state::MAX_TOKEN_LEN;
use serde_json::{Value, json};

use super::{connect, envelope, fixture, text_of};

fn caps() -> Value {
    json!({ "elicitation": {}, "sampling": {}, "roots": {} })
}

#[tokio::test]
async fn results_carry_result_type_cache_hints_and_server_info() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        let result = client
            .stateless(method, json!({}), json!({}))
            .await
            .expect(method);
        assert_eq!(result["resultType"], "complete", "{method}");
        assert_eq!(result["ttlMs"], 0, "{method}");
        assert_eq!(result["cacheScope"], "private", "{method}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "fixture"
        );
    }
    let read = client
        .stateless(
            "resources/read",
            json!({ "uri": "test://readme" }),
            json!({}),
        )
        .await
        .expect("read");
    assert_eq!(read["contents"][0]["text"], "read me");
    assert_eq!(read["ttlMs"], 0);
    let called = client
        .stateless(
            "tools/call",
            json!({ "name": "echo", "arguments": { "message": "m" } }),
            json!({}),
        )
        .await
        .expect("call");
    assert_eq!(called["resultType"], "complete");
    assert!(called.get("ttlMs").is_none(), "tools/call is not cacheable");
    let discovered = client
        .stateless("server/discover", json!({}), json!({}))
        .await
        .expect("discover");
    assert_eq!(discovered["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(discovered["instructions"], "Test fixture");
    assert_eq!(discovered["cacheScope"], "private");
}

#[tokio::test]
async fn envelope_errors_use_the_new_codes() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let mut params = envelope(json!({}), json!({}));
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let unsupported = client
        .request("tools/list", params)
        .await
        .expect_err("unsupported");
    assert_eq!(unsupported.code.0, -32022);
    let data = unsupported.data.expect("data");
    assert_eq!(data["requested"], "2099-01-01");
    assert!(
        data["supported"]
            .as_array()
            .expect("supported")
            .contains(&json!("2026-07-28"))
    );

    let mut params = envelope(json!({}), json!({}));
    params["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let missing = client
        .request("tools/list", params)
        .await
        .expect_err("missing capabilities");
    assert_eq!(missing.code.0, -32602);
    assert!(missing.message.contains("clientCapabilities"));

    for removed in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let error = client
            .stateless(removed, json!({}), json!({}))
            .await
            .expect_err(removed);
        assert_eq!(error.code.0, -32601, "{removed}");
    }
    let not_found = client
        .stateless(
            "resources/read",
            json!({ "uri": "test://missing" }),
            json!({}),
        )
        .await
        .expect_err("not found");
    assert_eq!(
        not_found.code.0, -32602,
        "resource not found is -32602 in 2026-07-28"
    );

    let mut params = envelope(json!({}), json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loudest");
    let bad_level = client
        .request("tools/list", params)
        .await
        .expect_err("bad log level");
    assert_eq!(bad_level.code.0, -32602);
}

#[tokio::test]
async fn input_required_then_retry_completes() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let params = json!({ "name": "ask_name", "arguments": {} });
    let first = client
        .stateless("tools/call", params.clone(), caps())
        .await
        .expect("round 1");
    assert_eq!(first["resultType"], "input_required");
    let requests = first["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().expect("one request");
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Name?");
    let state = first["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    assert!(
        client.asked.lock().expect("asked").is_empty(),
        "no server-to-client request in 2026-07-28"
    );

    let mut retry = params.clone();
    retry["inputResponses"] =
        json!({ key: { "action": "accept", "content": { "name": "Grace" } } });
    retry["requestState"] = json!(state);
    let done = client
        .stateless("tools/call", retry, caps())
        .await
        .expect("round 2");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text_of(&done), "Hello, Grace!");
}

#[tokio::test]
async fn two_questions_take_two_rounds() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let params = json!({ "name": "ask_twice", "arguments": {} });
    let first = client
        .stateless("tools/call", params.clone(), caps())
        .await
        .expect("round 1");
    let (key1, _) = first["inputRequests"]
        .as_object()
        .expect("requests")
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("one");
    let mut retry = params.clone();
    retry["inputResponses"] = json!({ key1: { "action": "accept", "content": { "name": "Ada" } } });
    retry["requestState"] = first["requestState"].clone();
    let second = client
        .stateless("tools/call", retry, caps())
        .await
        .expect("round 2");
    assert_eq!(second["resultType"], "input_required");
    let requests = second["inputRequests"].as_object().expect("requests");
    let (key2, request) = requests.iter().next().expect("one");
    assert_eq!(request["method"], "sampling/createMessage");
    // Only this round's answers are sent again; earlier ones ride in the sealed state.
    let mut retry = params.clone();
    retry["inputResponses"] = json!({ key2: { "role": "assistant", "content": { "type": "text", "text": "brief" }, "model": "m" } });
    retry["requestState"] = second["requestState"].clone();
    let done = client
        .stateless("tools/call", retry, caps())
        .await
        .expect("round 3");
    assert_eq!(text_of(&done), "Ada/brief");
}

#[tokio::test]
async fn answers_too_large_to_carry_are_refused_before_a_token_is_issued() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let params = json!({ "name": "ask_twice", "arguments": {} });
    let first = client
        .stateless("tools/call", params.clone(), caps())
        .await
        .expect("round 1");
    let key = first["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("one request");
    // A name of 1 MiB: carried into the next round it would make a token that cannot come back.
    let name = "x".repeat(MAX_TOKEN_LEN);
    let mut retry = params.clone();
    retry["inputResponses"] = json!({ key: { "action": "accept", "content": { "name": name } } });
    retry["requestState"] = first["requestState"].clone();
    let error = client
        .stateless("tools/call", retry, caps())
        .await
        .expect_err("too large to carry");
    assert_eq!(error.code.0, -32603);
    assert!(
        error.message.contains("too large to carry"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn tampered_or_transplanted_request_state_is_rejected() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let params = json!({ "name": "ask_name", "arguments": {} });
    let first = client
        .stateless("tools/call", params.clone(), caps())
        .await
        .expect("round 1");
    let state = first["requestState"].as_str().expect("state").to_owned();
    let answer = json!({ "r0": { "action": "accept", "content": { "name": "Eve" } } });

    let mut tampered = state.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ascii");
    for bad in [tampered, "v1.garbage".to_owned(), String::new()] {
        let mut retry = params.clone();
        retry["inputResponses"] = answer.clone();
        retry["requestState"] = json!(bad);
        let error = client
            .stateless("tools/call", retry, caps())
            .await
            .expect_err("tampered");
        assert_eq!(error.code.0, -32602, "{}", error.message);
    }
    // The same state on another tool, or with other arguments, does not open.
    let mut other = json!({ "name": "echo", "arguments": { "message": "x" } });
    other["requestState"] = json!(state.clone());
    assert_eq!(
        client
            .stateless("tools/call", other, caps())
            .await
            .expect_err("other tool")
            .code
            .0,
        -32602
    );
    let mut prompt = json!({ "name": "greet", "arguments": { "name": "x" } });
    prompt["requestState"] = json!(state);
    assert_eq!(
        client
            .stateless("prompts/get", prompt, caps())
            .await
            .expect_err("other method")
            .code
            .0,
        -32602
    );
}

#[tokio::test]
async fn input_kinds_follow_the_declared_capabilities() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let refused = client
        .stateless(
            "tools/call",
            json!({ "name": "ask_name", "arguments": {} }),
            json!({ "sampling": {} }),
        )
        .await
        .expect_err("no elicitation");
    assert_eq!(refused.code.0, -32021);
    assert_eq!(
        refused.data.expect("data")["requiredCapabilities"],
        json!({ "elicitation": {} })
    );
    let sampled = client
        .stateless(
            "tools/call",
            json!({ "name": "summarize", "arguments": {} }),
            json!({ "sampling": {} }),
        )
        .await
        .expect("sampling allowed");
    assert_eq!(sampled["resultType"], "input_required");
    let kinds: Vec<&Value> = sampled["inputRequests"]
        .as_object()
        .expect("requests")
        .values()
        .map(|r| &r["method"])
        .collect();
    assert_eq!(kinds, [&json!("sampling/createMessage")]);
}

#[tokio::test]
async fn logs_only_with_a_log_level_in_meta() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let params = json!({ "name": "log", "arguments": { "level": "error", "message": "quiet" } });
    client
        .stateless("tools/call", params, json!({}))
        .await
        .expect("no level");
    let mut params = envelope(
        json!({ "name": "log", "arguments": { "level": "info", "message": "hidden" } }),
        json!({}),
    );
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    client
        .request("tools/call", params)
        .await
        .expect("below level");
    assert!(
        client.drain_notifications().is_empty(),
        "nothing logged without or below the level"
    );
    let mut params = envelope(
        json!({ "name": "log", "arguments": { "level": "error", "message": "loud" } }),
        json!({}),
    );
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    client
        .request("tools/call", params)
        .await
        .expect("at level");
    let note = client.notification().await;
    assert_eq!(note.params.expect("params")["data"], "loud");
}

#[tokio::test]
async fn url_elicitation_and_sampling_tools_are_gated_per_request() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let cases = [
        (
            "open_url",
            json!({ "elicitation": {} }),
            json!({ "elicitation": { "url": {} } }),
        ),
        (
            "sample_tools",
            json!({ "sampling": {} }),
            json!({ "sampling": { "tools": {} } }),
        ),
    ];
    for (tool, declared, needed) in cases {
        let params = json!({ "name": tool, "arguments": {} });
        let refused = client
            .stateless("tools/call", params.clone(), declared)
            .await
            .expect_err(tool);
        assert_eq!(refused.code.0, -32021, "{tool}");
        assert_eq!(refused.data.expect("data")["requiredCapabilities"], needed);
        let asked = client
            .stateless("tools/call", params, needed)
            .await
            .expect(tool);
        assert_eq!(asked["resultType"], "input_required", "{tool}");
    }
    let params = json!({ "name": "open_url", "arguments": {} });
    let asked = client
        .stateless(
            "tools/call",
            params,
            json!({ "elicitation": { "url": {} } }),
        )
        .await
        .expect("url elicitation");
    let request = asked["inputRequests"]
        .as_object()
        .expect("requests")
        .values()
        .next()
        .cloned()
        .expect("one");
    assert_eq!(request["params"]["mode"], "url");
    assert!(
        request["params"].get("elicitationId").is_none(),
        "2026-07-28 has no elicitationId"
    );
}

#[tokio::test]
async fn named_questions_travel_under_their_key_and_extra_answers_are_ignored() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let params = json!({ "name": "ask_named", "arguments": {} });
    let first = client
        .stateless("tools/call", params.clone(), caps())
        .await
        .expect("round 1");
    let keys: Vec<&String> = first["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .collect();
    assert_eq!(keys, ["user_name"]);
    // Answers sent up front, with keys the server never asked about, complete at once.
    let mut direct = params;
    direct["inputResponses"] = json!({
        "user_name": { "action": "accept", "content": { "name": "Lin" } },
        "unknown_extra_key": { "action": "decline" }
    });
    let done = client
        .stateless("tools/call", direct, caps())
        .await
        .expect("answered");
    assert_eq!(done["resultType"], "complete");
    assert_eq!(text_of(&done), "Hello, Lin!");
}

#[tokio::test]
async fn discover_and_version_errors_name_the_same_revisions() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let discovered = client
        .stateless("server/discover", json!({}), json!({}))
        .await
        .expect("discover");
    let mut params = envelope(json!({}), json!({}));
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let error = client
        .request("tools/list", params)
        .await
        .expect_err("unsupported");
    assert_eq!(
        error.data.expect("data")["supported"],
        discovered["supportedVersions"]
    );
}
