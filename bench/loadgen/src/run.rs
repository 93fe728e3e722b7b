//! The cases: closed-loop workers over keep-alive connections, measured after a warm-up.
//!
//! Every worker stops at the deadline and after at most [`MAX_OPS_PER_WORKER`] operations, so a
//! run is bounded in time and in count whatever the server does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::http::Conn;
use crate::mcp::{Client, Mode};

/// A hard cap on the operations one worker performs in one case.
const MAX_OPS_PER_WORKER: u64 = 5_000_000;
/// How long a worker waits before reconnecting after a failure.
const BACKOFF: Duration = Duration::from_millis(10);

/// What one case does per operation.
#[derive(Clone, Copy, Debug)]
pub enum Work {
    /// One `tools/call` echo.
    Call(Mode),
    /// `initialize` + `notifications/initialized` + DELETE.
    Session,
}

/// The measured outcome of a timed case.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ops: u64,
    pub seconds: f64,
    pub latencies_us: Vec<u32>,
    pub errors: u64,
    pub sse: u64,
    pub json: u64,
    pub cpu_us: Option<f64>,
    pub first_error: Option<String>,
}

impl Outcome {
    fn merge(&mut self, other: Outcome) {
        self.ops += other.ops;
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
        self.sse += other.sse;
        self.json += other.json;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// The latency at quantile `q` (0..1) in microseconds, on sorted latencies.
    pub fn quantile_us(&self, q: f64) -> u32 {
        let v = &self.latencies_us;
        if v.is_empty() {
            return 0;
        }
        let i = ((v.len() as f64 * q) as usize).min(v.len() - 1);
        v[i]
    }

    pub fn reply_kind(&self) -> &'static str {
        match (self.sse > 0, self.json > 0) {
            (true, false) => "sse",
            (false, true) => "json",
            (true, true) => "mixed",
            (false, false) => "-",
        }
    }
}

/// Runs `conns` workers for `warmup + duration`, counting what completes after the warm-up.
pub async fn timed(
    client: Client,
    work: Work,
    conns: usize,
    warmup: Duration,
    duration: Duration,
    pid: Option<u32>,
) -> Outcome {
    let client = Arc::new(client);
    let start = Instant::now() + warmup;
    let end = start + duration;
    let mut tasks = Vec::with_capacity(conns);
    for _ in 0..conns {
        tasks.push(tokio::spawn(worker(client.clone(), work, start, end)));
    }
    let cpu = pid.map(|pid| {
        tokio::spawn(async move {
            tokio::time::sleep_until(start.into()).await;
            let before = cpu_ticks(pid);
            tokio::time::sleep_until(end.into()).await;
            Some(cpu_ticks(pid)? - before?)
        })
    });
    let mut total = Outcome::default();
    for task in tasks {
        if let Ok(outcome) = task.await {
            total.merge(outcome);
        }
    }
    total.seconds = duration.as_secs_f64();
    total.latencies_us.sort_unstable();
    if let Some(Ok(Some(ticks))) = match cpu {
        Some(task) => Some(task.await),
        None => None,
    } {
        // /proc reports CPU time in clock ticks of 10 ms (USER_HZ is 100 on Linux).
        total.cpu_us = Some(ticks as f64 * 10_000.0 / total.ops.max(1) as f64);
    }
    total
}

async fn worker(client: Arc<Client>, work: Work, start: Instant, end: Instant) -> Outcome {
    let mut out = Outcome::default();
    let mut conn: Option<(Conn, Option<String>)> = None;
    let mut id = 0u64;
    while Instant::now() < end && id < MAX_OPS_PER_WORKER {
        id += 1;
        let (c, session) = match conn.as_mut() {
            Some(open) if !open.0.broken => open,
            _ => match connect(&client, work).await {
                Ok(open) => conn.insert(open),
                Err(e) => {
                    fail(&mut out, e);
                    conn = None;
                    tokio::time::sleep(BACKOFF).await;
                    continue;
                }
            },
        };
        let t0 = Instant::now();
        let result = match work {
            Work::Call(mode) => client.call(c, mode, session.as_deref(), id).await,
            Work::Session => match client.open_session(c).await {
                Ok(s) => client.close_session(c, &s).await.map(|()| false),
                Err(e) => Err(e),
            },
        };
        let t1 = Instant::now();
        match result {
            Ok(sse) if t0 >= start && t1 <= end => {
                out.ops += 1;
                let us = t1.duration_since(t0).as_micros();
                out.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                match (work, sse) {
                    (Work::Session, _) => {}
                    (_, true) => out.sse += 1,
                    (_, false) => out.json += 1,
                }
            }
            Ok(_) => {}
            Err(e) => fail(&mut out, e),
        }
    }
    out
}

