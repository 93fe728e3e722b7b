//! The fault run: clients of barrel-mcp behind a TCP proxy that cuts or resets their SSE
//! streams at random points, resuming with `Last-Event-ID`; nothing may be lost or repeated.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use barrel_mcp::client::{CallOptions, Client, ClientHandler, ServerNotification};
use barrel_mcp::http::{HttpConfig, StreamableHttp, serve};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::types::{CallToolParams, LoggingLevel, ProtocolVersion};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::Check;
use crate::raw::Failure;

/// Messages each session's GET stream carries.
const MESSAGES: u64 = 200;

/// Progress notifications of each call.
const STEPS: u64 = 30;

/// Clients run at once.
const AT_ONCE: usize = 4;

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// How many.
    n: u64,
}

pub(crate) async fn run(rounds: usize) -> Vec<Check> {
    let seed = std::env::var("FAULTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(seed_from_clock);
    match run_seeded(rounds, seed).await {
        Ok(checks) => checks,
        Err(error) => vec![Check::new(
            format!("faults: the run starts ({error})"),
            false,
        )],
    }
}

async fn run_seeded(rounds: usize, seed: u64) -> Result<Vec<Check>, Failure> {
    let server = Server::builder()
        .name("faults", "1.0.0")
        .tool(
            "publish",
            "Sends n numbered log messages to the session, one every 2 ms",
            |ctx: Ctx, count: Count| async move {
                let session = ctx
                    .session()
                    .ok_or_else(|| barrel_mcp::Error::tool("no session"))?;
                tokio::spawn(async move {
                    // The client opens its GET stream right after initializing.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    for seq in 0..count.n {
                        if session
                            .log(LoggingLevel::Info, json!({"seq": seq}))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                });
                Ok("publishing".to_owned())
            },
        )
        .tool(
            "count",
            "Reports n progress steps, one every 2 ms, then answers",
            |ctx: Ctx, count: Count| async move {
                for step in 1..=count.n {
                    ctx.progress(step as f64, Some(count.n as f64), None)
                        .await?;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Ok(format!("counted {}", count.n))
            },
        )
        .build()?;
    let config = HttpConfig {
        // Reconnect at once, and keep every message of a run for replay.
        sse_retry: Duration::from_millis(20),
        replay_events: 1_024,
        ..HttpConfig::default()
    };
    let http = StreamableHttp::new(server, config);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let upstream = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve(listener, http, async move {
        let _ = stopped.await;
    }));
    let faults = Arc::new(Faults::default());
    let proxy_listener = TcpListener::bind("127.0.0.1:0").await?;
    let proxy_addr = proxy_listener.local_addr()?;
    let proxy = tokio::spawn(proxy(proxy_listener, upstream, seed, Arc::clone(&faults)));

    let url = format!("http://{proxy_addr}/mcp");
    let mut outcomes = Vec::new();
    let mut round = 0;
    while round < rounds {
        let mut running = JoinSet::new();
        for _ in 0..AT_ONCE.min(rounds - round) {
            running.spawn(one_client(url.clone()));
            round += 1;
        }
        while let Some(done) = running.join_next().await {
            outcomes.push(
                done.map_err(|e| e.to_string())
                    .and_then(|r| r.map_err(|e| e.to_string())),
            );
        }
    }
    proxy.abort();
    let _ = stop.send(());
    let _ = serving.await;

    let (cuts, resets) = (
        faults.cuts.load(Ordering::SeqCst),
        faults.resets.load(Ordering::SeqCst),
    );
    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    println!(
        "faults: {rounds} clients (seed {seed}), {cuts} streams cut and {resets} reset by the proxy, \
         {} clients failed{}",
        failures.len(),
        failures
            .first()
            .map(|f| format!(" (first: {f})"))
            .unwrap_or_default(),
    );
    Ok(vec![
        Check::new(
            format!(
                "faults: {rounds} clients each saw all {MESSAGES} messages once and in order, and \
                 every call's progress once and its result, through {cuts} cuts and {resets} resets"
            ),
            failures.is_empty(),
        ),
        Check::new(
            "faults: the proxy cut and reset streams",
            cuts > 0 && resets > 0,
        ),
    ])
}

/// The log messages a client received, by sequence number, in arrival order.
#[derive(Default, Clone)]
struct Received(Arc<Mutex<Vec<u64>>>);

impl ClientHandler for Received {
    async fn on_notification(&self, notification: ServerNotification) {
        if let ServerNotification::LoggingMessage(message) = notification
            && let Some(seq) = message.data.get("seq").and_then(serde_json::Value::as_u64)
            && let Ok(mut seen) = self.0.lock()
        {
            seen.push(seq);
        }
    }
}

/// One client: a stream of messages and two calls with progress, all through the proxy.
async fn one_client(url: String) -> Result<(), Failure> {
    let received = Received::default();
    let transport = HttpClientTransport::new(&url)?;
    let client = Client::builder()
        .name("faults", "1.0.0")
        // A session, whose GET stream carries what the server sends outside a request.
        .pin(ProtocolVersion::V2025_11_25)
        .handler(received.clone())
        .connect(transport)
        .await?;
    let publish = CallToolParams::new("publish").with_arguments(object(json!({"n": MESSAGES})));
    let started = client.call_tool(publish).await?;
    if started.text_content() != "publishing" {
        return Err(format!("publish answered {:?}", started.text_content()).into());
    }
    for _ in 0..2 {
        let steps = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&steps);
        let options = CallOptions::new().on_progress(move |p| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(p.progress);
            }
        });
        let count = CallToolParams::new("count").with_arguments(object(json!({"n": STEPS})));
        let result = client.call_tool_with(count, options).await?;
        if result.text_content() != format!("counted {STEPS}") {
            return Err(format!("count answered {:?}", result.text_content()).into());
        }
        let steps = steps.lock().map_err(|_| "poisoned")?.clone();
        if steps.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("progress repeated or out of order: {steps:?}").into());
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let seen = received.0.lock().map_err(|_| "poisoned")?.clone();
        let expected: Vec<u64> = (0..MESSAGES).collect();
        if seen == expected {
            break;
        }
        if seen.len() as u64 >= MESSAGES || tokio::time::Instant::now() > deadline {
            return Err(format!(
                "messages: got {} ({:?}...)",
                seen.len(),
                &seen[..seen.len().min(20)]
            )
            .into());
        }
        if seen.iter().enumerate().any(|(i, &seq)| seq != i as u64) {
            return Err(format!("messages lost, repeated or out of order: {seen:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.close();
    Ok(())
}

fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// What the proxy did.
#[derive(Default)]
struct Faults {
    cuts: AtomicUsize,
    resets: AtomicUsize,
}

/// Forwards each connection to `upstream`. Once the server starts an SSE answer on it, the
/// connection may be given a budget of bytes (at random): when the server has sent that many,
/// both sides are closed, half the time with a reset.
async fn proxy(listener: TcpListener, upstream: SocketAddr, seed: u64, faults: Arc<Faults>) {
    let mut rng = Rng(seed | 1);
    loop {
        let Ok((client, _)) = listener.accept().await else {
            return;
        };
        let plan = Plan {
            armed_probability: rng.below(100) < 60,
            budget: 200 + rng.below(6_000) as usize,
            reset: rng.below(2) == 0,
        };
        let faults = Arc::clone(&faults);
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(upstream).await {
                forward(client, server, plan, &faults).await;
            }
        });
    }
}

