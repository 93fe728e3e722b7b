//! The fixture the official conformance suite expects of a server under test.
//!
//! The suite (`@modelcontextprotocol/conformance`, server mode) calls tools, reads resources and
//! gets prompts by fixed names and checks the answers. This module serves all of them, for the
//! sessionful revisions (2025-06-18, 2025-11-25) and for the stateless 2026-07-28 scenarios
//! (input rounds, list-change triggers, header-mapped parameters). Everything goes through the
//! public server API; nothing here knows which transport carries a request.
//!
//! The file is long on purpose: it is a table of the suite's fixtures, one builder call per tool,
//! resource or prompt, each matching a scenario's expectations word for word.

use std::time::Duration;

use barrel_mcp::server::{Completer, Ctx, ResourceRequest, Server, ToolHandler};
use barrel_mcp::types::{
    CallToolResult, ContentBlock, CreateMessageParams, ElicitRequestParams, ElicitResult,
    GetPromptResult, JsonObject, LoggingLevel, Prompt, PromptArgument, PromptMessage, Resource,
    ResourceContents, ResourceTemplate, Role, SamplingMessage, Tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1x1 red PNG, base64: the image every reference fixture returns.
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file, base64: the audio every reference fixture returns.
pub const SILENT_WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The resource the suite subscribes to; the server reports it updated every few seconds.
pub const WATCHED_RESOURCE: &str = "test://watched-resource";

/// How often [`WATCHED_RESOURCE`] is reported updated.
pub const WATCHED_RESOURCE_PERIOD: Duration = Duration::from_secs(3);

/// How long after start the dynamic tool, resource and prompt appear.
pub const DYNAMIC_ITEMS_DELAY: Duration = Duration::from_secs(2);

/// The pause between the steps of the logging and progress tools.
const STEP_PAUSE: Duration = Duration::from_millis(50);

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

/// Builds the conformance fixture server.
pub fn server() -> barrel_mcp::Result<Server> {
    let builder =
        Server::builder().name("barrel-mcp-conformance-server", env!("CARGO_PKG_VERSION"));
    let builder = content_tools(builder);
    let builder = interaction_tools(builder);
    let builder = stateless_tools(builder);
    let builder = resources(builder);
    let builder = prompts(builder);
    builder.build()
}

/// Starts what the fixture does on its own: the dynamic tool, resource and prompt appear after
/// [`DYNAMIC_ITEMS_DELAY`], and [`WATCHED_RESOURCE`] is reported updated every
/// [`WATCHED_RESOURCE_PERIOD`]. Needs a Tokio runtime; the tasks run until the runtime stops.
pub fn spawn_background(server: &Server) {
    let dynamic = server.clone();
    tokio::spawn(async move {
        tokio::time::sleep(DYNAMIC_ITEMS_DELAY).await;
        add_dynamic_items(&dynamic);
    });
    let watched = server.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(WATCHED_RESOURCE_PERIOD);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            watched.notify_resource_updated(WATCHED_RESOURCE);
        }
    });
}

/// Adds the dynamic tool, resource and prompt (what [`spawn_background`] does after a delay).
pub fn add_dynamic_items(server: &Server) {
    let tool = Tool::new("test_dynamic_tool", Tool::empty_input_schema())
        .with_description("A tool added while the server runs");
    if let Err(e) = server.add_tool(
        tool,
        ToolHandler::raw(
            |_: Ctx, _: JsonObject| async move { Ok("This tool was added dynamically.") },
        ),
    ) {
        tracing::error!("cannot add the dynamic tool: {e}");
    }
    server.add_resource(
        Resource::new("test://dynamic-resource", "dynamic-resource")
            .with_title("Dynamic Resource")
            .with_description("A resource added while the server runs")
            .with_mime_type("text/plain"),
        barrel_mcp::server::ResourceHandler::new(|_: Ctx, req: ResourceRequest| async move {
            Ok(vec![
                ResourceContents::text(req.uri, "This resource was added dynamically.")
                    .with_mime_type("text/plain"),
            ])
        }),
    );
    server.add_prompt(
        Prompt::new("test_dynamic_prompt").with_description("A prompt added while the server runs"),
        barrel_mcp::server::PromptHandler::new(|_: Ctx, _| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::user(
                "This prompt was added dynamically.",
            )]))
        }),
    );
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn embedded_text(uri: &str, mime_type: &str, text: &str) -> ContentBlock {
    ContentBlock::resource(ResourceContents::text(uri, text).with_mime_type(mime_type))
}

