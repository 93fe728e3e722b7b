//! SSE streams in a session: priming, the GET stream, resumption of exactly the named stream,
//! a slow reader, a sampling round trip, cancellation, and graceful shutdown.

use std::time::Duration;

use barrel_mcp::http::HttpConfig;
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::LoggingLevel;
use http::{Method, StatusCode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Client, SseReader, TestServer, body_bytes};
use crate::support::within;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct FloodArgs {
    count: usize,
    size: usize,
    /// How long to wait before flooding (0: the flood starts before the POST reads).
    #[serde(default)]
    pause_ms: u64,
}

/// A server with a tool that naps, and one that floods its stream with logs.
fn busy_server() -> Server {
    Server::builder()
        .name("busy", "1")
        .tool("nap", "Sleep a little", |_: Ctx, _: NoArgs| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok("rested")
        })
        .tool("flood", "Log a lot", |ctx: Ctx, a: FloodArgs| async move {
            if a.pause_ms > 0 {
                tokio::time::sleep(Duration::from_millis(a.pause_ms)).await;
            }
            for n in 0..a.count {
                ctx.log(LoggingLevel::Info, format!("{n}:{}", "x".repeat(a.size)))
                    .await?;
            }
            Ok("flooded")
        })
        .build()
        .expect("server")
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":name,"arguments":arguments,"_meta":{"progressToken":id}}})
}

fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
}

async fn resume(client: &Client, last_event_id: &str) -> SseReader {
    let response = client
        .send(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                ("last-event-id", last_event_id),
            ],
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    SseReader::new(response)
}

#[tokio::test]
async fn post_streams_prime_and_resume_only_the_named_stream() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client();
    client.initialize().await;

    let response = client
        .post(&call(10, "countdown", json!({"steps": 3})))
        .await;
    let mut first = SseReader::new(response);
    let priming = first.next_event().await.expect("priming");
    assert!(priming.data.is_empty() && priming.retry.as_deref() == Some("3000"));
    let stream = priming
        .id
        .expect("id")
        .split_once('.')
        .expect("s.n")
        .0
        .to_owned();
    let progress = first.next_event().await.expect("progress");
    assert_eq!(progress.id.as_deref(), Some(format!("{stream}.1").as_str()));
    drop(first);

    // Another stream of the same session, answered in full.
    let other = client
        .post(&call(11, "echo", json!({"message": "hi"})))
        .await;
    let mut other = SseReader::new(other);
    let other_priming = other.next_event().await.expect("priming");
    assert_ne!(
        other_priming.id.as_deref(),
        Some(format!("{stream}.0").as_str())
    );
    assert_eq!(text_of(&other.next_message().await), "hi");

    // Resuming the first stream replays what followed event 1 on it, and nothing else.
    let mut resumed = resume(&client, &format!("{stream}.1")).await;
    let mut ids = Vec::new();
    let mut last = Value::Null;
    while let Some(event) = resumed.next_event().await {
        ids.push(event.id.expect("id"));
        last = serde_json::from_str(&event.data).expect("json");
    }
    assert_eq!(
        ids,
        vec![
            format!("{stream}.2"),
            format!("{stream}.3"),
            format!("{stream}.4")
        ]
    );
    assert_eq!(last["id"], 10);
    assert_eq!(text_of(&last), "done");

    // A cursor from the future is refused; a forgotten stream says it was truncated.
    let future = client
        .send(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                ("last-event-id", &format!("{stream}.99")),
            ],
            None,
        )
        .await;
    assert_eq!(future.status(), StatusCode::BAD_REQUEST);
    let mut gone = resume(&client, "777.3").await;
    let notice = gone.next_message().await;
    assert_eq!(notice["method"], "notifications/replay_truncated");
    assert!(gone.next_event().await.is_none());
    let malformed = client
        .send(
            Method::GET,
            &[("accept", "text/event-stream"), ("last-event-id", "x")],
            None,
        )
        .await;
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_get_stream_carries_unrelated_notifications() {
    let (fixture, _) = crate::server::fixture::server();
    let server = TestServer::start_with(fixture.clone(), HttpConfig::default()).await;
    let mut client = server.client();
    client.initialize().await;
    let get = client
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::OK);
    let mut stream = SseReader::new(get);
    let priming = stream.next_event().await.expect("priming");
    assert_eq!(priming.id.as_deref(), Some("0.0"));
    let second = client
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    assert!(fixture.remove_tool("echo"));
    let changed = stream.next_message().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn sampling_round_trip_over_the_post_stream() {
    let server = TestServer::start(HttpConfig::default()).await;
    let mut client = server.client();
    client.initialize().await;
    let response = client.post(&call(20, "summarize", json!({}))).await;
    let mut stream = SseReader::new(response);
    let ask = stream.next_message().await;
    assert_eq!(ask["method"], "sampling/createMessage");
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{
        "role":"assistant","content":{"type":"text","text":"short"},"model":"m"}});
    assert_eq!(client.post(&answer).await.status(), StatusCode::ACCEPTED);
    let done = stream.next_message().await;
    assert_eq!(done["id"], 20);
    assert_eq!(text_of(&done), "Summary: short");
}

