//! [`ApiKeys`]: static API keys, stored as peppered HMAC-SHA-256 hashes (barrel_mcp's
//! `barrel_mcp_auth_apikey`), read from a configurable header.
//!
//! The server never holds a key in the clear: only `hmac-sha256$<base64>` of it under a pepper
//! (a server secret kept apart from the stored hashes, so a leaked hash list alone cannot be
//! brute-forced). A presented key is hashed, looked up by its digest, and the match confirmed in
//! constant time. [`hash_key`] makes the stored form (`barrel-mcp hash-key` prints it).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderName;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::{Authenticator, Rejection};
use crate::Error;
use crate::auth::{AuthInfo, Secret};
use crate::peer::BoxFuture;

/// The prefix of a stored key hash.
const PREFIX: &str = "hmac-sha256$";

/// The digest of `key` under `pepper`.
fn digest(pepper: &Secret, key: &str) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(pepper.expose().as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(key.as_bytes());
    mac.finalize().into_bytes().into()
}

/// The stored form of `key` under `pepper`: `hmac-sha256$<base64>`.
pub fn hash_key(pepper: &Secret, key: &str) -> String {
    format!("{PREFIX}{}", STANDARD.encode(digest(pepper, key)))
}

/// True when `key` hashes to `stored` under `pepper` (compared in constant time).
pub fn verify_key(pepper: &Secret, key: &str, stored: &str) -> bool {
    parse(stored).is_ok_and(|expected| digest(pepper, key).ct_eq(&expected).into())
}

fn parse(stored: &str) -> Result<[u8; 32], Error> {
    let encoded = stored
        .strip_prefix(PREFIX)
        .ok_or_else(|| Error::Definition(format!("an API key hash starts with {PREFIX:?}")))?;
    STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .ok_or_else(|| Error::Definition("an API key hash is 32 bytes of base64".into()))
}

/// API keys in a header (default `X-API-Key`), each standing for a caller.
///
/// ```
/// use barrel_mcp::auth::{AuthInfo, Secret};
/// use barrel_mcp::auth::server::{ApiKeys, api_key};
///
/// let pepper = Secret::new("a server-side secret, not stored with the hashes");
/// let stored = api_key::hash_key(&pepper, "k-123"); // what your configuration keeps
/// let keys = ApiKeys::new(pepper)
///     .key(&stored, AuthInfo::new("build-bot").with_scopes(["mcp:read"]))?;
/// # drop(keys);
/// # Ok::<(), barrel_mcp::Error>(())
/// ```
pub struct ApiKeys {
    pepper: Secret,
    header: HeaderName,
    keys: HashMap<[u8; 32], AuthInfo>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeys")
            .field("header", &self.header)
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl ApiKeys {
    /// No key yet; hashes are checked under `pepper`.
    pub fn new(pepper: Secret) -> Self {
        Self {
            pepper,
            header: HeaderName::from_static("x-api-key"),
            keys: HashMap::new(),
        }
    }

    /// Reads keys from `header` instead of `X-API-Key` (browsers are then allowed to send it).
    #[must_use]
    pub fn header(mut self, header: HeaderName) -> Self {
        self.header = header;
        self
    }

    /// Adds a key by its stored hash ([`hash_key`]); the caller it stands for is `info`.
    pub fn key(mut self, stored: &str, info: AuthInfo) -> Result<Self, Error> {
        self.keys.insert(parse(stored)?, info);
        Ok(self)
    }

    /// Adds a key given in the clear (tests, or keys generated at start-up). It is hashed at
    /// once and not kept.
    #[must_use]
    pub fn plaintext_key(mut self, key: &Secret, info: AuthInfo) -> Self {
        self.keys.insert(digest(&self.pepper, key.expose()), info);
        self
    }
}

impl Authenticator for ApiKeys {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        let verdict = (|| {
            let mut values = head.headers.get_all(&self.header).iter();
            let Some(value) = values.next() else {
                return Ok(None);
            };
            if values.next().is_some() {
                return Err(Rejection::malformed(format!(
                    "more than one {} header",
                    self.header
                )));
            }
            let key = value.to_str().map_err(|_| {
                Rejection::malformed(format!("{} is not visible ASCII", self.header))
            })?;
            let presented = digest(&self.pepper, key);
            // The map finds the entry by digest; the match is then confirmed in constant time.
            match self.keys.get_key_value(&presented) {
                Some((stored, info)) if bool::from(stored.ct_eq(&presented)) => {
                    Ok(Some(info.clone()))
                }
                _ => Err(Rejection::invalid("unknown API key")),
            }
        })();
        Box::pin(std::future::ready(verdict))
    }

    fn headers(&self) -> Vec<HeaderName> {
        vec![self.header.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(name: &str, value: &str) -> http::request::Parts {
        http::Request::builder()
            .header(name, value)
            .body(())
            .expect("request")
            .into_parts()
            .0
    }

    #[test]
    fn the_stored_form_is_a_peppered_hmac() {
        let pepper = Secret::new("pepper");
        let stored = hash_key(&pepper, "k-123");
        // Checked with Python: base64(hmac.new(b"pepper", b"k-123", sha256).digest()).
        assert_eq!(
            stored,
            format!("{PREFIX}{}", STANDARD.encode(digest(&pepper, "k-123")))
        );
        assert!(verify_key(&pepper, "k-123", &stored));
        assert!(!verify_key(&pepper, "k-124", &stored));
        assert!(!verify_key(&Secret::new("other"), "k-123", &stored));
        assert!(!verify_key(&pepper, "k-123", "sha256$abc"));
    }

    #[test]
    fn rfc_4231_case_2() {
        // HMAC-SHA-256, key "Jefe", data "what do ya want for nothing?".
        let got = digest(&Secret::new("Jefe"), "what do ya want for nothing?");
        let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[tokio::test]
    async fn keys_in_their_header_become_callers() {
        let pepper = Secret::new("pepper");
        let keys = ApiKeys::new(pepper.clone())
            .header(HeaderName::from_static("x-team-key"))
            .key(
                &hash_key(&pepper, "k-1"),
                AuthInfo::new("bot").with_scopes(["a"]),
            )
            .expect("hash")
            .plaintext_key(&Secret::new("k-2"), AuthInfo::new("other"));
        let bot = keys_subject(&keys, &head("x-team-key", "k-1")).await;
        assert_eq!(bot, Ok(Some("bot".into())));
        let other = keys_subject(&keys, &head("x-team-key", "k-2")).await;
        assert_eq!(other, Ok(Some("other".into())));
        let elsewhere = keys_subject(&keys, &head("x-api-key", "k-1")).await;
        assert_eq!(elsewhere, Ok(None), "another header");
        let unknown = keys_subject(&keys, &head("x-team-key", "k-3")).await;
        assert!(matches!(unknown, Err(Rejection::Invalid(_))));
        assert!(
            ApiKeys::new(pepper)
                .key("plain", AuthInfo::new("x"))
                .is_err()
        );
    }

    async fn keys_subject(
        keys: &ApiKeys,
        head: &http::request::Parts,
    ) -> Result<Option<String>, Rejection> {
        keys.authenticate(head).await.map(|i| i.map(|i| i.subject))
    }

    #[test]
    fn debug_shows_no_secret() {
        let keys = ApiKeys::new(Secret::new("pepper-secret"))
            .plaintext_key(&Secret::new("key-secret"), AuthInfo::new("bot"));
        let shown = format!("{keys:?}");
        assert!(
            !shown.contains("pepper-secret") && !shown.contains("key-secret"),
            "{shown}"
        );
    }
}
