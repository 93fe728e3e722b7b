//! The task that owns a child process: it waits for the child (so it is always reaped), runs
//! the shutdown ladder when asked, and cleans up the child's process group.

use std::io;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::{Child, ChildStderr};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::stderr::{self, StderrTail};

/// A handle on a child process started by [`ChildCommand::spawn`](super::ChildCommand::spawn).
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct ChildProcess {
    pid: Option<u32>,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: Arc<StderrTail>,
}

impl ChildProcess {
    /// The child's process id (also its process group id on Unix), while it was known.
    pub fn id(&self) -> Option<u32> {
        self.pid
    }

    /// The exit status, once the child has exited and been reaped.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits until the child has exited and been reaped; `None` if its status could not be
    /// read. Cancel-safe.
    pub async fn wait(&self) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let status = exit.wait_for(Option::is_some).await.ok()?;
        *status
    }

    /// The last lines the child wrote to stderr (when captured), oldest first.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lines()
    }
}

/// Starts the task that owns `child`; `shutdown` starts the ladder.
pub(super) fn start(
    child: Child,
    stderr: Option<ChildStderr>,
    stderr_lines: usize,
    grace: Duration,
    shutdown: CancellationToken,
) -> ChildProcess {
    let pid = child.id();
    let tail = Arc::new(StderrTail::new(stderr_lines));
    if let Some(stream) = stderr {
        tokio::spawn(stderr::drain(stream, Arc::clone(&tail), pid));
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = own(child, pid, grace, shutdown).await;
        match status {
            Ok(status) => {
                tracing::debug!(?pid, %status, "child exited");
                exit_tx.send_replace(Some(status));
            }
            Err(error) => tracing::warn!(?pid, %error, "waiting for the child failed"),
        }
    });
    ChildProcess {
        pid,
        exit: exit_rx,
        stderr: tail,
    }
}

async fn own(
    mut child: Child,
    pid: Option<u32>,
    grace: Duration,
    shutdown: CancellationToken,
) -> io::Result<ExitStatus> {
    let status = tokio::select! {
        status = child.wait() => status,
        () = shutdown.cancelled() => ladder(&mut child, pid, grace).await,
    };
    // The leader is gone; whatever it left in its group would keep stdout open.
    signal_group(pid, Signal::Kill);
    status
}

/// stdin is already closed: wait, SIGTERM, wait, SIGKILL.
async fn ladder(child: &mut Child, pid: Option<u32>, grace: Duration) -> io::Result<ExitStatus> {
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return status;
    }
    tracing::debug!(?pid, "child still running after stdin closed; SIGTERM");
    signal_group(pid, Signal::Term);
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return status;
    }
    tracing::debug!(?pid, "child still running after SIGTERM; SIGKILL");
    signal_group(pid, Signal::Kill);
    let _ = child.start_kill();
    child.wait().await
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Signals the child's process group (the child is its leader). A group already gone is fine.
#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: Signal) {
    use nix::sys::signal::{Signal as Sig, killpg};
    use nix::unistd::Pid;
    let Some(pgid) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) else {
        return;
    };
    let signal = match signal {
        Signal::Term => Sig::SIGTERM,
        Signal::Kill => Sig::SIGKILL,
    };
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(error) => tracing::debug!(pgid, %error, "signalling the child's group failed"),
    }
}

/// Without process groups only the child itself is signalled (through `start_kill`).
#[cfg(not(unix))]
fn signal_group(_pid: Option<u32>, _signal: Signal) {}
