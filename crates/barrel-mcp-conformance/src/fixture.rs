//! The fixture the official conformance suite expects of a server under test.
//!
//! The suite (`@modelcontextprotocol/conformance`, server mode) calls tools, reads resources and
//! gets prompts by fixed names and checks the answers. This module serves all of them, for the
//! sessionful revisions (2025-06-18, 2025-11-25) and for the stateless 2026-07-28 scenarios
//! (input rounds, list-change triggers, header-mapped parameters), and the skills extension
//! (SEP-2640) scenarios. Everything goes through the
//! public server API; nothing here knows which transport carries a request.
//!
//! The fixtures are tables, one builder call per tool, resource or prompt, each matching a
//! scenario's expectations word for word; they are split by kind into the submodules.

mod catalog;
mod content;
mod interaction;
pub mod replicated;
mod skills;
mod stateless;
mod tasks;

use std::time::Duration;

use barrel_mcp::server::{Completer, Ctx, ResourceRequest, Server, ServerBuilder, ToolHandler};
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
    builder().build()
}

/// The fixture server's builder, for a caller that adds to it (a task store, keys) before
/// building.
pub fn builder() -> ServerBuilder {
    builder_on(None)
}

/// The fixture server's builder for one node of a service whose nodes share `bus`: its
/// run-time changes are made on every node (see [`replicated::follow`]).
pub fn builder_on(bus: Option<std::sync::Arc<dyn barrel_mcp::store::Bus>>) -> ServerBuilder {
    let builder =
        Server::builder().name("barrel-mcp-conformance-server", env!("CARGO_PKG_VERSION"));
    let builder = content::content_tools(builder);
    let builder = interaction::interaction_tools(builder);
    let builder = stateless::stateless_tools(builder, replicated::Peers::new(bus));
    let builder = tasks::task_tools(builder);
    let builder = catalog::resources(builder);
    let builder = catalog::prompts(builder);
    skills::skills(builder)
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