async fn connect(client: &Client, work: Work) -> Result<(Conn, Option<String>), String> {
    let mut conn = Conn::connect(&client.target)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let session = match work {
        Work::Call(Mode::Session) => Some(client.open_session(&mut conn).await?),
        Work::Call(Mode::Stateless | Mode::Task | Mode::Sessionless) | Work::Session => None,
    };
    Ok((conn, session))
}

fn fail(out: &mut Outcome, error: String) {
    out.errors += 1;
    if out.first_error.is_none() {
        out.first_error = Some(error);
    }
}

/// Memory of a server: idle, then with `sessions` sessions open (no GET stream), then after
/// they were all deleted.
#[derive(Debug, Default)]
pub struct Memory {
    pub idle_kib: u64,
    pub full_kib: u64,
    /// VmRSS 1 s after the last DELETE: what the server gives back once its sessions end.
    pub after_kib: u64,
    /// The anonymous part of the idle RSS: the heap and stacks, without the mapped binary.
    pub idle_anon_kib: u64,
    /// The anonymous part of `after_kib`: what the heap and stacks keep once sessions end,
    /// without the code the sessions paged in.
    pub after_anon_kib: u64,
    pub opened: usize,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Opens `sessions` sessions over `conns` connections, reads VmRSS, deletes them all, and reads
/// VmRSS again 1 s after the last DELETE.
pub async fn memory(client: Client, pid: u32, sessions: usize, conns: usize) -> Memory {
    let mut mem = Memory {
        idle_kib: status_kib(pid, "VmRSS:").unwrap_or(0),
        idle_anon_kib: status_kib(pid, "RssAnon:").unwrap_or(0),
        ..Memory::default()
    };
    let client = Arc::new(client);
    let per_conn = sessions.div_ceil(conns.max(1));
    let mut tasks = Vec::new();
    for i in 0..conns {
        let n = per_conn.min(sessions.saturating_sub(i * per_conn));
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::with_capacity(n);
            let mut errors = Vec::new();
            let Ok(mut conn) = Conn::connect(&client.target).await else {
                return (None, ids, vec!["connect failed".to_owned()]);
            };
            for _ in 0..n {
                match client.open_session(&mut conn).await {
                    Ok(id) => ids.push(id),
                    Err(e) => errors.push(e),
                }
                if conn.broken {
                    break;
                }
            }
            (Some(conn), ids, errors)
        }));
    }
    let mut opened = Vec::new();
    for task in tasks {
        if let Ok(result) = task.await {
            opened.push(result);
        }
    }
    // Give the server a moment to settle (lazy frees, deferred tasks) before reading RSS.
    tokio::time::sleep(Duration::from_secs(1)).await;
    mem.full_kib = status_kib(pid, "VmRSS:").unwrap_or(0);
    for (conn, ids, errors) in opened {
        mem.opened += ids.len();
        mem.errors += errors.len() as u64;
        if mem.first_error.is_none() {
            mem.first_error = errors.into_iter().next();
        }
        if let Some(mut conn) = conn {
            for id in ids {
                if conn.broken {
                    break;
                }
                if let Err(e) = client.close_session(&mut conn, &id).await {
                    mem.errors += 1;
                    if mem.first_error.is_none() {
                        mem.first_error = Some(e);
                    }
                    break;
                }
            }
        }
    }
    // The same settling time as with the sessions open.
    tokio::time::sleep(Duration::from_secs(1)).await;
    mem.after_kib = status_kib(pid, "VmRSS:").unwrap_or(0);
    mem.after_anon_kib = status_kib(pid, "RssAnon:").unwrap_or(0);
    mem
}

/// A KiB field of `/proc/PID/status`, such as `VmRSS:` or `RssAnon:`.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User plus system CPU time of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields are counted after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}
