//! A server run as a child process and spoken to over its stdin and stdout.
//!
//! [`ChildCommand`] says what to run (program, arguments, environment, working directory) and
//! [`ChildCommand::spawn`] starts it as the leader of a new process group and returns a
//! [`ChildTransport`]: newline-delimited JSON on the child's stdout and stdin (lines are capped
//! at [`ChildCommand::max_line_length`]), plus a [`ChildProcess`] handle.
//!
//! # Lifetime
//!
//! - **Shutdown ladder.** When the transport's sending half is closed or dropped (the client
//!   closed the connection), the child's stdin is closed; if the child has not exited after
//!   [`ChildCommand::shutdown_grace`], its process group gets SIGTERM; if it still has not
//!   exited after the same grace again, SIGKILL.
//! - **The child dies.** When the leader exits on its own, what is left of its process group is
//!   killed, so nothing keeps its stdout open: the reader sees the end of input at once and the
//!   calls in flight fail with [`Error::Closed`].
//! - **No zombie.** A task owns the process and always waits for it, so it is reaped.
//! - **stderr** is drained into a ring buffer of the last lines
//!   ([`ChildProcess::stderr_tail`]) and forwarded to `tracing` at debug level, unless
//!   [`StderrMode`] says to inherit or discard it. A server's stderr is never an error.

mod process;
mod stderr;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::sync::{CancellationToken, DropGuard};

pub use process::ChildProcess;

use super::stdio::{DEFAULT_MAX_LINE_LENGTH, StdioReader, StdioTransport, StdioWriter};
use super::{Frame, MessageReader, MessageWriter, Transport};
use crate::Error;
use barrel_mcp_types::Message;

/// What happens to the child's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StderrMode {
    /// Keep the last lines ([`ChildCommand::stderr_lines`]) and log each at debug level.
    #[default]
    Capture,
    /// The child writes to this process's stderr.
    Inherit,
    /// Discard it.
    Null,
}

/// What to run, and how.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stderr: StderrMode,
    stderr_lines: usize,
    max_line_length: usize,
    shutdown_grace: Duration,
}

impl ChildCommand {
    /// Runs `program` (looked up in `PATH` when it has no slash).
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stderr: StderrMode::Capture,
            stderr_lines: 200,
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
            shutdown_grace: Duration::from_secs(2),
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child (on top of this process's environment).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the child in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// What to do with the child's stderr (captured by default).
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }

    /// How many stderr lines to keep when capturing (default 200).
    pub fn stderr_lines(mut self, lines: usize) -> Self {
        self.stderr_lines = lines;
        self
    }

    /// The longest line accepted from the child, in bytes (default 4 MiB).
    pub fn max_line_length(mut self, max: usize) -> Self {
        self.max_line_length = max;
        self
    }

    /// How long each step of the shutdown ladder waits for the child to exit (default 2 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Starts the child in a process group of its own. Must be called within a Tokio runtime.
    pub fn spawn(&self) -> Result<ChildTransport, Error> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match self.stderr {
                StderrMode::Capture => Stdio::piped(),
                StderrMode::Inherit => Stdio::inherit(),
                StderrMode::Null => Stdio::null(),
            })
            .kill_on_drop(true);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn()?;
        let missing = || Error::Protocol("the child's standard streams are missing".into());
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take();
        let shutdown = CancellationToken::new();
        let process = process::start(
            child,
            stderr,
            self.stderr_lines,
            self.shutdown_grace,
            shutdown.clone(),
        );
        let (reader, writer) = StdioTransport::new(stdout, stdin)
            .max_line_length(self.max_line_length)
            .split();
        Ok(ChildTransport {
            reader: ChildReader { inner: reader },
            writer: ChildWriter {
                inner: writer,
                _shutdown: shutdown.drop_guard(),
            },
            process,
        })
    }
}

/// A running child as a transport. Dropping it (or closing its sending half) starts the
/// shutdown ladder.
#[derive(Debug)]
pub struct ChildTransport {
    reader: ChildReader,
    writer: ChildWriter,
    process: ChildProcess,
}

impl ChildTransport {
    /// A handle on the process: its id, exit status and stderr.
    pub fn process(&self) -> ChildProcess {
        self.process.clone()
    }
}

impl Transport for ChildTransport {
    type Reader = ChildReader;
    type Writer = ChildWriter;

    fn split(self) -> (ChildReader, ChildWriter) {
        (self.reader, self.writer)
    }
}

/// The receiving half of a [`ChildTransport`]: the child's stdout.
#[derive(Debug)]
pub struct ChildReader {
    inner: StdioReader<ChildStdout>,
}

impl MessageReader for ChildReader {
    /// Cancel-safe, like [`StdioReader`].
    async fn recv(&mut self) -> Result<Option<Frame>, Error> {
        self.inner.recv().await
    }
}

/// The sending half of a [`ChildTransport`]: the child's stdin. Closing or dropping it starts
/// the shutdown ladder.
#[derive(Debug)]
pub struct ChildWriter {
    // Field order matters: stdin is dropped (closed) before the ladder is told to start.
    inner: StdioWriter<ChildStdin>,
    _shutdown: DropGuard,
}

impl MessageWriter for ChildWriter {
    async fn send(&mut self, message: Message) -> Result<(), Error> {
        self.inner.send(message).await
    }

    async fn send_batch(&mut self, batch: Vec<super::Outgoing>) -> Result<(), Error> {
        self.inner.send_batch(batch).await
    }

    async fn close(&mut self) -> Result<(), Error> {
        // A child that already exited has a broken stdin; closing it is still "closed".
        let _ = self.inner.close().await;
        Ok(())
    }
}
