//! The demo server: a small but realistic surface that exercises every server feature.
//!
//! Tools `echo`, `add` (structured output), `countdown` (progress; a task too, in 2025-11-25
//! sessions), `log` (logging), `ask_name`
//! (elicitation), `summarize` (sampling), `get_roots` (roots), `logo` (image content) and
//! `fail` (a tool error); resources `demo://readme` and `demo://logo.png`; the template
//! `demo://notes/{id}`; prompts `greet` and `code_review`; completions for `greet.style` and
//! the template's `id`; and the skill `git-workflow` (SEP-2640 skills extension), embedded in
//! the binary from `skills/` of this crate, or the skills of a folder given with
//! `serve --skills DIR`.

use std::time::Duration;

use barrel_mcp::server::{Completer, Ctx, Json, ResourceRequest, Server};
use barrel_mcp::skills::SkillsSource;
use barrel_mcp::types::{
    BlobResourceContents, CallToolResult, ContentBlock, CreateMessageParams, ElicitAction,
    ElicitRequestParams, GetPromptResult, LoggingLevel, Prompt, PromptArgument, PromptMessage,
    Resource, ResourceContents, ResourceTemplate, SamplingMessage, TextResourceContents, Tool,
    ToolExecution,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A 1x1 transparent PNG.
const LOGO_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

const README: &str = "# barrel-mcp demo\n\nThis server shows what barrel-mcp serves: tools with \
progress, logging, elicitation and sampling; resources and a resource template; prompts with \
completions.\n";

#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Sum {
    /// a + b.
    sum: f64,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct CountdownArgs {
    /// How many steps to count (1 to 10).
    #[schemars(range(min = 1, max = 10))]
    steps: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct LogArgs {
    /// The message to log.
    message: String,
    /// The level to log it at: debug, info, notice, warning, error, critical, alert or
    /// emergency (default info).
    #[serde(default)]
    level: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarize.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

/// Builds the demo server, with the task store and `requestState` keys of `node`.
pub(crate) fn server(
    skills: Option<&std::path::Path>,
    node: crate::serve_node::Node,
) -> barrel_mcp::Result<Server> {
    let skills = match skills {
        Some(folder) => SkillsSource::folder(folder),
        None => demo_skills(),
    };
    node.configure(Server::builder())
        .skills(skills)
        .name("barrel-mcp-demo", env!("CARGO_PKG_VERSION"))
        .instructions("A demo server: try the echo, add and countdown tools, and the greet prompt.")
        .tool("echo", "Send the message back", |_: Ctx, args: EchoArgs| async move {
            Ok(args.message)
        })
        .tool("add", "Add two numbers", |_: Ctx, args: AddArgs| async move {
            Ok(Json(Sum { sum: args.a + args.b }))
        })
        .tool_with(
            Tool {
                name: "countdown".into(),
                description: Some(
                    "Count down, reporting progress; may run as a task".into(),
                ),
                execution: Some(ToolExecution {
                    task_support: Some("optional".into()),
                }),
                ..Tool::default()
            },
            countdown,
        )
        .tool("log", "Send a log message to the client", |ctx: Ctx, args: LogArgs| async move {
            let level = match args.level {
                Some(level) => serde_json::from_value(json!(level))?,
                None => LoggingLevel::Info,
            };
            ctx.log_with_logger(level, Some("demo"), args.message).await?;
            Ok("logged")
        })
        .tool("ask_name", "Ask the user for their name", ask_name)
        .tool("summarize", "Summarize a text with the client's model", summarize)
        .tool("get_roots", "List the client's roots", |ctx: Ctx, _: NoArgs| async move {
            let roots = ctx.list_roots().await?;
            let uris: Vec<String> = roots.roots.into_iter().map(|r| r.uri).collect();
            Ok(uris.join("\n"))
        })
        .tool("logo", "Return the logo as an image", |_: Ctx, _: NoArgs| async move {
            Ok(ContentBlock::image(LOGO_PNG_BASE64, "image/png"))
        })
        .tool("fail", "A tool that always fails", |_: Ctx, _: NoArgs| async move {
            Ok(CallToolResult::error("this tool always fails"))
        })
        .text_resource(
            Resource::new("demo://readme", "readme").with_mime_type("text/markdown"),
            README,
        )
        .resource(
            Resource::new("demo://logo.png", "logo").with_mime_type("image/png"),
            |_: Ctx, req: ResourceRequest| async move {
                Ok(vec![ResourceContents::Blob(BlobResourceContents {
                    uri: req.uri,
                    mime_type: Some("image/png".into()),
                    blob: LOGO_PNG_BASE64.into(),
                    meta: None,
                })])
            },
        )
        .resource_template(
            ResourceTemplate::new("demo://notes/{id}", "note").with_mime_type("text/plain"),
            |_: Ctx, req: ResourceRequest| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                Ok(vec![ResourceContents::Text(TextResourceContents {
                    uri: req.uri,
                    mime_type: Some("text/plain".into()),
                    text: format!("Note {id}"),
                    meta: None,
                })])
            },
        )
        .complete_template_variable(
            "demo://notes/{id}",
            "id",
            Completer::values(["1", "2", "3", "10", "11", "20"]),
        )
        .prompt(
            Prompt::new("greet")
                .with_description("Greet someone")
                .with_arguments(vec![
                    PromptArgument::new("name").required(),
                    PromptArgument::new("style"),
                ]),
            |_: Ctx, args| async move {
                let name = args.get("name").cloned().unwrap_or_default();
                let style = args.get("style").map_or("friendly", String::as_str);
                let text = format!("Please greet {name} in a {style} way.");
                Ok(GetPromptResult::new(vec![PromptMessage::user(text)]))
            },
        )
        .complete_prompt_argument("greet", "style", Completer::values(["formal", "casual", "friendly"]))
        .prompt(
            Prompt::new("code_review")
                .with_description("Review a piece of code")
                .with_arguments(vec![PromptArgument::new("code").required()]),
            |_: Ctx, args| async move {
                let code = args.get("code").cloned().unwrap_or_default();
                Ok(GetPromptResult::new(vec![
                    PromptMessage::user("Please review this code:".to_owned()),
                    PromptMessage::user(code),
                ]))
            },
        )
        .build()
}

async fn countdown(ctx: Ctx, args: CountdownArgs) -> barrel_mcp::Result<&'static str> {
    let steps = args.steps.clamp(1, 10);
    for step in 1..=steps {
        tokio::select! {
            () = ctx.cancelled() => return Err(barrel_mcp::Error::Cancelled),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let message = format!("step {step} of {steps}");
        ctx.progress(f64::from(step), Some(f64::from(steps)), Some(&message))
            .await?;
    }
    Ok("done")
}

async fn ask_name(ctx: Ctx, _: NoArgs) -> barrel_mcp::Result<String> {
    let schema = json!({
        "type": "object",
        "properties": { "name": { "type": "string", "title": "Your name" } },
        "required": ["name"]
    });
    let schema = schema.as_object().cloned().unwrap_or_default();
    let answer = ctx
        .elicit(ElicitRequestParams::form("What is your name?", schema))
        .await?;
    let name = answer
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(|n| n.as_str())
        .filter(|_| answer.action == ElicitAction::Accept);
    Ok(match name {
        Some(name) => format!("Hello, {name}!"),
        None => "No name given".to_owned(),
    })
}

async fn summarize(ctx: Ctx, args: SummarizeArgs) -> barrel_mcp::Result<String> {
    let params = CreateMessageParams {
        messages: vec![SamplingMessage::user(format!("Summarize: {}", args.text))],
        max_tokens: 200,
        ..CreateMessageParams::default()
    };
    let answer = ctx.create_message(params).await?;
    Ok(format!(
        "Summary: {}",
        answer.text_content().unwrap_or_default()
    ))
}

/// The demo's skill, embedded from `skills/` of this crate.
fn demo_skills() -> SkillsSource {
    SkillsSource::files()
        .file(
            "git-workflow/SKILL.md",
            include_str!("../skills/git-workflow/SKILL.md"),
        )
        .file(
            "git-workflow/references/commit-messages.md",
            include_str!("../skills/git-workflow/references/commit-messages.md"),
        )
}