/// Tools that return each kind of content, or an error result.
fn content_tools(builder: barrel_mcp::server::ServerBuilder) -> barrel_mcp::server::ServerBuilder {
    builder
        .tool(
            "test_simple_text",
            "Returns a simple text response",
            |_: Ctx, _: NoArgs| async move { Ok("This is a simple text response for testing.") },
        )
        .tool(
            "test_image_content",
            "Returns a base64-encoded PNG image",
            |_: Ctx, _: NoArgs| async move { Ok(ContentBlock::image(RED_PIXEL_PNG, "image/png")) },
        )
        .tool(
            "test_audio_content",
            "Returns a base64-encoded WAV clip",
            |_: Ctx, _: NoArgs| async move { Ok(ContentBlock::audio(SILENT_WAV, "audio/wav")) },
        )
        .tool(
            "test_embedded_resource",
            "Returns an embedded text resource",
            |_: Ctx, _: NoArgs| async move {
                Ok(embedded_text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))
            },
        )
        .tool(
            "test_multiple_content_types",
            "Returns text, an image and an embedded resource",
            |_: Ctx, _: NoArgs| async move {
                Ok(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(RED_PIXEL_PNG, "image/png"),
                    embedded_text(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    ),
                ])
            },
        )
        .tool(
            "test_error_handling",
            "Always fails with a tool error result",
            |_: Ctx, _: NoArgs| async move {
                Ok(CallToolResult::error(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )
        .raw_tool(
            Tool::new("json_schema_2020_12_tool", json_schema_2020_12_input()).with_description(
                "Declares its input with JSON Schema 2020-12 ($schema, $defs, $ref)",
            ),
            ToolHandler::raw(|_: Ctx, args: JsonObject| async move {
                Ok(format!(
                    "JSON Schema 2020-12 tool called with: {}",
                    Value::Object(args)
                ))
            }),
        )
        .raw_tool(
            Tool::new("test_header_param", header_param_input()).with_description(
                "Echoes a parameter that is mirrored in the Mcp-Param-Region HTTP header",
            ),
            ToolHandler::raw(|_: Ctx, args: JsonObject| async move {
                let region = args
                    .get("region")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Ok(format!("Region: {region}"))
            }),
        )
}

/// The input schema the `json-schema-2020-12` scenario looks for in `tools/list`: `$schema`,
/// `$defs` (with an `$anchor`), `$ref`, `additionalProperties` (SEP-1613), and the composition
/// and conditional keywords of SEP-2106 (`allOf`/`anyOf`, `if`/`then`/`else`).
fn json_schema_2020_12_input() -> JsonObject {
    object(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"]
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    }))
}

/// A string parameter mapped to an HTTP header (`x-mcp-header`), for the 2026-07-28 custom
/// header validation scenario.
fn header_param_input() -> JsonObject {
    object(json!({
        "type": "object",
        "properties": {
            "region": {
                "type": "string",
                "description": "A region name, also sent as the Mcp-Param-Region header",
                "x-mcp-header": "Region"
            }
        },
        "required": ["region"]
    }))
}

