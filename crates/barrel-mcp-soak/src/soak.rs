//! The soak: many sessions opened, used and closed in waves, some with slow or stalled
//! readers, and the process back where it started afterwards.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use barrel_mcp::http::{HttpConfig, StreamableHttp, serve};
use barrel_mcp::server::{Ctx, Server, ToolHandler};
use barrel_mcp::types::Tool;
use http_body_util::BodyExt;
use hyper::Method;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::Check;
use crate::process::{live_tasks, rss_kib};
use crate::raw::{Connection, Failure, expect_status, text};

/// Sessions open at once.
const WAVE: usize = 250;

/// Waves run before the baseline is taken.
const WARM_UP_WAVES: usize = 10;

/// How long the process may take to let go of a wave's sessions, connections and tasks.
const SETTLE: Duration = Duration::from_secs(15);

/// How a session reads the server's GET stream.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Reader {
    /// It opens none.
    None,
    /// It reads one event every few milliseconds until the stream ends.
    Slow,
    /// It opens the stream and never reads it; the connection is dropped at the end of the wave.
    Stalled,
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    message: String,
}

/// A server named `name` with one tool, `echo`, which sends its `message` back.
pub(crate) fn echo_server(name: &str) -> Result<Server, barrel_mcp::Error> {
    Server::builder()
        .name(name, "1.0.0")
        .tool(
            "echo",
            "Send the message back",
            |_: Ctx, echo: Echo| async move { Ok(echo.message) },
        )
        .build()
}

pub(crate) async fn run(sessions: usize) -> Vec<Check> {
    let server = match echo_server("soak") {
        Ok(server) => server,
        Err(error) => {
            return vec![Check::new(
                format!("soak: the server builds ({error})"),
                false,
            )];
        }
    };
    let config = HttpConfig {
        max_sessions: WAVE * 4,
        ..HttpConfig::default()
    };
    let http = StreamableHttp::new(server.clone(), config);
    let listener = match TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(error) => return vec![Check::new(format!("soak: bind ({error})"), false)],
    };
    let Ok(addr) = listener.local_addr() else {
        return vec![Check::new("soak: a local address", false)];
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve(listener, http.clone(), async move {
        let _ = stopped.await;
    }));
    let announcing = tokio::spawn(announce(server.clone()));

    // The warm-up grows every pool, table and allocator arena to what waves of this size
    // need (RSS is flat after about ten waves: measured, see docs/SECURITY.md); what stands
    // after it is the baseline the soak must come back to.
    let rss_start = rss_kib();
    let mut warm_up = WaveOutcome::default();
    for number in 0..WARM_UP_WAVES {
        let outcome = wave(addr, WAVE, number).await;
        warm_up.errors += outcome.errors;
        warm_up.first_error = warm_up.first_error.or(outcome.first_error);
    }
    settle(&http, usize::MAX).await;
    let (rss_before, tasks_before) = (rss_kib(), live_tasks());

    let started = Instant::now();
    let (mut errors, mut first_error) = (warm_up.errors, warm_up.first_error);
    let (mut slow, mut stalled) = (0, 0);
    let mut done = 0;
    let mut number = WARM_UP_WAVES;
    while done < sessions {
        let size = WAVE.min(sessions - done);
        let outcome = wave(addr, size, number).await;
        errors += outcome.errors;
        first_error = first_error.or(outcome.first_error);
        slow += outcome.slow;
        stalled += outcome.stalled;
        done += size;
        number += 1;
        if std::env::var_os("SOAK_TRACE").is_some() {
            println!(
                "wave {number}: {done} sessions, RSS {} KiB, {} tasks",
                rss_kib(),
                live_tasks()
            );
        }
    }
    let elapsed = started.elapsed();
    let settled = settle(&http, tasks_before).await;
    let (rss_after, tasks_after) = (rss_kib(), live_tasks());
    let sessions_after = http.session_count();

    announcing.abort();
    let _ = stop.send(());
    let _ = serving.await;

    let growth = rss_after as f64 / rss_before.max(1) as f64 - 1.0;
    println!(
        "soak: {done} sessions ({slow} slow readers, {stalled} stalled) in {:.1} s after a \
         warm-up of {} (RSS {rss_start} KiB at the start), {errors} errors{}; after: \
         {sessions_after} sessions, {tasks_after} tasks (before {tasks_before}), RSS \
         {rss_after} KiB (before {rss_before} KiB, {:+.1}%), settled in {:.1} s",
        elapsed.as_secs_f64(),
        WARM_UP_WAVES * WAVE,
        first_error
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default(),
        growth * 100.0,
        settled.as_secs_f64(),
    );
    vec![
        Check::new(
            format!("soak: {done} sessions opened, used and closed without an error"),
            errors == 0,
        ),
        Check::new(
            "soak: no session left after the last wave",
            sessions_after == 0,
        ),
        Check::new(
            format!(
                "soak: live tasks back to the baseline ({tasks_before} before, {tasks_after} after)"
            ),
            tasks_after <= tasks_before,
        ),
        Check::new(
            format!(
                "soak: RSS within 10% of the baseline ({rss_before} KiB before, {rss_after} KiB after)"
            ),
            rss_before > 0 && growth <= 0.10,
        ),
    ]
}

