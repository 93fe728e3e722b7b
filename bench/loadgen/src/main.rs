//! `loadgen`: the load generator of the barrel-mcp benchmark (Streamable HTTP and stdio).
//!
//! ```text
//! loadgen wait URL                                   wait (≤30 s) until the port accepts
//! loadgen calls URL --server S --case C [--stateless | --sessionless | --task] [--conns N]
//!                   [--accept A] [--duration SECS] [--warmup SECS] [--pid PID] [--out FILE]
//!                   [--header 'Name: value']...
//! loadgen sessions URL --server S --case C [--conns N] [--duration SECS] [--warmup SECS] ...
//! loadgen memory URL --server S --pid PID [--sessions N] [--conns N] [--out FILE]
//! loadgen stdio-pipelined PROGRAM [--arg A]... [--server-cpu N] [--calls N] --server S ...
//! loadgen stdio-seq PROGRAM [--arg A]... [--server-cpu N] [--duration SECS] [--warmup SECS] ...
//! loadgen cold-start PROGRAM [--arg A]... [--server-cpu N] [--runs N] --server S ...
//! loadgen report FILE                                print the markdown table
//! loadgen chart-data FILE                            print the cells the chart plots (TSV)
//! ```
//!
//! The stdio commands spawn PROGRAM themselves (through `taskset -c N` with `--server-cpu N`),
//! with piped stdin and stdout, and read its CPU time from `/proc`.
//!
//! Every measuring command also takes `--round N`, recorded with the result; the report shows
//! the median round of each cell.
//!
//! It runs on one thread (pin it with `taskset`) and only targets loopback addresses.

mod http;
mod mcp;
mod report;
mod run;
mod stdio;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::http::{Conn, Target};
use crate::mcp::{Client, Mode};
use crate::run::Work;

/// The longest a timed case may last, whatever is asked.
const MAX_CASE: Duration = Duration::from_secs(120);