/// Tools that talk back to the client: logging, progress, sampling, elicitation.
fn interaction_tools(
    builder: barrel_mcp::server::ServerBuilder,
) -> barrel_mcp::server::ServerBuilder {
    builder
        .tool(
            "test_tool_with_logging",
            "Sends three log messages while it runs",
            |ctx: Ctx, _: NoArgs| async move {
                log_three_steps(&ctx).await?;
                Ok("Tool with logging executed successfully")
            },
        )
        .tool(
            "test_logging_tool",
            "Sends log messages (only when the request asks for a log level)",
            |ctx: Ctx, _: NoArgs| async move {
                log_three_steps(&ctx).await?;
                Ok("Logging tool finished")
            },
        )
        .tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100, then returns the progress token",
            |ctx: Ctx, _: NoArgs| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP_PAUSE).await;
                    }
                    let message = format!("Completed step {step} of 100");
                    ctx.progress(step, Some(100.0), Some(&message)).await?;
                }
                Ok(match ctx.meta().get("progressToken") {
                    Some(Value::String(token)) => token.clone(),
                    Some(token) => token.to_string(),
                    None => "No progress token provided".to_owned(),
                })
            },
        )
        .tool(
            "test_reconnection",
            "Answers after a short pause (SSE resumption test)",
            |_: Ctx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok("Reconnection test completed successfully")
            },
        )
        .tool(
            "test_sampling",
            "Asks the client's model to answer the prompt",
            |ctx: Ctx, args: SamplingArgs| async move {
                let answer = ctx
                    .create_message(CreateMessageParams::new(
                        vec![SamplingMessage::user(args.prompt)],
                        100,
                    ))
                    .await?;
                Ok(format!(
                    "LLM response: {}",
                    answer.text_content().unwrap_or_default()
                ))
            },
        )
        .tool(
            "test_elicitation",
            "Asks the user for a username and an email address",
            |ctx: Ctx, args: ElicitationArgs| async move {
                let schema = object(json!({
                    "type": "object",
                    "properties": {
                        "username": { "type": "string", "description": "The user's name" },
                        "email": { "type": "string", "description": "The user's email address" }
                    },
                    "required": ["username", "email"]
                }));
                let answer = ctx
                    .elicit(ElicitRequestParams::form(args.message, schema))
                    .await?;
                Ok(describe_answer("User response", &answer))
            },
        )
        .tool(
            "test_elicitation_sep1034_defaults",
            "Asks for a form whose fields all have defaults (SEP-1034)",
            |ctx: Ctx, _: NoArgs| async move {
                let answer = ctx
                    .elicit(ElicitRequestParams::form(
                        "Please review and update the form fields with defaults",
                        sep1034_schema(),
                    ))
                    .await?;
                Ok(describe_answer("Elicitation completed", &answer))
            },
        )
        .tool(
            "test_elicitation_sep1330_enums",
            "Asks for a form with every kind of enum field (SEP-1330)",
            |ctx: Ctx, _: NoArgs| async move {
                let answer = ctx
                    .elicit(ElicitRequestParams::form(
                        "Please choose among the enumerated options",
                        sep1330_schema(),
                    ))
                    .await?;
                Ok(describe_answer("Elicitation completed", &answer))
            },
        )
}

async fn log_three_steps(ctx: &Ctx) -> barrel_mcp::Result<()> {
    let steps = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (i, step) in steps.into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP_PAUSE).await;
        }
        ctx.log(LoggingLevel::Info, step).await?;
    }
    Ok(())
}

fn describe_answer(prefix: &str, answer: &ElicitResult) -> String {
    let action = serde_json::to_value(answer.action).unwrap_or(Value::Null);
    let content = answer.content.clone().map_or(Value::Null, Value::Object);
    format!(
        "{prefix}: action={}, content={content}",
        action.as_str().unwrap_or("unknown")
    )
}

fn sep1034_schema() -> JsonObject {
    object(json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    }))
}

fn sep1330_schema() -> JsonObject {
    object(json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Pick one (plain values)",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Pick one (titled values)",
                "oneOf": [
                    { "const": "value1", "title": "First Option" },
                    { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Pick one (legacy enumNames)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Pick several (plain values)",
                "minItems": 1,
                "maxItems": 3,
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "description": "Pick several (titled values)",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ]
                }
            }
        },
        "required": []
    }))
}

fn name_form(message: &str, field: &str) -> ElicitRequestParams {
    let schema = object(json!({
        "type": "object",
        "properties": { field: { "type": "string" } },
        "required": [field]
    }));
    ElicitRequestParams::form(message, schema)
}

