//! `subscriptions/listen` over HTTP (2026-07-28): a POST answered with an SSE stream that
//! starts with the acknowledgement, carries tagged change notifications, ends when the client
//! goes away, and on graceful shutdown ends with the complete result.

use std::time::{Duration, Instant};

use barrel_mcp::http::HttpConfig;
use barrel_mcp::server::{ServerConfig, ToolHandler};
use barrel_mcp::types::Tool;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Client, SseReader, TestServer, enveloped};
use crate::support::within;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// POSTs a listen for tool list changes and returns its stream, acknowledgement read.
async fn listen(client: &Client, id: i64) -> SseReader {
    let body = enveloped(
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let response = client
        .send(
            Method::POST,
            &[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "subscriptions/listen"),
            ],
            Some(&body.to_string()),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);
    let ack = stream.next_message().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id, "{ack}");
    stream
}

fn add_tool(server: &barrel_mcp::server::Server, name: &str) {
    server
        .add_tool(
            Tool::new(name, Tool::empty_input_schema()),
            ToolHandler::raw(|_, _| async { Ok("x") }),
        )
        .expect("tool");
}

#[tokio::test]
async fn listen_streams_tagged_changes_until_the_client_goes_away() {
    let (server, _) = crate::server::fixture::server_with(ServerConfig {
        max_subscriptions: 1,
        ..ServerConfig::default()
    });
    let http = TestServer::start_with(server.clone(), HttpConfig::default()).await;
    let client = http.client();
    let mut stream = listen(&client, 7).await;

    add_tool(&server, "added");
    let changed: Value = stream.next_message().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], 7, "{changed}");

    // The client goes away: the subscription ends and its slot is free again.
    drop(stream);
    within(async {
        loop {
            let body = enveloped(
                8,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            );
            let response = client
                .send(
                    Method::POST,
                    &[
                        ("content-type", "application/json"),
                        ("accept", "application/json, text/event-stream"),
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", "subscriptions/listen"),
                    ],
                    Some(&body.to_string()),
                )
                .await;
            let streamed = response
                .headers()
                .get("content-type")
                .is_some_and(|v| v == "text/event-stream");
            if streamed {
                let mut again = SseReader::new(response);
                let ack = again.next_message().await;
                assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
                break;
            }
            // Refused while the old subscription still holds the one slot.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn graceful_shutdown_completes_an_open_listen() {
    let (server, _) = crate::server::fixture::server();
    let mut http = TestServer::start_with(server, HttpConfig::default()).await;
    let client = http.client();
    let mut stream = listen(&client, 3).await;
    let started = Instant::now();
    let read = async {
        let last = stream.next_message().await;
        let ended = stream.next_event().await;
        (last, ended)
    };
    let ((last, ended), ()) = tokio::join!(read, http.stop());
    assert_eq!(last["id"], 3, "{last}");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    assert_eq!(last["result"]["_meta"][SUBSCRIPTION_ID], 3, "{last}");
    assert!(ended.is_none(), "the stream ends after the result");
    // Well before the peer's drain timeout would have cancelled it.
    assert!(started.elapsed() < Duration::from_secs(3));
}
