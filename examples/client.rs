//! A client (barrel_mcp's `echo_client`): connects to a Streamable HTTP server, says which
//! revision it agreed on, lists the tools and calls `echo`.
//!
//! Run a server first (`cargo run -p barrel-mcp-examples --example http_echo`), then
//! `cargo run -p barrel-mcp-examples --example client -- http://127.0.0.1:8080/mcp hello`.

use barrel_mcp::client::Client;
use barrel_mcp::transport::http_client::HttpClientTransport;
use serde_json::json;

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080/mcp".to_owned());
    let message = args.next().unwrap_or_else(|| "hello".to_owned());
    let client = Client::builder()
        .name("echo-client", "0.1.0")
        .connect_http(HttpClientTransport::new(&url)?)
        .await?;
    println!(
        "connected to {} ({})",
        client.server_info().name,
        client.protocol_version()
    );
    for tool in client.list_all_tools().await? {
        println!(
            "tool {}: {}",
            tool.name,
            tool.description.unwrap_or_default()
        );
    }
    let answer = client.call("echo", json!({ "message": message })).await?;
    println!("echo: {}", answer.text_content());
    Ok(())
}
