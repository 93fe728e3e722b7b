//! `host-cost`: the CPU a call costs when a model's tool call is routed through a
//! `barrel_mcp::host::Host` (name lookup, the model's JSON-text arguments parsed, the result's
//! URIs checked) against the same call made on the client directly.
//!
//! ```text
//! host-cost [CALLS]        (default 50,000 of each, after 2,000 of each to warm up)
//! ```
//!
//! One process holds the server, the client and the host (over an in-memory transport, on a
//! current-thread runtime), so the process's CPU time per call is the whole cost of a call;
//! the difference between the two loops is what the host adds. Prints both and the
//! difference; the target is at most 5 µs. CPU time is read from `/proc/self/stat`.

use std::time::Duration;

use barrel_mcp::client::{Backoff, Client, Clients};
use barrel_mcp::host::Host;
use barrel_mcp::host::format::{self, Provider};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::transport::memory;
use barrel_mcp::types::CallToolParams;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// What to send back.
    message: String,
}

/// User plus system CPU time of this process.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    // Linux reports clock ticks of 1/100 s.
    Duration::from_millis(ticks * 10)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> barrel_mcp::Result<()> {
    let calls: u32 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000);
    let server = Server::builder()
        .name("echo", "1.0.0")
        .tool(
            "echo",
            "Send the message back",
            |_: Ctx, e: Echo| async move { Ok(e.message) },
        )
        .build()?;
    let clients = Clients::new();
    clients.start(
        "echo",
        Client::builder().name("host-cost", "1.0.0"),
        Backoff::default(),
        move || {
            let (a, b) = memory();
            let server = server.clone();
            tokio::spawn(async move { server.serve(b).await });
            async move { Ok(a) }
        },
    );
    let client = clients
        .connected("echo")
        .await
        .ok_or_else(|| barrel_mcp::Error::Protocol("the server did not connect".into()))?;
    let host = Host::new(clients);
    host.refresh().await?;
    let direct = || {
        let params = CallToolParams::new("echo").with_arguments(
            serde_json::json!({"message": "hello"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        client.call_tool(params)
    };
    // A model's call as OpenAI Chat Completions writes it: arguments as JSON text.
    let response = serde_json::json!({"choices": [{"message": {"tool_calls": [{"id": "c1",
        "type": "function", "function": {"name": "echo__echo", "arguments": "{\"message\":\"hello\"}"}}]}}]});
    let routed = format::calls(Provider::OpenAiChat, &response)
        .pop()
        .ok_or_else(|| barrel_mcp::Error::Protocol("no call in the response".into()))?;
    for _ in 0..2_000 {
        direct().await?;
        host.call(&routed).await;
    }
    let start = cpu();
    for _ in 0..calls {
        direct().await?;
    }
    let direct_cpu = cpu() - start;
    let start = cpu();
    for _ in 0..calls {
        let (result, failure) = host.call(&routed).await;
        if failure.is_some() || result.is_error() {
            return Err(barrel_mcp::Error::Protocol("a routed call failed".into()));
        }
    }
    let routed_cpu = cpu() - start;
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(calls);
    let (a, b) = (per(direct_cpu), per(routed_cpu));
    println!(
        "CPU per call: {a:.2} µs on the client directly, {b:.2} µs routed by the host: +{:.2} µs ({calls} calls each)",
        b - a
    );
    Ok(())
}
