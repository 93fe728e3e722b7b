//! The stdio cases: the load generator spawns the server itself (pinned with `taskset`), talks
//! newline-delimited JSON-RPC over its stdin and stdout, and reads its CPU time from `/proc`.
//!
//! - [`pipelined`]: after the handshake, `calls` `tools/call`s written at once; calls/s until
//!   all are answered.
//! - [`sequential`]: one call in flight for the warm-up and then the measured window.
//! - [`cold_start`]: spawn, handshake, one call, stdin closed, exit waited for; `runs` times.
//!
//! Every wait is bounded ([`READ_TIMEOUT`] per line, [`MAX_CASE`] per case), and every loop by
//! a count, so a server that stops answering ends the case with an error.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::mcp::{INITIALIZED, call_body, initialize_body, is_echo};
use crate::run::Outcome;

/// The longest one line may take to arrive.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a stdio case may take, whatever is asked.
const MAX_CASE: Duration = Duration::from_secs(120);
/// The longest reply line read; a longer one is an error.
const MAX_LINE: usize = 1 << 20;
/// The most calls a sequential case makes.
const MAX_SEQUENTIAL: u64 = 5_000_000;
/// How long a server may take to exit once its stdin is closed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to start the server: the program and its arguments, and the CPU to pin it to.
#[derive(Clone, Debug)]
pub struct Spawn {
    pub program: String,
    pub args: Vec<String>,
    pub cpu: Option<u32>,
}

/// A running stdio server.
struct Server {
    child: Child,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Server {
    /// Starts the server; `taskset -c CPU` execs it, so the child's PID is the server's own.
    fn start(spawn: &Spawn) -> Result<Self, String> {
        let mut command = match spawn.cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpu.to_string()).arg(&spawn.program);
                c
            }
            None => Command::new(&spawn.program),
        };
        command
            .args(&spawn.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("{}: {e}", spawn.program))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        Ok(Self {
            child,
            pid,
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::with_capacity(512),
        })
    }

    async fn send(&mut self, message: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
        let mut bytes = Vec::with_capacity(message.len() + 1);
        bytes.extend_from_slice(message.as_bytes());
        bytes.push(b'\n');
        tokio::time::timeout(READ_TIMEOUT, stdin.write_all(&bytes))
            .await
            .map_err(|_| "writing to the server timed out".to_owned())?
            .map_err(|e| format!("write: {e}"))
    }

    /// The next line the server writes, without its newline.
    async fn read_line(&mut self) -> Result<&[u8], String> {
        self.line.clear();
        let read =
            tokio::time::timeout(READ_TIMEOUT, self.stdout.read_until(b'\n', &mut self.line))
                .await
                .map_err(|_| format!("no reply within {} s", READ_TIMEOUT.as_secs()))?
                .map_err(|e| format!("read: {e}"))?;
        if read == 0 {
            return Err("the server closed stdout".to_owned());
        }
        if self.line.len() > MAX_LINE {
            return Err("reply line too long".to_owned());
        }
        Ok(self.line.trim_ascii_end())
    }

    /// `initialize` (answered with a result) and `notifications/initialized`.
    async fn handshake(&mut self) -> Result<(), String> {
        self.send(&initialize_body()).await?;
        let reply = self.read_line().await?;
        if crate::http::find(reply, b"\"result\"").is_none() {
            return Err(format!("initialize: {}", String::from_utf8_lossy(reply)));
        }
        self.send(INITIALIZED).await
    }

    /// One `tools/call` of `echo`, answered and checked.
    async fn call(&mut self, id: u64) -> Result<(), String> {
        self.send(&call_body(id)).await?;
        let reply = self.read_line().await?;
        if is_echo(reply) {
            Ok(())
        } else {
            Err(format!("tools/call: {}", clip(reply)))
        }
    }

    /// Closes stdin and waits for the server to exit (killed after [`EXIT_TIMEOUT`]).
    async fn finish(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        match tokio::time::timeout(EXIT_TIMEOUT, self.child.wait()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("wait: {e}")),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(format!(
                    "did not exit within {} s of stdin closing",
                    EXIT_TIMEOUT.as_secs()
                ))
            }
        }
    }
}

fn clip(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).chars().take(300).collect()
}

/// `calls` `tools/call`s written at once after the handshake; the outcome's `seconds` is the
/// time from the first byte written to the last answer read.
pub async fn pipelined(spawn: &Spawn, calls: u64) -> Outcome {
    let mut out = Outcome::default();
    if let Err(e) = pipelined_into(spawn, calls, &mut out).await {
        out.errors += 1;
        out.first_error = Some(e);
    }
    out
}

