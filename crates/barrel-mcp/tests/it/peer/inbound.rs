//! Inbound dispatch: concurrent handlers, duplicate ids, panics, cancellation, the in-flight
//! cap, write ordering, and what the end of input does to handlers in flight.

use std::time::Duration;

use barrel_mcp::peer::PeerConfig;
use serde_json::json;

use crate::support::{assert_subset, serve_lines, within};

#[tokio::test]
async fn duplicate_in_flight_id_is_refused_and_the_first_completes() {
    let (mut raw, served) = serve_lines(PeerConfig::default(), None);
    let line = r#"{"jsonrpc":"2.0","id":7,"method":"gate"}"#;
    raw.send(line).await;
    raw.send(line).await;
    assert_subset(
        &raw.recv().await,
        &json!({"id":7,"error":{"code":-32600}}),
        "duplicate",
    );
    served.handler.gate.add_permits(1);
    assert_subset(
        &raw.recv().await,
        &json!({"id":7,"result":"opened"}),
        "first",
    );
}

#[tokio::test]
async fn panicking_handler_is_answered_and_serving_goes_on() {
    let (mut raw, _served) = serve_lines(PeerConfig::default(), None);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"panic"}"#)
        .await;
    let answer = raw.recv().await;
    assert_subset(&answer, &json!({"id":1,"error":{"code":-32603}}), "panic");
    assert!(
        !answer.to_string().contains("secret"),
        "panic text leaked: {answer}"
    );
    raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"echo","params":{"a":1}}"#)
        .await;
    assert_subset(
        &raw.recv().await,
        &json!({"id":2,"result":{"a":1}}),
        "after",
    );
}

#[tokio::test]
async fn inbound_cancel_fires_the_token_and_suppresses_the_response() {
    let (mut raw, mut served) = serve_lines(PeerConfig::default(), None);
    raw.send(r#"{"jsonrpc":"2.0","id":"c1","method":"wait_cancel"}"#)
        .await;
    assert_eq!(served.events.next().await, r#"started "c1""#);
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"no"}}"#;
    raw.send(cancel).await;
    assert_eq!(served.events.next().await, r#"cancelled "c1""#);
    // The handler has returned; give its task time to (not) answer, then check nothing came.
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.send(r#"{"jsonrpc":"2.0","id":"after","method":"echo"}"#)
        .await;
    assert_subset(
        &raw.recv().await,
        &json!({"id":"after","result":null}),
        "after",
    );
}

#[tokio::test]
async fn a_cancel_for_initialize_is_ignored() {
    // The spec: initialize is never cancelled, so its answer goes out whatever comes.
    let (mut raw, served) = serve_lines(PeerConfig::default(), None);
    raw.send(r#"{"jsonrpc":"2.0","id":"i1","method":"initialize"}"#)
        .await;
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"i1"}}"#)
        .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    served.handler.gate.add_permits(1);
    assert_subset(
        &raw.recv().await,
        &json!({"id":"i1","result":"opened"}),
        "initialize",
    );
}

#[tokio::test]
async fn requests_over_the_in_flight_cap_are_refused() {
    let config = PeerConfig {
        max_inbound_in_flight: 2,
        ..PeerConfig::default()
    };
    let (mut raw, served) = serve_lines(config, None);
    for id in 1..=3 {
        raw.send(&json!({"jsonrpc":"2.0","id":id,"method":"gate"}).to_string())
            .await;
    }
    let busy = raw.recv().await;
    assert_subset(&busy, &json!({"id":3,"error":{"code":-32603}}), "busy");
    served.handler.gate.add_permits(2);
    let mut ids = vec![
        raw.recv().await["id"].clone(),
        raw.recv().await["id"].clone(),
    ];
    ids.sort_by_key(|id| id.as_i64());
    assert_eq!(ids, vec![json!(1), json!(2)]);
}

#[tokio::test]
async fn handler_notifications_are_written_before_its_response() {
    let (mut raw, _served) = serve_lines(PeerConfig::default(), None);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"notify_then_reply"}"#)
        .await;
    let expected = [
        json!({"method":"notifications/message","params":{"n":1}}),
        json!({"method":"notifications/message","params":{"n":2}}),
        json!({"id":1,"result":{"done":true}}),
    ];
    for (n, expected) in expected.iter().enumerate() {
        let line = raw.recv().await;
        assert_subset(&line, expected, &format!("line {n}"));
        assert!(
            n == 2 || line.get("id").is_none(),
            "a notification carries no id: {line}"
        );
    }
}

#[tokio::test]
async fn unknown_progress_token_reaches_the_handler() {
    let (mut raw, mut served) = serve_lines(PeerConfig::default(), None);
    let line = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":12345,"progress":1}}"#;
    raw.send(line).await;
    assert_eq!(
        served.events.next().await,
        "notification notifications/progress"
    );
}

