//! Where the client commands connect: `--url URL`, `--server NAME` from a config file, or a
//! command after `--`.
//!
//! Config files may use the `mcpServers` key (Claude Desktop, Claude Code's `.mcp.json`,
//! Cursor) or VS Code's `servers` key. `${VAR}`, `${VAR:-default}` and `${env:VAR}` are expanded
//! from the environment in commands, arguments, environment values, URLs and headers. Without
//! `--config`, the file is `$MCP_CLIENT_CONFIG_PATH`, else `.mcp.json` in the current directory.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use barrel_mcp::client::{ServerEntry, ServersFile};

/// The target options every client command takes.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TargetArgs {
    /// A Streamable HTTP endpoint.
    #[arg(long, value_name = "URL", conflicts_with_all = ["server", "command", "sse"])]
    pub(crate) url: Option<String>,
    /// A 2024-11-05 HTTP+SSE endpoint (the URL of its event stream).
    #[arg(long, value_name = "URL", conflicts_with_all = ["server", "command"])]
    pub(crate) sse: Option<String>,
    /// A header for an HTTP server, `Name: value` (e.g. `Authorization: Bearer …`). Repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME:VALUE")]
    pub(crate) header: Vec<String>,
    /// A PEM CA certificate to trust for an `https://` server, besides the built-in roots (a
    /// private CA). Repeatable.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub(crate) ca_cert: Vec<PathBuf>,
    /// A server named in the config file.
    #[arg(long, value_name = "NAME", conflicts_with = "command")]
    pub(crate) server: Option<String>,
    /// The config file: `mcpServers` (Claude Desktop, Claude Code, Cursor) or VS Code `servers`.
    #[arg(long, value_name = "FILE", env = "MCP_CLIENT_CONFIG_PATH")]
    pub(crate) config: Option<PathBuf>,
    /// An environment variable for a stdio server, KEY=VALUE. Repeatable.
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// The stdio server to run: a command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

/// A resolved target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// A server run as a child process.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A server at a URL.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// The 2024-11-05 HTTP+SSE transport instead of Streamable HTTP.
        legacy: bool,
        /// PEM files of CA certificates trusted besides the built-in roots.
        ca_certs: Vec<PathBuf>,
    },
}

impl TargetArgs {
    /// The target these options name.
    pub(crate) fn resolve(&self) -> anyhow::Result<Target> {
        let mut target = if let Some(url) = self.url.as_ref().or(self.sse.as_ref()) {
            Target::Http {
                url: url.clone(),
                headers: BTreeMap::new(),
                legacy: self.sse.is_some(),
                ca_certs: Vec::new(),
            }
        } else if let Some(name) = &self.server {
            let path = self
                .config
                .clone()
                .unwrap_or_else(|| PathBuf::from(".mcp.json"));
            let file = ServersFile::read(&path)?;
            Target::from_entry(file.get(name)?.clone())?
        } else if let Some((command, args)) = self.command.split_first() {
            Target::Stdio {
                command: command.clone(),
                args: args.to_vec(),
                env: BTreeMap::new(),
                cwd: None,
            }
        } else {
            bail!("no server: give --url URL, --server NAME, or a command after --");
        };
        if let Target::Http {
            headers, ca_certs, ..
        } = &mut target
        {
            ca_certs.extend(self.ca_cert.iter().cloned());
            for pair in &self.header {
                let (name, value) = pair
                    .split_once(':')
                    .with_context(|| format!("--header {pair:?} is not NAME:VALUE"))?;
                headers.insert(name.trim().to_owned(), value.trim().to_owned());
            }
        } else if !self.header.is_empty() || !self.ca_cert.is_empty() {
            bail!("--header and --ca-cert apply to --url and --sse servers only");
        }
        if let Target::Stdio { env, .. } = &mut target {
            for pair in &self.env {
                let (key, value) = pair
                    .split_once('=')
                    .with_context(|| format!("--env {pair:?} is not KEY=VALUE"))?;
                env.insert(key.to_owned(), value.to_owned());
            }
        }
        Ok(target)
    }
}

impl Target {
    /// The target of a servers-file entry.
    fn from_entry(entry: ServerEntry) -> anyhow::Result<Self> {
        Ok(match entry {
            ServerEntry::Http {
                url,
                headers,
                legacy,
            } => Target::Http {
                url,
                headers,
                legacy,
                ca_certs: Vec::new(),
            },
            ServerEntry::Stdio {
                command,
                args,
                env,
                cwd,
            } => Target::Stdio {
                command,
                args,
                env,
                cwd,
            },
            other => bail!("this kind of server entry is not supported here: {other:?}"),
        })
    }
}
