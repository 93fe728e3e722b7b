//! A real `redis-server` for the tests, on a free loopback port of its own.
//!
//! [`RedisProcess::start`] finds a free port (binds `127.0.0.1:0`, reads it, lets go), starts
//! `redis-server` there without persistence, in a directory of its own under the target
//! directory, and waits for `PING` (5 s at most); when another process took the port in between
//! (the log says "Address already in use"), it tries again on a new one. The server runs under
//! a `sh` that holds a pipe from this process: when the test binary ends, however it ends, the
//! pipe closes and the `sh` kills the server and removes its directory, so no test leaves
//! either behind. Dropping a
//! `RedisProcess` (or [`RedisProcess::kill`]) kills it at once; [`RedisProcess::restart`] starts
//! an empty one on the same port.
//!
//! [`shared`] is one server for the whole test binary; tests keep apart by key prefix.
//!
//! A missing or too old `redis-server` fails the test: `scripts/test` installs Debian's.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a fresh server may take to answer `PING`.
const READY_WITHIN: Duration = Duration::from_secs(5);
/// Ports tried before giving up (another process may take each between our probe and Redis).
const PORT_ATTEMPTS: usize = 5;
/// The oldest major version the store supports.
const MIN_MAJOR: u32 = 7;

/// A `redis-server` child process, killed on drop.
pub(crate) struct RedisProcess {
    port: u16,
    dir: PathBuf,
    wrapper: Child,
    /// The pipe whose end tells the wrapper to kill the server.
    lifeline: Option<ChildStdin>,
}

static SHARED: OnceLock<RedisProcess> = OnceLock::new();

/// The test binary's one shared server (started on first use).
pub(crate) fn shared() -> &'static RedisProcess {
    SHARED.get_or_init(|| RedisProcess::start(&[]))
}

