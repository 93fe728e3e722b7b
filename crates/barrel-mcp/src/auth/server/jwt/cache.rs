//! Tokens already verified, so a client that sends the same bearer JWT with every request pays
//! for the signature check (a SHA-256 HMAC, or far more for RSA and ECDSA) and the claim
//! parsing once, not per request.
//!
//! An entry holds the caller the token authenticated and the token's time window (`nbf`,
//! `exp`); a hit is re-checked against the clock with the same leeway, so a cached token
//! expires exactly when an uncached one would. Everything else a token is checked for (the
//! signature, `iss`, `aud`, `typ`) does not change with time. Entries live at most the cache's
//! TTL (default 60 s), so a key withdrawn from a JWK Set stops vouching for its tokens within
//! that time. The cache holds at most `capacity` tokens (default 1,024; when full, expired
//! entries go, then all of them). Only tokens that passed are cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::auth::AuthInfo;

/// The verified-token cache of a `JwtBearer`. A clone is an empty cache with the same
/// settings: a `JwtBearer` cloned and given other rules must not accept what the first one
/// verified.
#[derive(Debug)]
pub(super) struct TokenCache {
    entries: Mutex<HashMap<Box<str>, Entry>>,
    capacity: usize,
    ttl: Duration,
}

#[derive(Debug)]
struct Entry {
    info: Arc<AuthInfo>,
    not_before: Option<f64>,
    expires: f64,
    until: Instant,
}

impl Clone for TokenCache {
    fn clone(&self) -> Self {
        Self::new(self.capacity, self.ttl)
    }
}

impl TokenCache {
    pub(super) fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            capacity,
            ttl,
        }
    }

    fn disabled(&self) -> bool {
        self.capacity == 0 || self.ttl.is_zero()
    }

    /// The caller `token` authenticated, if it was verified lately and its window (with
    /// `leeway`) holds `now`.
    pub(super) fn get(
        &self,
        token: &str,
        now: SystemTime,
        leeway: Duration,
    ) -> Option<Arc<AuthInfo>> {
        if self.disabled() {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = entries.get(token)?;
        let now = seconds(now);
        let leeway = leeway.as_secs_f64();
        let in_window = now <= entry.expires + leeway
            && entry.not_before.is_none_or(|nbf| now + leeway >= nbf)
            && entry.until > Instant::now();
        in_window.then(|| Arc::clone(&entry.info))
    }

    /// Keeps `token`, which authenticated `info` and is valid from `not_before` to `expires`.
    pub(super) fn put(
        &self,
        token: &str,
        info: &Arc<AuthInfo>,
        not_before: Option<f64>,
        expires: f64,
    ) {
        if self.disabled() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity {
            let now = Instant::now();
            let cutoff = seconds(SystemTime::now());
            entries.retain(|_, e| e.until > now && e.expires >= cutoff);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(
            token.into(),
            Entry {
                info: Arc::clone(info),
                not_before,
                expires,
                until: Instant::now() + self.ttl,
            },
        );
    }
}

fn seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
