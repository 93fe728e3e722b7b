//! The form a server's results take: values on an in-process pair (the client reads them as
//! they are), JSON text on a transport that encodes (written once, sent as it is), and a
//! client reads either.

use barrel_mcp::client::Client;
use barrel_mcp::transport::{
    MemoryReader, MemoryTransport, MemoryWriter, MessageReader, MessageWriter, Transport, memory,
};
use barrel_mcp::types::{Message, Payload, RequestId};
use serde_json::{Value, json};

use super::fixture;
use crate::support::within;

/// A memory pair that does not say it passes messages as they are, as a transport of one's
/// own making would not: the server writes its results as text.
struct Unsaid(MemoryTransport);

impl Transport for Unsaid {
    type Reader = MemoryReader;
    type Writer = MemoryWriter;

    fn split(self) -> (MemoryReader, MemoryWriter) {
        self.0.split()
    }
}

/// `initialize`, `notifications/initialized` and one `add` call, sent by hand; the call's
/// result as the server handed it over.
async fn call_by_hand(mut reader: MemoryReader, mut writer: MemoryWriter) -> Payload {
    let initialize = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": { "name": "by-hand", "version": "0" }
    });
    writer
        .send(Message::request(1, "initialize", Some(initialize)))
        .await
        .expect("sent");
    let _ = within(reader.recv()).await;
    writer
        .send(Message::notification("notifications/initialized", None))
        .await
        .expect("sent");
    let call = json!({ "name": "add", "arguments": { "a": 2, "b": 40 } });
    writer
        .send(Message::request(2, "tools/call", Some(call)))
        .await
        .expect("sent");
    match within(reader.recv()).await {
        Ok(Some(Ok(Message::Response(response)))) => {
            assert_eq!(response.id, Some(RequestId::Number(2)));
            response.outcome.expect("a result")
        }
        other => panic!("not the call's answer: {other:?}"),
    }
}

#[tokio::test]
async fn an_in_process_pair_gets_values_and_another_transport_text() {
    let (server, _) = fixture::server();
    let (server_side, client_side) = memory();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(server_side).await });
    let (reader, writer) = client_side.split();
    let as_value = call_by_hand(reader, writer).await;
    assert!(matches!(as_value, Payload::Value(_)), "{as_value:?}");

    let (server_side, client_side) = memory();
    tokio::spawn(async move { server.serve(Unsaid(server_side)).await });
    let (reader, writer) = client_side.split();
    let as_text = call_by_hand(reader, writer).await;
    let Payload::Text(text) = &as_text else {
        panic!("not text: {as_text:?}");
    };
    // The same result, written once: it reads back as the value the other pair got.
    assert_eq!(as_text, as_value);
    let value: Value = serde_json::from_str(text.get()).expect("JSON");
    assert_eq!(value["structuredContent"], json!({ "sum": 42 }));
}

#[tokio::test]
async fn a_client_reads_results_written_as_text() {
    let (server, _) = fixture::server();
    let (server_side, client_side) = memory();
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(Unsaid(server_side)).await });
    let client = within(Client::builder().connect(client_side))
        .await
        .expect("connected");
    let sum = within(client.call("add", json!({ "a": 2, "b": 40 })))
        .await
        .expect("add");
    assert_eq!(sum.structured_content, Some(json!({ "sum": 42 })));
    let tools = within(client.list_tools(None)).await.expect("tools");
    assert!(tools.tools.iter().any(|tool| tool.name == "add"));
    // The initialize answer came as text too: the client read the server's name from it.
    assert_eq!(client.server_info().name, "fixture");
}
