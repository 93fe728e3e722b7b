//! The node serving a session's GET stream killed: the client opens the stream again on the
//! other node with `Last-Event-ID`, gets what the dead node had written (it is in Redis), and
//! the changes made from then on. Plain HTTP straight to each node, so the test decides which
//! node serves what.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use super::harness::{EXCHANGE_WITHIN, Service, within};

/// Sends one request straight to the node on `port`.
async fn send(
    port: u16,
    method: &str,
    session: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> http::Response<Incoming> {
    let exchange = async {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        let mut request = http::Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", format!("127.0.0.1:{port}"))
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = Full::new(Bytes::from(body.map(Value::to_string).unwrap_or_default()));
        sender
            .send_request(request.body(body).expect("a request"))
            .await
            .expect("an answer")
    };
    tokio::time::timeout(EXCHANGE_WITHIN, exchange)
        .await
        .expect("the node answered in time")
}

/// POSTs `message`, asking for a JSON answer; returns the status and the session id header.
async fn post(port: u16, session: Option<&str>, message: &Value) -> (u16, Option<String>) {
    let response = send(
        port,
        "POST",
        session,
        &[("accept", "application/json")],
        Some(message),
    )
    .await;
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // The body is read to its end: a tool's work is done once its answer came.
    let _ = tokio::time::timeout(EXCHANGE_WITHIN, response.into_body().collect()).await;
    (status, id)
}

/// One SSE event: its id and data.
struct Event {
    id: Option<String>,
    data: String,
}

/// Reads events off a GET stream.
struct Stream {
    body: Incoming,
    buffer: String,
}

impl Stream {
    async fn open(port: u16, session: &str, last_event_id: Option<&str>) -> Self {
        let mut headers = vec![("accept", "text/event-stream")];
        if let Some(id) = last_event_id {
            headers.push(("last-event-id", id));
        }
        let response = send(port, "GET", Some(session), &headers, None).await;
        assert_eq!(response.status(), 200, "GET on port {port}");
        Self {
            body: response.into_body(),
            buffer: String::new(),
        }
    }

    /// The next event, or `None` when the stream ended.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Event {
                    id: None,
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        event.id = Some(id.to_owned());
                        any = true;
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        event.data.push_str(data);
                        any = true;
                    }
                }
                if any {
                    return Some(event);
                }
                continue;
            }
            let frame = tokio::time::timeout(EXCHANGE_WITHIN, self.body.frame())
                .await
                .expect("an event in time")?
                .ok()?;
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }

    /// The next message whose method is `method` (others skipped), with its event id.
    async fn until(&mut self, method: &str) -> String {
        loop {
            let event = self.next().await.expect("the stream ended early");
            if event.data.is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(&event.data).expect("JSON");
            if message["method"] == method {
                return event.id.expect("GET events have ids");
            }
        }
    }
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}})
}

#[tokio::test]
async fn the_get_stream_owner_killed_is_replaced_and_nothing_it_wrote_is_lost() {
    within(Duration::from_secs(40), async {
        let mut service = Service::start(&[]).await;
        let (a, b) = (service.nodes[0].port(), service.nodes[1].port());
        let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"faults","version":"1"}}});
        let (status, session) = post(a, None, &initialize).await;
        assert_eq!(status, 200);
        let session = session.expect("a session id");
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        assert_eq!(post(a, Some(&session), &initialized).await.0, 202);

        // Node A serves the GET stream; a change made on B reaches it through A.
        let mut on_a = Stream::open(a, &session, None).await;
        let priming = on_a.next().await.expect("a priming event");
        let priming = priming.id.expect("the priming event has an id");
        let mut n = 10;
        let written = loop {
            n += 1;
            assert_eq!(
                post(b, Some(&session), &call(n, "test_trigger_tool_change"))
                    .await
                    .0,
                200
            );
            let next = tokio::time::timeout(
                Duration::from_millis(500),
                on_a.until("notifications/tools/list_changed"),
            );
            if let Ok(id) = next.await {
                break id;
            }
        };

        service.nodes[0].kill();
        // The client comes back on B from where it started: what A wrote is replayed.
        let mut on_b = Stream::open(b, &session, Some(&priming)).await;
        let replayed = on_b.until("notifications/tools/list_changed").await;
        assert_eq!(replayed, written, "the event A wrote, under its id");
        // B serves the stream from now on.
        n += 1;
        assert_eq!(
            post(b, Some(&session), &call(n, "test_trigger_prompt_change"))
                .await
                .0,
            200
        );
        let next = on_b.until("notifications/prompts/list_changed").await;
        let seq = |id: &str| {
            id.split_once('.')
                .and_then(|(_, seq)| seq.parse::<u64>().ok())
                .expect("stream.seq")
        };
        assert!(seq(&next) > seq(&written), "{next} follows {written}");
        assert!(service.nodes[1].is_running(), "{}", service.said());
    })
    .await;
}