/// The fault one connection gets.
#[derive(Clone, Copy)]
struct Plan {
    /// Whether an SSE answer on this connection is cut at all.
    armed_probability: bool,
    /// Bytes of the SSE answer let through before the cut.
    budget: usize,
    /// A reset (RST) rather than a close (FIN).
    reset: bool,
}

async fn forward(client: TcpStream, server: TcpStream, plan: Plan, faults: &Faults) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upward = async {
        let mut buffer = vec![0u8; 16 * 1024];
        let mut first = true;
        loop {
            match client_read.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut chunk = buffer[..n].to_vec();
                    if std::mem::take(&mut first) {
                        // One exchange per connection: a cut then hits one stream, never a
                        // later request that reuses the connection.
                        close_after(&mut chunk);
                    }
                    if server_write.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let downward = async {
        let mut buffer = vec![0u8; 16 * 1024];
        // Bytes of the current SSE answer sent so far, while one is open.
        let mut streaming: Option<usize> = None;
        // An SSE answer has begun and its first event id has not been seen yet.
        let mut opening = false;
        loop {
            let n = match server_read.read(&mut buffer).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => n,
            };
            let chunk = &buffer[..n];
            if contains(chunk, b"text/event-stream") {
                opening = true;
            }
            // The budget counts from the stream's first event id: before it a client has
            // nothing to resume from (the call fails with a clear error; the library's tests
            // cover that case).
            if opening && contains(chunk, b"\nid:") {
                opening = false;
                streaming = Some(0);
            }
            if client_write.write_all(chunk).await.is_err() {
                return false;
            }
            if let Some(sent) = streaming.as_mut() {
                *sent += n;
                if plan.armed_probability && *sent >= plan.budget {
                    return true;
                }
            }
            if contains(chunk, b"\r\n0\r\n\r\n") {
                (streaming, opening) = (None, false);
            }
        }
    };
    let cut = tokio::select! {
        () = upward => false,
        cut = downward => cut,
    };
    if cut {
        if plan.reset {
            faults.resets.fetch_add(1, Ordering::SeqCst);
            // A reset discards what the receiver has not read yet: give the client time to
            // read what was let through, so the cut falls where the budget says.
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Ok(client) = client_read.reunite(client_write) {
                #[allow(deprecated)]
                let _ = client.set_linger(Some(Duration::ZERO));
                drop(client);
            }
        } else {
            faults.cuts.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Adds `Connection: close` to the request head at the start of `chunk`.
fn close_after(chunk: &mut Vec<u8>) {
    if let Some(end) = chunk.windows(4).position(|w| w == b"\r\n\r\n") {
        let at = end + 2;
        chunk.splice(at..at, b"connection: close\r\n".iter().copied());
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// xorshift64: the proxy's choices, reproducible from the printed seed (not for secrets).
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}
