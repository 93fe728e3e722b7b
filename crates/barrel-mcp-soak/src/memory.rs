//! Heap per open session: sessions opened (initialize, initialized) on one keep-alive
//! connection, the heap counted by this binary's allocator before, while they are open, and
//! after they are deleted. Unlike RSS, the count does not depend on the allocator's arenas or
//! on what the kernel has reclaimed, so it is the same from run to run.

use std::time::Duration;

use barrel_mcp::http::{HttpConfig, StreamableHttp, serve};
use hyper::Method;
use tokio::net::TcpListener;

use crate::process::rss_kib;
use crate::raw::{Connection, Failure, expect_status, text};
use crate::soak::echo_server;
use crate::{Check, heap_bytes};

/// The most heap one open session may hold (the bound on memory per session).
const PER_SESSION_LIMIT: usize = 8 * 1024;

/// How much more heap than before the sessions may stand after they were deleted, per
/// session that was open (tables keep their grown capacity; nothing else may stay).
const LEFT_PER_SESSION: usize = 64;

pub(crate) async fn run(sessions: usize) -> Vec<Check> {
    match measure(sessions).await {
        Ok(checks) => checks,
        Err(error) => vec![Check::new(format!("memory: the run ({error})"), false)],
    }
}

async fn measure(sessions: usize) -> Result<Vec<Check>, Failure> {
    let server = echo_server("memory")?;
    let config = HttpConfig {
        max_sessions: sessions + 16,
        ..HttpConfig::default()
    };
    let http = StreamableHttp::new(server, config);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve(listener, http.clone(), async move {
        let _ = stopped.await;
    }));
    let mut connection = Connection::open(addr).await?;
    let rss_fresh = rss_kib();
    // A first round grows every table and pool to this size; the second is measured.
    let mut ids = Vec::with_capacity(sessions);
    open(&mut connection, sessions, &mut ids).await?;
    delete(&mut connection, &mut ids).await?;
    settle(&http).await;

    let (before, rss_before) = (heap_bytes(), rss_kib());
    open(&mut connection, sessions, &mut ids).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_open = rss_kib();
    // The ids this run keeps are the client's, not the server's.
    let ours: usize = ids.iter().map(String::capacity).sum();
    let open_heap = heap_bytes().saturating_sub(ours);
    delete(&mut connection, &mut ids).await?;
    settle(&http).await;
    let (after, rss_after) = (heap_bytes(), rss_kib());
    drop(connection);
    let _ = stop.send(());
    let _ = serving.await;

    let per_session = open_heap.saturating_sub(before) / sessions.max(1);
    let left = after.saturating_sub(before);
    println!(
        "memory: {sessions} sessions: heap {before} bytes before, {open_heap} open \
         ({per_session} per session), {after} after they were deleted; RSS {rss_fresh} KiB \
         fresh, {rss_before} after a first round, {rss_open} open, {rss_after} after"
    );
    Ok(vec![
        Check::new(
            format!(
                "memory: an open session holds {per_session} bytes of heap (at most {PER_SESSION_LIMIT})"
            ),
            per_session <= PER_SESSION_LIMIT,
        ),
        Check::new(
            format!(
                "memory: the heap is back within {left} bytes once the sessions are deleted (at most {})",
                LEFT_PER_SESSION * sessions
            ),
            left <= LEFT_PER_SESSION * sessions,
        ),
    ])
}

/// Opens `count` sessions (initialize, then initialized), keeping their ids.
async fn open(
    connection: &mut Connection,
    count: usize,
    ids: &mut Vec<String>,
) -> Result<(), Failure> {
    for _ in 0..count {
        let id = connection.open_session("memory").await?;
        ids.push(id);
    }
    Ok(())
}

/// Deletes every session in `ids`.
async fn delete(connection: &mut Connection, ids: &mut Vec<String>) -> Result<(), Failure> {
    for id in ids.drain(..) {
        let answer = connection.send(Method::DELETE, Some(&id), None).await?;
        expect_status(&answer, &[200, 204], "DELETE")?;
        text(answer).await?;
    }
    Ok(())
}

/// Waits (at most 10 s) until the server holds no session and its tasks have ended.
async fn settle(http: &StreamableHttp) {
    for _ in 0..100 {
        if http.session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
}
