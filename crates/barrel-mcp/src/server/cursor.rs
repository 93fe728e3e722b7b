//! Opaque pagination cursors for the `*/list` methods.
//!
//! A cursor is base64url (no padding) of the text `c1:<offset>:<fingerprint>`: the index of the
//! next item, and a fingerprint of the list it was cut from (a version counter or a hash). The
//! client must treat it as opaque. A cursor is not signed: forging one only moves where the
//! next page starts, and [`paginate`] checks it against the list it is given. Every way a cursor
//! can be wrong is a [`CursorError`], which the server answers with JSON-RPC -32602
//! ("invalid cursor").
//!
//! ```
//! use barrel_mcp::server::cursor::{CursorError, paginate};
//!
//! let items = ["a", "b", "c"];
//! let (first, next) = paginate(&items, None, 2, 7).expect("the first page");
//! assert_eq!(first, ["a", "b"]);
//! let (rest, end) = paginate(&items, next.as_deref(), 2, 7).expect("the second page");
//! assert_eq!((rest.as_slice(), end), (&["c"][..], None));
//! // The list changed (another fingerprint): the old cursor is refused.
//! assert_eq!(paginate(&items, next.as_deref(), 2, 8), Err(CursorError::Stale));
//! assert_eq!(paginate(&items, Some("forged"), 2, 7), Err(CursorError::Malformed));
//! ```

#[cfg(test)]
mod tests;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The longest cursor [`decode_cursor`] looks at, in bytes.
///
/// Example: [the module's](crate::server::cursor).
pub const MAX_CURSOR_LEN: usize = 256;

/// The version tag inside a cursor.
const TAG: &str = "c1";

/// A decoded cursor.
///
/// Example: [the module's](crate::server::cursor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Index of the first item of the page the cursor asks for.
    pub offset: usize,
    /// Fingerprint of the list when the cursor was issued.
    pub fingerprint: u64,
}

/// Why a cursor was refused.
///
/// Example: [the module's](crate::server::cursor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CursorError {
    /// Not a cursor this server issues: too long, bad base64, wrong shape or version.
    #[error("invalid cursor")]
    Malformed,
    /// The list changed since the cursor was issued; start again from the first page.
    #[error("invalid cursor: the list has changed")]
    Stale,
    /// The cursor points past the end of the list.
    #[error("invalid cursor: past the end of the list")]
    OutOfRange,
}

/// Encodes a cursor for the page starting at `offset` of the list with `fingerprint`.
///
/// Example: [the module's](crate::server::cursor).
pub fn encode_cursor(offset: usize, fingerprint: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{TAG}:{offset}:{fingerprint}"))
}

/// Decodes a cursor made by [`encode_cursor`]. Never panics on any input.
///
/// Example: [the module's](crate::server::cursor).
pub fn decode_cursor(cursor: &str) -> Result<Cursor, CursorError> {
    if cursor.len() > MAX_CURSOR_LEN {
        return Err(CursorError::Malformed);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CursorError::Malformed)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| CursorError::Malformed)?;
    let mut fields = text.split(':');
    let (Some(TAG), Some(offset), Some(fingerprint), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(CursorError::Malformed);
    };
    Ok(Cursor {
        offset: parse_digits(offset)?,
        fingerprint: parse_digits(fingerprint)?,
    })
}

/// Parses a plain decimal number: digits only, no sign, no leading zero.
fn parse_digits<T: std::str::FromStr>(text: &str) -> Result<T, CursorError> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if !canonical {
        return Err(CursorError::Malformed);
    }
    text.parse().map_err(|_| CursorError::Malformed)
}

/// Cuts one page out of `items`.
///
/// `cursor` is the client's cursor (`None` for the first page), `page_size` the most items per
/// page (0 means everything), and `fingerprint` identifies the current state of the list. Returns
/// the page and the cursor of the next one, `None` on the last page. A cursor that does not
/// decode, was issued for another fingerprint, or points past the end is an error.
///
/// Example: [the module's](crate::server::cursor).
pub fn paginate<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page_size: usize,
    fingerprint: u64,
) -> Result<(Vec<T>, Option<String>), CursorError> {
    let offset = match cursor {
        None => 0,
        Some(text) => {
            let cursor = decode_cursor(text)?;
            if cursor.fingerprint != fingerprint {
                return Err(CursorError::Stale);
            }
            // A cursor we issue always points at an item; offset 0 is the first page.
            if cursor.offset >= items.len() && cursor.offset != 0 {
                return Err(CursorError::OutOfRange);
            }
            cursor.offset
        }
    };
    let rest = &items[offset.min(items.len())..];
    let take = if page_size == 0 {
        rest.len()
    } else {
        page_size.min(rest.len())
    };
    let next = (take < rest.len()).then(|| encode_cursor(offset + take, fingerprint));
    Ok((rest[..take].to_vec(), next))
}
