//! A minimal MCP server over stdio: one typed tool, one resource, one prompt.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example stdio_server`, or point an MCP client
//! (Claude Desktop, the MCP Inspector, `barrel-mcp` later) at that command.

use barrel_mcp::server::{Ctx, Json, Server};
use barrel_mcp::types::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

/// The result of `add`.
#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let server = Server::builder()
        .name("example", "0.1.0")
        .tool(
            "add",
            "Add two integers",
            |_: Ctx, args: AddArgs| async move {
                Ok(Json(Sum {
                    sum: args.a + args.b,
                }))
            },
        )
        .text_resource(
            Resource::new("example://hello", "hello"),
            "Hello from barrel-mcp!",
        )
        .prompt(
            Prompt::new("haiku").with_arguments(vec![PromptArgument::new("topic").required()]),
            |_: Ctx, args| async move {
                let topic = args.get("topic").cloned().unwrap_or_default();
                let text = format!("Write a haiku about {topic}.");
                Ok(GetPromptResult::new(vec![PromptMessage::user(text)]))
            },
        )
        .build()?;
    server.serve_stdio().await
}
