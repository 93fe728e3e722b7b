//! The `barrel-mcp` command: serve the demo server (more commands come with the client).
//!
//! Logs go to stderr (filter with `RUST_LOG`); on `serve --stdio`, stdout carries only MCP
//! messages.

mod client_commands;
mod demo;
#[cfg(feature = "auth")]
mod hash_commands;
mod host_commands;
#[cfg(feature = "oauth")]
mod login_commands;
#[cfg(feature = "auth")]
mod serve_auth;
mod serve_node;
mod serve_redis;
mod skill_commands;
mod target;
mod terminal;

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// What `serve` puts in front of the HTTP endpoint (nothing without the `auth` feature).
#[cfg(feature = "auth")]
type AuthConfig = barrel_mcp::auth::server::AuthConfig;
/// What `serve` puts in front of the HTTP endpoint (nothing without the `auth` feature).
#[cfg(not(feature = "auth"))]
type AuthConfig = std::convert::Infallible;

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
    ///
    /// With no transport flag, serves Streamable HTTP on 127.0.0.1:9090/mcp.
    Serve {
        /// Serve over stdin/stdout (newline-delimited JSON-RPC).
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve the skills of this folder (each a directory with a SKILL.md) instead of the
        /// demo's own skill.
        #[arg(long, value_name = "DIR")]
        skills: Option<std::path::PathBuf>,
        /// The longest accepted line on stdio, in bytes.
        #[arg(long, default_value_t = 4 * 1024 * 1024)]
        max_line: usize,
        /// Serve Streamable HTTP on this address (the endpoint is /mcp).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Accept this Host (name or name:port) besides the loopback names; needed to bind
        /// beyond loopback. Repeatable.
        #[arg(long = "allow-host", value_name = "HOST")]
        allow_hosts: Vec<String>,
        /// Accept this browser Origin (scheme://name[:port]) besides loopback ones. Repeatable.
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origins: Vec<String>,
        /// Serve the sessionful revisions without sessions: every request on its own, no
        /// Mcp-Session-Id, no GET stream (HttpConfig::sessionless).
        #[arg(long, conflicts_with = "stdio")]
        sessionless: bool,
        /// Serve HTTPS with this PEM certificate chain (HTTP/1.1 and HTTP/2 through ALPN).
        /// SIGHUP reads it and the key again.
        #[arg(
            long,
            value_name = "FILE",
            requires = "tls_key",
            conflicts_with = "stdio"
        )]
        tls_cert: Option<std::path::PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// Authentication and authorization of the HTTP endpoint.
        #[cfg(feature = "auth")]
        #[command(flatten)]
        auth: Box<serve_auth::AuthArgs>,
        /// Several nodes behind one address: tasks in Redis, shared requestState keys.
        #[command(flatten)]
        node: serve_node::NodeArgs,
    },
    #[command(flatten)]
    Client(Box<client_commands::ClientCommand>),
    #[command(flatten)]
    Host(host_commands::HostCommand),
    #[cfg(feature = "auth")]
    #[command(flatten)]
    Hash(hash_commands::HashCommand),
    #[cfg(feature = "oauth")]
    #[command(flatten)]
    Login(login_commands::LoginCommand),
}

/// The CLI's allocator (docs/ARCHITECTURE.md, "The binaries' allocator"); the benchmark's
/// `http_echo` uses the same one.
#[global_allocator]
static ALLOCATOR: barrel_mcp_alloc::MiMalloc = barrel_mcp_alloc::MiMalloc;

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
            eprintln!("barrel-mcp: {}", terminal::for_stderr(format!("{e:#}")));
            ExitCode::from(client_commands::exit_code(&e))
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Workers collect their heaps when the allocator's purge thread asks (`serve` starts it).
        .on_thread_park(barrel_mcp_alloc::on_thread_park)
        .build()
        .context("starting the async runtime")?;
    match cli.command {
        Command::Client(command) => client_commands::run(&runtime, *command),
        Command::Host(command) => host_commands::run(&runtime, command),
        #[cfg(feature = "auth")]
        Command::Hash(command) => hash_commands::run(command),
        #[cfg(feature = "oauth")]
        Command::Login(command) => login_commands::run(&runtime, command),
        Command::Serve {
            stdio,
            skills,
            max_line,
            http,
            allow_hosts,
            allow_origins,
            sessionless,
            tls_cert,
            tls_key,
            #[cfg(feature = "auth")]
            auth,
            node,
        } => {
            // A server runs long and goes quiet between bursts: give what a burst freed back.
            barrel_mcp_alloc::spawn_purger(barrel_mcp_alloc::PURGE_EVERY, runtime.handle().clone())
                .context("starting the allocator's purge thread")?;
            if !stdio {
                let addr = http.unwrap_or(([127, 0, 0, 1], 9090).into());
                let scheme = if tls_cert.is_some() { "https" } else { "http" };
                #[cfg(feature = "auth")]
                let auth = auth.config(&format!("{scheme}://{addr}/mcp"))?;
                #[cfg(not(feature = "auth"))]
                let auth = {
                    let _ = scheme;
                    None
                };
                let tls = tls_cert.zip(tls_key);
                return serve_http(
                    &runtime,
                    addr,
                    (allow_hosts, allow_origins, sessionless),
                    tls,
                    auth,
                    (skills.as_deref(), node),
                );
            }
            let node = serve_node::prepare(node, &runtime)?;
            let span = tracing::info_span!("node", name = %node.name);
            let server =
                demo::server(skills.as_deref(), node).context("building the demo server")?;
            let transport =
                barrel_mcp::transport::stdio::StdioTransport::stdio().max_line_length(max_line);
            runtime
                .block_on(tracing::Instrument::instrument(
                    server.serve(transport),
                    span,
                ))
                .context("serving stdio")
        }
    }
}

