//! A session reached from a background task: the `watch` tool keeps its session's handle and a
//! background task sends that session (and no other) a log message every second until the
//! client leaves, while the tool has long since answered.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example background_notify -- 127.0.0.1:8080`,
//! connect a client to `http://127.0.0.1:8080/mcp` and call `watch`: a client that reads the
//! session's GET stream receives the ticks as `notifications/message`.

use std::time::Duration;

use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::LoggingLevel;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// The arguments of `watch`.
#[derive(Deserialize, JsonSchema)]
struct WatchArgs {
    /// How many ticks to send.
    ticks: u32,
}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let server = Server::builder()
        .name("background-notify", "0.1.0")
        .tool(
            "watch",
            "Sends this session a tick every second from the background",
            |ctx: Ctx, args: WatchArgs| async move {
                let Some(session) = ctx.session() else {
                    return Ok(
                        "2026-07-28 has no session: listen with subscriptions/listen instead"
                            .to_owned(),
                    );
                };
                tokio::spawn(async move {
                    for tick in 1..=args.ticks {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        // Fails with Error::Closed once the client left: stop then.
                        if session
                            .log(LoggingLevel::Info, json!({ "tick": tick }))
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                });
                Ok(format!(
                    "watching: {} ticks on the session's stream",
                    args.ticks
                ))
            },
        )
        .build()?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("serving on http://{addr}/mcp");
    let http = StreamableHttp::new(server, HttpConfig::default());
    barrel_mcp::http::serve(listener, http, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
