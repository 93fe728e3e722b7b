//! The smallest stdio server: one tool, `echo`, which sends its `message` back. It serves until
//! stdin closes.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example stdio_echo` and type newline-delimited
//! JSON-RPC (`initialize`, `notifications/initialized`, then `tools/call` of `echo`), or point an
//! MCP client at that command. `bench/run` uses its release build for the stdio and cold-start
//! cases of the load benchmark, facing `rmcp-echo --stdio`.

use barrel_mcp::peer::PeerConfig;
use barrel_mcp::server::{Ctx, Server, ServerConfig};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to send back.
    message: String,
}

/// The allocator barrel-mcp's binaries ship with (docs/ARCHITECTURE.md, "The binaries'
/// allocator"): the benchmark measures what the CLI runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    // The benchmark writes 10,000 calls at once: room for all of them in flight (the default,
    // 1024, answers the rest with "server busy").
    let peer = PeerConfig {
        max_inbound_in_flight: 16_384,
        ..PeerConfig::default()
    };
    Server::builder()
        .name("stdio-echo", "0.1.0")
        .config(ServerConfig {
            peer,
            ..ServerConfig::default()
        })
        .tool(
            "echo",
            "Send the message back",
            |_: Ctx, args: EchoArgs| async move { Ok(args.message) },
        )
        .build()?
        .serve_stdio()
        .await
}
