//! The lease part of the store contract, run on every store by `task_store_suite!`: a task
//! whose runner stopped renewing its lease is failed by the first read (once, however many
//! read at once), a renewed one is not, and a finished one never is.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use barrel_mcp::task::{
    Era, RUNNER_STOPPED, Refused, StoreRefusal, TaskLimits, TaskOutcome, TaskRecord, TaskStore,
};
use barrel_mcp::types::TaskStatus;
use serde_json::json;

use super::{MINUTE, Make, task};

/// The lease the checks take: short, so they run in well under a second each.
const LEASE: Duration = Duration::from_millis(300);

/// A `working` task of `owner` in `era` with a lease of `lease` from now.
pub(crate) fn leased(owner: &str, era: Era, lease: Duration) -> TaskRecord {
    task(owner, era, MINUTE).with_lease(lease)
}

/// `at`, rounded down to the millisecond (what a store keeps of a lease).
fn floor_millis(at: SystemTime) -> SystemTime {
    let since = at.duration_since(UNIX_EPOCH).unwrap();
    UNIX_EPOCH + Duration::from_millis(u64::try_from(since.as_millis()).unwrap())
}

/// Sleeps until `record`'s lease has run out (plus a little).
async fn past_lease(record: &TaskRecord) {
    let until = record.lease_until.expect("a leased task");
    let left = until.duration_since(SystemTime::now()).unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(20)).await;
}

fn assert_failed_for_its_runner(record: &TaskRecord) {
    assert_eq!(record.status, TaskStatus::Failed, "{record:?}");
    let Some(TaskOutcome::Error(error)) = &record.outcome else {
        panic!("no error: {record:?}");
    };
    assert_eq!(error.code.0, -32603);
    assert_eq!(error.message, RUNNER_STOPPED);
    assert_eq!(record.lease_until, None);
}

/// 20 readers at once find a task whose lease ran out: each sees it failed, and all see the
/// one same failure (one change was made, not one per reader). A change that comes later
/// (the runner's outcome, a cancel, a renewal) is refused: the failure is terminal.
pub(crate) async fn a_lapsed_lease_fails_the_task_once_on_get(make: &Make) {
    const READERS: usize = 20;
    let store = make(TaskLimits::default()).await;
    let created = leased("alice", Era::Extension, LEASE);
    let id = created.id.clone();
    store.create(created.clone()).await.unwrap();
    // Before the lease runs out, reading changes nothing.
    let early = store.get(&id, "alice", Era::Extension).await.unwrap();
    assert_eq!(early.status, TaskStatus::Working);
    assert_eq!(early.lease_until, created.lease_until.map(floor_millis));
    past_lease(&created).await;
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..READERS {
        let (store, id) = (Arc::clone(&store), id.clone());
        readers.spawn(async move { store.get(&id, "alice", Era::Extension).await });
    }
    let mut seen = Vec::new();
    while let Some(read) = readers.join_next().await {
        seen.push(read.unwrap().unwrap());
    }
    assert_eq!(seen.len(), READERS);
    assert_failed_for_its_runner(&seen[0]);
    assert!(
        seen.iter().all(|record| record == &seen[0]),
        "every reader sees the one same failure"
    );
    let finish = |t: &mut TaskRecord| t.finish(TaskOutcome::Result(json!({"content": []})));
    assert_eq!(
        store.update(&id, "alice", Era::Extension, &finish).await,
        Err(StoreRefusal::Refused(Refused::Terminal)),
        "the late outcome is refused"
    );
    assert_eq!(
        store.renew(&id, SystemTime::now() + MINUTE).await,
        Err(StoreRefusal::Refused(Refused::Terminal)),
        "the runner learns it lost the task"
    );
    assert_eq!(
        store.get(&id, "alice", Era::Extension).await.as_ref(),
        Ok(&seen[0])
    );
}

