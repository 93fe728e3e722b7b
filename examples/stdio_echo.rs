//! The smallest stdio server: one tool, `echo`, which sends its `message` back. It serves until
//! stdin closes.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example stdio_echo` and type newline-delimited
//! JSON-RPC (`initialize`, `notifications/initialized`, then `tools/call` of `echo`), or point an
//! MCP client at that command. `bench/run` uses its release build for the stdio and cold-start
//! cases of the load benchmark, facing `rmcp-echo --stdio`.
//!
//! It keeps the system allocator, as a stdio server a host starts per client should: mimalloc
//! (which `http_echo` and the CLI link) costs its threads about 130 page faults more at
//! start-up (docs/ARCHITECTURE.md, "The binaries' allocator").

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
