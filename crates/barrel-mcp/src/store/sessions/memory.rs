//! [`MemorySessionStore`]: sessions in this process's memory (the default, one process).
//!
//! One `HashMap` behind a std `Mutex` that no `.await` ever holds (every method does its work
//! under the lock and returns a ready future). A session's life is a
//! [`tokio::time::Instant`], so tests with a paused tokio clock see sessions expire as the
//! clock moves. An expired session counts as absent at once; it is dropped when someone looks
//! it up, and every expired session is dropped when a cap would refuse a `create`, so the caps
//! count live sessions only. The table knows no session expires before its `earliest`, so a
//! `create` refused at a cap sweeps only once that instant has passed, not on every attempt.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::{Created, SessionChange, SessionLimits, SessionRecord, SessionStore, Updated, bounded};
use crate::peer::BoxFuture;
use crate::store::StoreError;

/// Sessions in this process's memory.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    by_id: HashMap<String, Entry>,
    /// Sessions held (live or not yet dropped), by quota.
    per_quota: HashMap<String, usize>,
    /// No session held expires before this (`None`: none held since the last sweep).
    earliest: Option<Instant>,
    /// Sweeps done, for the tests.
    #[cfg(test)]
    sweeps: usize,
}

#[derive(Debug)]
struct Entry {
    record: SessionRecord,
    /// When it expires (it is absent from then on).
    expires: Instant,
    /// The subscription cap it was created under.
    max_subscriptions: usize,
}

impl Table {
    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.by_id.remove(id)?;
        if let Some(quota) = &entry.record.quota
            && let Some(count) = self.per_quota.get_mut(quota)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_quota.remove(quota);
            }
        }
        Some(entry)
    }

    /// The live session `id`; an expired one is dropped on the way.
    fn live(&mut self, id: &str, now: Instant) -> Option<&mut Entry> {
        let expired = self.by_id.get(id)?.expires <= now;
        if expired {
            self.remove(id);
            return None;
        }
        self.by_id.get_mut(id)
    }

    /// Notes that a session held expires at `expires`.
    fn expires_at(&mut self, expires: Instant) {
        self.earliest = Some(self.earliest.map_or(expires, |e| e.min(expires)));
    }

    /// Drops every expired session, unless none can have expired yet.
    fn sweep(&mut self, now: Instant) {
        if self.earliest.is_none_or(|earliest| now < earliest) {
            return;
        }
        #[cfg(test)]
        {
            self.sweeps += 1;
        }
        let expired: Vec<String> = self
            .by_id
            .iter()
            .filter(|(_, entry)| entry.expires <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            self.remove(id);
        }
        self.earliest = self.by_id.values().map(|entry| entry.expires).min();
    }

    /// Why `record` cannot be added under `limits`, if it cannot (expired sessions included).
    fn refusal(&self, record: &SessionRecord, limits: &SessionLimits) -> Option<Created> {
        let quota_full = record.quota.as_ref().is_some_and(|quota| {
            self.per_quota.get(quota).copied().unwrap_or(0) >= limits.max_per_quota
        });
        if quota_full {
            Some(Created::QuotaFull)
        } else if self.by_id.len() >= limits.max_sessions {
            Some(Created::Full)
        } else {
            None
        }
    }
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sessions it holds, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn create_now(&self, record: &SessionRecord, limits: &SessionLimits) -> Created {
        let now = Instant::now();
        let mut table = self.lock();
        if table.live(&record.id, now).is_some() {
            return Created::Exists;
        }
        if table.refusal(record, limits).is_some() {
            // Expired sessions no one looked up again still hold places: drop them first.
            table.sweep(now);
            if let Some(refused) = table.refusal(record, limits) {
                return refused;
            }
        }
        if let Some(quota) = &record.quota {
            *table.per_quota.entry(quota.clone()).or_default() += 1;
        }
        let expires = deadline(now, limits.idle_ttl);
        table.expires_at(expires);
        table.by_id.insert(
            record.id.clone(),
            Entry {
                record: record.clone(),
                expires,
                max_subscriptions: limits.max_subscriptions,
            },
        );
        Created::Created
    }

    fn update_now(&self, id: &str, change: SessionChange) -> Updated {
        let mut table = self.lock();
        let Some(entry) = table.live(id, Instant::now()) else {
            return Updated::Unknown;
        };
        let record = &mut entry.record;
        match change {
            SessionChange::Initialized => record.initialized = true,
            SessionChange::LogLevel(level) => record.log_level = Some(level),
            SessionChange::Subscribe(uri) => {
                if !record.subscriptions.contains(&uri)
                    && record.subscriptions.len() >= entry.max_subscriptions
                {
                    return Updated::SubscriptionsFull;
                }
                record.subscriptions.insert(uri);
            }
            SessionChange::Unsubscribe(uri) => {
                record.subscriptions.remove(&uri);
            }
            SessionChange::GetOwner { expected, new } => {
                if record.get_owner != expected {
                    return Updated::Conflict;
                }
                record.get_owner = Some(new);
            }
        }
        Updated::Applied
    }

    fn touch_now(&self, id: &str, idle_ttl: Duration) -> bool {
        let now = Instant::now();
        let mut table = self.lock();
        let expires = deadline(now, idle_ttl);
        match table.live(id, now) {
            Some(entry) => {
                entry.expires = expires;
                table.expires_at(expires);
                true
            }
            None => false,
        }
    }

    fn delete_uninitialized_now(&self, id: &str) -> bool {
        let mut table = self.lock();
        let uninitialized = table
            .live(id, Instant::now())
            .is_some_and(|entry| !entry.record.initialized);
        uninitialized && table.remove(id).is_some()
    }

    fn delete_now(&self, id: &str) -> bool {
        let mut table = self.lock();
        // An expired session is gone already: dropping it is no deletion.
        let now = Instant::now();
        table.remove(id).is_some_and(|entry| entry.expires > now)
    }
}