fn answered_field(answer: &ElicitResult, field: &str) -> String {
    answer
        .content
        .as_ref()
        .and_then(|c| c.get(field))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

fn capital_question() -> CreateMessageParams {
    CreateMessageParams::new(
        vec![SamplingMessage::user("What is the capital of France?")],
        100,
    )
}

/// Tools of the 2026-07-28 scenarios: input rounds (SEP-2322), capability checks, list-change
/// triggers. They work in a session too, where each question is a request to the client.
fn stateless_tools(
    builder: barrel_mcp::server::ServerBuilder,
) -> barrel_mcp::server::ServerBuilder {
    builder
        .tool(
            "test_input_required_result_elicitation",
            "Asks the user for a name, then greets them",
            |ctx: Ctx, _: NoArgs| async move {
                // The suite addresses this question by the key `user_name`.
                let answer = ctx
                    .input_key("user_name")
                    .elicit(name_form("What is your name?", "name"))
                    .await?;
                Ok(format!("Hello, {}!", answered_field(&answer, "name")))
            },
        )
        .tool(
            "test_input_required_result_sampling",
            "Asks the client's model a question",
            |ctx: Ctx, _: NoArgs| async move {
                let answer = ctx.create_message(capital_question()).await?;
                Ok(format!(
                    "The model answered: {}",
                    answer.text_content().unwrap_or_default()
                ))
            },
        )
        .tool(
            "test_input_required_result_list_roots",
            "Asks the client for its roots",
            |ctx: Ctx, _: NoArgs| async move {
                let roots = ctx.list_roots().await?;
                let uris: Vec<String> = roots.roots.into_iter().map(|r| r.uri).collect();
                Ok(format!("Client roots: {}", uris.join(", ")))
            },
        )
        .tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation; the answer travels in the sealed request state",
            |ctx: Ctx, _: NoArgs| async move {
                let schema = object(json!({
                    "type": "object",
                    "properties": { "ok": { "type": "boolean" } },
                    "required": ["ok"]
                }));
                ctx.elicit(ElicitRequestParams::form("Please confirm", schema))
                    .await?;
                Ok("state-ok: the request state was verified")
            },
        )
        .tool(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a model answer and the roots in one round",
            |ctx: Ctx, _: NoArgs| async move {
                // Ask all three before failing, so one round carries every question.
                let named = ctx.elicit(name_form("What is your name?", "name")).await;
                let sampled = ctx.create_message(capital_question()).await;
                let roots = ctx.list_roots().await;
                let (named, sampled, roots) = (named?, sampled?, roots?);
                Ok(format!(
                    "name={}, model={}, roots={}",
                    answered_field(&named, "name"),
                    sampled.text_content().unwrap_or_default(),
                    roots.roots.len()
                ))
            },
        )
        .tool(
            "test_input_required_result_multi_round",
            "Asks two questions, one round after the other",
            |ctx: Ctx, _: NoArgs| async move {
                let first = ctx.elicit(name_form("What is your name?", "name")).await?;
                let second = ctx
                    .elicit(name_form("What is your favourite colour?", "color"))
                    .await?;
                Ok(format!(
                    "{} likes {}",
                    answered_field(&first, "name"),
                    answered_field(&second, "color")
                ))
            },
        )
        .tool(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation; a tampered request state is refused",
            |ctx: Ctx, _: NoArgs| async move {
                let schema = object(json!({
                    "type": "object",
                    "properties": { "ok": { "type": "boolean" } },
                    "required": ["ok"]
                }));
                ctx.elicit(ElicitRequestParams::form("Please confirm", schema))
                    .await?;
                Ok("confirmed")
            },
        )
        .tool(
            "test_input_required_result_capabilities",
            "Asks only for the kinds of input the client declared",
            |ctx: Ctx, _: NoArgs| async move {
                let caps = ctx.client_capabilities().clone();
                let mut parts = Vec::new();
                let sampled = if caps.supports_sampling() {
                    Some(ctx.create_message(capital_question()).await)
                } else {
                    None
                };
                let named = if caps.supports_form_elicitation() {
                    Some(ctx.elicit(name_form("What is your name?", "name")).await)
                } else {
                    None
                };
                if let Some(sampled) = sampled {
                    parts.push(format!(
                        "model={}",
                        sampled?.text_content().unwrap_or_default()
                    ));
                }
                if let Some(named) = named {
                    parts.push(format!("name={}", answered_field(&named?, "name")));
                }
                if parts.is_empty() {
                    parts.push("the client declared neither sampling nor elicitation".to_owned());
                }
                Ok(parts.join(", "))
            },
        )
        .tool(
            "test_missing_capability",
            "Needs sampling: refused when the client did not declare it",
            |ctx: Ctx, _: NoArgs| async move {
                let answer = ctx.create_message(capital_question()).await?;
                Ok(answer.text_content().unwrap_or_default())
            },
        )
        .tool(
            "test_streaming_elicitation",
            "Asks the user for a name (an input round in 2026-07-28)",
            |ctx: Ctx, _: NoArgs| async move {
                let answer = ctx.elicit(name_form("What is your name?", "name")).await?;
                Ok(format!("Hello, {}!", answered_field(&answer, "name")))
            },
        )
        .tool(
            "test_trigger_tool_change",
            "Changes the tool list (adds or replaces a tool)",
            |ctx: Ctx, _: NoArgs| async move {
                let tool = Tool::new("test_triggered_tool", Tool::empty_input_schema())
                    .with_description("A tool added by test_trigger_tool_change");
                ctx.server().add_tool(
                    tool,
                    ToolHandler::raw(|_: Ctx, _: JsonObject| async move { Ok("triggered") }),
                )?;
                Ok("The tool list changed")
            },
        )
        .tool(
            "test_trigger_prompt_change",
            "Changes the prompt list (adds or replaces a prompt)",
            |ctx: Ctx, _: NoArgs| async move {
                ctx.server().add_prompt(
                    Prompt::new("test_triggered_prompt")
                        .with_description("A prompt added by test_trigger_prompt_change"),
                    barrel_mcp::server::PromptHandler::new(|_: Ctx, _| async move {
                        Ok(GetPromptResult::new(vec![PromptMessage::user("triggered")]))
                    }),
                );
                Ok("The prompt list changed")
            },
        )
}

