//! Workloads for the instruction-count guard: each runs one kind of operation N times, so
//! `scripts/counts` can run it under callgrind at two sizes and take the difference as the
//! cost of one operation (start-up and tear-down cancel out).
//!
//! ```text
//! barrel-mcp-counts WORKLOAD N
//! ```
//!
//! - `memory-call`: `tools/call` through the in-memory transport (client and server in one
//!   process, no I/O), in a 2025-11-25 session.
//! - `http-session-call`: `tools/call` over Streamable HTTP on loopback, in a 2025-11-25
//!   session (one keep-alive connection, SSE answers).
//! - `http-stateless-call`: `tools/call` over Streamable HTTP, 2026-07-28 (no session).
//! - `decode-1mib`: decoding a JSON-RPC request whose params hold 1 MiB of text.
//!
//! One thread (a current-thread runtime), so the count does not depend on scheduling.

use std::process::ExitCode;

use barrel_mcp::client::Client;
use barrel_mcp::http::{HttpConfig, StreamableHttp, serve};
use barrel_mcp::server::{Ctx, Server, ToolHandler};
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::transport::memory;
use barrel_mcp::types::{CallToolParams, ProtocolVersion, Tool};
use serde_json::{Map, Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(workload), Some(n)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: barrel-mcp-counts WORKLOAD N (see the crate docs)");
        return ExitCode::from(2);
    };
    let outcome = match workload.as_str() {
        "memory-call" => memory_calls(n).await,
        "http-session-call" => http_calls(n, ProtocolVersion::V2025_11_25).await,
        "http-stateless-call" => http_calls(n, ProtocolVersion::V2026_07_28).await,
        "decode-1mib" => decode(n),
        other => Err(format!("unknown workload {other}")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("barrel-mcp-counts {workload}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The server every workload calls: one tool, `echo`.
fn server() -> Result<Server, String> {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    Server::builder()
        .name("counts", "1.0.0")
        .raw_tool(
            Tool::new("echo", schema),
            ToolHandler::raw(|_: Ctx, arguments: Map<String, Value>| async move {
                Ok(Value::Object(arguments).to_string())
            }),
        )
        .build()
        .map_err(|e| e.to_string())
}

fn call() -> CallToolParams {
    let mut arguments = Map::new();
    arguments.insert("message".into(), json!("hello"));
    CallToolParams::new("echo").with_arguments(arguments)
}

async fn calls(client: &Client, n: usize) -> Result<(), String> {
    for _ in 0..n {
        let result = client.call_tool(call()).await.map_err(|e| e.to_string())?;
        if result.is_error == Some(true) {
            return Err(result.text_content());
        }
    }
    Ok(())
}

async fn memory_calls(n: usize) -> Result<(), String> {
    let server = server()?;
    let (a, b) = memory();
    tokio::spawn(async move { server.serve(b).await });
    let client = Client::builder()
        .name("counts", "1.0.0")
        .pin(ProtocolVersion::V2025_11_25)
        .connect(a)
        .await
        .map_err(|e| e.to_string())?;
    calls(&client, n).await
}

async fn http_calls(n: usize, version: ProtocolVersion) -> Result<(), String> {
    let http = StreamableHttp::new(server()?, HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(serve(listener, http, std::future::pending()));
    let transport =
        HttpClientTransport::new(&format!("http://{addr}/mcp")).map_err(|e| e.to_string())?;
    let client = Client::builder()
        .name("counts", "1.0.0")
        .pin(version)
        .connect(transport)
        .await
        .map_err(|e| e.to_string())?;
    calls(&client, n).await
}

fn decode(n: usize) -> Result<(), String> {
    let text = "x".repeat(1 << 20);
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "store", "arguments": {"text": text}}})
    .to_string();
    for _ in 0..n {
        barrel_mcp_types::jsonrpc::decode(&message).map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}
