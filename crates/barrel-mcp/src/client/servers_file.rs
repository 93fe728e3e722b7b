//! Server lists as MCP applications write them: an `mcpServers` object (Claude Desktop, Claude
//! Code's `.mcp.json`, Cursor) or a VS Code `servers` object, each entry a command to run or a
//! URL to reach.
//!
//! - A stdio entry: `command`, `args`, `env`, `cwd`. A remote one: `url`, `headers`, and
//!   `type: "sse"` for the 2024-11-05 HTTP+SSE transport (anything else is Streamable HTTP).
//! - `${VAR}`, `${VAR:-default}` and `${env:VAR}` are expanded in every string; an unset
//!   variable becomes empty (or its default).
//! - An entry with `"disabled": true` is left out.
//! - [`ServerEntry::start`] supervises an entry in a [`Clients`] registry: a fresh child
//!   process or HTTP transport for each connection attempt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Backoff, ClientBuilder, Clients};
use crate::Error;

/// One server of a servers file.
///
/// Example: [`ServersFile`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerEntry {
    /// A server run as a child process, spoken to over stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A server at a URL.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (an `Authorization`, say).
        headers: BTreeMap<String, String>,
        /// The 2024-11-05 HTTP+SSE transport (`type: "sse"`) instead of Streamable HTTP.
        legacy: bool,
    },
}

/// The servers of a file, by name (entries marked `disabled` left out).
///
/// ```
/// use barrel_mcp::client::{Backoff, Client, Clients, ServerEntry, ServersFile};
///
/// # fn main() -> barrel_mcp::Result<()> {
/// let file = ServersFile::parse(&serde_json::json!({"mcpServers": {
///     "notes": {"command": "barrel-mcp", "args": ["serve", "--stdio"]},
///     "old": {"command": "legacy-server", "disabled": true}
/// }}))?;
/// assert!(matches!(file.get("notes")?, ServerEntry::Stdio { command, .. } if command == "barrel-mcp"));
/// assert!(file.get("old").is_err());
/// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// # runtime.block_on(async {
/// // Each entry supervised under its name (started again after a failure).
/// let clients = Clients::new();
/// file.start_all(&clients, &Client::builder(), Backoff::default())?;
/// # clients.stop_all().await;
/// # Ok::<(), barrel_mcp::Error>(()) })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServersFile {
    /// The entries, by name.
    pub servers: BTreeMap<String, ServerEntry>,
    /// The same entries as written, for keys other layers read (the host's naming policy:
    /// `prefix`, `tools`).
    pub written: BTreeMap<String, Value>,
}

impl ServersFile {
    /// Reads and parses the file at `path`.
    ///
    /// Example: [`ServersFile`].
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| Error::Definition(format!("{}: not JSON: {e}", path.display())))?;
        Self::parse(&value).map_err(|e| Error::Definition(format!("{}: {e}", path.display())))
    }

    /// The servers of a parsed file: its `mcpServers` object, else its `servers` object.
    ///
    /// Example: [`ServersFile`].
    pub fn parse(file: &Value) -> Result<Self, Error> {
        let servers = file
            .get("mcpServers")
            .or_else(|| file.get("servers"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                Error::Definition("the file has no \"mcpServers\" or \"servers\" object".into())
            })?;
        let mut parsed = BTreeMap::new();
        let mut written = BTreeMap::new();
        for (name, entry_json) in servers {
            if entry_json.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let entry = ServerEntry::parse(entry_json)
                .map_err(|why| Error::Definition(format!("server {name:?}: {why}")))?;
            parsed.insert(name.clone(), entry);
            written.insert(name.clone(), entry_json.clone());
        }
        Ok(Self {
            servers: parsed,
            written,
        })
    }

    /// The entry `name`, or an error naming the ones there are.
    ///
    /// Example: [`ServersFile`].
    pub fn get(&self, name: &str) -> Result<&ServerEntry, Error> {
        self.servers.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.servers.keys().map(String::as_str).collect();
            Error::Definition(format!("no server {name:?} (known: {})", known.join(", ")))
        })
    }

    /// Supervises every entry in `clients` under its name, each connected by `builder`.
    ///
    /// Example: [`ServersFile`].
    pub fn start_all(
        &self,
        clients: &Clients,
        builder: &ClientBuilder,
        backoff: Backoff,
    ) -> Result<(), Error> {
        for (name, entry) in &self.servers {
            entry.start(clients, name, builder.clone(), backoff)?;
        }
        Ok(())
    }
}

