//! The 2026-07-28 response cache: list pages and resource reads kept for as long as the server
//! said (`ttlMs`), so asking again sends nothing.
//!
//! - Only results that carry a positive `ttlMs` are kept; `0` or none means "do not cache".
//! - `cacheScope` is kept with each entry: `private` answers are for this client's caller only.
//!   A client is one caller, so it serves both kinds to itself; [`Client::cached_public`] hands
//!   out only `public` ones, for a layer that serves many callers (a gateway).
//! - A `list_changed` notification drops that list's pages (resources also drop the templates);
//!   `notifications/resources/updated` drops the reads of that URI. A `subscriptions/listen`
//!   stream is what brings them in 2026-07-28.
//! - Bounded ([`ClientConfig::response_cache_entries`], 0 turns it off): when full, the entry
//!   that would expire first makes room.
//!
//! [`Client::cached_public`]: super::Client::cached_public
//! [`ClientConfig::response_cache_entries`]: super::ClientConfig::response_cache_entries

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use barrel_mcp_types::CacheScope;
use barrel_mcp_types::method::names;
use serde_json::Value;

/// One cached result.
struct Entry {
    value: Value,
    expires: Instant,
    scope: CacheScope,
}

/// Cached results by method and params (the params without `_meta`, as JSON text).
pub(crate) struct ResponseCache {
    entries: Mutex<HashMap<(&'static str, String), Entry>>,
    max_entries: usize,
    /// Counts invalidations: an answer to a request sent before one is not kept.
    generation: AtomicU64,
}

/// The methods whose results may be cached.
pub(crate) fn cacheable(method: &str) -> Option<&'static str> {
    [
        names::TOOLS_LIST,
        names::PROMPTS_LIST,
        names::RESOURCES_LIST,
        names::RESOURCES_TEMPLATES_LIST,
        names::RESOURCES_READ,
    ]
    .into_iter()
    .find(|m| *m == method)
}

