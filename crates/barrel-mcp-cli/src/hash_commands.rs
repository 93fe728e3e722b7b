//! `barrel-mcp hash-key` and `barrel-mcp hash-password`: the stored forms that `serve
//! --auth-api-keys` and `--auth-basic` (and `ApiKeys` / `BasicAuth` in a program) read. The
//! secret comes from stdin, never from the command line, where `ps` and shell history keep it.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use barrel_mcp::auth::Secret;
use barrel_mcp::auth::server::{api_key, basic};

/// The hashing commands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum HashCommand {
    /// Print the stored form of the API key read from stdin (peppered HMAC-SHA-256).
    HashKey {
        /// The file holding the pepper (a server secret kept apart from the hashes).
        #[arg(long, value_name = "FILE")]
        pepper_file: PathBuf,
    },
    /// Print the stored form of the password read from stdin (PBKDF2-SHA256).
    HashPassword {
        /// PBKDF2 iterations.
        #[arg(long, default_value_t = basic::DEFAULT_ITERATIONS)]
        iterations: u32,
    },
}

/// The secret on stdin, without its trailing newline.
fn read_stdin() -> anyhow::Result<Secret> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("reading the secret from stdin")?;
    let secret = text.strip_suffix('\n').unwrap_or(&text);
    let secret = secret.strip_suffix('\r').unwrap_or(secret);
    if secret.is_empty() {
        bail!("no secret on stdin");
    }
    Ok(Secret::new(secret))
}

/// Reads a secret file (a trailing newline is not part of it).
pub(crate) fn read_secret_file(path: &PathBuf) -> anyhow::Result<Secret> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Secret::new(text.trim_end_matches(['\n', '\r'])))
}

pub(crate) fn run(command: HashCommand) -> anyhow::Result<()> {
    let stored = match command {
        HashCommand::HashKey { pepper_file } => {
            let pepper = read_secret_file(&pepper_file)?;
            api_key::hash_key(&pepper, read_stdin()?.expose())
        }
        HashCommand::HashPassword { iterations } => {
            basic::hash_password(&read_stdin()?, iterations)?
        }
    };
    println!("{stored}");
    Ok(())
}
