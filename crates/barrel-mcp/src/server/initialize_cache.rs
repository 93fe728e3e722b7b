//! The `initialize` results a server has given, as JSON, one per revision and kind of session,
//! kept until what they are made of changes.
//!
//! Every session on a revision gets the same answer: the server's info, its instructions and
//! its capabilities as the registry makes them, shaped for that revision. Building it means
//! walking the tools (for task support) and serializing a dozen nested structs, about 11,000
//! instructions of the 140,000 a session's creation cost when it was measured (2026-11-26).
//! An answer is kept as JSON text ([`Payload::Text`]), so each session shares it: no copy of
//! a `Value` tree to serialize and drop per session. The registry owns the cache and empties
//! it whenever it is written to (`Server::write_registry`), so an answer is never older than
//! the registry it was read from.

use std::sync::{Mutex, PoisonError};

use barrel_mcp_types::{Payload, ProtocolVersion};

/// Which `initialize` answer: a session's, or a sessionless server's (which offers nothing
/// that needs a session kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Session,
    Sessionless,
}

/// The answers built so far (at most one per revision and kind).
#[derive(Debug, Default)]
pub(crate) struct InitializeCache(Mutex<Vec<(ProtocolVersion, Kind, Payload)>>);

impl InitializeCache {
    /// The answer for `version` and `kind`: the one kept, else `build`'s, then kept (an error
    /// is returned and nothing kept).
    pub(crate) fn get_or_build<E>(
        &self,
        version: ProtocolVersion,
        kind: Kind,
        build: impl FnOnce() -> Result<Payload, E>,
    ) -> Result<Payload, E> {
        let kept = {
            let cached = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            cached
                .iter()
                .find(|(v, k, _)| *v == version && *k == kind)
                .map(|(.., answer)| answer.clone())
        };
        if let Some(answer) = kept {
            return Ok(answer);
        }
        let answer = build()?;
        let mut cached = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !cached.iter().any(|(v, k, _)| *v == version && *k == kind) {
            cached.push((version, kind, answer.clone()));
        }
        Ok(answer)
    }

    /// Forgets every answer: what they are made of is changing.
    pub(crate) fn clear(&mut self) {
        self.0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_built_once_per_revision_and_kind_until_cleared() {
        let mut cache = InitializeCache::default();
        let mut built = 0;
        let mut get = |cache: &InitializeCache, version, kind| {
            cache
                .get_or_build(version, kind, || {
                    built += 1;
                    Payload::text_of(&serde_json::json!({ "n": built })).map_err(drop)
                })
                .expect("built")
        };
        let first = get(&cache, ProtocolVersion::V2025_11_25, Kind::Session);
        assert_eq!(
            get(&cache, ProtocolVersion::V2025_11_25, Kind::Session),
            first
        );
        let other = get(&cache, ProtocolVersion::V2025_06_18, Kind::Session);
        let sessionless = get(&cache, ProtocolVersion::V2025_11_25, Kind::Sessionless);
        assert_ne!(other, first);
        assert_ne!(sessionless, first);
        cache.clear();
        let rebuilt = get(&cache, ProtocolVersion::V2025_11_25, Kind::Session);
        assert_eq!(rebuilt, Payload::from(serde_json::json!({ "n": 4 })));
        let failed = cache.get_or_build(ProtocolVersion::V2024_11_05, Kind::Session, || Err("no"));
        assert_eq!(failed, Err("no"));
        let after = cache.get_or_build(ProtocolVersion::V2024_11_05, Kind::Session, || {
            Ok::<_, ()>(Payload::from(serde_json::json!(5)))
        });
        assert_eq!(
            after,
            Ok(Payload::from(serde_json::json!(5))),
            "a failed build is not kept"
        );
    }
}
