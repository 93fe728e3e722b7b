//! Child processes over stdio: a child that dies fails the calls in flight and is reaped; the
//! shutdown ladder escalates to SIGKILL; stderr is captured.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use barrel_mcp::Error;
use barrel_mcp::peer::{self, PeerConfig, RequestOptions};
use barrel_mcp::transport::child::{ChildCommand, ChildProcess, ChildTransport};

use crate::support::{handler, within};

fn sh(script: &str) -> ChildTransport {
    ChildCommand::new("sh")
        .args(["-c", script])
        .shutdown_grace(Duration::from_millis(200))
        .spawn()
        .expect("sh starts")
}

/// True while the process still exists (running or a zombie).
fn exists(process: &ChildProcess) -> bool {
    let pid = process.id().expect("a pid");
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn a_crashing_child_fails_calls_in_flight_and_is_reaped() {
    // Reads the request, writes to stderr, leaves a grandchild holding stdout, and dies.
    let transport = sh("read line; echo 'dying now' >&2; sleep 30 & exit 3");
    let process = transport.process();
    let (handler, _events) = handler();
    let (peer, task) = peer::serve(transport, handler, PeerConfig::default());
    let outcome = within(peer.request("tools/list", None, RequestOptions::default())).await;
    assert!(matches!(outcome, Err(Error::Closed)), "{outcome:?}");
    let status = within(process.wait()).await.expect("an exit status");
    assert_eq!(status.code(), Some(3));
    let _ = within(task).await;
    assert!(!exists(&process), "the child was reaped");
    assert!(process.stderr_tail().iter().any(|l| l == "dying now"));
}

#[tokio::test]
async fn closing_runs_the_ladder_up_to_sigkill() {
    // Ignores stdin's end and SIGTERM.
    let transport = sh("trap '' TERM; while :; do sleep 0.05; done");
    let process = transport.process();
    let (handler, _events) = handler();
    let (peer, task) = peer::serve(transport, handler, PeerConfig::default());
    tokio::time::sleep(Duration::from_millis(100)).await;
    peer.close();
    let _ = within(task).await;
    let status = within(process.wait()).await.expect("an exit status");
    assert_eq!(status.signal(), Some(9), "{status:?}");
    assert!(!exists(&process));
}

#[tokio::test]
async fn a_polite_child_exits_when_stdin_closes() {
    let transport = sh("cat > /dev/null");
    let process = transport.process();
    let (handler, _events) = handler();
    let (peer, task) = peer::serve(transport, handler, PeerConfig::default());
    peer.close();
    let _ = within(task).await;
    let status = within(process.wait()).await.expect("an exit status");
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn a_missing_program_is_an_io_error() {
    let err = ChildCommand::new("/nonexistent/barrel-mcp-test")
        .spawn()
        .unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err}");
}