async fn pipelined_into(spawn: &Spawn, calls: u64, out: &mut Outcome) -> Result<(), String> {
    let mut server = Server::start(spawn)?;
    server.handshake().await?;
    // The first call also warms the server's call path up.
    server.call(1).await?;
    let mut batch = Vec::with_capacity(calls as usize * 128);
    for id in 0..calls {
        batch.extend_from_slice(call_body(id + 2).as_bytes());
        batch.push(b'\n');
    }
    let mut stdin = server.stdin.take().ok_or("stdin already closed")?;
    let cpu_before = cpu_ns(server.pid);
    let t0 = Instant::now();
    let deadline = t0 + MAX_CASE;
    // The writer runs beside the reader: the pipes are small, so the server's answers must be
    // read while the batch is still being written.
    let writer = tokio::spawn(async move {
        let result = tokio::time::timeout(MAX_CASE, stdin.write_all(&batch)).await;
        (stdin, result)
    });
    let mut answered = 0;
    while answered < calls && Instant::now() < deadline {
        let reply = server.read_line().await?;
        if is_echo(reply) {
            answered += 1;
        } else {
            out.errors += 1;
            if out.first_error.is_none() {
                out.first_error = Some(format!("tools/call: {}", clip(reply)));
            }
            // An error is an answer too: count it, so the loop still ends after `calls` lines.
            answered += 1;
        }
    }
    let elapsed = t0.elapsed();
    let cpu_after = cpu_ns(server.pid);
    match writer.await {
        Ok((stdin, Ok(Ok(())))) => server.stdin = Some(stdin),
        Ok((_, Ok(Err(e)))) => return Err(format!("write: {e}")),
        Ok((_, Err(_))) => return Err("writing the batch timed out".to_owned()),
        Err(e) => return Err(format!("writer: {e}")),
    }
    out.ops = answered.saturating_sub(out.errors);
    out.seconds = elapsed.as_secs_f64();
    if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
        out.cpu_us = Some((after - before) as f64 / 1000.0 / out.ops.max(1) as f64);
    }
    server.finish().await
}

/// One call in flight: `warmup`, then `duration` measured (calls/s, latencies, CPU per call).
pub async fn sequential(spawn: &Spawn, warmup: Duration, duration: Duration) -> Outcome {
    let mut out = Outcome::default();
    if let Err(e) = sequential_into(spawn, warmup, duration, &mut out).await {
        out.errors += 1;
        out.first_error = Some(e);
    }
    out.seconds = duration.as_secs_f64();
    out.latencies_us.sort_unstable();
    out
}

async fn sequential_into(
    spawn: &Spawn,
    warmup: Duration,
    duration: Duration,
    out: &mut Outcome,
) -> Result<(), String> {
    let mut server = Server::start(spawn)?;
    server.handshake().await?;
    let start = Instant::now() + warmup;
    let end = start + duration;
    let mut cpu_before = None;
    let mut id = 0;
    while Instant::now() < end && id < MAX_SEQUENTIAL {
        id += 1;
        if cpu_before.is_none() && Instant::now() >= start {
            cpu_before = cpu_ns(server.pid);
        }
        let t0 = Instant::now();
        let result = server.call(id).await;
        let t1 = Instant::now();
        match result {
            Ok(()) if t0 >= start && t1 <= end => {
                out.ops += 1;
                let us = t1.duration_since(t0).as_micros();
                out.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
            }
            Ok(()) => {}
            // Over stdio an unanswered call leaves the stream out of step: stop the case.
            Err(e) => return Err(e),
        }
    }
    let cpu_after = cpu_ns(server.pid);
    if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
        out.cpu_us = Some((after - before) as f64 / 1000.0 / out.ops.max(1) as f64);
    }
    server.finish().await
}

/// Cold starts: wall times in microseconds (sorted), and the server's CPU time up to its first
/// `tools/call` answer, per run.
#[derive(Debug, Default)]
pub struct Cold {
    pub wall_us: Vec<u64>,
    pub cpu_us: Vec<u64>,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// `runs` times: spawn, handshake, one call, stdin closed, exit waited for.
pub async fn cold_start(spawn: &Spawn, runs: u32) -> Cold {
    let mut cold = Cold::default();
    let deadline = Instant::now() + MAX_CASE;
    for _ in 0..runs {
        if Instant::now() > deadline {
            break;
        }
        let t0 = Instant::now();
        let result = async {
            let mut server = Server::start(spawn)?;
            server.handshake().await?;
            server.call(1).await?;
            let cpu = cpu_ns(server.pid);
            server.finish().await?;
            Ok::<_, String>(cpu)
        }
        .await;
        let wall = t0.elapsed();
        match result {
            Ok(cpu) => {
                cold.wall_us
                    .push(u64::try_from(wall.as_micros()).unwrap_or(u64::MAX));
                if let Some(ns) = cpu {
                    cold.cpu_us.push(ns / 1000);
                }
            }
            Err(e) => {
                cold.errors += 1;
                if cold.first_error.is_none() {
                    cold.first_error = Some(e);
                }
            }
        }
    }
    cold.wall_us.sort_unstable();
    cold.cpu_us.sort_unstable();
    cold
}

/// The CPU time (user + system) of every live thread of a process, in nanoseconds, from
/// `/proc/PID/task/*/schedstat` (nanosecond resolution, where `/proc/PID/stat` counts 10 ms
/// ticks); the ticks when schedstat is not available. A thread that ended is not counted.
fn cpu_ns(pid: u32) -> Option<u64> {
    let from_schedstat = || -> Option<u64> {
        let mut total = 0;
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
            let path = task.ok()?.path().join("schedstat");
            let Ok(text) = std::fs::read_to_string(path) else {
                // The thread ended between the listing and the read.
                continue;
            };
            total += text.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(total)
    };
    from_schedstat().or_else(|| crate::run::cpu_ticks(pid).map(|t| t * 10_000_000))
}
