//! The runner's side of a task's lease (the store's side is
//! [`TaskStore::renew`](crate::task::TaskStore::renew) and
//! [`TaskRecord::runner_lost`](crate::task::TaskRecord::runner_lost)).
//!
//! - The lease starts when the task is created ([`TaskRecord::with_lease`]); while its work
//!   runs, [`Lease::hold`] renews it every third of the lease, so two renewals in a row may fail
//!   (or come late) before anyone may take the task for abandoned.
//! - A renewal the store could not make (unavailable) is tried again soon, not given up: the
//!   runner never abandons live work for a store outage. A lease that ran out meanwhile is taken
//!   up again, as long as no reader failed the task first.
//! - A renewal refused because the task ended means it ended elsewhere: cancelled on another
//!   node, or failed by a reader because the lease had run out (this runtime stalled past it).
//!   The runner then stops the work; a late outcome is refused by the record (terminal states
//!   are sticky), counted and logged.
//! - A runner whose renewals are starved (its runtime's threads all blocked) for longer than
//!   the lease is failed as soon as anyone reads the task, as a dead one is: from outside the
//!   two look the same. Keep handlers from blocking the runtime, or raise the lease.
//!
//! [`TaskRecord::with_lease`]: crate::task::TaskRecord::with_lease

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use barrel_mcp_types::{ErrorObject, TaskStatus};

use super::Server;
use crate::task::{Era, RUNNER_STOPPED, Refused, StoreRefusal, TaskOutcome, TaskStore};

/// The shortest pause before a failed renewal is tried again.
const MIN_RETRY: Duration = Duration::from_millis(5);

/// A running task's lease, held by its runner.
pub(super) struct Lease {
    store: Arc<dyn TaskStore>,
    id: String,
    lease: Duration,
    /// Until when the lease is known to hold (the end of the last renewal, or of the lease
    /// taken at creation, at the latest); `None`: a lease too long to count, which the task
    /// was created without (there is nothing to renew).
    until: Option<SystemTime>,
}

impl Lease {
    /// The lease of task `id`, taken for `lease` when the task was created (just before).
    pub(super) fn new(store: Arc<dyn TaskStore>, id: String, lease: Duration) -> Self {
        Self {
            store,
            id,
            lease,
            // Created before this was called: the lease ends no later than this.
            until: SystemTime::now().checked_add(lease),
        }
    }

    /// How often the lease is renewed: a third of it.
    pub(super) fn every(&self) -> Duration {
        self.lease / 3
    }

    /// Renews the lease every third of it, for as long as this is awaited; returns why it
    /// cannot be renewed any more: the task ended (`Refused(Terminal)`: elsewhere, since this
    /// runner's own outcome ends the wait first), holds no lease, or is gone (`NotFound`).
    /// Store failures are retried, at a quarter of the renewal interval. Without a lease it
    /// waits forever.
    pub(super) async fn hold(&mut self) -> StoreRefusal {
        if self.until.is_none() {
            return std::future::pending().await;
        }
        let every = self.every();
        let retry = (every / 4).max(MIN_RETRY);
        let mut wait = every;
        loop {
            tokio::time::sleep(wait).await;
            match self.renew().await {
                Ok(()) => wait = every,
                Err(StoreRefusal::Unavailable(why)) => {
                    tracing::warn!(
                        task = %self.id,
                        %why,
                        "a task's lease was not renewed; trying again"
                    );
                    wait = retry;
                }
                Err(ended) => return ended,
            }
        }
    }

    /// Renews the lease now if less than a third of it is left (a stall kept the renewals
    /// from running; never so otherwise): the outcome about to be written is then not refused
    /// for a lease no one else has acted on. Failures are left to the write that follows.
    pub(super) async fn refresh_if_short(&mut self) {
        let Some(until) = self.until else {
            return;
        };
        let short = until
            .duration_since(SystemTime::now())
            .map_or(true, |left| left < self.every());
        if short {
            let _ = self.renew().await;
        }
    }

    async fn renew(&mut self) -> Result<(), StoreRefusal> {
        let until = SystemTime::now()
            .checked_add(self.lease)
            .ok_or(StoreRefusal::Refused(Refused::Invalid))?;
        self.store.renew(&self.id, until).await?;
        self.until = Some(until);
        Ok(())
    }
}

