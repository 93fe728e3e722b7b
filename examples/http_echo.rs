//! A minimal Streamable HTTP server with one tool, `echo`: every revision (sessions and
//! 2026-07-28), JSON or SSE answers, the legacy HTTP+SSE endpoint, and the default limits.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example http_echo -- 127.0.0.1:8080`, then
//! point a client at `http://127.0.0.1:8080/mcp`. `bench/run` uses it as barrel-mcp's side of
//! the load benchmark, facing an rmcp server of the same shape.

use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::server::{Ctx, Server};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to send back.
    message: String,
}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let server = Server::builder()
        .name("http-echo", "0.1.0")
        .tool(
            "echo",
            "Send the message back",
            |_: Ctx, args: EchoArgs| async move { Ok(args.message) },
        )
        .build()?;
    let http = StreamableHttp::new(server, HttpConfig::default());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{addr}/mcp");
    barrel_mcp::http::serve(listener, http, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
