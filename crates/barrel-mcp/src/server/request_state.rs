//! Integrity-protected `requestState` for multi round-trip requests (2026-07-28).
//!
//! When a stateless handler needs input from the client, the server answers `input_required`
//! with a `requestState` string, and the client echoes it back unchanged on its retry. The
//! client controls that string, so the server seals it: a token is
//!
//! ```text
//! v2.<kid>.<base64url(JSON payload)>.<base64url(HMAC-SHA256(key, "v2.<kid>.<payload part>"))>
//! ```
//!
//! where `kid` names the key of the server's [`KeyRing`] that sealed it ([`KeyRing::kid_of`]),
//! so that any node holding that key opens it, and a ring being rotated opens the tokens of
//! both its keys. The MAC covers the version and the key id.
//!
//! [`RequestStateCodec::open`] checks, in this order: the shape and the size (at most
//! [`MAX_TOKEN_LEN`] bytes), the key id (a key the ring does not hold fails like a bad MAC),
//! the MAC (in constant time, before the payload is parsed), the expiry, and that the token
//! belongs to this method, these params (see [`params_digest`]) and this principal. The
//! payload is signed, not encrypted: the client can read it, so it must hold nothing secret.
//! Single use is not enforced here; a server that needs it keeps its own record of spent
//! tokens.
//!
//! Tokens of the previous form, `v1.<payload>.<mac>` with the MAC over `v1.<payload part>`
//! (barrel-mcp 0.1, no key id), still open with the ring's first key, for one release, so
//! that the retries in flight during an upgrade complete; new tokens are always `v2`.

mod key_file;
mod key_ring;
#[cfg(test)]
mod tests;

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use key_file::MAX_KEY_FILE_LEN;
use key_ring::{HmacSha256, KID_LEN};
pub use key_ring::{KeyRing, MAX_KEYS};

/// The shortest key [`RequestStateCodec::new`] accepts, in bytes.
///
/// Example: [`RequestStateCodec`].
pub const MIN_KEY_LEN: usize = 32;
/// The longest token [`RequestStateCodec::open`] looks at, in bytes. The server refuses to
/// issue a longer one (the answers gathered so far, an image say, are carried in it), so every
/// token it hands out can come back. Requests that carry one are bounded anyway by the
/// transport's message limit (4 MiB by default).
///
/// Example: [`RequestStateCodec`].
pub const MAX_TOKEN_LEN: usize = 1024 * 1024;
/// How long a sealed state stays valid unless [`RequestStateCodec::ttl`] says otherwise.
///
/// Example: [`RequestStateCodec`].
pub const DEFAULT_TTL: Duration = Duration::from_secs(10 * 60);

/// The version tag every token starts with, dot included.
const PREFIX: &str = "v2.";
/// The version tag of the tokens barrel-mcp 0.1 issued (no key id), opened for one release.
const LEGACY_PREFIX: &str = "v1.";
/// Params members that change between rounds and so stay out of the digest.
pub(crate) const UNDIGESTED: [&str; 3] = ["_meta", "inputResponses", "requestState"];

/// What a server carries from one round of a request to the next.
///
/// Example: [`RequestStateCodec`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestState {
    /// The method the state belongs to, such as `tools/call`.
    pub method: String,
    /// [`params_digest`] of the request's params.
    pub params_digest: String,
    /// Who made the request, when the transport authenticated someone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// When the state expires, in milliseconds since the Unix epoch. Set by
    /// [`RequestStateCodec::seal`].
    pub expires_at_ms: u64,
    /// Answers gathered in earlier rounds, by input request key.
    #[serde(default)]
    pub answers: Map<String, Value>,
    /// How many input rounds have happened so far.
    #[serde(default)]
    pub round: u32,
}