impl ServerEntry {
    fn parse(entry: &Value) -> Result<Self, String> {
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
            return Ok(Self::Http {
                url,
                headers: map("headers"),
                legacy: text("type").as_deref() == Some("sse"),
            });
        }
        let command = text("command").ok_or("the entry has neither \"command\" nor \"url\"")?;
        let args = entry
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(expand).collect())
            .unwrap_or_default();
        Ok(Self::Stdio {
            command,
            args,
            env: map("env"),
            cwd: text("cwd").map(PathBuf::from),
        })
    }

    /// Supervises this server in `clients` under `name`: each connection attempt starts the
    /// process again, or opens a new HTTP transport. A remote entry needs the `http-client`
    /// feature ([`Error::Unsupported`] without it).
    ///
    /// Example: [`ServersFile`].
    pub fn start(
        &self,
        clients: &Clients,
        name: &str,
        builder: ClientBuilder,
        backoff: Backoff,
    ) -> Result<(), Error> {
        match self.clone() {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut child = crate::transport::child::ChildCommand::new(command).args(args);
                for (key, value) in env {
                    child = child.env(key, value);
                }
                if let Some(cwd) = cwd {
                    child = child.current_dir(cwd);
                }
                clients.start(name, builder, backoff, move || {
                    let spawned = child.spawn();
                    async move { spawned }
                });
                Ok(())
            }
            Self::Http {
                url,
                headers,
                legacy,
            } => start_http(clients, name, builder, backoff, url, headers, legacy),
        }
    }
}

#[cfg(feature = "http-client")]
fn start_http(
    clients: &Clients,
    name: &str,
    builder: ClientBuilder,
    backoff: Backoff,
    url: String,
    headers: BTreeMap<String, String>,
    legacy: bool,
) -> Result<(), Error> {
    use crate::transport::http_client::{HttpClientTransport, LegacySseTransport};

    if legacy {
        let open = move || -> Result<LegacySseTransport, Error> {
            headers
                .iter()
                .try_fold(LegacySseTransport::new(&url)?, |t, (k, v)| t.header(k, v))
        };
        open()?; // the URL and headers are checked now, not at every attempt
        clients.start(name, builder, backoff, move || {
            let transport = open();
            async move { transport }
        });
    } else {
        let open = move || -> Result<HttpClientTransport, Error> {
            headers
                .iter()
                .try_fold(HttpClientTransport::new(&url)?, |t, (k, v)| t.header(k, v))
        };
        open()?;
        // An HTTP server that does not answer the probe is not an old server.
        let builder = builder.fallback_on_probe_timeout(false);
        clients.start(name, builder, backoff, move || {
            let transport = open();
            async move { transport }
        });
    }
    Ok(())
}

#[cfg(not(feature = "http-client"))]
fn start_http(
    _: &Clients,
    name: &str,
    _: ClientBuilder,
    _: Backoff,
    _: String,
    _: BTreeMap<String, String>,
    _: bool,
) -> Result<(), Error> {
    Err(Error::Unsupported(format!(
        "server {name:?} is remote: barrel-mcp was built without the http-client feature"
    )))
}

/// Expands `${VAR}`, `${VAR:-default}` and `${env:VAR}`; unset variables become empty.
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
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_file_shape() {
        let claude = ServersFile::parse(&json!({ "mcpServers": {
            "local": { "command": "tool", "args": ["serve", "--stdio"], "env": { "K": "v" } },
            "remote": { "type": "http", "url": "https://example.com/mcp", "headers": { "A": "b" } },
            "old": { "type": "sse", "url": "http://127.0.0.1:1/sse" },
            "off": { "command": "x", "disabled": true }
        }}))
        .unwrap();
        assert_eq!(
            claude.get("local").unwrap(),
            &ServerEntry::Stdio {
                command: "tool".into(),
                args: vec!["serve".into(), "--stdio".into()],
                env: BTreeMap::from([("K".into(), "v".into())]),
                cwd: None,
            }
        );
        assert!(matches!(
            claude.get("remote").unwrap(),
            ServerEntry::Http { legacy: false, .. }
        ));
        assert!(matches!(
            claude.get("old").unwrap(),
            ServerEntry::Http { legacy: true, .. }
        ));
        assert!(
            claude
                .get("off")
                .unwrap_err()
                .to_string()
                .contains("known: local, old, remote")
        );
        let vscode = ServersFile::parse(
            &json!({ "servers": { "s": { "type": "stdio", "command": "x" } }, "inputs": [] }),
        )
        .unwrap();
        assert!(matches!(
            vscode.get("s").unwrap(),
            ServerEntry::Stdio { .. }
        ));
        assert!(ServersFile::parse(&json!({ "servers": { "bad": {} } })).is_err());
        assert!(ServersFile::parse(&json!({})).is_err());
    }

    #[test]
    fn expands_variables() {
        assert_eq!(expand("a${BARREL_MCP_TEST_UNSET:-dflt}b"), "adfltb");
        assert_eq!(expand("${env:BARREL_MCP_TEST_UNSET}"), "");
        assert_eq!(expand("no vars"), "no vars");
        assert_eq!(expand("broken ${"), "broken ${");
    }
}
