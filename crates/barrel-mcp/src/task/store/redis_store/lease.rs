//! The runner's lease on Redis: the field `l` of the task's hash, beside the record (see
//! `keys.rs`), and what reads do with it.
//!
//! - Every read takes the record, its version and the lease in one `HMGET`.
//! - A read that finds a task not finished whose lease has run out fails it: the failed record
//!   is written with `WRITE`, conditioned on the version read and on the lease still being out
//!   at the reader's clock. Of many readers at once one write lands; the others find the
//!   version changed, read again, and see the task failed. A renewal that landed first makes
//!   the write refuse, and the read again finds the lease alive.
//! - `RENEW` moves the lease's end later in one script call; it refuses a task that has ended
//!   (its `l` is `end`), so a runner learns that it lost its task, or that the task was
//!   cancelled on another node.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{MAX_UPDATE_ATTEMPTS, RedisTaskStore, backoff, decode, millis, visible};
use crate::task::record::{Era, Refused, TaskRecord};
use crate::task::store::StoreRefusal;

/// The hash fields a read takes: the record, its version, the lease's end.
pub(super) const FIELDS: [&str; 3] = ["r", "v", "l"];

/// What `HMGET` of [`FIELDS`] gives.
pub(super) type Fields = (Option<String>, Option<String>, Option<String>);

/// The record (with its lease) and version in `fields`; `None` when the task is gone.
pub(super) fn record_of(fields: Fields) -> Result<Option<(TaskRecord, String)>, StoreRefusal> {
    let (Some(json), Some(version), lease) = fields else {
        return Ok(None);
    };
    let mut record = decode(&json)?;
    // `end` (or no field) is no lease.
    record.lease_until = lease
        .and_then(|ms| ms.parse::<u64>().ok())
        .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms)));
    Ok(Some((record, version)))
}

impl RedisTaskStore {
    /// The record and version of task `id`, if `owner` sees it in `era` (not expired); a task
    /// whose runner's lease had run out is failed first.
    pub(super) async fn read(
        &self,
        id: &str,
        owner: &str,
        era: Era,
    ) -> Result<(TaskRecord, String), StoreRefusal> {
        for attempt in 0..MAX_UPDATE_ATTEMPTS {
            let fields: Fields = redis::cmd("HMGET")
                .arg(self.keys.task(id))
                .arg(&FIELDS)
                .query_async(&mut self.redis.clone())
                .await
                .map_err(|e| self.fail(&e))?;
            let Some((record, version)) = record_of(fields)? else {
                return Err(StoreRefusal::NotFound);
            };
            let now = SystemTime::now();
            if !visible(&record, id, owner, era, now) {
                return Err(StoreRefusal::NotFound);
            }
            if !record.runner_lost(now) {
                return Ok((record, version));
            }
            match self.fail_lost(record, &version, now).await? {
                Some(failed) => return Ok(failed),
                // Another reader failed it, or the runner renewed in time: read again.
                None => backoff(attempt).await,
            }
        }
        Err(StoreRefusal::Unavailable(
            "the task kept changing under concurrent updates".into(),
        ))
    }

    /// Fails `record` (read at `version`), whose lease had run out at `now`, unless it changed
    /// or its lease was renewed since: the failed record and its version, or `None`.
    async fn fail_lost(
        &self,
        mut record: TaskRecord,
        version: &str,
        now: SystemTime,
    ) -> Result<Option<(TaskRecord, String)>, StoreRefusal> {
        if record.fail_runner_lost().is_err() {
            return Ok(None);
        }
        let json = super::stored::encode(&record)
            .map_err(|e| StoreRefusal::Unavailable(format!("a task did not encode: {e}")))?;
        let written: i64 = self
            .scripts
            .write
            .key(self.keys.task(&record.id))
            .arg(version)
            .arg(json)
            .arg("end")
            .arg(millis(now))
            .invoke_async(&mut self.redis.clone())
            .await
            .map_err(|e| self.fail(&e))?;
        match written {
            1 => {
                tracing::warn!(
                    task = %record.id,
                    "a task's runner stopped renewing its lease: failed"
                );
                // `WRITE` added one to the version (it is always a number); should it not
                // parse, read again instead.
                Ok(version
                    .parse::<u64>()
                    .ok()
                    .map(|v| (record, (v + 1).to_string())))
            }
            -1 => Err(StoreRefusal::NotFound),
            _ => Ok(None),
        }
    }

    pub(super) async fn renew_now(&self, id: &str, until: SystemTime) -> Result<(), StoreRefusal> {
        let renewed: i64 = self
            .scripts
            .renew
            .key(self.keys.task(id))
            .arg(millis(until))
            .invoke_async(&mut self.redis.clone())
            .await
            .map_err(|e| self.fail(&e))?;
        match renewed {
            1 => Ok(()),
            0 => Err(StoreRefusal::Refused(Refused::Terminal)),
            -2 => Err(StoreRefusal::Refused(Refused::Invalid)),
            -1 => Err(StoreRefusal::NotFound),
            other => Err(StoreRefusal::Unavailable(format!(
                "unexpected answer {other} from the renew script"
            ))),
        }
    }
}