/// A prefix no other test in this run uses.
pub(crate) fn unique_prefix(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("it-{test}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

impl RedisProcess {
    /// Starts a server with `extra` arguments (`--requirepass`, say); panics, naming
    /// `scripts/test`, when there is no usable `redis-server`.
    pub(crate) fn start(extra: &[&str]) -> Self {
        check_version();
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            match Self::try_start(extra) {
                Ok(process) => return process,
                Err(log) => last_log = log,
            }
        }
        panic!("redis-server did not start on any of {PORT_ATTEMPTS} ports; its log:\n{last_log}");
    }

    /// One attempt on a fresh port; `Err(log)` when the port was taken in between.
    fn try_start(extra: &[&str]) -> Result<Self, String> {
        Self::try_start_on(free_port(), extra)
    }

    /// Starts a fresh, empty server on the port of this one, once it is killed (a Redis
    /// restarted without its data).
    pub(crate) fn restart(&mut self) {
        self.kill();
        let port = self.port;
        let fresh = Self::try_start_on(port, &[])
            .unwrap_or_else(|log| panic!("port {port} was taken meanwhile:\n{log}"));
        // The old directory goes with the old value.
        let _ = std::fs::remove_dir_all(&self.dir);
        *self = fresh;
    }

    fn try_start_on(port: u16, extra: &[&str]) -> Result<Self, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "redis-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a directory for redis-server");
        let log = dir.join("redis.log");
        let _ = std::fs::remove_file(&log);
        let mut args: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            dir.to_str().expect("a UTF-8 target directory"),
            "--logfile",
            log.to_str().expect("a UTF-8 target directory"),
            "--daemonize",
            "no",
            "--protected-mode",
            "yes",
            "--loglevel",
            "warning",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        // The server runs in the background of a `sh` that waits for its stdin to close (this
        // process ending, or `kill`), then kills it and removes its directory.
        let mut wrapper = Command::new("sh")
            .arg("-c")
            .arg(
                r#"redis-server "$@" </dev/null & server=$!
read -r _ || true
kill -KILL "$server" 2>/dev/null
wait "$server" 2>/dev/null
rm -rf "$REDIS_TEST_DIR"
exit 0"#,
            )
            .env("REDIS_TEST_DIR", &dir)
            .arg("redis-wrapper")
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh runs");
        let lifeline = wrapper.stdin.take();
        let mut process = Self {
            port,
            dir,
            wrapper,
            lifeline,
        };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if process.answers_ping() {
                return Ok(process);
            }
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Address already in use") {
                process.kill();
                return Err(text);
            }
            if Instant::now() > deadline {
                process.kill();
                panic!(
                    "redis-server on port {port} did not answer PING within {READY_WITHIN:?}; \
                     its log:\n{text}"
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server now (SIGKILL: no shutdown, as a crash); it no longer answers.
    pub(crate) fn kill(&mut self) {
        // Closing the pipe makes the wrapper kill the server and wait for it.
        drop(self.lifeline.take());
        let _ = self.wrapper.wait();
    }

    /// True when something answers `PING` on the port (`-NOAUTH` counts: it is up).
    pub(crate) fn answers_ping(&self) -> bool {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        if stream.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut answer = [0u8; 16];
        let n = stream.read(&mut answer).unwrap_or(0);
        answer[..n].starts_with(b"+PONG") || answer[..n].starts_with(b"-NOAUTH")
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Panics unless `redis-server --version` is 7 or later, naming the installer.
fn check_version() {
    static CHECKED: OnceLock<()> = OnceLock::new();
    CHECKED.get_or_init(|| {
        let output = Command::new("redis-server").arg("--version").output();
        let text = match output {
            Ok(output) => String::from_utf8_lossy(&output.stdout).into_owned(),
            Err(e) => panic!(
                "redis-server is needed by the Redis store tests and could not run ({e}); \
                 scripts/test installs it (Debian's redis-server, with apt-get)"
            ),
        };
        let major = text
            .split_whitespace()
            .find_map(|word| word.strip_prefix("v="))
            .and_then(|v| v.split('.').next())
            .and_then(|major| major.parse::<u32>().ok());
        assert!(
            major.is_some_and(|major| major >= MIN_MAJOR),
            "the Redis store tests need redis-server {MIN_MAJOR} or later, found {text:?}; \
             scripts/test installs Debian's"
        );
    });
}

/// A connection to `url` whose stores put their keys under `prefix`.
pub(crate) async fn connect(url: &str, prefix: &str) -> barrel_mcp::store::redis::Redis {
    let options = barrel_mcp::store::redis::RedisOptions {
        prefix: prefix.to_owned(),
        ..Default::default()
    };
    barrel_mcp::store::redis::Redis::connect(url, options)
        .await
        .expect("the test server is reachable")
}

/// A plain connection to `url`, for the test's own commands.
pub(crate) async fn plain(url: &str) -> ::redis::aio::MultiplexedConnection {
    ::redis::Client::open(url)
        .expect("a valid URL")
        .get_multiplexed_async_connection()
        .await
        .expect("the test server is reachable")
}

/// The keys under `prefix`, by `SCAN`, sorted.
pub(crate) async fn keys_under(url: &str, prefix: &str) -> Vec<String> {
    let mut connection = plain(url).await;
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = ::redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut connection)
            .await
            .expect("SCAN");
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    keys
}

/// The milliseconds `key` has left (`PTTL`: -1 without expiry, -2 when absent).
pub(crate) async fn pttl(url: &str, key: &str) -> i64 {
    ::redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut plain(url).await)
        .await
        .expect("PTTL")
}

/// True when a store answered `Corrupt`.
pub(crate) fn corrupt<T>(result: &Result<T, barrel_mcp::store::StoreError>) -> bool {
    matches!(result, Err(barrel_mcp::store::StoreError::Corrupt(_)))
}

/// True when a store answered `Unavailable`.
pub(crate) fn unavailable<T>(result: &Result<T, barrel_mcp::store::StoreError>) -> bool {
    matches!(result, Err(barrel_mcp::store::StoreError::Unavailable(_)))
}
