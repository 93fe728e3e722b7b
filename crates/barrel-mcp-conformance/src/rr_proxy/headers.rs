//! Hop-by-hop headers: what a proxy must not forward (RFC 9110 §7.6.1). Everything else is
//! copied verbatim, in both directions, `Host` included.

use http::HeaderMap;
use http::header::{CONNECTION, HeaderName, TE, TRANSFER_ENCODING, UPGRADE};

/// Removes the hop-by-hop headers: `Connection` and every header it names, `Keep-Alive`,
/// `Transfer-Encoding`, `TE`, `Upgrade` and every `Proxy-*` header. hyper frames each hop
/// itself (`Content-Length` or chunked, keep-alive or close).
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [CONNECTION, TRANSFER_ENCODING, TE, UPGRADE] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    let proxy: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("proxy-"))
        .cloned()
        .collect();
    for name in proxy {
        headers.remove(name);
    }
}
