//! Test helpers: a timeout for every step, a scriptable [`Handler`], and raw drivers that talk
//! to a peer under test through newline-delimited JSON or through in-memory messages.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "redis")]
pub(crate) mod redis;

use barrel_mcp::Error;
use barrel_mcp::peer::{self, BoxFuture, Handler, Peer, PeerConfig, RequestContext};
use barrel_mcp::transport::{
    MemoryReader, MemoryWriter, MessageReader, MessageWriter, StdioTransport, Transport, memory,
};
use barrel_mcp::types::{ErrorObject, Message, Notification, Payload, Request};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

/// The longest any single test step may take.
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Awaits `future`, failing the test if it takes longer than [`STEP_TIMEOUT`].
pub(crate) async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(STEP_TIMEOUT, future)
        .await
        .expect("test step timed out")
}

/// What the test handler reports: "notification <method>", "started <id>", "cancelled <id>",
/// "closed".
pub(crate) struct Events(mpsc::UnboundedReceiver<String>);

impl Events {
    /// The next event.
    pub(crate) async fn next(&mut self) -> String {
        within(self.0.recv()).await.expect("event channel closed")
    }
}

/// A handler whose behaviour is picked by the method name.
pub(crate) struct TestHandler {
    events: mpsc::UnboundedSender<String>,
    /// Requests to `gate` (and `initialize`) wait for a permit.
    pub(crate) gate: Arc<Semaphore>,
}

/// A fresh handler and the stream of its events.
pub(crate) fn handler() -> (Arc<TestHandler>, Events) {
    let (events, rx) = mpsc::unbounded_channel();
    let handler = TestHandler {
        events,
        gate: Arc::new(Semaphore::new(0)),
    };
    (Arc::new(handler), Events(rx))
}

impl TestHandler {
    /// The answer, as a value.
    fn answer(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let events = self.events.clone();
        let gate = Arc::clone(&self.gate);
        let id = cx.id.clone();
        Box::pin(async move {
            let params = request.params.clone();
            match request.method.as_str() {
                "echo" => Ok(params.unwrap_or(Value::Null)),
                "panic" => panic!("secret panic text"),
                "gate" | "initialize" => {
                    let permit = gate
                        .acquire()
                        .await
                        .map_err(|_| ErrorObject::internal("gate"))?;
                    permit.forget();
                    Ok(json!("opened"))
                }
                "wait_cancel" => {
                    let _ = events.send(format!("started {id}"));
                    cx.cancel.cancelled().await;
                    let _ = events.send(format!("cancelled {id}"));
                    Ok(json!("too late"))
                }
                "notify_then_reply" => {
                    for n in 1..=2 {
                        let params = Some(json!({ "n": n }));
                        cx.peer
                            .notify("notifications/message", params)
                            .await
                            .map_err(internal)?;
                    }
                    Ok(json!({ "done": true }))
                }
                "call_back" => {
                    let options = peer::RequestOptions::default();
                    cx.peer
                        .request("echo", params, options)
                        .await
                        .map_err(internal)
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        })
    }
}

impl Handler for TestHandler {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        as_payload(self.answer(request, cx))
    }

    fn on_notification(&self, notification: Notification, _peer: &Peer) {
        let _ = self
            .events
            .send(format!("notification {}", notification.method));
    }

    fn on_close(&self) {
        let _ = self.events.send("closed".to_owned());
    }
}

fn internal(error: Error) -> ErrorObject {
    ErrorObject::internal(error.to_string())
}

/// The test's end of a stdio connection: writes raw lines, reads JSON lines.
pub(crate) struct RawLines {
    writer: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl RawLines {
    /// Sends `line` plus a newline.
    pub(crate) async fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes()).await;
    }

    /// Sends raw bytes.
    pub(crate) async fn send_bytes(&mut self, bytes: &[u8]) {
        within(self.writer.write_all(bytes)).await.expect("write");
    }

    /// Reads the next line as JSON.
    pub(crate) async fn recv(&mut self) -> Value {
        let line = within(self.lines.next_line())
            .await
            .expect("read")
            .expect("eof");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Closes the input of the peer under test.
    pub(crate) async fn close_input(&mut self) {
        within(self.writer.shutdown()).await.expect("shutdown");
    }
}

/// The peer under test, with its handler's events and its task.
pub(crate) struct Served {
    pub(crate) peer: Peer,
    pub(crate) handler: Arc<TestHandler>,
    pub(crate) events: Events,
    pub(crate) task: JoinHandle<Result<(), Error>>,
}

/// Serves a test handler over newline-delimited JSON and returns the raw other end.
pub(crate) fn serve_lines(
    config: PeerConfig,
    max_line_length: Option<usize>,
) -> (RawLines, Served) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let mut transport = StdioTransport::new(read, write);
    if let Some(max) = max_line_length {
        transport = transport.max_line_length(max);
    }
    let (handler, events) = handler();
    let (peer, task) = peer::serve(transport, handler.clone(), config);
    let (read, writer) = tokio::io::split(ours);
    let raw = RawLines {
        writer,
        lines: BufReader::new(read).lines(),
    };
    (
        raw,
        Served {
            peer,
            handler,
            events,
            task,
        },
    )
}

/// The test's end of an in-memory connection, speaking raw messages.
pub(crate) struct RawMessages {
    pub(crate) reader: MemoryReader,
    pub(crate) writer: MemoryWriter,
}

impl RawMessages {
    /// Sends a message.
    pub(crate) async fn send(&mut self, message: Message) {
        within(self.writer.send(message)).await.expect("send");
    }

    /// Receives the next message.
    pub(crate) async fn recv(&mut self) -> Message {
        let frame = within(self.reader.recv())
            .await
            .expect("recv")
            .expect("eof");
        frame.expect("undecodable frame")
    }
}

/// Serves a test handler over an in-memory transport and returns the raw other end.
pub(crate) fn serve_memory(config: PeerConfig) -> (RawMessages, Served) {
    let (ours, theirs) = memory();
    let (handler, events) = handler();
    let (peer, task) = peer::serve(theirs, handler.clone(), config);
    let (reader, writer) = ours.split();
    (
        RawMessages { reader, writer },
        Served {
            peer,
            handler,
            events,
            task,
        },
    )
}

/// Asserts that every member of `expected` appears in `actual` with the same value (recursively
/// for objects); other values must be equal, JSON types included.
pub(crate) fn assert_subset(actual: &Value, expected: &Value, context: &str) {
    match (actual, expected) {
        (Value::Object(actual_map), Value::Object(expected_map)) => {
            for (key, value) in expected_map {
                let Some(found) = actual_map.get(key) else {
                    panic!("{context}: missing {key:?} in {actual}");
                };
                assert_subset(found, value, &format!("{context}.{key}"));
            }
        }
        _ => assert_eq!(actual, expected, "{context}"),
    }
}

/// A handler's answer as a [`Payload`], from a future answering with a value.
pub(crate) fn as_payload(
    answer: BoxFuture<'static, Result<Value, ErrorObject>>,
) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
    Box::pin(async move { answer.await.map(Payload::from) })
}