/// `serve --http`: the demo over Streamable HTTP until Ctrl-C (or SIGTERM), then a graceful
/// shutdown.
#[cfg(feature = "http-server")]
fn serve_http(
    runtime: &tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    (allowed_hosts, allowed_origins, sessionless): (Vec<String>, Vec<String>, bool),
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    auth: Option<AuthConfig>,
    (skills, node): (Option<&std::path::Path>, serve_node::NodeArgs),
) -> anyhow::Result<()> {
    use barrel_mcp::http::{HttpConfig, StreamableHttp};
    let mut config = HttpConfig {
        allowed_hosts,
        allowed_origins,
        sessionless,
        ..HttpConfig::default()
    };
    #[cfg(feature = "auth")]
    {
        config.auth = auth;
    }
    #[cfg(not(feature = "auth"))]
    let _ = auth;
    config.check_bind(addr).map_err(anyhow::Error::msg)?;
    let mut node = serve_node::prepare(node, runtime)?;
    config.shared_sessions = node.take_shared_sessions();
    let span = tracing::info_span!("node", name = %node.name);
    let server = demo::server(skills, node).context("building the demo server")?;
    let serving = async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr().context("reading the bound address")?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        eprintln!(
            "barrel-mcp: serving MCP over Streamable HTTP on {scheme}://{local}{}",
            config.path
        );
        let http = StreamableHttp::new(server, config);
        match tls {
            None => barrel_mcp::http::serve(listener, http, shutdown_signal())
                .await
                .context("serving HTTP"),
            Some((cert, key)) => serve_tls(listener, http, &cert, &key).await,
        }
    };
    runtime.block_on(tracing::Instrument::instrument(serving, span))
}

/// `serve --http --tls-cert --tls-key`: the same over TLS.
#[cfg(feature = "tls")]
async fn serve_tls(
    listener: tokio::net::TcpListener,
    http: barrel_mcp::http::StreamableHttp,
    cert: &std::path::Path,
    key: &std::path::Path,
) -> anyhow::Result<()> {
    let tls = barrel_mcp::http::TlsConfig::from_pem_files(cert, key).context("loading TLS")?;
    // The handler is installed before serving starts, so an early SIGHUP reloads (the default
    // action would end the process).
    #[cfg(unix)]
    let hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("installing the SIGHUP handler")?;
    #[cfg(unix)]
    tokio::spawn(reload_on_hangup(
        hangups,
        tls.clone(),
        cert.to_owned(),
        key.to_owned(),
    ));
    barrel_mcp::http::serve_tls(listener, http, tls, shutdown_signal())
        .await
        .context("serving HTTPS")
}

/// Reads the certificate and key again on each SIGHUP (a renewed certificate is served to new
/// connections); a pair that does not load leaves the old one in place.
#[cfg(all(feature = "tls", unix))]
async fn reload_on_hangup(
    mut hangups: tokio::signal::unix::Signal,
    tls: barrel_mcp::http::TlsConfig,
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
) {
    while hangups.recv().await.is_some() {
        match tls.reload_pem_files(&cert, &key) {
            Ok(()) => eprintln!("barrel-mcp: reloaded {}", cert.display()),
            Err(error) => eprintln!("barrel-mcp: kept the old certificate: {error}"),
        }
    }
}

#[cfg(all(feature = "http-server", not(feature = "tls")))]
async fn serve_tls(
    _listener: tokio::net::TcpListener,
    _http: barrel_mcp::http::StreamableHttp,
    _cert: &std::path::Path,
    _key: &std::path::Path,
) -> anyhow::Result<()> {
    anyhow::bail!("this build has no TLS (feature `tls`)")
}

#[cfg(not(feature = "http-server"))]
fn serve_http(
    _runtime: &tokio::runtime::Runtime,
    _addr: std::net::SocketAddr,
    _options: (Vec<String>, Vec<String>, bool),
    _tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    _auth: Option<AuthConfig>,
    _skills_and_node: (Option<&std::path::Path>, serve_node::NodeArgs),
) -> anyhow::Result<()> {
    anyhow::bail!("this build has no HTTP server (feature `http-server`); use `serve --stdio`")
}

/// Resolves on Ctrl-C, or on SIGTERM on Unix.
#[cfg(feature = "http-server")]
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    eprintln!("barrel-mcp: shutting down");
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn a_task_id_that_begins_with_a_hyphen_is_an_id_not_a_flag() {
        let parsed = super::Cli::try_parse_from([
            "barrel-mcp",
            "task",
            "-Zx9_id",
            "--wait",
            "--url",
            "http://127.0.0.1:9/mcp",
        ]);
        let cli = parsed.expect("parsed");
        assert!(format!("{cli:?}").contains("\"-Zx9_id\""), "{cli:?}");
    }
}
