//! The first rung of every request: `Host` and `Origin` checks (DNS rebinding), and CORS.
//! [`front_door`] climbs it for every path the router serves.
//!
//! Nothing is allocated for a request before [`check`] passes. Matching is exact after
//! lowercasing: a host is a `(name, port)` pair and an origin a `scheme://name[:port]` string, so
//! `localhost.evil.com`, `localhost:80@evil.com` or `127.0.0.1.evil.com` never pass as loopback.

use std::future::Future;

use axum::body::Body;
use axum::response::Response;
use barrel_mcp_types::ErrorObject;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};

use super::State;
use super::config::HttpConfig;
use super::reply;

/// Serves `request` with `route` behind the checks every path shares: `Host` and `Origin`
/// ([`check`]), CORS preflight for OPTIONS, 503 while shutting down, authentication when
/// [`HttpConfig::auth`] is set (before the body is read), and the CORS headers of the validated
/// origin on whatever `route` answers.
pub(crate) async fn front_door<F, Fut>(
    state: &State,
    request: http::Request<Body>,
    route: F,
) -> Response
where
    F: FnOnce(http::request::Parts, Body) -> Fut,
    Fut: Future<Output = Response>,
{
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let (mut parts, body) = request.into_parts();
    let admitted = match check(&state.config, &parts) {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let mut response = if parts.method == Method::OPTIONS {
        preflight(&admitted, &parts, &state.config)
    } else if state.shutdown.is_cancelled() {
        reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            ErrorObject::internal("the server is shutting down"),
        )
    } else {
        #[cfg(feature = "auth")]
        if let Some(auth) = &state.config.auth
            && let Err(mut refused) = super::auth::authenticate(auth, &mut parts).await
        {
            cors(&admitted, refused.headers_mut());
            return refused;
        }
        route(parts, body).await
    };
    cors(&admitted, response.headers_mut());
    response
}

/// Loopback host names accepted when [`HttpConfig::allow_loopback`] is on.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The headers a browser may send cross-origin to the endpoint.
const ALLOWED_HEADERS: &str = "content-type, accept, authorization, mcp-session-id, \
     mcp-protocol-version, last-event-id, mcp-method, mcp-name";

/// What a browser script may read from our responses.
const EXPOSED_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate";

/// A request that passed [`check`]: the validated `Origin`, if it carried one.
#[derive(Debug, Clone)]
pub(crate) struct Admitted {
    pub(crate) origin: Option<HeaderValue>,
}

/// Checks `Host` (or the HTTP/2 authority) and `Origin`. A missing, duplicated or malformed
/// header gets 400; one that is not allowed gets 403.
pub(crate) fn check(
    config: &HttpConfig,
    parts: &http::request::Parts,
) -> Result<Admitted, axum::response::Response> {
    check_host(config, parts)?;
    let origin = single(&parts.headers, header::ORIGIN)?.cloned();
    match &origin {
        Some(origin) => {
            // Even when every origin is accepted, it must be a visible-ASCII header value
            // (it is echoed in CORS headers).
            let allowed = origin.to_str().is_ok_and(|text| {
                config.allow_any_origin || origin_allowed(config, &text.to_ascii_lowercase())
            });
            if !allowed {
                return Err(refuse(StatusCode::FORBIDDEN, "Origin not allowed"));
            }
        }
        None if !config.allow_missing_origin => {
            return Err(refuse(StatusCode::FORBIDDEN, "Origin is required"));
        }
        None => {}
    }
    Ok(Admitted { origin })
}

/// Checks `Host` (or the HTTP/2 authority) alone: what a public document (the
/// protected-resource metadata) still needs against DNS rebinding.
pub(crate) fn check_host(
    config: &HttpConfig,
    parts: &http::request::Parts,
) -> Result<(), axum::response::Response> {
    let host_header = single(&parts.headers, header::HOST)?;
    let authority = parts.uri.authority().map(|a| a.as_str());
    let host = match (&host_header, authority) {
        (Some(h), Some(a)) if h.as_bytes() != a.as_bytes() => {
            return Err(refuse(StatusCode::BAD_REQUEST, "Host and authority differ"));
        }
        (Some(h), _) => h
            .to_str()
            .map_err(|_| refuse(StatusCode::BAD_REQUEST, "malformed Host"))?,
        (None, Some(a)) => a,
        (None, None) => return Err(refuse(StatusCode::BAD_REQUEST, "missing Host")),
    };
    let Some((name, port)) = split_host(host) else {
        return Err(refuse(StatusCode::BAD_REQUEST, "malformed Host"));
    };
    if !host_allowed(config, name, port) {
        return Err(refuse(StatusCode::FORBIDDEN, "Host not allowed"));
    }
    Ok(())
}

/// The one value of a header that must not repeat.
pub(crate) fn single(
    headers: &HeaderMap,
    name: header::HeaderName,
) -> Result<Option<&HeaderValue>, axum::response::Response> {
    let mut values = headers.get_all(&name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            &format!("duplicated {name} header"),
        ));
    }
    Ok(first)
}

fn refuse(status: StatusCode, why: &str) -> axum::response::Response {
    tracing::debug!(%status, why, "request refused before it was read");
    reply::error(status, None, reply::rpc_error(-32600, why))
}

