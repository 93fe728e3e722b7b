//! `MCP-Protocol-Version`, read once per request: [`route`](super::endpoint) decides the era
//! from it, and each era checks it by its own rules ([`VersionHeader::sessionful`] for the
//! sessionful revisions, [`VersionHeader::text`] for 2026-07-28, which compares it with the
//! body's claim). It used to be looked up twice per request (a custom header name is hashed
//! byte by byte: ~300 instructions each time).

use barrel_mcp_types::ProtocolVersion;
use http::StatusCode;
use http::header::{HeaderMap, HeaderValue};

use super::reply::{self, PROTOCOL_VERSION};

/// How often the header was sent; its first value.
#[derive(Debug, Clone)]
enum Sent {
    Absent,
    Once(HeaderValue),
    Repeated(HeaderValue),
}

/// Why [`VersionHeader::text`] has no value to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Sent more than once.
    Repeated,
    /// Not visible ASCII.
    NotText,
}

/// The request's `MCP-Protocol-Version`, as sent and as understood.
#[derive(Debug, Clone)]
pub(crate) struct VersionHeader {
    sent: Sent,
    /// The revision the first value names, if it names one we speak.
    named: Option<ProtocolVersion>,
}

impl VersionHeader {
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let mut values = headers.get_all(PROTOCOL_VERSION).iter();
        let sent = match (values.next(), values.next()) {
            (None, _) => Sent::Absent,
            (Some(first), None) => Sent::Once(first.clone()),
            (Some(first), Some(_)) => Sent::Repeated(first.clone()),
        };
        let named = match &sent {
            Sent::Absent => None,
            Sent::Once(first) | Sent::Repeated(first) => {
                first.to_str().ok().and_then(ProtocolVersion::parse)
            }
        };
        Self { sent, named }
    }

    /// True when the header was sent at all.
    pub(crate) fn is_sent(&self) -> bool {
        !matches!(self.sent, Sent::Absent)
    }

    /// True when its (first) value names 2026-07-28.
    pub(crate) fn names_stateless(&self) -> bool {
        self.named.is_some_and(ProtocolVersion::is_stateless)
    }

    /// The sessionful revision it names; `None` when absent (the session's own revision
    /// then). 400 when it is repeated or names no sessionful revision we speak.
    pub(crate) fn sessionful(&self) -> Result<Option<ProtocolVersion>, axum::response::Response> {
        match self.sent {
            Sent::Absent => Ok(None),
            Sent::Repeated(_) => Err(bad_request("duplicated mcp-protocol-version header")),
            Sent::Once(_) => self
                .named
                .filter(|version| !version.is_stateless())
                .map(Some)
                .ok_or_else(|| bad_request("unsupported MCP-Protocol-Version")),
        }
    }

    /// Its one value as text, to compare with a 2026-07-28 body's claim; `None` when absent.
    pub(crate) fn text(&self) -> Result<Option<&str>, Unreadable> {
        match &self.sent {
            Sent::Absent => Ok(None),
            Sent::Repeated(_) => Err(Unreadable::Repeated),
            Sent::Once(value) => value.to_str().map(Some).map_err(|_| Unreadable::NotText),
        }
    }
}

fn bad_request(message: &str) -> axum::response::Response {
    reply::error(
        StatusCode::BAD_REQUEST,
        None,
        reply::rpc_error(-32600, message),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(values: &[&[u8]]) -> VersionHeader {
        let mut headers = HeaderMap::new();
        for value in values {
            let value = HeaderValue::from_bytes(value).expect("a header value");
            headers.append(PROTOCOL_VERSION, value);
        }
        VersionHeader::of(&headers)
    }

    fn status(header: &VersionHeader) -> Result<Option<ProtocolVersion>, StatusCode> {
        header.sessionful().map_err(|refused| refused.status())
    }

    #[test]
    fn each_era_reads_the_one_header_by_its_rules() {
        let absent = read(&[]);
        assert!(!absent.is_sent() && !absent.names_stateless());
        assert_eq!(status(&absent), Ok(None));
        assert_eq!(absent.text(), Ok(None));

        let sessionful = read(&[b"2025-06-18"]);
        assert!(sessionful.is_sent() && !sessionful.names_stateless());
        assert_eq!(status(&sessionful), Ok(Some(ProtocolVersion::V2025_06_18)));
        assert_eq!(sessionful.text(), Ok(Some("2025-06-18")));

        let stateless = read(&[b"2026-07-28"]);
        assert!(stateless.names_stateless());
        assert_eq!(status(&stateless), Err(StatusCode::BAD_REQUEST));
        assert_eq!(stateless.text(), Ok(Some("2026-07-28")));

        let unknown = read(&[b"1999-01-01"]);
        assert!(unknown.is_sent() && !unknown.names_stateless());
        assert_eq!(status(&unknown), Err(StatusCode::BAD_REQUEST));
        assert_eq!(unknown.text(), Ok(Some("1999-01-01")));

        // Repeated: the era still follows the first value, and neither era takes it.
        let repeated = read(&[b"2026-07-28", b"2025-06-18"]);
        assert!(repeated.names_stateless());
        assert_eq!(status(&repeated), Err(StatusCode::BAD_REQUEST));
        assert_eq!(repeated.text(), Err(Unreadable::Repeated));

        let not_text = read(&[b"2025-06-18\xff"]);
        assert!(not_text.is_sent() && !not_text.names_stateless());
        assert_eq!(status(&not_text), Err(StatusCode::BAD_REQUEST));
        assert_eq!(not_text.text(), Err(Unreadable::NotText));
    }
}
