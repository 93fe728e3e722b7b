//! `dev-auth-server`: the test authorization server on `http://127.0.0.1:$PORT` (`PORT` from
//! the environment, default 0: a free port). Prints `issuer=<url>` on stdout once it listens,
//! then serves until killed. For the interop runs and the CLI tests; never for production.
//!
//! `CLIENTS="id:secret id2:secret2"` registers confidential clients for the client
//! credentials grant.

use anyhow::Context as _;
use barrel_mcp_conformance::auth_server::{Switches, TestAuthorizationServer};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let port: u16 = match std::env::var("PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("PORT={port:?} is not a port number"))?,
        Err(_) => 0,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    let server = TestAuthorizationServer::start(listener, Switches::default())?;
    for pair in std::env::var("CLIENTS")
        .unwrap_or_default()
        .split_whitespace()
    {
        let (id, secret) = pair
            .split_once(':')
            .with_context(|| format!("CLIENTS entry {pair:?} is not id:secret"))?;
        server.add_client(id, secret);
    }
    println!("issuer={}", server.issuer());
    std::future::pending::<()>().await;
    Ok(())
}
