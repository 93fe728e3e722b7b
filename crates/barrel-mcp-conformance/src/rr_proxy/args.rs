//! The `rr-proxy` command line: `--listen`, `--backend` (repeated), `--log` and the bounds,
//! parsed by hand (a handful of flags does not need an argument-parsing crate).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};

use super::{Config, LogTo};

/// The `--help` text.
pub const USAGE: &str = "\
usage: rr-proxy --listen ADDR --backend URL --backend URL [options]

A round-robin HTTP/1.1 proxy, per request: each request goes to the next backend.

  --listen ADDR            address to listen on, e.g. 127.0.0.1:0 (a free port)
  --backend URL            a backend, http://host:port; repeat for each (at least one)
  --log FILE               append one JSON line per request to FILE (default: stderr)
  --max-body BYTES         largest request body, default 4194304; beyond it 413
  --connect-timeout-ms MS  connection timeout to a backend, default 2000
  --body-timeout-ms MS     time a client may take to send a body, default 30000

The first line on stderr is `rr-proxy listening on http://ADDR`.";

impl Config {
    /// Parses the command line (without the program name). `--flag value` and
    /// `--flag=value` are both accepted; `-h`/`--help` is the caller's to handle.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> anyhow::Result<Self> {
        let mut listen = None;
        let mut backends = Vec::new();
        let mut log = LogTo::Stderr;
        let mut max_body = None;
        let mut connect_timeout = None;
        let mut body_timeout = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value)),
                _ => (arg.clone(), None),
            };
            let mut value = || -> anyhow::Result<String> {
                match inline {
                    Some(value) => Ok(value.to_owned()),
                    None => args
                        .next()
                        .with_context(|| format!("{flag} needs a value\n\n{USAGE}")),
                }
            };
            match flag.as_str() {
                "--listen" => {
                    let text = value()?;
                    listen = Some(
                        text.parse()
                            .with_context(|| format!("--listen {text:?} is not an ip:port"))?,
                    );
                }
                "--backend" => backends.push(Config::backend(&value()?)?),
                "--log" => log = LogTo::File(PathBuf::from(value()?)),
                "--max-body" => max_body = Some(number(&flag, &value()?)?),
                "--connect-timeout-ms" => connect_timeout = Some(number(&flag, &value()?)?),
                "--body-timeout-ms" => body_timeout = Some(number(&flag, &value()?)?),
                _ => bail!("unknown argument {arg:?}\n\n{USAGE}"),
            }
        }
        let listen = listen.with_context(|| format!("--listen is required\n\n{USAGE}"))?;
        if backends.is_empty() {
            bail!("at least one --backend is required\n\n{USAGE}");
        }
        let mut config = Config::new(listen, backends);
        config.log = log;
        if let Some(bytes) = max_body {
            config.max_body = usize::try_from(bytes).context("--max-body is too large")?;
        }
        if let Some(ms) = connect_timeout {
            config.connect_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = body_timeout {
            config.body_timeout = Duration::from_millis(ms);
        }
        Ok(config)
    }
}

fn number(flag: &str, text: &str) -> anyhow::Result<u64> {
    text.parse()
        .with_context(|| format!("{flag} {text:?} is not a whole number"))
}
