//! Schema shaping through the host: a tool whose schema no provider takes as it is, shaped for
//! each provider with a report, and a model's arguments against the shaped schema restored
//! before the call reaches the server (which validates them against the original).

use barrel_mcp::client::{Backoff, Client, Clients};
use barrel_mcp::host::Host;
use barrel_mcp::host::format::{self, ChangeKind, Provider};
use barrel_mcp::server::{Ctx, Server, ToolHandler};
use barrel_mcp::transport::memory;
use barrel_mcp::types::Tool;
use serde_json::{Map, Value, json};

use crate::support::within;

/// An optional non-nullable enum, a numeric enum, a local `$ref`, a map, a remote `$ref`, and
/// a choice between a numeric enum and any string.
fn forecast_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"], "additionalProperties": false}},
        "properties": {
            "where": {"$ref": "#/$defs/place"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"enum": [1, 3, 7]},
            "code": {"anyOf": [{"enum": [1, 2]}, {"type": "string"}]}
        },
        "required": ["where"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => map,
        _ => unreachable!(),
    }
}

async fn host() -> Host {
    let server = Server::builder()
        .name("weather", "1.0.0")
        .raw_tool(
            Tool::new("forecast", forecast_schema()).with_description("A forecast"),
            ToolHandler::raw(|_: Ctx, args: Map<String, Value>| async move {
                Ok(Value::Object(args).to_string())
            }),
        )
        .build()
        .expect("server");
    let clients = Clients::new();
    clients.start(
        "weather",
        Client::builder().name("host-test", "1.0.0"),
        Backoff::default(),
        move || {
            let (a, b) = memory();
            let server = server.clone();
            tokio::spawn(async move { server.serve(b).await });
            async move { Ok(a) }
        },
    );
    within(clients.connected("weather"))
        .await
        .expect("connected");
    let host = Host::new(clients);
    host.refresh().await.expect("catalog");
    host
}

#[tokio::test]
async fn shaped_per_provider_with_a_report() {
    within(async {
        let host = host().await;
        let specs = host.catalog().specs();
        let (chat, report) = format::tools_with_report(Provider::OpenAiChat, &specs);
        let function = &chat[0]["function"];
        assert_eq!(function["strict"], true);
        assert_eq!(
            function["parameters"]["required"],
            json!(["code", "days", "unit", "where"])
        );
        assert_eq!(
            function["parameters"]["properties"]["unit"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            function["parameters"]["properties"]["where"]["properties"]["city"]["type"],
            "string"
        );
        assert!(report.is_empty(), "{report:?}");
        let (gemini, report) = format::tools_with_report(Provider::Gemini, &specs);
        let schema = &gemini[0]["functionDeclarations"][0]["parametersJsonSchema"];
        assert_eq!(schema["properties"]["days"]["enum"], json!(["1", "3", "7"]));
        assert!(!schema.to_string().contains("$ref"));
        assert!(report.is_empty(), "{report:?}");
        let (anthropic, report) = format::tools_with_report(Provider::Anthropic, &specs);
        assert!(anthropic[0]["input_schema"].get("$defs").is_none());
        assert!(report.is_empty(), "{report:?}");
        // A map and a remote reference: reported, strict mode off.
        let mut odd = specs[0].clone();
        odd.input_schema["properties"]["tags"] =
            json!({"additionalProperties": {"type": "string"}});
        odd.input_schema["properties"]["far"] = json!({"$ref": "https://example.test/s.json"});
        let (_, report) = format::tools_with_report(Provider::OpenAiResponses, &[odd]);
        let kinds: Vec<(ChangeKind, &str)> = report
            .iter()
            .map(|c| (c.kind, c.pointer.as_str()))
            .collect();
        assert!(
            kinds.contains(&(ChangeKind::StrictOff, "/properties/tags")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(ChangeKind::Permissive, "/properties/far")),
            "{kinds:?}"
        );
        assert!(report.iter().all(|c| c.tool == "weather__forecast"));
    })
    .await;
}

#[tokio::test]
async fn model_arguments_are_restored_before_the_call() {
    within(async {
        let host = host().await;
        // Strict mode: the optional unit left out is a null, which the server would refuse.
        let chat = json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "weather__forecast",
                         "arguments": "{\"where\":{\"city\":\"Oslo\"},\"unit\":null,\"days\":null}"}}]}}]});
        let calls = format::calls(Provider::OpenAiChat, &chat);
        let (result, failure) = host.call(&calls[0]).await;
        assert_eq!(failure, None);
        assert_eq!(result.is_error, None, "{}", result.text_content());
        assert_eq!(result.text_content(), r#"{"where":{"city":"Oslo"}}"#);
        // Gemini: the numeric enum comes back as a string.
        let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": "g1", "name": "weather__forecast",
                              "args": {"where": {"city": "Lima"}, "days": "3", "unit": "celsius"}}}]}}]});
        let calls = format::calls(Provider::Gemini, &gemini);
        let outcomes = host.call_all(&calls).await;
        assert_eq!(
            outcomes[0].1.text_content(),
            r#"{"days":3,"unit":"celsius","where":{"city":"Lima"}}"#
        );
        // Arguments the original takes as they are go untouched, though restore alone would
        // read the string as the enum's number.
        let anthropic = json!({"content": [{"type": "tool_use", "id": "t0",
            "name": "weather__forecast", "input": {"where": {"city": "Rome"}, "code": "1"}}]});
        let calls = format::calls(Provider::Anthropic, &anthropic);
        let (result, failure) = host.call(&calls[0]).await;
        assert_eq!(failure, None);
        assert_eq!(
            result.text_content(),
            r#"{"code":"1","where":{"city":"Rome"}}"#
        );
        // What the original refuses and restore cannot mend still reaches the server's check.
        let anthropic = json!({"content": [{"type": "tool_use", "id": "t1",
            "name": "weather__forecast", "input": {"where": null}}]});
        let calls = format::calls(Provider::Anthropic, &anthropic);
        let (result, _) = host.call(&calls[0]).await;
        assert_eq!(result.is_error, Some(true));
    })
    .await;
}
