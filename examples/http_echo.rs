//! A minimal Streamable HTTP server with one tool, `echo` (and `echo_task`, the same as a task):
//! every revision (sessions and 2026-07-28), JSON or SSE answers, the legacy HTTP+SSE endpoint,
//! and the default limits.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example http_echo -- 127.0.0.1:8080`, then
//! point a client at `http://127.0.0.1:8080/mcp`. `bench/run` uses it as barrel-mcp's side of
//! the load benchmark, facing an rmcp server of the same shape.
//!
//! With `ECHO_AUTH_HS256=<secret of 32 bytes or more>` every request needs a bearer JWT signed
//! with that secret for the audience `http://ADDR/mcp` (`auth::server::JwtBearer`); with
//! `ECHO_AUTH_TOKEN_FILE=<path>` as well, a token valid for a day is written there. The
//! benchmark's `sse64-jwt` case measures what checking it costs, and `bench/cost task` what a
//! task costs against a plain stateless call.
//!
//! With `ECHO_SESSIONLESS=1` the sessionful revisions are served without sessions
//! (`HttpConfig::sessionless`): the benchmark's `sessionless64` case.
//!
//! With `ECHO_REDIS=<redis URL>` tasks and HTTP sessions are kept in that Redis (under the
//! prefix `echo`), as one node of a service (`SharedSessions::redis`, `RedisTaskStore::on`):
//! what `bench/redis-cost` measures.

use barrel_mcp::auth::jose::{Algorithm, SigningKey};
use barrel_mcp::auth::server::{AuthConfig, JwtBearer};
use barrel_mcp::http::{HttpConfig, SharedSessions, StreamableHttp};
use barrel_mcp::store::BusOptions;
use barrel_mcp::store::redis::{Redis, RedisOptions};
use barrel_mcp::task::RedisTaskStore;
use std::time::Duration;

use barrel_mcp::server::{Ctx, Server, ServerConfig};
use barrel_mcp::task::TaskLimits;
use barrel_mcp::types::{Tool, ToolExecution};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to send back.
    message: String,
}

/// Bearer JWTs (HS256) for this server's audience; writes a token to `ECHO_AUTH_TOKEN_FILE`.
fn jwt_auth(addr: &str, secret: &[u8]) -> barrel_mcp::Result<AuthConfig> {
    let audience = format!("http://{addr}/mcp");
    if let Ok(path) = std::env::var("ECHO_AUTH_TOKEN_FILE") {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let claims = serde_json::json!({
            "sub": "bench", "aud": audience, "exp": now + 86_400, "scope": "mcp:call"
        });
        let token =
            SigningKey::hmac(secret, Algorithm::HS256)?.sign(Default::default(), &claims)?;
        std::fs::write(path, token)?;
    }
    Ok(AuthConfig::new(
        JwtBearer::hmac(secret, Algorithm::HS256)?.audience(audience),
    ))
}

/// The allocator of barrel-mcp's long-running servers (docs/ARCHITECTURE.md, "The binaries'
/// allocator"): the benchmark measures what `barrel-mcp serve` runs.
#[global_allocator]
static ALLOCATOR: barrel_mcp_alloc::MiMalloc = barrel_mcp_alloc::MiMalloc;

fn main() -> barrel_mcp::Result<()> {
    // Memory a burst of sessions freed goes back to the system once the server is quiet: the
    // purger's, and what the workers' own heaps kept (they collect when the purger asks).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(barrel_mcp_alloc::on_thread_park)
        .build()?;
    barrel_mcp_alloc::spawn_purger(barrel_mcp_alloc::PURGE_EVERY, runtime.handle().clone())?;
    runtime.block_on(serve())
}

/// Serves until Ctrl-C.
async fn serve() -> barrel_mcp::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    // A load test creates thousands of tasks a second: keep them briefly, and room for them.
    let task_limits = TaskLimits {
        max_tasks: 1_000_000,
        max_anonymous: 1_000_000,
        default_ttl: Duration::from_secs(5),
        ..TaskLimits::default()
    };
    let mut config = HttpConfig {
        sessionless: std::env::var_os("ECHO_SESSIONLESS").is_some_and(|v| v == "1"),
        ..HttpConfig::default()
    };
    let mut builder = Server::builder();
    if let Ok(url) = std::env::var("ECHO_REDIS") {
        let options = RedisOptions {
            prefix: "echo".into(),
            ..RedisOptions::default()
        };
        let unavailable = |e: barrel_mcp::store::StoreError| std::io::Error::other(e.to_string());
        let redis = Redis::connect(&url, options).await.map_err(unavailable)?;
        builder = builder.task_store(RedisTaskStore::on(&redis, task_limits.clone()));
        let shared = SharedSessions::redis(redis, BusOptions::default())
            .await
            .map_err(unavailable)?;
        config.shared_sessions = Some(shared);
    }
    let server = builder
        .name("http-echo", "0.1.0")
        .config(ServerConfig {
            task_limits,
            ..ServerConfig::default()
        })
        .tool(
            "echo",
            "Send the message back",
            |_: Ctx, args: EchoArgs| async move { Ok(args.message) },
        )
        .tool_with(
            Tool {
                name: "echo_task".into(),
                description: Some("Send the message back, as a task".into()),
                execution: Some(ToolExecution {
                    task_support: Some("optional".into()),
                }),
                ..Tool::default()
            },
            |_: Ctx, args: EchoArgs| async move { Ok(args.message) },
        )
        .build()?;
    if let Ok(secret) = std::env::var("ECHO_AUTH_HS256") {
        config.auth = Some(jwt_auth(&addr, secret.as_bytes())?);
    }
    let http = StreamableHttp::new(server, config);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{addr}/mcp");
    barrel_mcp::http::serve(listener, http, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
