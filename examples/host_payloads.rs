//! What the host sends to and makes of each model API, as JSON, for the interop suite's checks
//! against the providers' own SDK types (`scripts/interop/provider_sdks.py`).
//!
//! Two in-memory servers (`weather`, `docs`) behind one [`Host`]. Reads on stdin an object of
//! recorded model responses by provider name (`anthropic`, `openai-chat`, `openai-responses`,
//! `gemini`); prints one object with, for each provider: `tools` (the request's tools),
//! `report` (every lossy schema change, as text), `calls` (the calls found in its response:
//! id and name) and `results` (what answers them, routed to the servers).
//!
//! `echo '{}' | cargo run -p barrel-mcp-examples --example host_payloads`

use std::io::{Read as _, Write as _};

use barrel_mcp::client::{Backoff, Client, Clients};
use barrel_mcp::host::Host;
use barrel_mcp::host::format::{self, Provider};
use barrel_mcp::server::{Ctx, Server, ToolHandler};
use barrel_mcp::transport::memory;
use barrel_mcp::types::{
    AudioContent, BlobResourceContents, CallToolResult, ContentBlock, EmbeddedResource,
    ImageContent, ResourceContents, ResourceLink, Tool,
};
use serde_json::{Map, Value, json};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const PDF: &str = "JVBERi0xLjQKJcTl8uXrCg==";

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A tool whose handler answers with `answer(arguments)`.
fn tool(
    name: &str,
    schema: Value,
    answer: fn(Map<String, Value>) -> CallToolResult,
) -> (Tool, ToolHandler) {
    let tool = Tool::new(name, object(schema)).with_description(format!("The {name} tool"));
    let handler =
        ToolHandler::raw(move |_: Ctx, args: Map<String, Value>| async move { Ok(answer(args)) });
    (tool, handler)
}

fn weather() -> Server {
    let forecast = json!({
        "type": "object",
        "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        "properties": {
            "where": {"$ref": "#/$defs/place"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"enum": [1, 3, 7]}
        },
        "required": ["where"],
        "additionalProperties": false
    });
    let tools = [
        // The arguments as the server got them, so the checker sees what routing restored.
        tool("forecast", forecast, |args| {
            CallToolResult::text(Value::Object(args).to_string())
        }),
        tool("logo", json!({"type": "object"}), |_| CallToolResult {
            content: vec![
                ContentBlock::text("the logo"),
                ContentBlock::Image(ImageContent {
                    data: PNG.into(),
                    mime_type: "image/png".into(),
                    ..ImageContent::default()
                }),
            ],
            ..CallToolResult::default()
        }),
        tool("fail", json!({"type": "object"}), |_| CallToolResult {
            content: vec![ContentBlock::text("the service is down")],
            is_error: Some(true),
            ..CallToolResult::default()
        }),
    ];
    build("weather", tools)
}

fn docs() -> Server {
    // Everything a provider may refuse in a schema (but a remote `$ref`, which a barrel-mcp
    // server refuses itself).
    let search = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "properties": {
            "q": {"type": "string", "minLength": 1, "pattern": "^\\S"},
            "since": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "format": "uri"},
            "limit": {"type": "integer", "exclusiveMinimum": 0, "maximum": 50, "multipleOf": 5},
            "filters": {"type": "object", "additionalProperties": {"type": "string"}},
            "kind": {"oneOf": [{"const": "code"}, {"const": "docs"}]},
            "level": {"enum": [1, 2, 3]},
            "scope": {"allOf": [{"properties": {"repo": {"type": "string"}}}, {"required": ["repo"]}]},
            "tree": {"$ref": "#/$defs/node"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "note": {"type": ["string", "null"]}
        },
        "required": ["q"]
    });
    let tools = [
        tool("search", search, |_| CallToolResult::text("3 hits")),
        tool("fetch", json!({"type": "object"}), |_| CallToolResult {
            content: vec![
                ContentBlock::text("the page"),
                ContentBlock::Image(ImageContent {
                    data: PNG.into(),
                    mime_type: "image/svg+xml".into(),
                    ..ImageContent::default()
                }),
                ContentBlock::Audio(AudioContent {
                    data: PNG.into(),
                    mime_type: "audio/wav".into(),
                    ..AudioContent::default()
                }),
                ContentBlock::ResourceLink(ResourceLink::new("file:///readme.md", "readme")),
                ContentBlock::resource(ResourceContents::text("file:///a.txt", "inside")),
                ContentBlock::Resource(EmbeddedResource {
                    resource: ResourceContents::Blob(BlobResourceContents {
                        uri: "file:///report.pdf".into(),
                        mime_type: Some("application/pdf".into()),
                        blob: PDF.into(),
                        meta: None,
                    }),
                    annotations: None,
                    meta: None,
                }),
            ],
            structured_content: Some(json!({"pages": 1})),
            ..CallToolResult::default()
        }),
    ];
    build("docs", tools)
}

fn build(name: &str, tools: impl IntoIterator<Item = (Tool, ToolHandler)>) -> Server {
    let mut builder = Server::builder().name(name, "1.0.0");
    for (tool, handler) in tools {
        builder = builder.raw_tool(tool, handler);
    }
    builder.build().expect("the example servers are valid")
}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let responses: Value = serde_json::from_str(&input)?;
    let clients = Clients::new();
    for server in [weather(), docs()] {
        let name = server.info().name.clone();
        let connect = move || {
            let (a, b) = memory();
            let server = server.clone();
            tokio::spawn(async move { server.serve(b).await });
            async move { Ok(a) }
        };
        clients.start(name.clone(), Client::builder(), Backoff::default(), connect);
        clients.connected(&name).await;
    }
    let host = Host::new(clients);
    let specs = host.refresh().await?.specs();
    let mut out = Map::new();
    for provider in Provider::ALL {
        let (tools, report) = format::tools_with_report(provider, &specs);
        let report: Vec<String> = report.iter().map(ToString::to_string).collect();
        let calls = format::calls(provider, &responses[provider.name()]);
        let outcomes = host.call_all(&calls).await;
        let named: Vec<Value> = calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name}))
            .collect();
        let results = format::results(provider, &outcomes);
        out.insert(
            provider.name().into(),
            json!({"tools": tools, "report": report, "calls": named, "results": results}),
        );
    }
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, &Value::Object(out))?;
    writeln!(stdout)?;
    Ok(())
}
