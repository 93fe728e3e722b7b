//! The server the tests talk to: one of everything.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use barrel_mcp::Error;
use barrel_mcp::server::ToolHandler;
use barrel_mcp::server::{
    Completer, CompletionRequest, Ctx, Json, ResourceRequest, Server, ServerConfig,
};
use barrel_mcp::types::{
    Annotations, AudioContent, BlobResourceContents, CallToolResult, ContentBlock,
    CreateMessageParams, ElicitRequestParams, EmbeddedResource, GetPromptResult, Icon,
    ImageContent, LoggingLevel, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceLink, ResourceTemplate, Role, SamplingMessage, TextContent, TextResourceContents, Tool,
    ToolAnnotations,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the fixture's handlers observed.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    /// The `slow` tool saw its cancellation.
    pub(crate) saw_cancel: AtomicBool,
}

impl Probe {
    pub(crate) fn saw_cancel(&self) -> bool {
        self.saw_cancel.load(Ordering::SeqCst)
    }
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(Deserialize, JsonSchema)]
struct StepsArgs {
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct LogArgs {
    level: String,
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// The fixture server with the default configuration.
pub(crate) fn server() -> (Server, Arc<Probe>) {
    server_with(ServerConfig::default())
}

/// The fixture server with `config`.
pub(crate) fn server_with(config: ServerConfig) -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let slow_probe = Arc::clone(&probe);
    let server = Server::builder()
        .name("fixture", "1.0.0")
        .instructions("Test fixture")
        .config(config)
        .request_state_key(&[7u8; 32])
        .tool("echo", "Echo the message", |_: Ctx, a: EchoArgs| async move { Ok(a.message) })
        .tool("add", "Add", |_: Ctx, a: AddArgs| async move { Ok(Json(Sum { sum: a.a + a.b })) })
        .raw_tool(
            Tool {
                name: "bad_output".into(),
                input_schema: json!({ "type": "object" }).as_object().cloned().unwrap_or_default(),
                output_schema: json!({ "type": "object", "properties": { "sum": { "type": "number" } }, "required": ["sum"] })
                    .as_object()
                    .cloned(),
                ..Tool::default()
            },
            ToolHandler::raw(|_, _| async move {
                Ok(CallToolResult {
                    structured_content: Some(json!({ "sum": "not a number" })),
                    ..CallToolResult::text("{}")
                })
            }),
        )
        .tool_with(
            Tool {
                name: "fancy".into(),
                title: Some("Fancy tool".into()),
                description: Some("Has every optional field".into()),
                annotations: Some(ToolAnnotations {
                    read_only_hint: Some(true),
                    ..ToolAnnotations::default()
                }),
                icons: Some(vec![Icon {
                    src: "https://example.com/icon.png".into(),
                    ..Icon::default()
                }]),
                meta: json!({ "example.com/kind": "fancy" }).as_object().cloned(),
                ..Tool::default()
            },
            |ctx: Ctx, _: NoArgs| async move {
                let seen = ctx.meta().get("example.com/echo").cloned().unwrap_or_default();
                let mut result = CallToolResult::text("fancy");
                result.meta = json!({ "example.com/echoed": seen }).as_object().cloned();
                Ok(result)
            },
        )
        .tool("countdown", "Report progress", |ctx: Ctx, a: StepsArgs| async move {
            for step in 1..=a.steps {
                ctx.progress(f64::from(step), Some(f64::from(a.steps)), Some("working")).await?;
            }
            Ok("done")
        })
        .tool("slow", "Wait until cancelled", move |ctx: Ctx, _: NoArgs| {
            let probe = Arc::clone(&slow_probe);
            async move {
                ctx.cancelled().await;
                probe.saw_cancel.store(true, Ordering::SeqCst);
                Ok("cancelled")
            }
        })
        .tool("ask_name", "Elicit a name", |ctx: Ctx, _: NoArgs| async move {
            let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
            let answer = ctx
                .elicit(ElicitRequestParams::form("Name?", schema.as_object().cloned().unwrap_or_default()))
                .await?;
            let name = answer.content.and_then(|c| c.get("name").cloned()).unwrap_or_default();
            Ok(format!("Hello, {}!", name.as_str().unwrap_or("?")))
        })
        .tool("ask_named", "Elicit under a chosen key", |ctx: Ctx, _: NoArgs| async move {
            let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
            let params = ElicitRequestParams::form("Name?", schema.as_object().cloned().unwrap_or_default());
            let answer = ctx.input_key("user_name").elicit(params).await?;
            let name = answer.content.and_then(|c| c.get("name").cloned()).unwrap_or_default();
            Ok(format!("Hello, {}!", name.as_str().unwrap_or("?")))
        })
        .tool("summarize", "Sample", |ctx: Ctx, _: NoArgs| async move {
            let answer = ctx.create_message(sampling_request()).await?;
            Ok(format!("Summary: {}", answer.text_content().unwrap_or_default()))
        })
        .tool("ask_twice", "Elicit, then sample", |ctx: Ctx, _: NoArgs| async move {
            let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
            let named = ctx
                .elicit(ElicitRequestParams::form("Name?", schema.as_object().cloned().unwrap_or_default()))
                .await?;
            let sampled = ctx.create_message(sampling_request()).await?;
            let name = named.content.and_then(|c| c.get("name").cloned()).unwrap_or_default();
            Ok(format!("{}/{}", name.as_str().unwrap_or("?"), sampled.text_content().unwrap_or_default()))
        })
        .tool("open_url", "URL-mode elicitation", |ctx: Ctx, _: NoArgs| async move {
            let answer = ctx
                .elicit(ElicitRequestParams::url("Sign in", "https://example.com/login"))
                .await?;
            Ok(format!("{:?}", answer.action))
        })
        .tool("sample_tools", "Sampling with tools", |ctx: Ctx, _: NoArgs| async move {
            let mut params = sampling_request();
            params.tools = Some(vec![Tool::new("lookup", Tool::empty_input_schema())]);
            let answer = ctx.create_message(params).await?;
            Ok(answer.text_content().unwrap_or_default())
        })
        .tool("roots", "List roots", |ctx: Ctx, _: NoArgs| async move {
            let roots = ctx.list_roots().await?;
            Ok(roots.roots.into_iter().map(|r| r.uri).collect::<Vec<_>>().join("\n"))
        })
        .tool("log", "Log", |ctx: Ctx, a: LogArgs| async move {
            let level: LoggingLevel = serde_json::from_value(json!(a.level))?;
            ctx.log(level, a.message).await?;
            Ok("logged")
        })
        .tool("content", "Every content type", |_: Ctx, _: NoArgs| async move {
            Ok(every_content_type())
        })
        .tool("fail", "Tool error", |_: Ctx, _: NoArgs| async move {
            Ok(CallToolResult::error("this tool always fails"))
        })
        .tool("boom", "Rust error", |_: Ctx, _: NoArgs| async move {
            Err::<String, _>(Error::Protocol("boom reading /srv/secret/db.sqlite".into()))
        })
        .tool("refuse", "A tool error of the handler's words", |_: Ctx, _: NoArgs| async move {
            Err::<String, _>(Error::tool("not today"))
        })
        .text_resource(Resource::new("test://readme", "readme").with_mime_type("text/plain"), "read me")
        .resource(Resource::new("test://blob", "blob"), |_: Ctx, r: ResourceRequest| async move {
            Ok(vec![ResourceContents::Blob(BlobResourceContents {
                uri: r.uri,
                mime_type: Some("application/octet-stream".into()),
                blob: "AAEC".into(),
                meta: None,
            })])
        })
        .resource_template(ResourceTemplate::new("test://notes/{id}", "note"), note)
        .resource_template(ResourceTemplate::new("file:///{+path}", "file"), note)
        .complete_template_variable("test://notes/{id}", "id", Completer::values(["1", "10", "2"]))
        .prompt(
            Prompt::new("greet").with_arguments(vec![
                PromptArgument::new("name").required(),
                PromptArgument::new("style"),
            ]),
            |_: Ctx, args| async move {
                let text = format!(
                    "Greet {} in a {} way.",
                    args.get("name").map_or("", String::as_str),
                    args.get("style").map_or("plain", String::as_str)
                );
                Ok(GetPromptResult::new(vec![
                    PromptMessage::user(text),
                    PromptMessage::assistant("Sure.".to_owned()),
                ]))
            },
        )
        .complete_prompt_argument("greet", "style", Completer::values(["formal", "friendly", "casual"]))
        .complete_prompt_argument(
            "greet",
            "name",
            Completer::new(|req: CompletionRequest| async move {
                let style = req.context.get("style").cloned().unwrap_or_default();
                Ok(vec![format!("{}{}", req.value, style)])
            }),
        )
        .build()
        .expect("the fixture is valid");
    (server, probe)
}

fn sampling_request() -> CreateMessageParams {
    CreateMessageParams {
        messages: vec![SamplingMessage::user("Summarize")],
        max_tokens: 50,
        ..CreateMessageParams::default()
    }
}

async fn note(_: Ctx, r: ResourceRequest) -> barrel_mcp::Result<Vec<ResourceContents>> {
    let vars: Vec<String> = r
        .variables
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    Ok(vec![ResourceContents::Text(TextResourceContents {
        uri: r.uri,
        mime_type: Some("text/plain".into()),
        text: vars.join(","),
        meta: None,
    })])
}

fn every_content_type() -> Vec<ContentBlock> {
    let annotations = Annotations {
        audience: Some(vec![Role::User]),
        priority: Some(0.5),
        ..Annotations::default()
    };
    vec![
        ContentBlock::Text(TextContent {
            text: "text".into(),
            annotations: Some(annotations),
            meta: None,
        }),
        ContentBlock::Image(ImageContent {
            data: "aW1n".into(),
            mime_type: "image/png".into(),
            annotations: None,
            meta: None,
        }),
        ContentBlock::Audio(AudioContent {
            data: "YXVk".into(),
            mime_type: "audio/wav".into(),
            annotations: None,
            meta: None,
        }),
        ContentBlock::ResourceLink(ResourceLink {
            uri: "test://readme".into(),
            name: "readme".into(),
            ..ResourceLink::default()
        }),
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Text(TextResourceContents {
                uri: "test://readme".into(),
                mime_type: None,
                text: "read me".into(),
                meta: None,
            }),
            annotations: None,
            meta: None,
        }),
    ]
}
