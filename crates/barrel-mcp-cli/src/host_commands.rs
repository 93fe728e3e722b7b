//! The host commands: one catalog over every server of a servers file.
//!
//! - `barrel-mcp catalog` connects to every server of the file, waits for them (at most
//!   `--wait` seconds; the ones that did not connect are named on stderr), and prints the
//!   merged catalog: tools, prompts, resources and templates under their exposed names and
//!   URIs, or, with `--format`, the tool definitions a provider's API takes; `--read URI`
//!   reads one resource by its exposed URI.
//! - `barrel-mcp route --format F RESPONSE` reads a model's response in that provider's format
//!   (a JSON argument, or `-` for stdin), routes each tool call in it to its server, and prints
//!   what to send the model next (the provider's result messages, as JSON).

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use barrel_mcp::client::{Backoff, Client, ServersFile};
use barrel_mcp::host::Host;
use barrel_mcp::host::format::{self, Provider};

use crate::client_commands::{fail, out};

/// The host commands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum HostCommand {
    /// Print one catalog of every server of a servers file (`mcpServers` or VS Code `servers`).
    Catalog {
        #[command(flatten)]
        common: HostArgs,
        /// Print the tool definitions for this provider's API instead: anthropic,
        /// openai-chat, openai-responses or gemini.
        #[arg(long, value_name = "PROVIDER", conflicts_with = "read")]
        format: Option<String>,
        /// Read this resource instead, by its exposed URI (`prefix+uri`), and print its
        /// contents as JSON.
        #[arg(long, value_name = "URI")]
        read: Option<String>,
    },
    /// Route the tool calls of a model's response (in a provider's format) and print the
    /// result messages to send back.
    Route {
        #[command(flatten)]
        common: HostArgs,
        /// The response's format: anthropic, openai-chat, openai-responses or gemini.
        #[arg(long, value_name = "PROVIDER")]
        format: String,
        /// The model's response, as JSON (`-`: read it from stdin).
        response: String,
    },
}

/// Options of the host commands.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct HostArgs {
    /// The servers file.
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_CLIENT_CONFIG_PATH",
        default_value = ".mcp.json"
    )]
    config: PathBuf,
    /// Seconds to wait for the servers to connect.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    wait: u64,
}

/// Runs one host command.
pub(crate) fn run(runtime: &tokio::runtime::Runtime, command: HostCommand) -> anyhow::Result<()> {
    runtime.block_on(async {
        let common = match &command {
            HostCommand::Catalog { common, .. } | HostCommand::Route { common, .. } => common,
        };
        let host = start(common).await?;
        let outcome = match command {
            HostCommand::Catalog {
                read: Some(uri), ..
            } => read(&host, &uri).await,
            HostCommand::Catalog { format, .. } => catalog(&host, format.as_deref()),
            HostCommand::Route {
                format, response, ..
            } => route(&host, &format, &response).await,
        };
        host.clients().stop_all().await;
        outcome
    })
}

/// A host over the servers of the file, connected (or given up on) and listed.
async fn start(args: &HostArgs) -> anyhow::Result<Host> {
    let file = ServersFile::read(&args.config)
        .with_context(|| format!("reading the servers file {}", args.config.display()))?;
    let builder = Client::builder().name("barrel-mcp", env!("CARGO_PKG_VERSION"));
    let host = Host::from_servers(&file, &builder, Backoff::default())?;
    for name in host.ready(Duration::from_secs(args.wait)).await {
        eprintln!("barrel-mcp: server {name} did not connect; its items are left out");
    }
    host.refresh().await?;
    Ok(host)
}

fn provider(name: &str) -> anyhow::Result<Provider> {
    Provider::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
        fail(
            1,
            format!("unknown format {name:?} (one of: {})", known.join(", ")),
        )
    })
}

fn catalog(host: &Host, format: Option<&str>) -> anyhow::Result<()> {
    let catalog = host.catalog();
    if let Some(name) = format {
        let tools = format::tools(provider(name)?, &catalog.specs());
        out!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(());
    }
    let first_line = |text: Option<&str>| {
        text.and_then(|t| t.lines().next())
            .unwrap_or_default()
            .to_owned()
    };
    for tool in catalog.tools() {
        let about = first_line(
            tool.tool
                .description
                .as_deref()
                .or(tool.tool.title.as_deref()),
        );
        out!("tool      {:<32} {about}", tool.exposed);
    }
    for prompt in catalog.prompts() {
        let about = first_line(prompt.prompt.description.as_deref());
        out!("prompt    {:<32} {about}", prompt.exposed);
    }
    for resource in catalog.resources() {
        out!("resource  {}", resource.item.uri);
    }
    for template in catalog.templates() {
        out!("template  {}", template.item.uri_template);
    }
    Ok(())
}

async fn read(host: &Host, uri: &str) -> anyhow::Result<()> {
    let result = host.read_resource(uri).await?;
    out!("{}", serde_json::to_string_pretty(&result.contents)?);
    Ok(())
}

async fn route(host: &Host, format: &str, response: &str) -> anyhow::Result<()> {
    let provider = provider(format)?;
    let text = if response == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the response from stdin")?;
        text
    } else {
        response.to_owned()
    };
    let response: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| fail(1, format!("the response is not valid JSON: {e}")))?;
    let calls = format::calls(provider, &response);
    if calls.is_empty() {
        return Err(fail(1, "the response holds no tool call"));
    }
    let outcomes = host.call_all(&calls).await;
    let messages = format::results(provider, &outcomes);
    out!("{}", serde_json::to_string_pretty(&messages)?);
    if outcomes.iter().any(|(_, result)| result.is_error()) {
        return Err(fail(5, "a tool call ended in a tool error"));
    }
    Ok(())
}
