//! The live sessions by id, with how many each quota holds.
//!
//! Opening a session checks its principal's (or anonymous address's) share of the table. The
//! shares are counted as sessions are listed and unlisted, so that check costs one lookup,
//! not a walk over every live session while the table's lock is held.

use std::collections::HashMap;
use std::collections::hash_map::Values;
use std::sync::Arc;

use super::session::{HttpSession, Quota};

/// Every listed session by id, and the number of listed sessions per quota.
#[derive(Debug, Default)]
pub(crate) struct SessionTable {
    /// Keyed by ids the server drew at random (a client only looks ids up, it never chooses
    /// one that is listed): a fast hasher is enough.
    by_id: HashMap<String, Arc<HttpSession>, foldhash::fast::RandomState>,
    per_quota: HashMap<Quota, usize>,
}

impl SessionTable {
    pub(crate) fn get(&self, id: &str) -> Option<&Arc<HttpSession>> {
        self.by_id.get(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(crate) fn values(&self) -> Values<'_, String, Arc<HttpSession>> {
        self.by_id.values()
    }

    /// How many listed sessions count against `quota`.
    pub(crate) fn held_by(&self, quota: &Quota) -> usize {
        self.per_quota.get(quota).copied().unwrap_or(0)
    }

    /// Lists `session` under its id, in place of any session listed under that id before.
    pub(crate) fn insert(&mut self, session: Arc<HttpSession>) {
        if let Some(quota) = &session.quota {
            *self.per_quota.entry(quota.clone()).or_insert(0) += 1;
        }
        if let Some(replaced) = self.by_id.insert(session.id.clone(), session) {
            self.release(&replaced);
        }
    }

    /// Unlists the session listed under `id`.
    pub(crate) fn remove(&mut self, id: &str) -> Option<Arc<HttpSession>> {
        let removed = self.by_id.remove(id)?;
        crate::shrink::shrink_when_sparse(&mut self.by_id);
        self.release(&removed);
        Some(removed)
    }

    /// Gives back the share an unlisted session took.
    fn release(&mut self, session: &HttpSession) {
        let Some(quota) = &session.quota else { return };
        if let Some(count) = self.per_quota.get_mut(quota) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_quota.remove(quota);
                crate::shrink::shrink_when_sparse(&mut self.per_quota);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::HttpConfig;
    use crate::http::sessions::limits;

    fn session(id: &str, quota: Option<Quota>) -> Arc<HttpSession> {
        Arc::new(HttpSession::new(
            id.to_owned(),
            None,
            quota,
            false,
            limits(&HttpConfig::default()),
        ))
    }

    #[test]
    fn shares_follow_listing_and_unlisting() {
        let alice = Quota::Principal("alice".into());
        let address = Quota::Address(std::net::IpAddr::from([192, 0, 2, 1]));
        let mut table = SessionTable::default();
        table.insert(session("a1", Some(alice.clone())));
        table.insert(session("a2", Some(alice.clone())));
        table.insert(session("x1", Some(address.clone())));
        table.insert(session("loopback", None));
        assert_eq!(table.len(), 4);
        assert_eq!(table.held_by(&alice), 2);
        assert_eq!(table.held_by(&address), 1);

        assert!(table.remove("a1").is_some());
        assert!(
            table.remove("a1").is_none(),
            "a second removal gives nothing back"
        );
        assert_eq!(table.held_by(&alice), 1);

        // A session listed again under the same id takes the place (and the share) of the one
        // before.
        table.insert(session("a2", Some(address.clone())));
        assert_eq!(table.held_by(&alice), 0);
        assert_eq!(table.held_by(&address), 2);
        assert!(
            !table.per_quota.contains_key(&alice),
            "empty shares are forgotten"
        );
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn the_table_gives_back_its_room_once_a_burst_of_sessions_has_ended() {
        let mut table = SessionTable::default();
        for i in 0..1_000 {
            let address = Quota::Address(std::net::IpAddr::from([10, 0, (i / 256) as u8, i as u8]));
            table.insert(session(&format!("s{i}"), Some(address)));
        }
        let room = (table.by_id.capacity(), table.per_quota.capacity());
        assert!(room.0 >= 1_000 && room.1 >= 1_000);
        for i in 0..1_000 {
            assert!(table.remove(&format!("s{i}")).is_some());
        }
        assert_eq!(table.len(), 0);
        assert!(
            table.by_id.capacity() < 2 * crate::shrink::KEPT_CAPACITY
                && table.per_quota.capacity() < 2 * crate::shrink::KEPT_CAPACITY,
            "room kept: {:?} of {room:?}",
            (table.by_id.capacity(), table.per_quota.capacity())
        );
    }
}
