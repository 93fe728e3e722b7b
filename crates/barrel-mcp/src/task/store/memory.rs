//! [`MemoryTaskStore`]: tasks in this process's memory, the default store.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::{
    StoreRefusal, TaskChange, TaskLimits, TaskStore, floor_millis, keep_lease, parse_cursor,
    same_identity, sort_key,
};
use crate::peer::BoxFuture;
use crate::task::record::{Era, Refused, TaskRecord};

/// Tasks in this process's memory (the default store).
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    limits: TaskLimits,
    tasks: Mutex<Tasks>,
}

#[derive(Debug, Default)]
struct Tasks {
    by_id: HashMap<String, TaskRecord>,
    /// Tasks held, by owner (anonymous ones under [`ANONYMOUS`]).
    per_owner: HashMap<String, usize>,
}

/// The key anonymous tasks are counted under (no principal can have it: it starts with NUL).
const ANONYMOUS: &str = "\0anonymous";

/// The key a task is counted under.
fn quota_key(record: &TaskRecord) -> &str {
    if record.anonymous {
        ANONYMOUS
    } else {
        &record.owner
    }
}

impl Tasks {
    /// Forgets every task expired at `now`; returns how many.
    fn remove_expired(&mut self, now: SystemTime) -> usize {
        let expired: Vec<String> = self
            .by_id
            .values()
            .filter(|t| t.expired(now))
            .map(|t| t.id.clone())
            .collect();
        for id in &expired {
            self.remove(id);
        }
        expired.len()
    }

    fn remove(&mut self, id: &str) {
        if let Some(record) = self.by_id.remove(id) {
            let key = quota_key(&record);
            if let Some(count) = self.per_owner.get_mut(key) {
                *count -= 1;
                if *count == 0 {
                    self.per_owner.remove(key);
                }
            }
        }
    }

    /// The live task `id` of `owner` in `era`; an expired one is forgotten on the way, and one
    /// whose runner's lease ran out is failed.
    fn visible(
        &mut self,
        id: &str,
        owner: &str,
        era: Era,
        now: SystemTime,
    ) -> Result<&mut TaskRecord, StoreRefusal> {
        let expired = match self.by_id.get(id) {
            Some(record) if record.owner == owner && record.era == era => record.expired(now),
            _ => return Err(StoreRefusal::NotFound),
        };
        if expired {
            self.remove(id);
            return Err(StoreRefusal::NotFound);
        }
        let record = self.by_id.get_mut(id).ok_or(StoreRefusal::NotFound)?;
        fail_if_runner_lost(record, now);
        Ok(record)
    }
}

/// Fails `record` if its runner's lease had run out at `now` (under the store's lock: once).
fn fail_if_runner_lost(record: &mut TaskRecord, now: SystemTime) {
    if record.runner_lost(now) && record.fail_runner_lost().is_ok() {
        tracing::warn!(task = %record.id, "a task's runner stopped renewing its lease: failed");
    }
}

impl MemoryTaskStore {
    /// An empty store with `limits`.
    pub fn new(limits: TaskLimits) -> Self {
        Self {
            limits,
            tasks: Mutex::new(Tasks::default()),
        }
    }

    /// The store's limits.
    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    /// How many tasks it holds.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn create_now(&self, record: TaskRecord) -> Result<(), StoreRefusal> {
        let mut tasks = self.lock();
        let key = quota_key(&record);
        let cap = if record.anonymous {
            self.limits.max_anonymous
        } else {
            self.limits.max_per_owner
        };
        let full = |tasks: &Tasks| {
            tasks.per_owner.get(key).copied().unwrap_or(0) >= cap
                || tasks.by_id.len() >= self.limits.max_tasks
        };
        if full(&tasks) {
            // Expired tasks no one looked up again still hold their places: forget them first.
            tasks.remove_expired(SystemTime::now());
        }
        let owned = tasks.per_owner.get(key).copied().unwrap_or(0);
        if owned >= cap {
            let whose = if record.anonymous {
                "of anonymous callers"
            } else {
                "per requestor"
            };
            return Err(StoreRefusal::Full(format!(
                "too many tasks (at most {cap} {whose})"
            )));
        }
        if tasks.by_id.len() >= self.limits.max_tasks {
            return Err(StoreRefusal::Full("too many tasks on this server".into()));
        }
        if tasks.by_id.contains_key(&record.id) {
            return Err(StoreRefusal::Unavailable("duplicate task id".into()));
        }
        *tasks.per_owner.entry(key.to_owned()).or_default() += 1;
        let mut record = record;
        record.lease_until = record.lease_until.map(floor_millis);
        tasks.by_id.insert(record.id.clone(), record);
        Ok(())
    }
}

impl TaskStore for MemoryTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreRefusal>> {
        Box::pin(std::future::ready(self.create_now(record)))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>> {
        let found = self
            .lock()
            .visible(id, owner, era, SystemTime::now())
            .map(|record| record.clone());
        Box::pin(std::future::ready(found))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>> {
        let changed = {
            let mut tasks = self.lock();
            tasks
                .visible(id, owner, era, SystemTime::now())
                .and_then(|record| {
                    // Apply to a copy: a refused change leaves the record as it was.
                    let mut next = record.clone();
                    change(&mut next).map_err(StoreRefusal::Refused)?;
                    if !same_identity(record, &next) {
                        return Err(StoreRefusal::Refused(Refused::Invalid));
                    }
                    keep_lease(record, &mut next);
                    *record = next.clone();
                    Ok(next)
                })
        };
        Box::pin(std::future::ready(changed))
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        era: Era,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<TaskRecord>, StoreRefusal>> {
        let now = SystemTime::now();
        let mut tasks = self.lock();
        let after = match after.map(parse_cursor) {
            None => None,
            Some(Some(key)) => Some(key),
            Some(None) => return Box::pin(std::future::ready(Err(StoreRefusal::NotFound))),
        };
        let mut mine: Vec<(u128, String)> = tasks
            .by_id
            .values()
            .filter(|t| t.owner == owner && t.era == era && !t.expired(now))
            .map(sort_key)
            .filter(|key| after.as_ref().is_none_or(|after| key > after))
            .collect();
        mine.sort_unstable();
        let page = mine
            .into_iter()
            .take(limit)
            .filter_map(|(_, id)| {
                let record = tasks.by_id.get_mut(&id)?;
                fail_if_runner_lost(record, now);
                Some(record.clone())
            })
            .collect();
        Box::pin(std::future::ready(Ok(page)))
    }

    fn purge(&self, now: SystemTime) -> BoxFuture<'_, usize> {
        let purged = self.lock().remove_expired(now);
        Box::pin(std::future::ready(purged))
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        until: SystemTime,
    ) -> BoxFuture<'a, Result<(), StoreRefusal>> {
        let renewed = {
            let mut tasks = self.lock();
            match tasks.by_id.get_mut(id) {
                Some(record) if !record.expired(SystemTime::now()) => {
                    if record.status.is_terminal() {
                        Err(StoreRefusal::Refused(Refused::Terminal))
                    } else if let Some(lease) = &mut record.lease_until {
                        *lease = (*lease).max(floor_millis(until));
                        Ok(())
                    } else {
                        Err(StoreRefusal::Refused(Refused::Invalid))
                    }
                }
                _ => Err(StoreRefusal::NotFound),
            }
        };
        Box::pin(std::future::ready(renewed))
    }
}