/// Splits `name[:port]` (or `[v6]:port`) into the name (as written: compare it ignoring ASCII
/// case) and the port, if the text is a plain host: no user info, path or stray characters.
pub(crate) fn split_host(text: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = if text.starts_with('[') {
        let end = text.find(']')?;
        let inside = &text[1..end];
        // Bytes, not chars: only ASCII passes either way, and bytes skip UTF-8 decoding.
        if inside.is_empty() || !inside.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return None;
        }
        let after = &text[end + 1..];
        let port = if after.is_empty() {
            None
        } else {
            Some(after.strip_prefix(':')?)
        };
        (&text[..=end], port)
    } else {
        // A byte scan: a `str` pattern search costs more than a name of a few bytes.
        let (name, port) = match text.bytes().position(|b| b == b':') {
            Some(colon) => (&text[..colon], Some(&text[colon + 1..])),
            None => (text, None),
        };
        let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'.';
        if name.is_empty() || !name.bytes().all(plain) {
            return None;
        }
        (name, port)
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() => Some(decimal_port(p)?),
        Some(_) => return None,
    };
    Some((name, port))
}

/// A port written in decimal digits only (no sign), at most 65535.
fn decimal_port(text: &str) -> Option<u16> {
    text.bytes().try_fold(0u16, |port, b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        port.checked_mul(10)?.checked_add(u16::from(digit))
    })
}

/// True for a loopback name, in any ASCII case.
fn is_loopback_name(name: &str) -> bool {
    LOOPBACK_NAMES
        .iter()
        .any(|loopback| loopback.eq_ignore_ascii_case(name))
}

fn host_allowed(config: &HttpConfig, name: &str, port: Option<u16>) -> bool {
    if config.allow_loopback && is_loopback_name(name) {
        return true;
    }
    config
        .allowed_hosts
        .iter()
        .any(|entry| match split_host(entry) {
            Some((allowed, None)) => allowed.eq_ignore_ascii_case(name),
            Some((allowed, Some(allowed_port))) => {
                allowed.eq_ignore_ascii_case(name) && port == Some(allowed_port)
            }
            None => false,
        })
}

/// True when `origin` (lowercased) is allowed.
pub(crate) fn origin_allowed(config: &HttpConfig, origin: &str) -> bool {
    if config
        .allowed_origins
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    if !config.allow_loopback || origin == "null" {
        return false;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    matches!(split_host(rest), Some((name, _)) if is_loopback_name(name))
}

/// Adds the CORS headers for a validated origin: the origin echoed (never `*`) and the MCP
/// headers a script may read.
pub(crate) fn cors(admitted: &Admitted, headers: &mut HeaderMap) {
    let Some(origin) = &admitted.origin else {
        return;
    };
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.append(header::VARY, HeaderValue::from_static("origin"));
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
}

/// Answers a CORS preflight (`OPTIONS`) from an admitted origin.
pub(crate) fn preflight(
    admitted: &Admitted,
    parts: &http::request::Parts,
    config: &HttpConfig,
) -> axum::response::Response {
    let mut response = axum::response::Response::new(axum::body::Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    cors(admitted, headers);
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    headers.insert(
        header::ALLOW,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    let mut allowed = ALLOWED_HEADERS.to_owned();
    // The headers the authenticator reads (an API key's), so browsers may send them.
    #[cfg(feature = "auth")]
    if let Some(auth) = &config.auth {
        for name in auth.authenticator().headers() {
            allowed.push_str(", ");
            allowed.push_str(name.as_str());
        }
    }
    #[cfg(not(feature = "auth"))]
    let _ = config;
    // `Mcp-Param-*` names are open-ended: echo the requested ones that are plain tokens.
    if let Some(requested) = parts
        .headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
    {
        for name in requested.split(',').map(str::trim) {
            let is_param = name.len() > 10
                && name[..10].eq_ignore_ascii_case("mcp-param-")
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if is_param {
                allowed.push_str(", ");
                allowed.push_str(&name.to_ascii_lowercase());
            }
        }
    }
    if let Ok(value) = HeaderValue::from_str(&allowed) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_split_exactly() {
        assert_eq!(split_host("LocalHost:80"), Some(("LocalHost", Some(80))));
        assert_eq!(split_host("[::1]:9"), Some(("[::1]", Some(9))));
        assert_eq!(split_host("[::1]"), Some(("[::1]", None)));
        assert_eq!(split_host("localhost:80@evil.com"), None);
        assert_eq!(split_host("[::1]x"), None);
        assert_eq!(split_host("a:b:c"), None);
        assert_eq!(split_host("host:"), None);
        // Ports: decimal digits only, up to 65535 (leading zeros read as they always did).
        assert_eq!(split_host("h:65535"), Some(("h", Some(65_535))));
        assert_eq!(split_host("h:0080"), Some(("h", Some(80))));
        for bad in [
            "h:65536",
            "h:+80",
            "h:-1",
            "h:8 0",
            "h:99999999999",
            "h:８0",
            "hé:80",
        ] {
            assert_eq!(split_host(bad), None, "{bad}");
        }
    }

    #[test]
    fn loopback_origins_only() {
        let config = HttpConfig::default();
        assert!(origin_allowed(&config, "http://localhost:3000"));
        assert!(origin_allowed(&config, "https://[::1]"));
        assert!(!origin_allowed(&config, "http://localhost.evil.com"));
        assert!(!origin_allowed(&config, "http://127.0.0.1.evil.com"));
        assert!(!origin_allowed(&config, "http://localhost:1@evil.com"));
        assert!(!origin_allowed(&config, "null"));
        assert!(!origin_allowed(&config, "file://localhost"));
        assert!(!origin_allowed(&config, "http://localhost:80/path"));
    }
}
