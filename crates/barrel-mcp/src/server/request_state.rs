//! Integrity-protected `requestState` for multi round-trip requests (2026-07-28).
//!
//! When a stateless handler needs input from the client, the server answers `input_required`
//! with a `requestState` string, and the client echoes it back unchanged on its retry. The
//! client controls that string, so the server seals it: a token is
//!
//! ```text
//! v1.<base64url(JSON payload)>.<base64url(HMAC-SHA256(key, "v1." + payload part))>
//! ```
//!
//! [`RequestStateCodec::open`] checks, in this order: the shape and the size (at most
//! [`MAX_TOKEN_LEN`] bytes), the MAC (in constant time, before the payload is parsed), the
//! expiry, and that the token belongs to this method, these params (see [`params_digest`]) and
//! this principal. The payload is signed, not encrypted: the client can read it, so it must
//! hold nothing secret. Single use is not enforced here; a server that needs it keeps its own
//! record of spent tokens.

#[cfg(test)]
mod tests;

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

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
const PREFIX: &str = "v1.";
/// Params members that change between rounds and so stay out of the digest.
const UNDIGESTED: [&str; 3] = ["_meta", "inputResponses", "requestState"];

type HmacSha256 = Hmac<Sha256>;

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

/// Why a codec could not be made.
///
/// Example: [`RequestStateCodec`].
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
}

/// Seals and opens `requestState` tokens with one HMAC-SHA256 key.
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
    mac: HmacSha256,
    ttl: Duration,
}

impl fmt::Debug for RequestStateCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestStateCodec")
            .field("key", &"<redacted>")
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl RequestStateCodec {
    /// A codec with `key`, which must be at least [`MIN_KEY_LEN`] bytes. Every server instance
    /// that may receive a retry must share the key.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn new(key: &[u8]) -> Result<Self, KeyError> {
        if key.len() < MIN_KEY_LEN {
            return Err(KeyError::TooShort { len: key.len() });
        }
        let mac =
            HmacSha256::new_from_slice(key).map_err(|_| KeyError::TooShort { len: key.len() })?;
        Ok(Self {
            mac,
            ttl: DEFAULT_TTL,
        })
    }

    /// A codec with a fresh random 32-byte key: fine for one process, not for a fleet.
    ///
    /// Example: [`RequestStateCodec`].
    pub fn random() -> Result<Self, KeyError> {
        let mut key = [0u8; MIN_KEY_LEN];
        getrandom::fill(&mut key).map_err(|e| KeyError::Random(e.to_string()))?;
        Self::new(&key)
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
        let mut token = String::from(PREFIX);
        URL_SAFE_NO_PAD.encode_string(json, &mut token);
        let tag = self.mac.clone().chain_update(token.as_bytes()).finalize();
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
        let rest = token
            .strip_prefix(PREFIX)
            .ok_or(Malformed("unknown version"))?;
        let (payload, tag) = rest.split_once('.').ok_or(Malformed("no signature"))?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Malformed("signature is not base64url"))?;
        let signed = &token[..PREFIX.len() + payload.len()];
        self.mac
            .clone()
            .chain_update(signed.as_bytes())
            .verify_slice(&tag)
            .map_err(|_| RequestStateError::BadSignature)?;
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
