//! A real `redis-server` for the failure tests, on a free port of its own: killed, restarted
//! with its data or without, paused and resumed; and a small RESP client for the commands the
//! tests send it (`SCAN`, `CLIENT KILL`, `SHUTDOWN SAVE`).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use super::harness::{EXCHANGE_WITHIN, Reaped, START_WITHIN, free_port, unique};

/// A `redis-server` on a free port, saving only when told (`SHUTDOWN SAVE`) into a scratch
/// directory, so it can be restarted on the same port with its data or without.
pub(crate) struct RedisServer {
    process: Option<Reaped>,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    pub(super) async fn start() -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "faults-{}-{}",
            std::process::id(),
            unique()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let mut redis = Self {
            process: None,
            port: free_port(),
            dir,
        };
        redis.launch().await;
        redis
    }

    /// Starts `redis-server` on the port, loading `dump.rdb` from the directory if there is
    /// one, and waits for its `PONG`.
    async fn launch(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args([
                "--dbfilename",
                "dump.rdb",
                "--maxmemory-policy",
                "noeviction",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (scripts/test installs it)");
        self.process = Some(Reaped(child));
        let deadline = Instant::now() + START_WITHIN;
        loop {
            if let Ok(Resp::Simple(pong)) = self.command(&["PING"]).await
                && pong == "PONG"
            {
                return;
            }
            assert!(Instant::now() < deadline, "redis-server never answered");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `redis://127.0.0.1:<port>/`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn pid(&self) -> u32 {
        self.process.as_ref().expect("redis runs").0.id()
    }

    /// Kills Redis (SIGKILL: nothing saved) and starts a new one on the same port, empty.
    pub(crate) async fn restart_empty(&mut self) {
        self.process = None;
        let _ = std::fs::remove_file(self.dir.join("dump.rdb"));
        self.launch().await;
    }

    /// Stops Redis with `SHUTDOWN SAVE` (its data written to `dump.rdb`) and starts a new one
    /// on the same port that loads it.
    pub(crate) async fn restart_with_data(&mut self) {
        // Redis closes the connection instead of answering when the shutdown succeeds.
        let answer = self.command(&["SHUTDOWN", "SAVE"]).await;
        assert!(
            !matches!(answer, Ok(Resp::Error(_))),
            "SHUTDOWN SAVE refused: {answer:?}"
        );
        let mut process = self.process.take().expect("redis runs");
        let deadline = Instant::now() + START_WITHIN;
        while process.0.try_wait().expect("waitable").is_none() {
            assert!(Instant::now() < deadline, "redis-server did not shut down");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            self.dir.join("dump.rdb").exists(),
            "SHUTDOWN SAVE wrote no dump"
        );
        self.launch().await;
    }

    /// Stops the Redis process (SIGSTOP): connections stay open, nothing is answered.
    pub(crate) fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    /// Resumes it (SIGCONT).
    pub(crate) fn resume(&self) {
        signal(self.pid(), "CONT");
    }

    /// One command on a connection of its own.
    pub(crate) async fn command(&self, args: &[&str]) -> std::io::Result<Resp> {
        tokio::time::timeout(EXCHANGE_WITHIN, command(self.port, args))
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    }

    /// Every key under `prefix:` (`SCAN`), sorted.
    pub(crate) async fn keys(&self, prefix: &str) -> Vec<String> {
        let pattern = format!("{prefix}:*");
        let mut cursor = "0".to_owned();
        let mut keys = Vec::new();
        loop {
            let answer = self
                .command(&["SCAN", &cursor, "MATCH", &pattern, "COUNT", "1000"])
                .await
                .expect("SCAN answered");
            let Resp::Array(Some(parts)) = answer else {
                panic!("SCAN: {answer:?}")
            };
            let [Resp::Bulk(Some(next)), Resp::Array(Some(found))] = parts.as_slice() else {
                panic!("SCAN: {parts:?}")
            };
            keys.extend(found.iter().filter_map(|key| match key {
                Resp::Bulk(Some(key)) => Some(key.clone()),
                _ => None,
            }));
            if next == "0" {
                break;
            }
            cursor.clone_from(next);
        }
        keys.sort();
        keys
    }
}

/// A RESP reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<String>),
    Array(Option<Vec<Resp>>),
}

async fn command(port: u16, args: &[&str]) -> std::io::Result<Resp> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes()).await?;
    read_reply(&mut BufReader::new(stream)).await
}

fn read_reply(
    reader: &mut BufReader<TcpStream>,
) -> Pin<Box<dyn Future<Output = std::io::Result<Resp>> + Send + '_>> {
    Box::pin(async move {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches("\r\n");
        let (kind, rest) = line.split_at(1.min(line.len()));
        let number = || {
            rest.parse::<i64>()
                .map_err(|_| std::io::Error::other(format!("not RESP: {line:?}")))
        };
        Ok(match kind {
            "+" => Resp::Simple(rest.to_owned()),
            "-" => Resp::Error(rest.to_owned()),
            ":" => Resp::Int(number()?),
            "$" => match usize::try_from(number()?) {
                Err(_) => Resp::Bulk(None),
                Ok(len) => {
                    let mut data = vec![0; len + 2];
                    reader.read_exact(&mut data).await?;
                    data.truncate(len);
                    Resp::Bulk(Some(String::from_utf8_lossy(&data).into_owned()))
                }
            },
            "*" => match usize::try_from(number()?) {
                Err(_) => Resp::Array(None),
                Ok(len) => {
                    let mut items = Vec::with_capacity(len);
                    for _ in 0..len {
                        items.push(read_reply(reader).await?);
                    }
                    Resp::Array(Some(items))
                }
            },
            _ => return Err(std::io::Error::other(format!("not RESP: {line:?}"))),
        })
    })
}

/// Sends `signal` (`STOP`, `CONT`, ...) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid} failed");
}
