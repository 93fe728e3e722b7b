//! Every typed call in every revision and in auto mode, against the fixture server; the
//! version probe's fallbacks; calls the server or the revision lacks fail before sending.

use std::collections::BTreeMap;

use barrel_mcp::Error;
use barrel_mcp::client::{NoHandler, VersionMode};
use barrel_mcp::types::{
    CallToolParams, CompleteArgument, CompleteParams, CompletionReference, ContentBlock,
    ErrorObject, GetPromptParams, ListToolsResult, LoggingLevel, ProtocolVersion,
    ReadResourceParams, ResourceContents,
};
use serde_json::{Value, json};

use super::{builder, connect_fake, discover_result, fixture_client, modes};
use crate::support::within;

fn text(block: &ContentBlock) -> &str {
    match block {
        ContentBlock::Text(t) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn every_method_in_every_revision() {
    for mode in modes() {
        let client = fixture_client(mode, NoHandler).await;
        let expected = mode.unwrap_or(ProtocolVersion::LATEST);
        assert_eq!(client.protocol_version(), expected, "{mode:?}");
        assert_eq!(client.server_info().name, "fixture", "{mode:?}");
        assert_eq!(client.instructions().as_deref(), Some("Test fixture"));
        assert!(client.capabilities().tools.is_some());

        within(client.ping()).await.expect("ping");
        let tools = within(client.list_all_tools()).await.expect("tools");
        assert!(tools.iter().any(|t| t.name == "echo"), "{mode:?}");
        let page: ListToolsResult = within(client.list_tools(None)).await.expect("one page");
        assert_eq!(page.tools.len(), tools.len());

        let mut args = serde_json::Map::new();
        args.insert("message".into(), json!("hi"));
        let called = within(client.call_tool(CallToolParams::new("echo").with_arguments(args)))
            .await
            .expect("call");
        assert_eq!(text(&called.content[0]), "hi", "{mode:?}");
        assert!(!called.is_error());
        let failed = within(client.call_tool(CallToolParams::new("fail")))
            .await
            .expect("a tool error is a result");
        assert!(failed.is_error());

        let resources = within(client.list_all_resources())
            .await
            .expect("resources");
        assert!(resources.iter().any(|r| r.uri == "test://readme"));
        let templates = within(client.list_all_resource_templates())
            .await
            .expect("templates");
        assert!(
            templates
                .iter()
                .any(|t| t.uri_template == "test://notes/{id}")
        );
        let read = within(client.read_resource(ReadResourceParams::new("test://readme")))
            .await
            .expect("read");
        match &read.contents[0] {
            ResourceContents::Text(t) => assert_eq!(t.text, "read me"),
            other => panic!("{other:?}"),
        }

        let prompts = within(client.list_all_prompts()).await.expect("prompts");
        assert!(prompts.iter().any(|p| p.name == "greet"));
        let prompt = within(client.get_prompt(GetPromptParams {
            name: "greet".into(),
            arguments: Some(BTreeMap::from([("name".into(), "Ada".into())])),
            ..GetPromptParams::default()
        }))
        .await
        .expect("prompt");
        assert_eq!(prompt.messages.len(), 2);

        let completed = within(client.complete(CompleteParams {
            reference: CompletionReference::Prompt {
                name: "greet".into(),
                title: None,
            },
            argument: CompleteArgument {
                name: "style".into(),
                value: "f".into(),
            },
            context: None,
            meta: None,
        }))
        .await
        .expect("complete");
        assert_eq!(completed.completion.values, ["formal", "friendly"]);

        within(client.set_logging_level(LoggingLevel::Debug))
            .await
            .expect("set level");

        if expected.is_stateless() {
            let discovered = within(client.discover()).await.expect("discover");
            assert_eq!(
                discovered.supported_versions,
                [
                    "2026-07-28",
                    "2025-11-25",
                    "2025-06-18",
                    "2025-03-26",
                    "2024-11-05"
                ]
            );
            let err = client
                .subscribe_resource("test://readme")
                .await
                .unwrap_err();
            assert!(err.is_unsupported(), "{err}");
        } else {
            within(client.subscribe_resource("test://readme"))
                .await
                .expect("subscribe");
            within(client.unsubscribe_resource("test://readme"))
                .await
                .expect("unsubscribe");
            let err = client.discover().await.unwrap_err();
            assert!(err.is_unsupported(), "{err}");
        }
        client.close();
    }
}

#[tokio::test]
async fn pinned_2026_sends_the_envelope_and_reads_result_types() {
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let client = connect_fake(
        builder(Some(ProtocolVersion::V2026_07_28)),
        move |req, _| {
            let _ = seen_tx.send(req.clone());
            Box::pin(async move {
                match req.method.as_str() {
                    "server/discover" => Ok(discover_result(json!({ "tools": {} }))),
                    // No resultType: reads as complete.
                    "tools/list" => Ok(json!({ "tools": [] })),
                    _ => Ok(json!({ "resultType": "task", "content": [] })),
                }
            })
        },
    )
    .await;
    let discover = within(seen.recv()).await.expect("discover seen");
    let meta = &discover.params.expect("params")["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "client-test"
    );
    assert!(
        within(client.list_all_tools())
            .await
            .expect("list")
            .is_empty()
    );
    let err = within(client.call_tool(CallToolParams::new("x")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Protocol(ref m) if m.contains("resultType")),
        "{err}"
    );
    // Prompts were not advertised: refused before sending.
    let err = client.list_all_prompts().await.unwrap_err();
    assert!(err.is_unsupported(), "{err}");
    let _ = within(seen.recv()).await; // tools/list
    let _ = within(seen.recv()).await; // tools/call
    assert!(seen.try_recv().is_err(), "nothing sent for prompts/list");
}

/// A sessionful-only fake: `server/discover` is answered `answer`, `initialize` works.
async fn legacy_server_answering(answer: Result<Value, ErrorObject>) -> barrel_mcp::client::Client {
    connect_fake(builder(None), move |req, _| {
        let answer = answer.clone();
        Box::pin(async move {
            match req.method.as_str() {
                "server/discover" => answer,
                "initialize" => Ok(json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "old", "version": "1" }
                })),
                "ping" => Ok(json!({})),
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    })
    .await
}

#[tokio::test]
async fn auto_falls_back_on_any_protocol_answer() {
    for answer in [
        Err(ErrorObject::method_not_found("server/discover")),
        Err(ErrorObject::invalid_request("no session")),
        Err(ErrorObject::new(
            barrel_mcp::types::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({ "supported": ["2025-06-18"], "requested": "2026-07-28" }))),
        Ok(json!({ "something": "else" })),
        Ok(json!({ "supportedVersions": ["2099-01-01"], "capabilities": {} })),
    ] {
        let client = legacy_server_answering(answer.clone()).await;
        assert_eq!(
            client.protocol_version(),
            ProtocolVersion::V2025_06_18,
            "{answer:?}"
        );
        assert_eq!(client.server_info().name, "old");
        within(client.ping()).await.expect("ping");
    }
}

#[tokio::test]
async fn auto_falls_back_when_the_probe_times_out_on_stdio() {
    let client = connect_fake(
        builder(None).probe_timeout(std::time::Duration::from_millis(50)),
        |req, _| {
            Box::pin(async move {
                match req.method.as_str() {
                    "server/discover" => std::future::pending().await,
                    _ => Ok(json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "serverInfo": { "name": "silent", "version": "1" }
                    })),
                }
            })
        },
    )
    .await;
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let err = client.list_all_tools().await.unwrap_err();
    assert!(err.is_unsupported(), "{err}");
}

#[tokio::test]
async fn a_pinned_revision_the_server_lacks_fails_to_connect() {
    let (a, b) = barrel_mcp::transport::memory();
    let script = |req: barrel_mcp::types::Request, _| -> barrel_mcp::peer::BoxFuture<'static, _> {
        Box::pin(async move {
            match req.method.as_str() {
                "initialize" => Ok(json!({
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "serverInfo": { "name": "old", "version": "1" }
                })),
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    };
    let _ = barrel_mcp::peer::serve(
        b,
        std::sync::Arc::new(super::Fake(std::sync::Arc::new(script))),
        barrel_mcp::peer::PeerConfig::default(),
    );
    let err = within(
        builder(None)
            .version(VersionMode::Pinned(ProtocolVersion::V2025_06_18))
            .connect(a),
    )
    .await
    .unwrap_err();
    assert!(err.is_unsupported(), "{err}");
}
