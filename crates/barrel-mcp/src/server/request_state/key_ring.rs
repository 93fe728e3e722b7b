//! [`KeyRing`]: the HMAC keys that seal and open `requestState`, shared by every node of a
//! service. The first key seals; every key opens; each key is known by its key id.
//!
//! The keys come from configuration (a key file, an environment variable, a secret manager),
//! the same on every node, and are never stored anywhere else by the library: whoever can read
//! a key can forge states.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit};
use sha2::{Digest, Sha256};

use super::{KeyError, MIN_KEY_LEN};

/// The most keys one ring holds (a key being retired, the current one, and room for a
/// rotation in several steps).
///
/// Example: [`KeyRing`].
pub const MAX_KEYS: usize = 16;
/// The length of a key id: 6 bytes in base64url.
pub(super) const KID_LEN: usize = 8;

pub(super) type HmacSha256 = Hmac<Sha256>;

/// One key of the ring: its id and the HMAC keyed with it (the key bytes themselves are not
/// kept).
#[derive(Clone)]
pub(super) struct RingKey {
    pub(super) kid: String,
    pub(super) mac: HmacSha256,
}

/// The keys that seal and open `requestState`: the first seals, every key opens.
///
/// Every node that may receive a client's retry must hold the same ring, so the keys come from
/// configuration shared by the nodes ([`KeyRing::from_file`], [`KeyRing::from_env`]). To rotate
/// without breaking the tokens in flight: add the new key *second* on every node, then, once
/// every node has it, move it first (it now seals), then drop the old key after the
/// `requestState` TTL (10 minutes by default) has passed.
///
/// A key is at least [`MIN_KEY_LEN`] bytes; a ring holds 1 to [`MAX_KEYS`] distinct keys. Each
/// key is known by its key id ([`KeyRing::kid_of`]), which tokens carry so the right key opens
/// them. `Debug` shows the key ids, never a key.
///
/// # Example
///
/// ```
/// use barrel_mcp::server::Server;
/// use barrel_mcp::server::request_state::KeyRing;
///
/// let old = [1u8; 32];
/// let new = [2u8; 32];
/// // New key first: it seals; tokens sealed with the old key still open.
/// let ring = KeyRing::new([new, old]).expect("two long keys");
/// assert_eq!(ring.current_kid(), KeyRing::kid_of(&new));
/// assert_eq!(ring.kids().count(), 2);
/// assert!(!format!("{ring:?}").contains("[2, 2"));
///
/// // The same ring from a key file's text: one key a line, in base64 or hex.
/// let file = [
///     "# current",
///     "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=",
///     "hex:0101010101010101010101010101010101010101010101010101010101010101 # retiring",
/// ]
/// .join("\n");
/// assert_eq!(KeyRing::parse(&file).expect("a good file").kids().count(), 2);
/// assert_eq!(KeyRing::parse(&file).expect("a good file").current_kid(), ring.current_kid());
///
/// let server = Server::builder().request_state_keys(ring).build();
/// assert!(server.is_ok());
/// ```
#[derive(Clone)]
pub struct KeyRing {
    /// The key that seals (and opens).
    current: RingKey,
    /// The keys that only open, in the order given.
    others: Vec<RingKey>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("kids", &self.kids().collect::<Vec<_>>())
            .finish()
    }
}

impl KeyRing {
    /// A ring of `keys`, the first sealing. Each key must be at least [`MIN_KEY_LEN`] bytes,
    /// there must be 1 to [`MAX_KEYS`] of them, and no key may appear twice (a rotation that
    /// repeats the old key by mistake would rotate nothing).
    ///
    /// Example: [`KeyRing`].
    pub fn new<I, K>(keys: I) -> Result<Self, KeyError>
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        let mut ring = Vec::new();
        for key in keys {
            let key = key.as_ref();
            if ring.len() == MAX_KEYS {
                return Err(KeyError::TooMany);
            }
            if key.len() < MIN_KEY_LEN {
                return Err(KeyError::TooShort { len: key.len() });
            }
            let kid = Self::kid_of(key);
            if ring.iter().any(|k: &RingKey| k.kid == kid) {
                return Err(KeyError::Duplicate { kid });
            }
            let mac = HmacSha256::new_from_slice(key)
                .map_err(|_| KeyError::TooShort { len: key.len() })?;
            ring.push(RingKey { kid, mac });
        }
        let mut ring = ring.into_iter();
        let current = ring.next().ok_or(KeyError::NoKeys)?;
        Ok(Self {
            current,
            others: ring.collect(),
        })
    }

    /// A ring of one key.
    ///
    /// Example: [`KeyRing`].
    pub fn single(key: &[u8]) -> Result<Self, KeyError> {
        Self::new([key])
    }

    /// A ring of one fresh random 32-byte key: fine for one process, not for several nodes
    /// behind one address (each would refuse the others' tokens).
    ///
    /// Example: [`KeyRing`].
    pub fn random() -> Result<Self, KeyError> {
        let mut key = zeroize::Zeroizing::new([0u8; MIN_KEY_LEN]);
        getrandom::fill(key.as_mut()).map_err(|e| KeyError::Random(e.to_string()))?;
        Self::single(key.as_ref())
    }

    /// The key id of `key`: the first 6 bytes of its SHA-256, in base64url (8 characters).
    /// It names the key in tokens, logs and `Debug`; it does not help find the key (a
    /// 48-bit prefix of a hash of 256 random bits).
    ///
    /// Example: [`KeyRing`].
    pub fn kid_of(key: &[u8]) -> String {
        let digest = Sha256::digest(key);
        URL_SAFE_NO_PAD.encode(&digest[..6])
    }

    /// The key id of the key that seals (the first).
    ///
    /// Example: [`KeyRing`].
    pub fn current_kid(&self) -> &str {
        &self.sealer().kid
    }

    /// The key ids of every key, the sealing one first.
    ///
    /// Example: [`KeyRing`].
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys().map(|k| k.kid.as_str())
    }

    /// The key that seals.
    pub(super) fn sealer(&self) -> &RingKey {
        &self.current
    }

    /// Every key, the sealing one first.
    fn keys(&self) -> impl Iterator<Item = &RingKey> {
        std::iter::once(&self.current).chain(&self.others)
    }

    /// The key with id `kid`, if the ring holds it.
    pub(super) fn by_kid(&self, kid: &str) -> Option<&RingKey> {
        self.keys().find(|k| k.kid == kid)
    }
}
