//! The rmcp peer of the load benchmark: one `echo` tool served over Streamable HTTP.
//!
//! Usage: `rmcp-echo ADDR [--json] [--sessionless]`, or `rmcp-echo --stdio`.
//!
//! `--json` sets rmcp's `json_response`; rmcp only honours it for requests served without a
//! session, so stateful replies stay SSE (the report says so). `--sessionless` turns off
//! `legacy_session_mode`: every request is served on its own, with no `Mcp-Session-Id`, which is
//! rmcp's way of serving the sessionful revisions without sessions. TCP_NODELAY is set on
//! accepted sockets, as any tuned deployment would.
//!
//! `--stdio` serves the same tool over stdin and stdout (`rmcp::transport::stdio`, the transport
//! rmcp's README shows) until stdin closes.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServiceExt, schemars, tool, tool_router};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoParams {
    message: String,
}

#[derive(Clone)]
struct Echo;

#[tool_router(server_handler)]
impl Echo {
    #[tool(description = "Echo the message back")]
    fn echo(&self, Parameters(EchoParams { message }): Parameters<EchoParams>) -> String {
        message
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    if flag("--stdio") {
        let running = Echo
            .serve(rmcp::transport::stdio())
            .await
            .map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        return Ok(());
    }
    let addr = args
        .first()
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:8081".to_owned());
    let (json, sessionless) = (flag("--json"), flag("--sessionless"));
    let config = StreamableHttpServerConfig::default()
        .with_json_response(json)
        .with_legacy_session_mode(!sessionless);
    let service =
        StreamableHttpService::new(|| Ok(Echo), LocalSessionManager::default().into(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        // A failure here only costs latency; the connection still works.
        let _ = tcp.set_nodelay(true);
    });
    eprintln!(
        "rmcp-echo listening on http://{addr}/mcp (json_response={json}, sessionless={sessionless})"
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
