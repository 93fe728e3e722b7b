//! `conformance-server`: the conformance fixture over Streamable HTTP on
//! `http://127.0.0.1:$PORT/mcp` (`PORT` from the environment, default 3000). Stops on Ctrl-C or
//! SIGTERM, gracefully.

use anyhow::Context as _;
use barrel_mcp::http::{HttpConfig, StreamableHttp};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("PORT={port:?} is not a port number"))?,
        Err(_) => 3000,
    };
    let server = barrel_mcp_conformance::fixture::server().context("building the fixture")?;
    barrel_mcp_conformance::fixture::spawn_background(&server);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    let http = StreamableHttp::new(server, HttpConfig::default());
    eprintln!("conformance-server: serving http://127.0.0.1:{port}/mcp");
    barrel_mcp::http::serve(listener, http, shutdown_signal())
        .await
        .context("serving Streamable HTTP")?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
