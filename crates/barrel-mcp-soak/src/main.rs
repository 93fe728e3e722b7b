//! Soak and fault runs of the Streamable HTTP server, each in one process on loopback, bounded
//! in time, printing its figures and `ok - …` / `not ok - …` lines (run by `scripts/test`).
//!
//! ```text
//! barrel-mcp-soak soak [SESSIONS]   # default 10,000
//! barrel-mcp-soak faults [ROUNDS]   # default 20
//! barrel-mcp-soak memory [SESSIONS] # default 1,000
//! ```
//!
//! - `soak`: sessions opened and closed in waves, a tenth of them with a GET stream read slowly
//!   and a tenth with one never read, while the server announces list changes to every
//!   session. After a warm-up wave the process's RSS, live tokio tasks and the session count are
//!   taken; after all the waves they must be back (sessions 0, tasks as before, RSS within 10%).
//! - `faults`: clients of barrel-mcp behind a TCP proxy that cuts or resets their connections at
//!   random points, while the server numbers messages on each session's GET stream and answers
//!   tool calls with progress; every client must see every message once, in order, and every
//!   call's result once.
//! - `memory`: the heap one open session holds (at most 8 KiB), and the heap back where it was
//!   once the sessions are deleted, counted by this binary's allocator.

mod faults;
mod memory;
mod process;
mod raw;
mod soak;

use std::process::ExitCode;

/// The system allocator, counting the bytes it has out (for `memory`; the count costs two
/// atomic additions per call, nothing the other runs notice).
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

/// The heap this process holds, in bytes.
fn heap_bytes() -> usize {
    ALLOCATOR.allocated()
}

// One thread: the allocator then keeps one arena, so RSS after the run is comparable with RSS
// before it (with two worker threads the arenas' high-water marks wandered by ±10%).
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count = |default: usize| {
        args.get(1)
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let checks = match args.first().map(String::as_str) {
        Some("soak") => soak::run(count(10_000)).await,
        Some("faults") => faults::run(count(20)).await,
        Some("memory") => memory::run(count(1_000)).await,
        _ => {
            eprintln!(
                "usage: barrel-mcp-soak soak [SESSIONS] | faults [ROUNDS] | memory [SESSIONS]"
            );
            return ExitCode::from(2);
        }
    };
    let failed = checks.iter().filter(|check| !check.passed).count();
    for check in &checks {
        let verdict = if check.passed { "ok" } else { "not ok" };
        println!("{verdict} - {}", check.name);
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One named check of a run.
struct Check {
    name: String,
    passed: bool,
}

impl Check {
    fn new(name: impl Into<String>, passed: bool) -> Self {
        Self {
            name: name.into(),
            passed,
        }
    }
}