/// The key of a request's params: their JSON without `_meta` and without null members (an
/// absent cursor and a null one are the same request).
pub(crate) fn key(params: Option<&Value>) -> String {
    match params {
        Some(Value::Object(map)) => {
            let mut map = map.clone();
            map.remove("_meta");
            map.retain(|_, v| !v.is_null());
            Value::Object(map).to_string()
        }
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

impl ResponseCache {
    pub(crate) fn new(max_entries: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            max_entries,
            generation: AtomicU64::new(0),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<(&'static str, String), Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached result of `method` with params `key`, if still fresh (and `public` when
    /// `public_only`).
    pub(crate) fn get(&self, method: &'static str, key: &str, public_only: bool) -> Option<Value> {
        let mut entries = self.entries();
        let slot = (method, key.to_owned());
        let entry = entries.get(&slot)?;
        if entry.expires <= Instant::now() {
            entries.remove(&slot);
            return None;
        }
        if public_only && entry.scope != CacheScope::Public {
            return None;
        }
        Some(entry.value.clone())
    }

    /// The count of invalidations so far (read before sending a request, given to `put`).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Keeps `value` if it says it may be cached (`ttlMs` > 0) and nothing was invalidated
    /// since `generation` (when its request was sent).
    pub(crate) fn put(&self, method: &'static str, key: String, value: &Value, generation: u64) {
        if self.max_entries == 0 {
            return;
        }
        let Some(ttl) = value
            .get("ttlMs")
            .and_then(Value::as_u64)
            .filter(|&t| t > 0)
        else {
            return;
        };
        let scope = match value.get("cacheScope").and_then(Value::as_str) {
            Some("public") => CacheScope::Public,
            _ => CacheScope::Private,
        };
        let now = Instant::now();
        let mut entries = self.entries();
        // Checked under the lock `invalidate` takes, so no invalidation slips in between.
        if self.generation() != generation {
            return;
        }
        entries.retain(|_, e| e.expires > now);
        if entries.len() >= self.max_entries
            && !entries.contains_key(&(method, key.clone()))
            && let Some(soonest) = entries
                .iter()
                .min_by_key(|(_, e)| e.expires)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&soonest);
        }
        entries.insert(
            (method, key),
            Entry {
                value: value.clone(),
                expires: now + Duration::from_millis(ttl),
                scope,
            },
        );
    }

    /// Drops what a server notification says changed.
    pub(crate) fn invalidate(&self, notification: &str, params: Option<&Value>) {
        let mut entries = self.entries();
        let lists: &[&str] = match notification {
            names::NOTIFICATIONS_TOOLS_LIST_CHANGED => &[names::TOOLS_LIST],
            names::NOTIFICATIONS_PROMPTS_LIST_CHANGED => &[names::PROMPTS_LIST],
            names::NOTIFICATIONS_RESOURCES_LIST_CHANGED => {
                &[names::RESOURCES_LIST, names::RESOURCES_TEMPLATES_LIST]
            }
            names::NOTIFICATIONS_RESOURCES_UPDATED => {
                let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
                self.generation.fetch_add(1, Ordering::SeqCst);
                entries.retain(|(method, key), _| {
                    *method != names::RESOURCES_READ
                        || uri.is_some_and(|uri| {
                            serde_json::from_str::<Value>(key)
                                .ok()
                                .and_then(|k| {
                                    k.get("uri").and_then(Value::as_str).map(|u| u != uri)
                                })
                                .unwrap_or(false)
                        })
                });
                return;
            }
            _ => return,
        };
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.retain(|(method, _), _| !lists.contains(method));
    }

    /// Forgets everything.
    pub(crate) fn clear(&self) {
        let mut entries = self.entries();
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keeps_only_what_may_be_cached_for_as_long_as_said() {
        let cache = ResponseCache::new(8);
        let key = key(Some(&json!({"cursor": null, "_meta": {"x": 1}})));
        assert_eq!(key, key_of(json!({"cursor": null})));
        cache.put(
            names::TOOLS_LIST,
            key.clone(),
            &json!({"tools": [], "ttlMs": 0}),
            cache.generation(),
        );
        assert!(cache.get(names::TOOLS_LIST, &key, false).is_none());
        cache.put(
            names::TOOLS_LIST,
            key.clone(),
            &json!({"tools": [1], "ttlMs": 60_000}),
            cache.generation(),
        );
        assert_eq!(
            cache.get(names::TOOLS_LIST, &key, false).unwrap()["tools"][0],
            1
        );
        // Private by default: not for a shared layer.
        assert!(cache.get(names::TOOLS_LIST, &key, true).is_none());
        cache.put(
            names::TOOLS_LIST,
            key.clone(),
            &json!({"tools": [2], "ttlMs": 1, "cacheScope": "public"}),
            cache.generation(),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            cache.get(names::TOOLS_LIST, &key, false).is_none(),
            "expired"
        );
    }

    #[test]
    fn an_answer_older_than_an_invalidation_is_not_kept() {
        let cache = ResponseCache::new(8);
        let sent_at = cache.generation();
        // The list changed while the request was out.
        cache.invalidate(names::NOTIFICATIONS_TOOLS_LIST_CHANGED, None);
        cache.put(
            names::TOOLS_LIST,
            key_of(json!({})),
            &json!({"tools": [], "ttlMs": 60_000}),
            sent_at,
        );
        assert!(
            cache
                .get(names::TOOLS_LIST, &key_of(json!({})), false)
                .is_none()
        );
    }

    fn key_of(value: Value) -> String {
        key(Some(&value))
    }

    #[test]
    fn notifications_drop_what_changed_and_the_bound_holds() {
        let cache = ResponseCache::new(3);
        let fresh = json!({"ttlMs": 60_000});
        cache.put(
            names::TOOLS_LIST,
            key_of(json!({})),
            &fresh,
            cache.generation(),
        );
        cache.put(
            names::RESOURCES_TEMPLATES_LIST,
            key_of(json!({})),
            &fresh,
            cache.generation(),
        );
        cache.put(
            names::RESOURCES_READ,
            key_of(json!({"uri": "a://1"})),
            &fresh,
            cache.generation(),
        );
        cache.invalidate(names::NOTIFICATIONS_PROMPTS_LIST_CHANGED, None);
        assert!(
            cache
                .get(names::TOOLS_LIST, &key_of(json!({})), false)
                .is_some()
        );
        cache.invalidate(names::NOTIFICATIONS_TOOLS_LIST_CHANGED, None);
        assert!(
            cache
                .get(names::TOOLS_LIST, &key_of(json!({})), false)
                .is_none()
        );
        cache.invalidate(
            names::NOTIFICATIONS_RESOURCES_UPDATED,
            Some(&json!({"uri": "a://2"})),
        );
        assert!(
            cache
                .get(
                    names::RESOURCES_READ,
                    &key_of(json!({"uri": "a://1"})),
                    false
                )
                .is_some()
        );
        cache.invalidate(
            names::NOTIFICATIONS_RESOURCES_UPDATED,
            Some(&json!({"uri": "a://1"})),
        );
        assert!(
            cache
                .get(
                    names::RESOURCES_READ,
                    &key_of(json!({"uri": "a://1"})),
                    false
                )
                .is_none()
        );
        for n in 0..10 {
            cache.put(
                names::RESOURCES_READ,
                key_of(json!({"uri": n.to_string()})),
                &fresh,
                cache.generation(),
            );
        }
        assert_eq!(cache.entries().len(), 3);
        cache.clear();
        assert!(cache.entries().is_empty());
    }
}
