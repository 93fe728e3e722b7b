//! A server with every primitive over Streamable HTTP: a typed tool with structured output, a
//! tool that reports progress and logs, one that asks the user (elicitation), a resource, a
//! template with completion of its variable, and a typed prompt.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example everything_http -- 127.0.0.1:8080`,
//! then point any MCP client at `http://127.0.0.1:8080/mcp` (the `client` example, the MCP
//! Inspector, `barrel-mcp tools --url …`).

use std::time::Duration;

use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::server::{Completer, Ctx, Json, Server};
use barrel_mcp::types::{ElicitRequestParams, LoggingLevel, Resource, ResourceTemplate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

/// The result of `add`.
#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

/// The arguments of `countdown`.
#[derive(Deserialize, JsonSchema)]
struct CountdownArgs {
    /// How many steps.
    steps: u32,
}

/// The arguments of a tool that takes none.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// A note's template variables.
#[derive(Deserialize)]
struct Note {
    id: u32,
}

/// The arguments of the `summarize` prompt.
#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// What to summarize.
    text: String,
    /// How many sentences (default 3).
    sentences: Option<String>,
}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let server = Server::builder()
        .name("everything", "0.1.0")
        .instructions("Try `add`, `countdown` and `greet`, read `demo://readme`.")
        .tool(
            "add",
            "Add two numbers",
            |_: Ctx, args: AddArgs| async move {
                Ok(Json(Sum {
                    sum: args.a + args.b,
                }))
            },
        )
        .tool(
            "countdown",
            "Counts down, reporting progress and logging each step",
            |ctx: Ctx, args: CountdownArgs| async move {
                for step in 0..args.steps {
                    if ctx.is_cancelled() {
                        return Ok("cancelled".to_owned());
                    }
                    let left = args.steps - step;
                    ctx.progress(f64::from(step), Some(f64::from(args.steps)), None)
                        .await?;
                    ctx.log(LoggingLevel::Info, json!({ "left": left })).await?;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok("lift-off".to_owned())
            },
        )
        .tool(
            "greet",
            "Asks your name, then greets you",
            |ctx: Ctx, _: NoArgs| async move {
                let schema = json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "title": "Your name" } },
                    "required": ["name"]
                });
                let answer = ctx
                    .elicit(ElicitRequestParams::form(
                        "What is your name?",
                        schema.as_object().cloned().unwrap_or_default(),
                    ))
                    .await?;
                let name = answer
                    .content
                    .as_ref()
                    .and_then(|content| content.get("name"))
                    .and_then(|name| name.as_str())
                    .unwrap_or("stranger")
                    .to_owned();
                Ok(format!("Hello, {name}!"))
            },
        )
        .text_resource(Resource::new("demo://readme", "readme"), "# everything\n")
        .typed_template(
            ResourceTemplate::new("demo://notes/{id}", "note").with_mime_type("text/plain"),
            |_: Ctx, note: Note| async move { Ok(format!("Note number {}", note.id)) },
        )
        .complete_template_variable(
            "demo://notes/{id}",
            "id",
            Completer::values(["1", "2", "3"]),
        )
        .typed_prompt(
            "summarize",
            "Summarize a text",
            |_: Ctx, args: Summarize| async move {
                let sentences = args.sentences.unwrap_or_else(|| "3".to_owned());
                Ok(format!(
                    "Summarize in {sentences} sentences:\n\n{}",
                    args.text
                ))
            },
        )
        .build()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("serving every primitive on http://{addr}/mcp");
    let http = StreamableHttp::new(server, HttpConfig::default());
    barrel_mcp::http::serve(listener, http, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
