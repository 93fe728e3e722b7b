//! The round-robin proxy (`rr_proxy`, `rr-proxy`): alternation per request on one keep-alive
//! connection; SSE streamed through before the backend ends it; a refusing backend skipped and
//! 502 when all refuse; the request log (session, JSON-RPC method and id; 499 for a client that
//! left); headers and status copied except hop-by-hop ones, `Host` kept; the body cap and
//! timeout; a real barrel-mcp session through it; and the binary's command line.

pub(crate) mod backend;
mod bounds;
mod cli;
mod headers;
mod log;
mod mcp;
mod routing;
mod streaming;

use barrel_mcp_conformance::rr_proxy::{Config, LogTo, Proxy, Record};

/// A proxy on a free loopback port in front of `backends`, logging to memory.
pub(crate) async fn proxy(backends: &[String]) -> Proxy {
    proxy_with(backends, |_| {}).await
}

async fn proxy_with(backends: &[String], adjust: impl FnOnce(&mut Config)) -> Proxy {
    let backends = backends
        .iter()
        .map(|url| Config::backend(url).expect("a backend URL"))
        .collect();
    let mut config = Config::new("127.0.0.1:0".parse().expect("addr"), backends);
    config.log = LogTo::Memory;
    adjust(&mut config);
    Proxy::start(config).await.expect("the proxy starts")
}

fn backends_of(records: &[Record]) -> Vec<Option<usize>> {
    let mut records = records.to_vec();
    records.sort_by_key(|record| record.n);
    records.iter().map(|record| record.backend).collect()
}
