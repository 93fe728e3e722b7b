//! An agent loop over a host: two MCP servers behind one catalog, a model (here scripted: it
//! answers from the conversation, as a recorded model would) in the Anthropic Messages format,
//! its tool calls routed to the right server, the results handed back, until it answers.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example agent_loop`. The same loop works with
//! OpenAI (Chat or Responses) or Gemini: change `PROVIDER`, and send the request to that API.

use barrel_mcp::client::{Backoff, Client, Clients};
use barrel_mcp::host::Host;
use barrel_mcp::host::format::{self, Provider};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::transport::memory;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The API the model speaks.
const PROVIDER: Provider = Provider::Anthropic;

#[derive(Deserialize, JsonSchema)]
struct City {
    /// The city to forecast.
    city: String,
}

#[derive(Deserialize, JsonSchema)]
struct Note {
    /// What to write down.
    text: String,
}

/// Two servers: a forecast, and a notebook.
fn servers() -> Vec<(&'static str, Server)> {
    let weather = Server::builder()
        .name("weather", "1.0.0")
        .tool(
            "forecast",
            "Tomorrow's weather in a city",
            |_: Ctx, a: City| async move { Ok(format!("sunny in {}", a.city)) },
        )
        .build()
        .expect("the weather server");
    let notes = Server::builder()
        .name("notes", "1.0.0")
        .tool("save", "Write a note down", |_: Ctx, n: Note| async move {
            Ok(format!("saved: {}", n.text))
        })
        .build()
        .expect("the notes server");
    vec![("weather", weather), ("notes", notes)]
}

/// The scripted model: first it asks for the forecast and a note at once; once it has both
/// results, it answers with what they said.
fn model(messages: &[Value]) -> Value {
    let results: Vec<String> = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .filter_map(|block| block["content"][0]["text"].as_str().map(str::to_owned))
        .collect();
    if results.is_empty() {
        return json!({"role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "tool_use", "id": "call-1", "name": "weather__forecast", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call-2", "name": "notes__save", "input": {"text": "pack sunglasses"}}
        ]});
    }
    json!({"role": "assistant", "stop_reason": "end_turn", "content": [
        {"type": "text", "text": format!("Tomorrow: {}. Note {}.", results[0], results[1])}
    ]})
}

/// Runs the loop and returns the model's final answer.
pub async fn run() -> barrel_mcp::Result<String> {
    let clients = Clients::new();
    for (name, server) in servers() {
        clients.start(
            name,
            Client::builder().name("agent", "1.0.0"),
            Backoff::default(),
            move || {
                let (a, b) = memory();
                let server = server.clone();
                tokio::spawn(async move { server.serve(b).await });
                async move { Ok(a) }
            },
        );
    }
    let host = Host::new(clients);
    host.ready(std::time::Duration::from_secs(5)).await;
    let catalog = host.refresh().await?;
    // What would go into the API request next to the messages.
    let _tools = format::tools(PROVIDER, &catalog.specs());
    let mut messages =
        vec![json!({"role": "user", "content": "Weather in Paris tomorrow? Note to pack."})];
    for _turn in 0..8 {
        let response = model(&messages);
        let calls = format::calls(PROVIDER, &response);
        messages.push(response.clone());
        if calls.is_empty() {
            let answer = response["content"][0]["text"].as_str().unwrap_or_default();
            host.clients().stop_all().await;
            return Ok(answer.to_owned());
        }
        let outcomes = host.call_all(&calls).await;
        messages.extend(format::results(PROVIDER, &outcomes));
    }
    host.clients().stop_all().await;
    Err(barrel_mcp::Error::Protocol(
        "the model never answered".into(),
    ))
}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    println!("{}", run().await?);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_loop_routes_both_calls_and_the_model_answers_from_their_results() {
        let answer = super::run().await.expect("an answer");
        assert_eq!(
            answer,
            "Tomorrow: sunny in Paris. Note saved: pack sunglasses."
        );
    }
}
