//! The runner of a task's work, in this process: it keeps the task's lease while the work
//! runs, then writes the work's outcome, or stops the work when the task is cancelled, its TTL
//! passes, or it ended elsewhere.

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::ErrorObject;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Server, announce_status, lease};
use crate::peer::Peer;
use crate::task::{Era, StoreRefusal, TaskOutcome, TaskRecord, serve};

/// The task whose work [`watch`] keeps.
pub(crate) struct Watched {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) era: Era,
    /// Past it the work is stopped (its record is gone then).
    pub(crate) ttl: Option<Duration>,
    /// Told of the task's end with `notifications/tasks/status` (2025-11-25 sessions).
    pub(crate) announce: Option<Peer>,
}

/// Keeps the outcome of a task's `work` in the store, renewing the task's lease meanwhile, or
/// stops the work when `cancel` fires (`tasks/cancel`), the task's TTL passes (its record is
/// gone then: nothing could see the outcome, and nothing could cancel it any more), or the
/// lease cannot be renewed because the task ended elsewhere; a late outcome after a cancel or a
/// lapsed lease is refused by the record, not applied.
pub(crate) fn watch(
    server: &Server,
    task: Watched,
    cancel: CancellationToken,
    mut work: JoinHandle<Result<Value, ErrorObject>>,
) {
    let tasks = &server.inner.tasks;
    tasks.purge_every(server.config().task_limits.purge_interval);
    tasks.running().insert(task.id.clone(), cancel.clone());
    let mut lease = lease::Lease::new(
        Arc::clone(&tasks.store),
        task.id.clone(),
        server.config().task_limits.granted_lease(),
    );
    let server = server.clone();
    tokio::spawn(async move {
        let outcome = tokio::select! {
            joined = &mut work => Some(joined.unwrap_or_else(|_| {
                Err(ErrorObject::internal("the task's work failed"))
            })),
            () = cancel.cancelled() => {
                work.abort();
                None
            }
            () = sleep_or_forever(task.ttl) => {
                work.abort();
                None
            }
            ended = lease.hold() => {
                // Ended elsewhere: cancelled on another node, or failed for a lapsed lease.
                cancel.cancel();
                work.abort();
                lease::ended_elsewhere(&server, &task.id, &task.owner, task.era, &ended).await;
                None
            }
        };
        let tasks = &server.inner.tasks;
        tasks.running().remove(&task.id);
        tasks.waiting().remove(&task.id);
        if let Some(outcome) = outcome {
            let limit = server.config().task_limits.max_result_bytes;
            let outcome = serve::keepable(outcome, limit);
            keep_outcome(&server, &task, outcome, &mut lease).await;
        }
        tasks.ended.notify_waiters();
    });
}

/// Writes the `outcome` of `task`'s work. A stall may have let the lease run short: renewed
/// first, the outcome is not refused for a lease no one else has acted on. A store outage is
/// waited out (tried again at each renewal interval, within the task's TTL); a task ended
/// elsewhere refuses the outcome, which is then discarded.
async fn keep_outcome(
    server: &Server,
    task: &Watched,
    outcome: TaskOutcome,
    lease: &mut lease::Lease,
) {
    let Watched {
        id,
        owner,
        era,
        ttl,
        announce,
    } = task;
    let tasks = &server.inner.tasks;
    let give_up = ttl.and_then(|ttl| tokio::time::Instant::now().checked_add(ttl));
    let finish = move |t: &mut TaskRecord| t.finish(outcome.clone());
    loop {
        lease.refresh_if_short().await;
        match tasks.store.update(id, owner, *era, &finish).await {
            Ok(record) => {
                server.task_changed(id);
                announce_status(announce.as_ref(), &record).await;
            }
            Err(refusal @ StoreRefusal::Refused(_)) => {
                lease::ended_elsewhere(server, id, owner, *era, &refusal).await;
            }
            Err(StoreRefusal::Unavailable(why))
                if give_up.is_none_or(|at| tokio::time::Instant::now() < at) =>
            {
                tracing::warn!(task = %id, %why, "a task's outcome was not kept yet; trying again");
                tokio::time::sleep(lease.every()).await;
                continue;
            }
            Err(refusal) => {
                tracing::debug!(task = %id, ?refusal, "a task's outcome was not kept");
            }
        }
        return;
    }
}

async fn sleep_or_forever(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}