impl SessionStore for MemorySessionStore {
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        limits: &'a SessionLimits,
    ) -> BoxFuture<'a, Result<Created, StoreError>> {
        Box::pin(std::future::ready(Ok(self.create_now(record, limits))))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        let found = self
            .lock()
            .live(id, Instant::now())
            .map(|entry| entry.record.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
    ) -> BoxFuture<'a, Result<Updated, StoreError>> {
        Box::pin(std::future::ready(Ok(self.update_now(id, change))))
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self.touch_now(id, idle_ttl))))
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self.delete_now(id))))
    }

    fn delete_uninitialized<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self.delete_uninitialized_now(id))))
    }
}

/// When a session given `ttl` at `now` expires.
fn deadline(now: Instant, ttl: Duration) -> Instant {
    // 100 years past a monotonic clock's reading does not overflow; were it to, the session
    // would end at once rather than never.
    now.checked_add(bounded(ttl)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use barrel_mcp_types::{ClientCapabilities, Implementation, ProtocolVersion};

    use super::*;

    fn record(id: &str) -> SessionRecord {
        SessionRecord::new(
            id,
            ProtocolVersion::V2025_11_25,
            ClientCapabilities::default(),
            Implementation::new("client", "1.0"),
        )
    }

    fn limits(idle_ttl: Duration) -> SessionLimits {
        SessionLimits {
            idle_ttl,
            max_sessions: 3,
            ..SessionLimits::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_store_sweeps_only_once_a_session_can_have_expired() {
        let store = MemorySessionStore::new();
        let long = limits(Duration::from_secs(60));
        let _ = store.create_now(&record("brief"), &limits(Duration::from_secs(10)));
        let _ = store.create_now(&record("b"), &long);
        let _ = store.create_now(&record("c"), &long);
        for n in 0..50 {
            assert_eq!(
                store.create_now(&record(&format!("refused-{n}")), &long),
                Created::Full
            );
        }
        assert_eq!(store.lock().sweeps, 0, "nothing could have expired yet");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(store.create_now(&record("d"), &long), Created::Created);
        assert_eq!(store.lock().sweeps, 1, "the expired one made room");
        for n in 0..50 {
            assert_eq!(
                store.create_now(&record(&format!("again-{n}")), &long),
                Created::Full
            );
        }
        assert_eq!(store.lock().sweeps, 1);
        // A touch that shortens a life is noted.
        assert!(store.touch_now("b", Duration::from_secs(1)));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(store.create_now(&record("e"), &long), Created::Created);
        assert_eq!(store.lock().sweeps, 2);
        assert_eq!(store.len(), 3);
    }
}
