//! `rr-proxy`: the round-robin HTTP/1.1 proxy, per request, for multi-node tests
//! ([`barrel_mcp_conformance::rr_proxy`]). Prints `rr-proxy listening on http://ADDR` as the
//! first line on stderr, then serves until killed. `--help` for the flags.

use barrel_mcp_conformance::rr_proxy::{Config, Proxy, USAGE};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let proxy = Proxy::start(Config::from_args(args)?).await?;
    eprintln!("rr-proxy listening on {}", proxy.url());
    std::future::pending::<()>().await;
    Ok(())
}
