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
use serde_json::Value;

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
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading the config file {}", path.display()))?;
            let config: Value = serde_json::from_str(&text)
                .with_context(|| format!("parsing the config file {}", path.display()))?;
            from_config(&config, name)
                .with_context(|| format!("server {name:?} in {}", path.display()))?
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

/// The entry `name` of a config file with `mcpServers` or `servers`.
pub(crate) fn from_config(config: &Value, name: &str) -> anyhow::Result<Target> {
    let servers = config
        .get("mcpServers")
        .or_else(|| config.get("servers"))
        .and_then(Value::as_object)
        .context("the file has no \"mcpServers\" or \"servers\" object")?;
    let Some(entry) = servers.get(name) else {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        bail!("no such server (known: {})", known.join(", "));
    };
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(expand);
    let map = |key: &str| -> BTreeMap<String, String> {
        entry
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), expand(v))))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(url) = text("url") {
        return Ok(Target::Http {
            url,
            headers: map("headers"),
            legacy: text("type").as_deref() == Some("sse"),
            ca_certs: Vec::new(),
        });
    }
    let command = text("command").context("the entry has neither \"command\" nor \"url\"")?;
    let args = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(expand).collect())
        .unwrap_or_default();
    Ok(Target::Stdio {
        command,
        args,
        env: map("env"),
        cwd: text("cwd").map(PathBuf::from),
    })
}

/// Expands `${VAR}`, `${VAR:-default}` and `${env:VAR}`; unknown variables become empty.
pub(crate) fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let spec = &after[..end];
        let spec = spec.strip_prefix("env:").unwrap_or(spec);
        let (name, default) = match spec.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (spec, None),
        };
        match std::env::var(name) {
            Ok(value) if !value.is_empty() => out.push_str(&value),
            _ => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_config_shape() {
        let claude = json!({ "mcpServers": {
            "local": { "command": "tool", "args": ["serve", "--stdio"], "env": { "K": "v" } },
            "remote": { "type": "http", "url": "https://example.com/mcp", "headers": { "A": "b" } }
        }});
        assert_eq!(
            from_config(&claude, "local").unwrap(),
            Target::Stdio {
                command: "tool".into(),
                args: vec!["serve".into(), "--stdio".into()],
                env: BTreeMap::from([("K".into(), "v".into())]),
                cwd: None,
            }
        );
        assert!(matches!(
            from_config(&claude, "remote").unwrap(),
            Target::Http { .. }
        ));
        let vscode =
            json!({ "servers": { "s": { "type": "stdio", "command": "x" } }, "inputs": [] });
        assert!(matches!(
            from_config(&vscode, "s").unwrap(),
            Target::Stdio { .. }
        ));
        assert!(from_config(&vscode, "nope").is_err());
    }

    #[test]
    fn expands_variables() {
        assert_eq!(expand("a${BARREL_MCP_TEST_UNSET:-dflt}b"), "adfltb");
        assert_eq!(expand("${env:BARREL_MCP_TEST_UNSET}"), "");
        assert_eq!(expand("no vars"), "no vars");
        assert_eq!(expand("broken ${"), "broken ${");
    }
}