/// The work of task `id` ran here but its task ended elsewhere (`why`: the refusal of a renewal
/// or of the outcome's write). A task failed for its lapsed lease is counted and logged as a
/// warning; a task cancelled elsewhere (or gone) is only logged.
pub(super) async fn ended_elsewhere(
    server: &Server,
    id: &str,
    owner: &str,
    era: Era,
    why: &StoreRefusal,
) {
    let lost = matches!(why, StoreRefusal::Refused(Refused::Terminal))
        && server
            .inner
            .tasks
            .store
            .get(id, owner, era)
            .await
            .is_ok_and(|record| {
                let stopped = |e: &ErrorObject| e.message == RUNNER_STOPPED;
                record.status == TaskStatus::Failed
                    && matches!(&record.outcome, Some(TaskOutcome::Error(e)) if stopped(e))
            });
    if lost {
        server
            .inner
            .tasks
            .lost_leases
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            task = %id,
            "a task's lease ran out while its work still ran here (a stall longer than the \
             lease): the task was failed, its work stopped and any late outcome discarded"
        );
    } else {
        tracing::debug!(task = %id, ?why, "a task ended elsewhere: its work stopped here");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{MemoryTaskStore, TaskLimits, TaskRecord, new_task_id};

    fn store_with(lease: Duration) -> (Arc<dyn TaskStore>, TaskRecord) {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new(TaskLimits::default()));
        let record = TaskRecord::new(
            new_task_id().unwrap(),
            "alice",
            Era::Extension,
            Some(Duration::from_secs(60)),
            Duration::from_secs(1),
        )
        .with_lease(lease);
        (store, record)
    }

    #[tokio::test]
    async fn a_held_lease_outlives_many_leases() {
        let lease = Duration::from_millis(60);
        let (store, record) = store_with(lease);
        let id = record.id.clone();
        store.create(record).await.unwrap();
        let mut held = Lease::new(Arc::clone(&store), id.clone(), lease);
        let holding = tokio::time::timeout(lease * 6, held.hold()).await;
        assert!(holding.is_err(), "still held: {holding:?}");
        let seen = store.get(&id, "alice", Era::Extension).await.unwrap();
        assert_eq!(seen.status, TaskStatus::Working);
    }

    #[tokio::test]
    async fn a_lease_ended_elsewhere_is_given_up() {
        let lease = Duration::from_millis(60);
        let (store, record) = store_with(lease);
        let id = record.id.clone();
        store.create(record).await.unwrap();
        // Cancelled elsewhere: the next renewal says so.
        let cancel = |t: &mut TaskRecord| t.cancel();
        store
            .update(&id, "alice", Era::Extension, &cancel)
            .await
            .unwrap();
        let mut held = Lease::new(Arc::clone(&store), id, lease);
        let ended = tokio::time::timeout(lease * 3, held.hold()).await;
        assert_eq!(ended, Ok(StoreRefusal::Refused(Refused::Terminal)));
    }

    #[tokio::test]
    async fn a_short_lease_is_refreshed_before_the_outcome() {
        let lease = Duration::from_millis(200);
        let (store, record) = store_with(lease);
        let id = record.id.clone();
        store.create(record).await.unwrap();
        let mut held = Lease::new(Arc::clone(&store), id.clone(), lease);
        // A stall: no renewal for longer than the lease, and no reader meanwhile.
        tokio::time::sleep(lease + Duration::from_millis(20)).await;
        held.refresh_if_short().await;
        let finish = |t: &mut TaskRecord| t.finish(TaskOutcome::Result(serde_json::json!({})));
        let done = store
            .update(&id, "alice", Era::Extension, &finish)
            .await
            .unwrap();
        assert_eq!(done.status, TaskStatus::Completed);
    }

    #[tokio::test]
    async fn a_lease_too_long_to_count_is_none() {
        let (store, record) = store_with(Duration::MAX);
        assert_eq!(record.lease_until, None);
        let id = record.id.clone();
        store.create(record).await.unwrap();
        let mut held = Lease::new(Arc::clone(&store), id.clone(), Duration::MAX);
        // Nothing to renew: the outcome is written at once, and holding waits forever.
        tokio::time::timeout(Duration::from_secs(1), held.refresh_if_short())
            .await
            .unwrap();
        let holding = tokio::time::timeout(Duration::from_millis(50), held.hold()).await;
        assert!(holding.is_err());
    }
}