#[tokio::test]
async fn end_of_input_cancels_handlers_and_ends_the_connection() {
    let config = PeerConfig {
        drain_timeout: Duration::from_millis(100),
        ..PeerConfig::default()
    };
    let (mut raw, mut served) = serve_lines(config, None);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"wait_cancel"}"#)
        .await;
    assert_eq!(served.events.next().await, "started 1");
    raw.close_input().await;
    let mut events = vec![served.events.next().await, served.events.next().await];
    events.sort();
    assert_eq!(events, ["cancelled 1", "closed"]);
    let result = within(served.task).await.expect("join");
    assert!(result.is_ok(), "{result:?}");
    assert!(served.peer.is_closed());
    within(served.peer.closed()).await;
}

#[tokio::test]
async fn end_of_input_still_answers_requests_that_finish_in_time() {
    let (mut raw, served) = serve_lines(PeerConfig::default(), None);
    raw.send(r#"{"jsonrpc":"2.0","id":"late","method":"gate"}"#)
        .await;
    raw.close_input().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    served.handler.gate.add_permits(1);
    assert_eq!(
        raw.recv().await,
        json!({ "jsonrpc": "2.0", "id": "late", "result": "opened" })
    );
    let result = within(served.task).await.expect("join");
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn end_of_input_fails_our_own_pending_requests_at_once() {
    let (mut raw, served) = serve_lines(PeerConfig::default(), None);
    raw.send(r#"{"jsonrpc":"2.0","id":1,"method":"call_back","params":{"x":1}}"#)
        .await;
    let asked = raw.recv().await;
    assert_eq!(asked["method"], "echo", "the handler asked us something");
    raw.close_input().await;
    let answer = raw.recv().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["error"]["code"], -32603,
        "no answer can come once the input ended"
    );
    within(served.task).await.expect("join").expect("clean end");
}

/// A writer that records which inbound request each outgoing message belongs to.
struct RecordingWriter(tokio::sync::mpsc::UnboundedSender<barrel_mcp::transport::Outgoing>);

impl barrel_mcp::transport::MessageWriter for RecordingWriter {
    async fn send(&mut self, message: barrel_mcp::types::Message) -> Result<(), barrel_mcp::Error> {
        self.send_outgoing(barrel_mcp::transport::Outgoing {
            message,
            related: None,
        })
        .await
    }

    async fn send_outgoing(
        &mut self,
        outgoing: barrel_mcp::transport::Outgoing,
    ) -> Result<(), barrel_mcp::Error> {
        self.0.send(outgoing).map_err(|_| barrel_mcp::Error::Closed)
    }

    async fn close(&mut self) -> Result<(), barrel_mcp::Error> {
        Ok(())
    }
}

#[tokio::test]
async fn what_a_handler_sends_is_tagged_with_its_request() {
    use barrel_mcp::transport::{MessageWriter as _, memory};
    use barrel_mcp::types::{Message, RequestId};

    let (ours, theirs) = memory();
    let (their_reader, _their_writer) = barrel_mcp::transport::Transport::split(theirs);
    let (tx, mut recorded) = tokio::sync::mpsc::unbounded_channel();
    let (handler, _events) = crate::support::handler();
    let (_peer, _task) = barrel_mcp::peer::serve(
        (their_reader, RecordingWriter(tx)),
        handler,
        PeerConfig::default(),
    );
    let (_our_reader, mut our_writer) = barrel_mcp::transport::Transport::split(ours);
    our_writer
        .send(Message::request("req-7", "notify_then_reply", None))
        .await
        .expect("sent");
    let mut tags = Vec::new();
    for _ in 0..3 {
        let outgoing = within(recorded.recv()).await.expect("recorded");
        tags.push(outgoing.related);
    }
    assert_eq!(
        tags,
        vec![Some(RequestId::from("req-7")); 3],
        "two notifications and the response"
    );
}

#[tokio::test]
async fn an_overlong_request_id_is_refused_at_once_and_serving_goes_on() {
    let config = PeerConfig {
        max_request_id_length: 16,
        ..PeerConfig::default()
    };
    let (mut raw, served) = serve_lines(config, None);
    let long = "x".repeat(17);
    raw.send(&json!({"jsonrpc": "2.0", "id": long, "method": "gate"}).to_string())
        .await;
    let refused = raw.recv().await;
    assert_subset(
        &refused,
        &json!({"id": long, "error": {"code": -32600}}),
        "long id",
    );
    // It never reached the handler (the gate was never taken) and the connection serves on.
    assert_eq!(served.handler.gate.available_permits(), 0);
    raw.send(r#"{"jsonrpc":"2.0","id":"short","method":"echo","params":{"a":1}}"#)
        .await;
    assert_subset(
        &raw.recv().await,
        &json!({"id": "short", "result": {"a": 1}}),
        "served on",
    );
}
