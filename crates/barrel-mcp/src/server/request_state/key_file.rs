//! Reading a [`KeyRing`] from configuration: a key file, or the environment variable
//! [`KeyRing::ENV_VAR`].
//!
//! A key is written in base64, with the standard (`+/`) or the URL-safe (`-_`) alphabet,
//! padded or not (`openssl rand -base64 32`), or in hex after `hex:` (`hex:` then
//! `openssl rand -hex 32`). In a file there is one key a line, the sealing key first; blank
//! lines are skipped and `#` starts a comment (no key encoding uses `#`). In the variable, keys
//! are separated by commas. Error messages name the line or entry, never its text: it is a
//! secret.

use std::io::Read as _;
use std::path::Path;

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use zeroize::Zeroizing;

use super::key_ring::KeyRing;
use super::{KeyError, MIN_KEY_LEN};

/// The longest key file read, in bytes (far more than [`super::key_ring::MAX_KEYS`] keys with
/// comments).
///
/// Example: [`KeyRing`].
pub const MAX_KEY_FILE_LEN: u64 = 64 * 1024;

/// Standard base64, padded or not.
const STANDARD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
/// URL-safe base64, padded or not.
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

impl KeyRing {
    /// The environment variable [`KeyRing::from_env`] reads: keys separated by commas.
    ///
    /// Example: [`KeyRing`].
    pub const ENV_VAR: &'static str = "BARREL_MCP_REQUEST_STATE_KEYS";

    /// A ring from the text of a key file: one key a line, the sealing key first, in base64
    /// (standard or URL-safe alphabet, padded or not) or in hex after `hex:`; blank lines are
    /// skipped and `#` starts a comment. Errors name the line, never its text.
    ///
    /// Example: [`KeyRing`].
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.split_once('#').map_or(line, |(key, _)| key).trim();
            if line.is_empty() {
                continue;
            }
            keys.push(decode_key(line, || format!("line {}", index + 1))?);
        }
        Self::new(keys.iter().map(|k| k.as_slice()))
    }

    /// A ring from keys separated by commas (the form of [`KeyRing::ENV_VAR`]), each in the
    /// encodings of [`KeyRing::parse`]; blanks around keys are ignored. Errors name the entry,
    /// never its text.
    ///
    /// Example: [`KeyRing`].
    pub fn parse_list(text: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for (index, entry) in text.split(',').enumerate() {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            keys.push(decode_key(entry, || format!("entry {}", index + 1))?);
        }
        Self::new(keys.iter().map(|k| k.as_slice()))
    }

    /// A ring from the key file at `path` (see [`KeyRing::parse`]; at most
    /// [`MAX_KEY_FILE_LEN`] bytes). On Unix, a file that others than its owner may read is
    /// logged as a warning.
    ///
    /// Example: [`KeyRing`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        let path = path.as_ref();
        let unreadable = |why: String| KeyError::Unreadable {
            path: path.display().to_string(),
            why,
        };
        let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
        warn_if_shared(path, &file);
        let mut text = Zeroizing::new(String::new());
        file.take(MAX_KEY_FILE_LEN + 1)
            .read_to_string(&mut text)
            .map_err(|e| unreadable(e.to_string()))?;
        if text.len() as u64 > MAX_KEY_FILE_LEN {
            return Err(unreadable(format!("longer than {MAX_KEY_FILE_LEN} bytes")));
        }
        Self::parse(&text).map_err(|e| match e {
            KeyError::Invalid { at, why } => KeyError::Invalid {
                at: format!("{} {at}", path.display()),
                why,
            },
            other => other,
        })
    }

    /// The ring in [`KeyRing::ENV_VAR`] (see [`KeyRing::parse_list`]): `None` when the variable
    /// is not set; an error when it is set but holds no key or a bad one.
    ///
    /// Example: [`KeyRing`].
    pub fn from_env() -> Result<Option<Self>, KeyError> {
        let Some(value) = std::env::var_os(Self::ENV_VAR) else {
            return Ok(None);
        };
        let value = Zeroizing::new(value.into_string().map_err(|_| KeyError::Invalid {
            at: Self::ENV_VAR.to_owned(),
            why: "not UTF-8".to_owned(),
        })?);
        Self::parse_list(&value).map(Some).map_err(|e| match e {
            KeyError::Invalid { at, why } => KeyError::Invalid {
                at: format!("{} {at}", Self::ENV_VAR),
                why,
            },
            KeyError::NoKeys => KeyError::Invalid {
                at: Self::ENV_VAR.to_owned(),
                why: "set, but holds no key".to_owned(),
            },
            other => other,
        })
    }
}

/// One key, in base64 (either alphabet, padded or not) or `hex:`; `at` names it in errors.
fn decode_key(text: &str, at: impl Fn() -> String) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let decoded = match text.strip_prefix("hex:") {
        Some(hex) => decode_hex(hex.trim()).ok_or_else(|| KeyError::Invalid {
            at: at(),
            why: "not hex after `hex:`".to_owned(),
        })?,
        None => {
            let engine = if text.contains(['-', '_']) {
                &URL_SAFE
            } else {
                &STANDARD
            };
            // The decoder's error would quote the offending character: a piece of the key.
            Zeroizing::new(engine.decode(text).map_err(|_| KeyError::Invalid {
                at: at(),
                why: "not base64 (standard or URL-safe alphabet), nor hex after `hex:`".to_owned(),
            })?)
        }
    };
    if decoded.len() < MIN_KEY_LEN {
        return Err(KeyError::Invalid {
            at: at(),
            why: format!(
                "the key is {} bytes; at least {MIN_KEY_LEN} are needed",
                decoded.len()
            ),
        });
    }
    Ok(decoded)
}

/// Hex digits (either case) as bytes; `None` unless every character is a digit and there is
/// an even number of them.
fn decode_hex(text: &str) -> Option<Zeroizing<Vec<u8>>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Zeroizing::new(Vec::with_capacity(digits.len() / 2));
    for pair in digits.chunks_exact(2) {
        let high = char::from(pair[0]).to_digit(16)?;
        let low = char::from(pair[1]).to_digit(16)?;
        out.push(u8::try_from(high * 16 + low).ok()?);
    }
    Some(out)
}

/// Warns when the key file may be read by others than its owner (Unix).
#[cfg(unix)]
fn warn_if_shared(path: &Path, file: &std::fs::File) {
    use std::os::unix::fs::PermissionsExt as _;
    let shared = file
        .metadata()
        .is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0);
    if shared {
        tracing::warn!(
            path = %path.display(),
            "the requestState key file may be read by other users (chmod 600 it)"
        );
    }
}

/// Warns when the key file may be read by others than its owner (Unix).
#[cfg(not(unix))]
fn warn_if_shared(_path: &Path, _file: &std::fs::File) {}
