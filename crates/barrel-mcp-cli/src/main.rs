//! The `barrel-mcp` command: serve the demo server (more commands come with the client).
//!
//! Logs go to stderr (filter with `RUST_LOG`); on `serve --stdio`, stdout carries only MCP
//! messages.

mod client_commands;
mod demo;
mod target;

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// barrel-mcp: the Model Context Protocol toolkit.
#[derive(Debug, Parser)]
#[command(name = "barrel-mcp", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the demo MCP server (tools, resources, a template, prompts, completions).
    Serve {
        /// Serve over stdin/stdout (newline-delimited JSON-RPC).
        #[arg(long)]
        stdio: bool,
        /// The longest accepted line on stdio, in bytes.
        #[arg(long, default_value_t = 4 * 1024 * 1024)]
        max_line: usize,
    },
    #[command(flatten)]
    Client(Box<client_commands::ClientCommand>),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("barrel-mcp: {e:#}");
            ExitCode::from(client_commands::exit_code(&e))
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cli.command {
        Command::Client(command) => client_commands::run(&runtime, *command),
        Command::Serve { stdio, max_line } => {
            if !stdio {
                anyhow::bail!(
                    "only `serve --stdio` is available in this build (Streamable HTTP is coming)"
                );
            }
            let server = demo::server().context("building the demo server")?;
            let transport =
                barrel_mcp::transport::stdio::StdioTransport::stdio().max_line_length(max_line);
            runtime
                .block_on(server.serve(transport))
                .context("serving stdio")
        }
    }
}
