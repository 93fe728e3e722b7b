//! Sessions: `initialize` negotiation for every revision, the output shaped for each, and the
//! choice of era per message on one connection.

use serde_json::json;

use super::fixture;
use super::{all_capabilities, connect, envelope};

#[tokio::test]
async fn negotiates_each_sessionful_revision_and_falls_back_to_the_newest() {
    let (server, _) = fixture::server();
    let cases = [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        // 2026-07-28 has no `initialize`: a session gets the newest sessionful revision.
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ];
    for (asked, expected) in cases {
        let client = connect(&server);
        let result = client.initialize(asked).await;
        assert_eq!(result["protocolVersion"], expected, "asked for {asked}");
        assert_eq!(result["serverInfo"]["name"], "fixture");
        assert_eq!(result["instructions"], "Test fixture");
        assert!(
            result.get("resultType").is_none(),
            "no resultType in a session"
        );
        let caps = &result["capabilities"];
        assert_eq!(caps["tools"]["listChanged"], true);
        assert_eq!(caps["resources"]["subscribe"], true);
        assert!(caps.get("logging").is_some());
        assert_eq!(
            caps.get("completions").is_some(),
            expected != "2024-11-05",
            "completions capability for {expected}"
        );
    }
}

#[tokio::test]
async fn tool_listing_is_shaped_for_each_revision() {
    let (server, _) = fixture::server();
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let client = connect(&server);
        client.initialize(version).await;
        let result = client
            .request("tools/list", json!({}))
            .await
            .expect("tools/list");
        let tools = result["tools"].as_array().expect("tools");
        let fancy = tools
            .iter()
            .find(|t| t["name"] == "fancy")
            .expect("fancy listed");
        let add = tools
            .iter()
            .find(|t| t["name"] == "add")
            .expect("add listed");
        assert_eq!(add["inputSchema"]["type"], "object");
        let has = |tool: &serde_json::Value, key: &str| tool.get(key).is_some();
        let at_least = |v: &str| version >= v;
        assert_eq!(
            has(fancy, "title"),
            at_least("2025-06-18"),
            "title in {version}"
        );
        assert_eq!(
            has(add, "outputSchema"),
            at_least("2025-06-18"),
            "outputSchema in {version}"
        );
        assert_eq!(
            has(fancy, "annotations"),
            at_least("2025-03-26"),
            "annotations in {version}"
        );
        assert_eq!(
            has(fancy, "icons"),
            at_least("2025-11-25"),
            "icons in {version}"
        );
        assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
        assert!(result.get("resultType").is_none());
    }
}

#[tokio::test]
async fn structured_and_new_content_are_shaped_down() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2024-11-05").await;
    let sum = client
        .request(
            "tools/call",
            json!({ "name": "add", "arguments": { "a": 1, "b": 2 } }),
        )
        .await
        .expect("add");
    assert!(sum.get("structuredContent").is_none());
    assert_eq!(super::text_of(&sum), r#"{"sum":3}"#);
    let content = client
        .request("tools/call", json!({ "name": "content", "arguments": {} }))
        .await
        .expect("content");
    let types: Vec<&str> = content["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert!(
        !types.contains(&"audio"),
        "no audio before 2025-03-26: {types:?}"
    );
    assert!(
        !types.contains(&"resource_link"),
        "no resource_link before 2025-06-18: {types:?}"
    );

    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let content = client
        .request("tools/call", json!({ "name": "content", "arguments": {} }))
        .await
        .expect("content");
    let types: Vec<&str> = content["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(
        types,
        ["text", "image", "audio", "resource_link", "resource"]
    );
    assert_eq!(content["content"][0]["annotations"]["priority"], 0.5);
}

#[tokio::test]
async fn requests_before_initialize_are_refused_and_the_connection_keeps_serving() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let early = client
        .request("tools/list", json!({}))
        .await
        .expect_err("refused");
    assert_eq!(early.code.0, -32600);
    assert_eq!(
        client
            .request("ping", json!({}))
            .await
            .expect("ping before initialize"),
        json!({})
    );
    client.initialize("2025-06-18").await;
    assert!(client.request("tools/list", json!({})).await.is_ok());
    let again = client
        .request("initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "x", "version": "1" } }))
        .await
        .expect_err("second initialize");
    assert_eq!(again.code.0, -32600);
}

#[tokio::test]
async fn discover_then_initialize_on_one_connection() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    let discovered = client
        .stateless("server/discover", json!({}), json!({}))
        .await
        .expect("discover");
    assert_eq!(
        discovered["supportedVersions"],
        json!([
            "2026-07-28",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(discovered["resultType"], "complete");
    let result = client.initialize("2025-11-25").await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
    // A stateless request is still served on the now sessionful connection.
    let listed = client
        .request("tools/list", envelope(json!({}), json!({})))
        .await
        .expect("stateless tools/list");
    assert_eq!(listed["resultType"], "complete");
    let _ = all_capabilities();
}

#[tokio::test]
async fn unknown_methods_and_bad_params_are_named() {
    let (server, _) = fixture::server();
    let client = connect(&server);
    client.initialize("2025-11-25").await;
    let unknown = client
        .request("tools/frobnicate", json!({}))
        .await
        .expect_err("unknown");
    assert_eq!(unknown.code.0, -32601);
    assert!(unknown.message.contains("tools/frobnicate"));
    let missing = client
        .request("tools/call", json!({ "arguments": {} }))
        .await
        .expect_err("no name");
    assert_eq!(missing.code.0, -32602);
    assert!(
        missing.message.contains("name"),
        "names the field: {}",
        missing.message
    );
    let bad_level = client
        .request("logging/setLevel", json!({ "level": "loud" }))
        .await
        .expect_err("bad level");
    assert_eq!(bad_level.code.0, -32602);
}

#[tokio::test]
async fn params_of_the_wrong_json_type_are_invalid_params_everywhere() {
    let (server, _) = fixture::server();
    let session = connect(&server);
    session.initialize("2025-11-25").await;
    let methods = [
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    ];
    for method in methods {
        for bad in [json!([1, 2]), json!("text"), json!(7), json!(true)] {
            let error = session
                .request(method, bad.clone())
                .await
                .expect_err("refused");
            assert_eq!(
                error.code.0, -32602,
                "{method} with {bad}: {}",
                error.message
            );
        }
    }
    // The same in 2026-07-28: a params value that is not an object cannot even carry the
    // envelope, so it is refused as invalid params, whatever the method.
    let stateless = connect(&server);
    for method in [
        "tools/list",
        "tools/call",
        "server/discover",
        "subscriptions/listen",
    ] {
        for bad in [json!([1]), json!("x"), json!(3)] {
            let error = stateless
                .request(method, bad.clone())
                .await
                .expect_err("refused");
            assert!(
                [-32602, -32600].contains(&error.code.0),
                "{method} with {bad}: {} {}",
                error.code.0,
                error.message
            );
        }
    }
}