/// `input_required` is not finished: a task waiting for its requestor fails with its runner
/// too; `update` and `list` read first, as `get` does.
pub(crate) async fn a_lapsed_lease_fails_waiting_tasks_on_update_and_list(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let waiting = leased("alice", Era::Sessions, LEASE);
    let listed = leased("alice", Era::Sessions, LEASE);
    let never = task("alice", Era::Sessions, MINUTE);
    for created in [&waiting, &listed, &never] {
        store.create(created.clone()).await.unwrap();
    }
    let ask = |t: &mut TaskRecord| t.set_status(TaskStatus::InputRequired);
    let asked = store
        .update(&waiting.id, "alice", Era::Sessions, &ask)
        .await
        .unwrap();
    assert_eq!(asked.status, TaskStatus::InputRequired);
    // A change keeps the lease as it was.
    assert_eq!(asked.lease_until, waiting.lease_until.map(floor_millis));
    past_lease(&waiting).await;
    let cancel = |t: &mut TaskRecord| t.cancel();
    assert_eq!(
        store
            .update(&waiting.id, "alice", Era::Sessions, &cancel)
            .await,
        Err(StoreRefusal::Refused(Refused::Terminal)),
        "failed before the cancel could apply"
    );
    assert_failed_for_its_runner(
        &store
            .get(&waiting.id, "alice", Era::Sessions)
            .await
            .unwrap(),
    );
    let page = store.list("alice", Era::Sessions, None, 10).await.unwrap();
    assert_eq!(page.len(), 3);
    for record in &page {
        if record.id == never.id {
            // No lease: never failed for want of a runner.
            assert_eq!(record.status, TaskStatus::Working);
        } else {
            assert_failed_for_its_runner(record);
        }
    }
    assert_eq!(
        store.get(&listed.id, "alice", Era::Sessions).await.as_ref(),
        page.iter()
            .find(|r| r.id == listed.id)
            .ok_or(&StoreRefusal::NotFound),
        "the failure `list` made is the stored one"
    );
}

/// A runner that renews every third of the lease keeps its task alive for many leases, with
/// readers polling all along; a renewal never shortens a lease, and takes up one that ran out
/// as long as no reader acted on it.
pub(crate) async fn a_renewed_task_is_not_failed(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let created = leased("alice", Era::Extension, LEASE);
    let id = created.id.clone();
    store.create(created).await.unwrap();
    for _ in 0..12 {
        tokio::time::sleep(LEASE / 3).await;
        store.renew(&id, SystemTime::now() + LEASE).await.unwrap();
        let seen = store.get(&id, "alice", Era::Extension).await.unwrap();
        assert_eq!(seen.status, TaskStatus::Working, "renewed in time");
    }
    // Four leases have passed: the renewals kept the task.
    let before = store.get(&id, "alice", Era::Extension).await.unwrap();
    store
        .renew(&id, SystemTime::now() - Duration::from_secs(1))
        .await
        .unwrap();
    let after = store.get(&id, "alice", Era::Extension).await.unwrap();
    assert_eq!(after.lease_until, before.lease_until, "never shortened");
    // The runner stalls past its lease, but no one reads meanwhile: its renewal takes it up.
    past_lease(&after).await;
    let until = SystemTime::now() + LEASE;
    store.renew(&id, until).await.unwrap();
    let revived = store.get(&id, "alice", Era::Extension).await.unwrap();
    assert_eq!(revived.status, TaskStatus::Working);
    assert_eq!(revived.lease_until, Some(floor_millis(until)));
    // A task without a lease has none to renew; an unknown task is not found.
    let plain = task("alice", Era::Extension, MINUTE);
    store.create(plain.clone()).await.unwrap();
    assert_eq!(
        store.renew(&plain.id, until).await,
        Err(StoreRefusal::Refused(Refused::Invalid))
    );
    assert_eq!(
        store.renew("no-such-task", until).await,
        Err(StoreRefusal::NotFound)
    );
}

/// A task that finished (or was cancelled) before its lease ran out stays as it ended: no
/// lease holds it any more, and no read fails it.
pub(crate) async fn a_finished_task_stays_finished_after_its_lease(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let done = leased("alice", Era::Extension, LEASE);
    let cancelled = leased("alice", Era::Extension, LEASE);
    for created in [&done, &cancelled] {
        store.create(created.clone()).await.unwrap();
    }
    let finish = |t: &mut TaskRecord| t.finish(TaskOutcome::Result(json!({"content": []})));
    let finished = store
        .update(&done.id, "alice", Era::Extension, &finish)
        .await
        .unwrap();
    let cancel = |t: &mut TaskRecord| t.cancel();
    let stopped = store
        .update(&cancelled.id, "alice", Era::Extension, &cancel)
        .await
        .unwrap();
    assert_eq!(finished.lease_until, None);
    assert_eq!(stopped.lease_until, None);
    past_lease(&done).await;
    assert_eq!(
        store.get(&done.id, "alice", Era::Extension).await,
        Ok(finished)
    );
    assert_eq!(
        store.get(&cancelled.id, "alice", Era::Extension).await,
        Ok(stopped)
    );
    let page = store.list("alice", Era::Extension, None, 10).await.unwrap();
    assert!(
        page.iter()
            .all(|t| matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled)),
        "{page:?}"
    );
    assert_eq!(
        store.renew(&done.id, SystemTime::now() + MINUTE).await,
        Err(StoreRefusal::Refused(Refused::Terminal))
    );
}
