//! The Redis key layout of the task store, under a prefix `P` (default `mcp`):
//!
//! | key | type | holds | expires |
//! |---|---|---|---|
//! | `P:t:{id}` | hash | `r`: the task (JSON), `v`: its version, `l`: when its runner's lease ends (ms since the epoch; `end` once the task has ended; absent: no lease) | at the task's TTL |
//! | `P:q:{owner}` / `P:q:anon` | sorted set | the owner's task ids (anonymous: all anonymous ones), scored by expiry (ms) | with its last task |
//! | `P:tasks` | sorted set | every task's cleanup entry, scored by expiry (ms) | with its last task |
//! | `P:o:{owner}:s` / `:x` | sorted set | `<created ns, 20 digits>:<id>` of the owner's tasks in one era (scores 0, read by lex) | with its last task |
//!
//! The lease is a field of its own, beside the record: a renewal is one small script that
//! touches neither the record nor its version, so it costs one command, never rewrites the
//! record, and never makes a concurrent `update` of the task start over.
//!
//! `{…}` is a Redis Cluster hash tag: all of one task's keys share a slot. An owner appears as
//! the first 128 bits of SHA-256 of its name, in hex: principals are neither spelled out in key
//! names nor able to make one unbounded.

use sha2::{Digest, Sha256};

use super::super::sort_key;
use crate::task::record::{Era, TaskRecord};

/// The key names of one store.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hash of task `id`.
    pub(super) fn task(&self, id: &str) -> String {
        format!("{}:t:{{{id}}}", self.prefix)
    }

    /// The sorted set `record` counts against for its cap.
    pub(super) fn quota(&self, record: &TaskRecord) -> String {
        if record.anonymous {
            format!("{}:q:anon", self.prefix)
        } else {
            format!("{}:q:{{{}}}", self.prefix, owner_tag(&record.owner))
        }
    }

    /// The sorted set of every task (the total cap, and what `purge` walks).
    pub(super) fn all(&self) -> String {
        format!("{}:tasks", self.prefix)
    }

    /// The sorted set `tasks/list` reads for `owner` in `era`.
    pub(super) fn owned(&self, owner: &str, era: Era) -> String {
        let era = match era {
            Era::Sessions => "s",
            Era::Extension => "x",
        };
        format!("{}:o:{{{}}}:{era}", self.prefix, owner_tag(owner))
    }
}

/// An owner's name in keys: the first 16 bytes of its SHA-256, in hex.
fn owner_tag(owner: &str) -> String {
    let digest = Sha256::digest(owner.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Where `record` sorts in its owner's list: creation time in nanoseconds (20 digits, so text
/// order is time order), then the id; the same order as [`sort_key`].
pub(super) fn list_member(record: &TaskRecord) -> String {
    let (nanos, id) = sort_key(record);
    member(nanos, &id)
}

/// The list member of a task created at `nanos` with `id`.
pub(super) fn member(nanos: u128, id: &str) -> String {
    format!("{nanos:020}:{id}")
}

/// The id in a list member.
pub(super) fn member_id(member: &str) -> Option<&str> {
    member.split_once(':').map(|(_, id)| id)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn keys_and_members() {
        let keys = Keys::new("mcp");
        assert_eq!(keys.task("abc"), "mcp:t:{abc}");
        let record = TaskRecord::new("abc", "alice", Era::Sessions, None, Duration::ZERO);
        let quota = keys.quota(&record);
        assert!(quota.starts_with("mcp:q:{") && quota.ends_with('}'));
        assert_eq!(quota.len(), "mcp:q:{}".len() + 32);
        assert!(!quota.contains("alice"));
        assert_ne!(
            keys.owned("alice", Era::Sessions),
            keys.owned("alice", Era::Extension)
        );
        assert_eq!(member(5, "x"), "00000000000000000005:x");
        assert!(member(9, "z") < member(10, "a"));
        assert_eq!(member_id(&member(7, "a:b")), Some("a:b"));
    }
}
