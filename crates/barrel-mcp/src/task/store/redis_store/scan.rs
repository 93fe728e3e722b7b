//! The reads that walk an index: `list` (an owner's tasks in creation order, a page at a
//! time) and `purge` (the expired tasks, a batch per script run).

use std::time::SystemTime;

use super::{PURGE_BATCH, RedisTaskStore, keys, lease, millis, visible};
use crate::task::record::{Era, TaskRecord};
use crate::task::store::{StoreRefusal, parse_cursor};

impl RedisTaskStore {
    pub(super) async fn list_now(
        &self,
        owner: &str,
        era: Era,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreRefusal> {
        let mut start = match after {
            None => "-".to_owned(),
            Some(cursor) => {
                let (nanos, id) = parse_cursor(cursor).ok_or(StoreRefusal::NotFound)?;
                format!("({}", keys::member(nanos, &id))
            }
        };
        let owned = self.keys.owned(owner, era);
        let mut page = Vec::new();
        let mut redis = self.redis.clone();
        while page.len() < limit {
            let want = limit - page.len();
            let members: Vec<String> = redis::cmd("ZRANGE")
                .arg(&owned)
                .arg(&start)
                .arg("+")
                .arg("BYLEX")
                .arg("LIMIT")
                .arg(0)
                .arg(want)
                .query_async(&mut redis)
                .await
                .map_err(|e| self.fail(&e))?;
            let Some(last) = members.last() else {
                break;
            };
            start = format!("({last}");
            let ids: Vec<&str> = members.iter().filter_map(|m| keys::member_id(m)).collect();
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.cmd("HMGET")
                    .arg(self.keys.task(id))
                    .arg(&lease::FIELDS);
            }
            let records: Vec<lease::Fields> = pipe
                .query_async(&mut redis)
                .await
                .map_err(|e| self.fail(&e))?;
            let now = SystemTime::now();
            for (id, fields) in ids.iter().zip(records) {
                // A task gone from Redis expired; its entry waits for `purge`.
                let Some((record, _)) = lease::record_of(fields)? else {
                    continue;
                };
                if !visible(&record, id, owner, era, now) {
                    continue;
                }
                if record.runner_lost(now) {
                    // Failed on the way (by this reader or another), as `get` does.
                    match self.read(id, owner, era).await {
                        Ok((record, _)) => page.push(record),
                        Err(StoreRefusal::NotFound) => {}
                        Err(other) => return Err(other),
                    }
                } else {
                    page.push(record);
                }
            }
            if members.len() < want {
                break;
            }
        }
        Ok(page)
    }

    pub(super) async fn purge_now(&self, now: SystemTime) -> Result<usize, StoreRefusal> {
        let now = millis(now);
        let mut purged = 0;
        loop {
            let batch: usize = self
                .scripts
                .purge
                .key(self.keys.all())
                .arg(now)
                .arg(PURGE_BATCH)
                .invoke_async(&mut self.redis.clone())
                .await
                .map_err(|e| self.fail(&e))?;
            purged += batch;
            if batch < PURGE_BATCH {
                return Ok(purged);
            }
        }
    }
}
