//! `conformance-server`: the conformance fixture.
//!
//! Interim: it serves stdio until the Streamable HTTP server lands; then it serves
//! `http://127.0.0.1:$PORT/mcp`, which is what `scripts/conformance` expects.

use anyhow::Context as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let server = barrel_mcp_conformance::fixture::server().context("building the fixture")?;
    barrel_mcp_conformance::fixture::spawn_background(&server);
    server.serve_stdio().await.context("serving stdio")?;
    Ok(())
}
