//! The Redis key layout of the session store, under a prefix `P` (default `mcp`):
//!
//! | key | type | holds | expires |
//! |---|---|---|---|
//! | `P:s:{sid}` | hash | the session's record, one field per fact (see `stored.rs`) | `idle_ttl` after its creation or last `touch` |
//! | `P:s:{sid}:subs` | set | the session's `resources/subscribe` URIs | with the session |
//! | `P:sq:{quota}` | sorted set | the live sessions of one quota, scored by expiry (ms) | with its longest-lived session |
//! | `P:sessions` | sorted set | every live session, scored by expiry (ms) | with its longest-lived session |
//!
//! `{…}` is a Redis Cluster hash tag: a session's hash and set share a slot. A quota appears
//! as the first 128 bits of SHA-256 of its name, in hex, so no principal or address is spelled
//! out in a key name. The scripts build a quota's key from the digest the session's hash keeps
//! (field `qt`) with [`Keys::quota_prefix`], the way [`Keys::quota`] does.

use sha2::{Digest, Sha256};

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

    /// The hash of session `id`.
    pub(super) fn session(&self, id: &str) -> String {
        format!("{}:s:{{{id}}}", self.prefix)
    }

    /// The set of session `id`'s subscriptions.
    pub(super) fn subscriptions(&self, id: &str) -> String {
        format!("{}:s:{{{id}}}:subs", self.prefix)
    }

    /// The sorted set of every session (the total cap).
    pub(super) fn all(&self) -> String {
        format!("{}:sessions", self.prefix)
    }

    /// What a quota's key starts with: the key is this, then `{`, the quota's tag, `}`.
    pub(super) fn quota_prefix(&self) -> String {
        format!("{}:sq:", self.prefix)
    }

    /// The sorted set of the sessions of the quota with `tag` ([`quota_tag`]).
    pub(super) fn quota(&self, tag: &str) -> String {
        format!("{}{{{tag}}}", self.quota_prefix())
    }
}

/// A quota's name in keys: the first 16 bytes of its SHA-256, in hex (32 characters, which
/// the scripts check before they use one read back from Redis).
pub(super) fn quota_tag(quota: &str) -> String {
    let digest = Sha256::digest(quota.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names() {
        let keys = Keys::new("mcp");
        assert_eq!(keys.session("abc"), "mcp:s:{abc}");
        assert_eq!(keys.subscriptions("abc"), "mcp:s:{abc}:subs");
        assert_eq!(keys.all(), "mcp:sessions");
        let tag = quota_tag("p:alice");
        assert_eq!(tag.len(), 32);
        assert!(
            tag.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(tag, quota_tag("p:bob"));
        let quota = keys.quota(&tag);
        assert_eq!(quota, format!("mcp:sq:{{{tag}}}"));
        assert!(quota.starts_with(&keys.quota_prefix()));
        assert!(!quota.contains("alice"));
    }
}