fn resources(builder: barrel_mcp::server::ServerBuilder) -> barrel_mcp::server::ServerBuilder {
    builder
        .text_resource(
            Resource::new("test://static-text", "static-text")
                .with_title("Static Text Resource")
                .with_description("A fixed text resource")
                .with_mime_type("text/plain"),
            "This is the content of the static text resource.",
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .with_title("Static Binary Resource")
                .with_description("A fixed binary resource (a PNG image)")
                .with_mime_type("image/png"),
            |_: Ctx, req: ResourceRequest| async move {
                Ok(vec![
                    ResourceContents::blob(req.uri, RED_PIXEL_PNG).with_mime_type("image/png"),
                ])
            },
        )
        .text_resource(
            Resource::new(WATCHED_RESOURCE, "watched-resource")
                .with_title("Watched Resource")
                .with_description("A resource reported updated every few seconds")
                .with_mime_type("text/plain"),
            "Watched resource content",
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template")
                .with_title("Resource Template")
                .with_description("A resource template with parameter substitution")
                .with_mime_type("application/json"),
            |_: Ctx, req: ResourceRequest| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                let id_json = Value::String(id.clone());
                let data = Value::String(format!("Data for ID: {id}"));
                let text = format!(r#"{{"id":{id_json},"templateTest":true,"data":{data}}}"#);
                Ok(vec![
                    ResourceContents::text(req.uri, text).with_mime_type("application/json"),
                ])
            },
        )
        .complete_template_variable(
            "test://template/{id}/data",
            "id",
            Completer::values(["1", "123", "42"]),
        )
}

fn prompts(builder: barrel_mcp::server::ServerBuilder) -> barrel_mcp::server::ServerBuilder {
    builder
        .prompt(
            Prompt::new("test_simple_prompt").with_description("A prompt without arguments"),
            |_: Ctx, _| async move {
                Ok(GetPromptResult::new(vec![PromptMessage::user(
                    "This is a simple prompt for testing.",
                )]))
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .with_description("A prompt with two required arguments")
                .with_arguments(vec![
                    described_argument("arg1", "First test argument"),
                    described_argument("arg2", "Second test argument"),
                ]),
            |_: Ctx, args| async move {
                let arg1 = args.get("arg1").map_or("", String::as_str);
                let arg2 = args.get("arg2").map_or("", String::as_str);
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!(
                    "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                ))]))
            },
        )
        .complete_prompt_argument(
            "test_prompt_with_arguments",
            "arg1",
            Completer::values(["test", "testing", "tested"]),
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .with_description("A prompt that embeds a resource")
                .with_arguments(vec![described_argument(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            |_: Ctx, args| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(
                        Role::User,
                        embedded_text(&uri, "text/plain", "Embedded resource content for testing."),
                    ),
                    PromptMessage::user("Please process the embedded resource above."),
                ]))
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_image").with_description("A prompt with an image"),
            |_: Ctx, _| async move {
                Ok(GetPromptResult::new(vec![
                    PromptMessage::new(Role::User, ContentBlock::image(RED_PIXEL_PNG, "image/png")),
                    PromptMessage::user("Please analyze the image above."),
                ]))
            },
        )
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .with_description("A prompt that first asks the user for context"),
            |ctx: Ctx, _| async move {
                let answer = ctx
                    .elicit(name_form("What context should the prompt use?", "context"))
                    .await?;
                Ok(GetPromptResult::new(vec![PromptMessage::user(format!(
                    "Use this context: {}",
                    answered_field(&answer, "context")
                ))]))
            },
        )
}

fn described_argument(name: &str, description: &str) -> PromptArgument {
    let mut argument = PromptArgument::new(name).required();
    argument.description = Some(description.to_owned());
    argument
}