#[tokio::test]
async fn cancelled_requests_close_their_stream_without_a_response() {
    let (fixture, probe) = crate::server::fixture::server();
    let server = TestServer::start_with(fixture, HttpConfig::default()).await;
    let mut client = server.client();
    client.initialize().await;
    let response = client.post(&call(30, "slow", json!({}))).await;
    let mut stream = SseReader::new(response);
    stream.next_event().await.expect("priming");
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                        "params":{"requestId":30,"reason":"changed my mind"}});
    assert_eq!(client.post(&cancel).await.status(), StatusCode::ACCEPTED);
    assert!(
        stream.next_event().await.is_none(),
        "no response after a cancel"
    );
    within(async {
        while !probe.saw_cancel() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_slow_reader_is_cut_off_and_resumes_from_the_buffer() {
    let config = HttpConfig {
        stream_queue: 8,
        replay_events: 32,
        replay_bytes: 256 * 1024,
        ..HttpConfig::default()
    };
    let server = TestServer::start_with(busy_server(), config).await;
    let mut client = server.client();
    client.initialize().await;
    // 2,000 events of 16 KiB: 32 MiB, far more than the socket buffers and the bounds hold.
    let response = client
        .post(&call(
            40,
            "flood",
            // The pause lets the POST start reading: then the reader is the slow one.
            json!({"count": 2000, "size": 16 * 1024, "pause_ms": 50}),
        ))
        .await;
    // Do not read: let the tool finish while nobody reads the stream.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let received = body_bytes(response).await;
    assert!(
        received.len() < 16 * 1024 * 1024,
        "the live stream was cut off: {} bytes",
        received.len()
    );
    let text = String::from_utf8_lossy(&received);
    assert!(
        !text.contains("flooded"),
        "the response was not on the cut stream"
    );
    let last_id = text
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("id: "))
        .expect("an event id")
        .to_owned();
    // Resuming gives a truncation notice, the last events kept, then the response.
    let mut resumed = resume(&client, &last_id).await;
    let notice = resumed.next_message().await;
    assert_eq!(notice["method"], "notifications/replay_truncated");
    let mut count = 0;
    let mut last = Value::Null;
    while let Some(event) = resumed.next_event().await {
        count += 1;
        last = serde_json::from_str(&event.data).expect("json");
    }
    assert!(count <= 32, "{count} events replayed");
    assert_eq!(text_of(&last), "flooded");
}

#[tokio::test]
async fn graceful_shutdown_answers_running_requests_and_ends_streams() {
    let mut server = TestServer::start_with(busy_server(), HttpConfig::default()).await;
    let mut client = server.client();
    client.initialize().await;
    let get = client
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    let mut get = SseReader::new(get);
    get.next_event().await.expect("priming");
    let response = client.post(&call(50, "nap", json!({}))).await;
    let mut nap = SseReader::new(response);
    nap.next_event().await.expect("priming");
    server.stop().await;
    assert_eq!(text_of(&nap.next_message().await), "rested");
    assert!(nap.next_event().await.is_none());
    assert!(get.next_event().await.is_none(), "the GET stream ended");
    assert_eq!(server.http.session_count(), 0);
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn a_shutdown_that_runs_out_of_time_leaves_no_task_running() {
    let sentinel = std::sync::Arc::new(());
    let held = std::sync::Arc::clone(&sentinel);
    let server = Server::builder()
        .name("stubborn", "1")
        .tool(
            "stubborn",
            "Ignore cancellation",
            move |_: Ctx, _: NoArgs| {
                let held = std::sync::Arc::clone(&held);
                async move {
                    let _held = held;
                    loop {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    #[allow(unreachable_code)]
                    Ok("never")
                }
            },
        )
        .build()
        .expect("server");
    let config = HttpConfig {
        shutdown_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let mut server = TestServer::start_with(server, config).await;
    let mut client = server.client();
    client.initialize().await;
    let response = client.post(&call(7, "stubborn", json!({}))).await;
    let mut stream = SseReader::new(response);
    stream.next_event().await.expect("priming");
    assert_eq!(
        std::sync::Arc::strong_count(&sentinel),
        3,
        "the handler runs"
    );
    let started = std::time::Instant::now();
    server.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        std::sync::Arc::strong_count(&sentinel),
        2,
        "the handler task was stopped"
    );
    assert_eq!(server.http.session_count(), 0);
}

#[tokio::test]
async fn a_sessions_replay_buffers_keep_one_budget_together() {
    let config = HttpConfig {
        session_replay_bytes: 20_000,
        ..HttpConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut client = server.client();
    client.initialize().await;
    // Six calls, each leaving a stream of about 6 KB (a log message and the response): more
    // than the session may keep, though each stream is far under its own limit.
    let big = "x".repeat(6_000);
    let mut streams = Vec::new();
    for id in 1..=6 {
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"log","arguments":{"level":"info","message":big}}});
        let response = client.post(&call).await;
        let mut reader = SseReader::new(response);
        let first = reader.next_event().await.expect("priming event");
        let stream = first.id.expect("event id");
        let (number, _) = stream.split_once('.').expect("stream.seq");
        streams.push(number.to_owned());
        assert_eq!(
            reader.next_message().await["method"],
            "notifications/message"
        );
        assert_eq!(reader.next_message().await["id"], id);
    }
    // The oldest stream was trimmed: resuming it starts with the truncation notice.
    let mut oldest = resume(&client, &format!("{}.0", streams[0])).await;
    let notice = oldest.next_message().await;
    assert_eq!(
        notice["method"], "notifications/replay_truncated",
        "{notice}"
    );
    // The newest is whole.
    let mut newest = resume(&client, &format!("{}.0", streams[5])).await;
    assert_eq!(
        newest.next_message().await["method"],
        "notifications/message"
    );
    assert_eq!(newest.next_message().await["id"], 6);
}