struct Args {
    command: String,
    url: String,
    server: String,
    case: String,
    stateless: bool,
    /// `2025-11-25` requests with no session and no `initialize` first.
    sessionless: bool,
    /// Each operation is a task of the tasks extension (`echo_task`, then `tasks/get`).
    task: bool,
    conns: usize,
    accept: String,
    duration: Duration,
    warmup: Duration,
    pid: Option<u32>,
    sessions: usize,
    round: u32,
    out: Option<String>,
    headers: Vec<(String, String)>,
    /// The stdio server's arguments.
    server_args: Vec<String>,
    /// The CPU the stdio server is pinned to.
    server_cpu: Option<u32>,
    /// Calls written at once by `stdio-pipelined`.
    calls: u64,
    /// Starts measured by `cold-start`.
    runs: u32,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let command = it
        .next()
        .ok_or("missing command (wait|calls|sessions|memory|stdio-pipelined|stdio-seq|cold-start|report|chart-data)")?;
    let url = it.next().ok_or("missing URL or FILE")?;
    let mut args = Args {
        command,
        url,
        server: "server".to_owned(),
        case: "case".to_owned(),
        stateless: false,
        sessionless: false,
        task: false,
        conns: 64,
        accept: "application/json, text/event-stream".to_owned(),
        duration: Duration::from_secs(10),
        warmup: Duration::from_secs(2),
        pid: None,
        sessions: 1000,
        round: 1,
        out: None,
        headers: Vec::new(),
        server_args: Vec::new(),
        server_cpu: None,
        calls: 10_000,
        runs: 20,
    };
    let secs = |v: String| {
        v.parse::<f64>()
            .map(Duration::from_secs_f64)
            .map_err(|e| e.to_string())
    };
    while let Some(flag) = it.next() {
        if flag == "--stateless" {
            args.stateless = true;
            continue;
        }
        if flag == "--sessionless" {
            args.sessionless = true;
            continue;
        }
        if flag == "--task" {
            args.task = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--server" => args.server = value,
            "--case" => args.case = value,
            "--conns" => args.conns = value.parse().map_err(|e| format!("--conns: {e}"))?,
            "--accept" => args.accept = value,
            "--duration" => args.duration = secs(value)?.min(MAX_CASE),
            "--warmup" => args.warmup = secs(value)?.min(MAX_CASE),
            "--pid" => args.pid = Some(value.parse().map_err(|e| format!("--pid: {e}"))?),
            "--sessions" => {
                args.sessions = value.parse().map_err(|e| format!("--sessions: {e}"))?
            }
            "--round" => args.round = value.parse().map_err(|e| format!("--round: {e}"))?,
            "--out" => args.out = Some(value),
            "--arg" => args.server_args.push(value),
            "--server-cpu" => {
                args.server_cpu = Some(value.parse().map_err(|e| format!("--server-cpu: {e}"))?)
            }
            "--calls" => args.calls = value.parse().map_err(|e| format!("--calls: {e}"))?,
            "--runs" => args.runs = value.parse().map_err(|e| format!("--runs: {e}"))?,
            "--header" => {
                let (name, value) = value
                    .split_once(':')
                    .ok_or("--header takes 'Name: value'")?;
                args.headers
                    .push((name.trim().to_owned(), value.trim().to_owned()));
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    args.conns = args.conns.clamp(1, 1024);
    args.sessions = args.sessions.min(100_000);
    args.calls = args.calls.clamp(1, 1_000_000);
    args.runs = args.runs.clamp(1, 1_000);
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    if args.command == "report" || args.command == "chart-data" {
        return match std::fs::read_to_string(&args.url) {
            Ok(tsv) => {
                if args.command == "report" {
                    print!("{}", report::table(&tsv));
                } else {
                    print!("{}", report::chart_data(&tsv));
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("loadgen: {}: {e}", args.url);
                ExitCode::FAILURE
            }
        };
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds with default settings");
    match runtime.block_on(command(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The fields of a timed outcome, as the TSV records them.
fn outcome_fields(o: &run::Outcome) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        ("rps", format!("{:.1}", o.ops as f64 / o.seconds.max(1e-9))),
        ("p50_us", o.quantile_us(0.50).to_string()),
        ("p99_us", o.quantile_us(0.99).to_string()),
        ("errors", o.errors.to_string()),
        ("reply", o.reply_kind().to_owned()),
        ("ops", o.ops.to_string()),
    ];
    if let Some(cpu) = o.cpu_us {
        fields.push(("cpu_us", format!("{cpu:.1}")));
    }
    if let Some(e) = &o.first_error {
        fields.push(("first_error", clean(e)));
    }
    fields
}

/// The stdio commands: the server is spawned by the load generator.
async fn stdio_command(args: &Args) -> Result<Vec<(&'static str, String)>, String> {
    let spawn = stdio::Spawn {
        program: args.url.clone(),
        args: args.server_args.clone(),
        cpu: args.server_cpu,
    };
    Ok(match args.command.as_str() {
        "stdio-pipelined" => {
            let o = stdio::pipelined(&spawn, args.calls).await;
            let mut fields = outcome_fields(&o);
            // Latencies mean nothing with every call in flight at once: the wall time instead.
            fields.retain(|(k, _)| !matches!(*k, "p50_us" | "p99_us" | "reply"));
            fields.push(("wall_us", format!("{:.0}", o.seconds * 1e6)));
            fields
        }
        "stdio-seq" => {
            let o = stdio::sequential(&spawn, args.warmup, args.duration).await;
            let mut fields = outcome_fields(&o);
            fields.retain(|(k, _)| *k != "reply");
            fields
        }
        _ => {
            let c = stdio::cold_start(&spawn, args.runs).await;
            let at = |v: &[u64], q: f64| {
                v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)))
                    .map_or_else(|| "0".to_owned(), u64::to_string)
            };
            let mut fields = vec![
                ("p50_us", at(&c.wall_us, 0.5)),
                ("min_us", at(&c.wall_us, 0.0)),
                ("max_us", at(&c.wall_us, 1.0)),
                ("runs", c.wall_us.len().to_string()),
                ("errors", c.errors.to_string()),
            ];
            if !c.cpu_us.is_empty() {
                fields.push(("cpu_us", at(&c.cpu_us, 0.5)));
            }
            if let Some(e) = c.first_error {
                fields.push(("first_error", clean(&e)));
            }
            fields
        }
    })
}

async fn command(args: Args) -> Result<(), String> {
    if matches!(
        args.command.as_str(),
        "stdio-pipelined" | "stdio-seq" | "cold-start"
    ) {
        let fields = stdio_command(&args).await?;
        return record(&args, fields);
    }
    let target = Target::parse(&args.url)?;
    let client = Client {
        target: target.clone(),
        accept: args.accept.clone(),
        headers: args.headers.clone(),
    };
    let fields = match args.command.as_str() {
        "wait" => return wait(&target).await,
        "calls" | "sessions" => {
            let work = match (args.command.as_str(), args.stateless) {
                ("sessions", _) => Work::Session,
                _ if args.task => Work::Call(Mode::Task),
                _ if args.sessionless => Work::Call(Mode::Sessionless),
                (_, true) => Work::Call(Mode::Stateless),
                (_, false) => Work::Call(Mode::Session),
            };
            let o = run::timed(
                client,
                work,
                args.conns,
                args.warmup,
                args.duration,
                args.pid,
            )
            .await;
            outcome_fields(&o)
        }
        "memory" => {
            let pid = args.pid.ok_or("memory needs --pid")?;
            let m = run::memory(client, pid, args.sessions, args.conns.min(8)).await;
            let mut fields = vec![
                ("idle_kib", m.idle_kib.to_string()),
                ("full_kib", m.full_kib.to_string()),
                ("after_kib", m.after_kib.to_string()),
                ("idle_anon_kib", m.idle_anon_kib.to_string()),
                ("after_anon_kib", m.after_anon_kib.to_string()),
                ("opened", m.opened.to_string()),
                ("errors", m.errors.to_string()),
            ];
            if let Some(e) = m.first_error {
                fields.push(("first_error", clean(&e)));
            }
            fields
        }
        other => return Err(format!("unknown command {other}")),
    };
    record(&args, fields)
}

/// Prints one result line and appends it to `--out`.
fn record(args: &Args, mut fields: Vec<(&'static str, String)>) -> Result<(), String> {
    fields.insert(0, ("round", args.round.to_string()));
    let line = report::line(&args.server, &args.case, &fields);
    println!("{}", line.replace('\t', "  "));
    if let Some(path) = &args.out {
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{path}: {e}"))?;
        writeln!(file, "{line}").map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// Waits until the server accepts a TCP connection, for at most 30 s.
async fn wait(target: &Target) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match Conn::connect(target).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("{}: not accepting after 30 s: {e}", target.addr));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Makes a message safe for one TSV field.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect()
}