/// Why a `requestState` was refused. The server answers each with JSON-RPC -32602.
///
/// Example: [`RequestStateCodec`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestStateError {
    /// Not a token this server could have issued: wrong shape, bad base64 or JSON, too long.
    #[error("malformed requestState: {0}")]
    Malformed(&'static str),
    /// The MAC does not match: the token was altered or sealed with another key.
    #[error("requestState failed its integrity check")]
    BadSignature,
    /// The token's lifetime is over.
    #[error("requestState has expired")]
    Expired,
    /// The token was issued for another method, other params or another principal.
    #[error("requestState does not belong to this request: {0} differs")]
    Mismatch(&'static str),
}

/// Why a key ring (or a codec) could not be made. No message holds a key or a piece of one.
///
/// Example: [`RequestStateCodec`], [`KeyRing`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key is shorter than [`MIN_KEY_LEN`].
    #[error("requestState key is {len} bytes; at least {MIN_KEY_LEN} are needed")]
    TooShort {
        /// The length of the key given.
        len: usize,
    },
    /// The operating system's random source failed.
    #[error("no random key: {0}")]
    Random(String),
    /// No key was given (an empty list, or a key file with nothing but comments).
    #[error("no requestState key was given")]
    NoKeys,
    /// More than [`MAX_KEYS`] keys were given.
    #[error("more than {MAX_KEYS} requestState keys were given")]
    TooMany,
    /// The same key was given twice.
    #[error("the requestState key {kid} is given twice")]
    Duplicate {
        /// Its key id.
        kid: String,
    },
    /// A key of a key file or of [`KeyRing::ENV_VAR`] does not decode, or is too short.
    #[error("{at}: {why}")]
    Invalid {
        /// Where: the file and line, or the variable and entry.
        at: String,
        /// What is wrong with it.
        why: String,
    },
    /// The key file could not be read.
    #[error("cannot read the requestState key file {path}: {why}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
}

/// Seals `requestState` tokens with the first key of a [`KeyRing`], and opens them with any.
///
/// # Example
///
/// ```
/// use barrel_mcp::server::request_state::{
///     RequestState, RequestStateCodec, RequestStateError, params_digest,
/// };
/// use serde_json::json;
///
/// let codec = RequestStateCodec::new(&[7u8; 32]).expect("a long enough key");
/// let params = json!({ "name": "deploy", "arguments": {} });
/// let digest = params_digest("tools/call", &params);
/// let state = RequestState {
///     method: "tools/call".to_owned(),
///     params_digest: digest.clone(),
///     round: 1,
///     ..RequestState::default()
/// };
/// let token = codec.seal(&state);
/// let opened = codec.open(&token, "tools/call", &digest, None).expect("the same request");
/// assert_eq!(opened.round, 1);
/// // Another request's retry cannot reuse the token.
/// let other = params_digest("tools/call", &json!({ "name": "delete" }));
/// assert!(matches!(
///     codec.open(&token, "tools/call", &other, None),
///     Err(RequestStateError::Mismatch(_))
/// ));
/// ```
#[derive(Clone)]
pub struct RequestStateCodec {
    keys: KeyRing,
    ttl: Duration,
}