/// Adds and removes a tool without pause, so every session's GET stream has list changes to
/// carry.
async fn announce(server: Server) {
    let tool = Tool::new("blink", Map::new());
    loop {
        let handler =
            ToolHandler::raw(|_: Ctx, _: Map<String, Value>| async move { Ok(String::new()) });
        let _ = server.add_tool(tool.clone(), handler);
        tokio::time::sleep(Duration::from_millis(5)).await;
        server.remove_tool("blink");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until no session is left and at most `tasks` tasks are alive (or, with
/// `usize::MAX`, until the task count stops falling), for at most [`SETTLE`].
async fn settle(http: &StreamableHttp, tasks: usize) -> Duration {
    let started = Instant::now();
    let mut last = usize::MAX;
    while started.elapsed() < SETTLE {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = live_tasks();
        let calm = if tasks == usize::MAX {
            now >= last
        } else {
            now <= tasks
        };
        if http.session_count() == 0 && calm {
            break;
        }
        last = now;
    }
    started.elapsed()
}

#[derive(Default)]
struct WaveOutcome {
    errors: usize,
    first_error: Option<String>,
    slow: usize,
    stalled: usize,
}

/// `size` sessions at once; one in ten reads its GET stream slowly, one in ten never does.
async fn wave(addr: SocketAddr, size: usize, number: usize) -> WaveOutcome {
    let mut running = JoinSet::new();
    let mut outcome = WaveOutcome::default();
    for i in 0..size {
        let reader = match (number * size + i) % 10 {
            0 => Reader::Slow,
            1 => Reader::Stalled,
            _ => Reader::None,
        };
        match reader {
            Reader::Slow => outcome.slow += 1,
            Reader::Stalled => outcome.stalled += 1,
            Reader::None => {}
        }
        running.spawn(session(addr, reader));
    }
    // The stalled streams are kept, unread, until every session of the wave is done.
    let mut held = Vec::new();
    while let Some(done) = running.join_next().await {
        match done {
            Ok(Ok(stalled)) => held.extend(stalled),
            Ok(Err(error)) => {
                outcome.errors += 1;
                outcome.first_error.get_or_insert(error.to_string());
            }
            Err(error) => {
                outcome.errors += 1;
                outcome.first_error.get_or_insert(error.to_string());
            }
        }
    }
    drop(held);
    outcome
}

/// What a stalled session leaves open: its GET connection and the unread answer.
type Held = (Connection, hyper::Response<hyper::body::Incoming>);

/// One session: initialize, initialized, maybe a GET stream, a tool call, DELETE.
async fn session(addr: SocketAddr, reader: Reader) -> Result<Option<Held>, Failure> {
    let mut posts = Connection::open(addr).await?;
    let id = posts.open_session("soak").await?;

    let mut stream = None;
    if reader != Reader::None {
        let mut get = Connection::open(addr).await?;
        let answer = get.send(Method::GET, Some(&id), None).await?;
        expect_status(&answer, &[200], "GET")?;
        stream = Some((get, answer));
    }
    let slow_reading = match (reader, stream.take()) {
        (Reader::Slow, Some((get, answer))) => Some(tokio::spawn(read_slowly(get, answer))),
        (_, held) => {
            stream = held;
            None
        }
    };

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"message": "soak"}}});
    let answer = posts.send(Method::POST, Some(&id), Some(&call)).await?;
    expect_status(&answer, &[200], "tools/call")?;
    let body = text(answer).await?;
    if !body.contains("\"soak\"") {
        return Err(format!("tools/call: unexpected answer {body}").into());
    }
    let answer = posts.send(Method::DELETE, Some(&id), None).await?;
    expect_status(&answer, &[200, 204], "DELETE")?;
    text(answer).await?;
    if let Some(reading) = slow_reading {
        // The session's end ends its stream, however slowly it is read.
        tokio::time::timeout(SETTLE, reading)
            .await
            .map_err(|_| "a slow reader's stream did not end after DELETE")???;
    }
    Ok(stream)
}

/// Reads a stream one frame every few milliseconds until it ends.
async fn read_slowly(
    get: Connection,
    answer: hyper::Response<hyper::body::Incoming>,
) -> Result<(), Failure> {
    let mut body = answer.into_body();
    while let Some(frame) = body.frame().await {
        frame?;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    drop(get);
    Ok(())
}