impl fmt::Debug for RequestStateCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestStateCodec")
            .field("keys", &self.keys)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl RequestStateCodec {
    /// A codec with one key, which must be at least [`MIN_KEY_LEN`] bytes. Every server
    /// instance that may receive a retry must share the key.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn new(key: &[u8]) -> Result<Self, KeyError> {
        KeyRing::single(key).map(Self::with_keys)
    }

    /// A codec with the keys of `ring`: the first seals, every one opens.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn with_keys(ring: KeyRing) -> Self {
        Self {
            keys: ring,
            ttl: DEFAULT_TTL,
        }
    }

    /// A codec with a fresh random 32-byte key: fine for one process, not for a fleet.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn random() -> Result<Self, KeyError> {
        KeyRing::random().map(Self::with_keys)
    }

    /// The keys it seals and opens with.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn keys(&self) -> &KeyRing {
        &self.keys
    }

    /// Sets how long sealed states stay valid (default [`DEFAULT_TTL`]).
    ///
    /// Example: [`RequestStateCodec`].
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Seals `state` into a token that expires one TTL from now. The `expires_at_ms` of
    /// `state` is ignored: every seal starts a new lifetime.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn seal(&self, state: &RequestState) -> String {
        self.seal_at(state, now_ms())
    }

    /// [`seal`](Self::seal) with the clock given, in milliseconds since the Unix epoch.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn seal_at(&self, state: &RequestState, now_ms: u64) -> String {
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let state = RequestState {
            expires_at_ms: now_ms.saturating_add(ttl_ms),
            ..state.clone()
        };
        let json = serde_json::to_vec(&state).expect("a RequestState always serialises");
        let key = self.keys.sealer();
        let mut token = String::with_capacity(96 + json.len() * 4 / 3);
        token.push_str(PREFIX);
        token.push_str(&key.kid);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(json, &mut token);
        let tag = key.mac.clone().chain_update(token.as_bytes()).finalize();
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(tag.into_bytes(), &mut token);
        token
    }

    /// Opens a token received with a request of `method` whose params digest to
    /// `params_digest`, from `principal`.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn open(
        &self,
        token: &str,
        method: &str,
        params_digest: &str,
        principal: Option<&str>,
    ) -> Result<RequestState, RequestStateError> {
        self.open_at(token, method, params_digest, principal, now_ms())
    }

    /// [`open`](Self::open) with the clock given, in milliseconds since the Unix epoch.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn open_at(
        &self,
        token: &str,
        method: &str,
        params_digest: &str,
        principal: Option<&str>,
        now_ms: u64,
    ) -> Result<RequestState, RequestStateError> {
        use RequestStateError::{Expired, Malformed, Mismatch};
        if token.len() > MAX_TOKEN_LEN {
            return Err(Malformed("too long"));
        }
        let (mac, signed, payload, tag) = if let Some(rest) = token.strip_prefix(PREFIX) {
            let (kid, rest) = rest.split_once('.').ok_or(Malformed("no key id"))?;
            if kid.len() != KID_LEN {
                return Err(Malformed("bad key id"));
            }
            let (payload, tag) = rest.split_once('.').ok_or(Malformed("no signature"))?;
            let Some(key) = self.keys.by_kid(kid) else {
                // As a bad MAC: the client learns nothing about the ring. The operator may
                // have nodes that do not share their keys.
                tracing::debug!(
                    kid,
                    "requestState sealed with a key this server does not hold"
                );
                return Err(RequestStateError::BadSignature);
            };
            let signed = &token[..PREFIX.len() + kid.len() + 1 + payload.len()];
            (&key.mac, signed, payload, tag)
        } else if let Some(rest) = token.strip_prefix(LEGACY_PREFIX) {
            let (payload, tag) = rest.split_once('.').ok_or(Malformed("no signature"))?;
            let signed = &token[..LEGACY_PREFIX.len() + payload.len()];
            (&self.keys.sealer().mac, signed, payload, tag)
        } else {
            return Err(Malformed("unknown version"));
        };
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Malformed("signature is not base64url"))?;
        verify(mac, signed, &tag)?;
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Malformed("payload is not base64url"))?;
        let state: RequestState =
            serde_json::from_slice(&json).map_err(|_| Malformed("payload is not a state"))?;
        if now_ms >= state.expires_at_ms {
            return Err(Expired);
        }
        if state.method != method {
            return Err(Mismatch("method"));
        }
        if state.params_digest != params_digest {
            return Err(Mismatch("params"));
        }
        if state.principal.as_deref() != principal {
            return Err(Mismatch("principal"));
        }
        Ok(state)
    }
}

/// Checks `tag` against the MAC of `signed`, in constant time (`hmac`'s `verify_slice`).
fn verify(mac: &HmacSha256, signed: &str, tag: &[u8]) -> Result<(), RequestStateError> {
    mac.clone()
        .chain_update(signed.as_bytes())
        .verify_slice(tag)
        .map_err(|_| RequestStateError::BadSignature)
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A digest of a request that stays the same across its rounds: SHA-256, in base64url, of
/// the method and the canonical JSON of `params` without its top-level `_meta`,
/// `inputResponses` and `requestState` members. Canonical JSON has object keys sorted at every
/// level and no whitespace, so key order on the wire does not matter.
///
/// Example: [`RequestStateCodec`].
pub fn params_digest(method: &str, params: &Value) -> String {
    let mut text = Vec::with_capacity(256);
    text.extend_from_slice(method.as_bytes());
    text.push(b'\n');
    match params {
        Value::Object(map) => {
            write_canonical_object(&mut text, map, |key| !UNDIGESTED.contains(&key));
        }
        other => write_canonical(&mut text, other),
    }
    URL_SAFE_NO_PAD.encode(Sha256::digest(&text))
}

/// Appends `value` as canonical JSON: compact, object keys sorted by their UTF-8 bytes.
pub(crate) fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_canonical_object(out, map, |_| true),
        // Strings, null, booleans and numbers have one rendering already.
        scalar => write_json(out, scalar),
    }
}

/// Appends the members of `map` whose key passes `keep`, as a canonical JSON object.
fn write_canonical_object(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    keep: impl Fn(&str) -> bool,
) {
    let mut entries: Vec<(&String, &Value)> = map.iter().filter(|(k, _)| keep(k)).collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (key, item)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(out, key);
        out.push(b':');
        write_canonical(out, item);
    }
    out.push(b'}');
}

/// Appends one JSON scalar or string as serde_json renders it.
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing to a Vec cannot fail, and these values always serialize.
    let _ = serde_json::to_writer(out, value);
}
