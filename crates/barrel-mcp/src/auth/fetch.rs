//! Auth's own HTTP client: bounded GETs and POSTs to authorization servers (the OAuth client's
//! discovery, registration and token requests; the server's JWKS and introspection), guarded
//! against SSRF ([`net`](super::net)).
//!
//! - Every URL is `https://`, or `http://` on loopback (or anywhere, when the user allows it
//!   for tests); its host is checked before anything is sent, and again, resolved, when
//!   connecting.
//! - Metadata GETs follow at most [`FetchLimits::max_redirects`] redirects, each to the same
//!   origin; token and registration POSTs, and the authorization GET, follow none.
//! - A body is at most [`FetchLimits::max_body`] bytes, and a whole exchange at most
//!   [`FetchLimits::timeout`].
//! - Nothing but what the caller gives is sent: no MCP header, no `Authorization` of the MCP
//!   connection.

use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::form::Form;
use super::net::{GuardedResolver, NetPolicy};
use crate::Error;
#[cfg(feature = "oauth-client")]
use crate::auth::Secret;
use crate::transport::http_client::tls::{ClientTls, Connector};

/// The bounds of the OAuth client's HTTP exchanges.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    /// The largest body read, in bytes. Default 1 MiB.
    pub max_body: usize,
    /// How long one exchange (connect, send, read the body) may take. Default 30 s.
    pub timeout: Duration,
    /// Redirects a metadata GET follows, each to the same origin. Default 5.
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            max_body: 1024 * 1024,
            timeout: Duration::from_secs(30),
            max_redirects: 5,
        }
    }
}

/// An answer, read whole.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Fetched {
    /// The body as JSON, when it is.
    pub(crate) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The `Location` header.
    pub(crate) fn location(&self) -> Option<&str> {
        self.headers.get(LOCATION).and_then(|v| v.to_str().ok())
    }
}

/// The OAuth client's HTTP client.
pub(crate) struct Fetcher {
    client: Client<Connector<GuardedResolver>, Full<Bytes>>,
    policy: NetPolicy,
    limits: FetchLimits,
    allow_http: bool,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("policy", &self.policy())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    pub(crate) fn new(
        policy: NetPolicy,
        limits: FetchLimits,
        allow_http: bool,
        tls: &ClientTls,
    ) -> Self {
        let mut http = HttpConnector::new_with_resolver(GuardedResolver::new(policy));
        http.enforce_http(false);
        http.set_connect_timeout(Some(limits.timeout));
        http.set_nodelay(true);
        let connector = tls.connector(http, limits.timeout);
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
            policy,
            limits,
            allow_http,
        }
    }

    pub(crate) fn policy(&self) -> NetPolicy {
        self.policy
    }

    /// Refuses a URL the OAuth client must not contact.
    pub(crate) fn check(&self, url: &Uri) -> Result<(), Error> {
        let host = url
            .host()
            .ok_or_else(|| Error::Auth(format!("{url} has no host")))?;
        match url.scheme_str() {
            Some("https") => {}
            Some("http") if self.allow_http || is_loopback_host(host) => {}
            _ => {
                return Err(Error::Auth(format!(
                    "{url}: authorization servers are reached over https (http only on loopback)"
                )));
            }
        }
        self.policy()
            .check_host(host)
            .map_err(|why| Error::Auth(format!("refusing {url}: {why}")))
    }

    /// GET `url` as JSON, following same-origin redirects.
    pub(crate) async fn get_json(&self, url: &Uri) -> Result<Fetched, Error> {
        let mut url = url.clone();
        for _ in 0..=self.limits.max_redirects {
            let fetched = self.send(Method::GET, &url, HeaderMap::new(), None).await?;
            if !fetched.status.is_redirection() {
                return Ok(fetched);
            }
            let next = fetched
                .location()
                .and_then(|l| resolve(&url, l))
                .ok_or_else(|| Error::Auth(format!("{url} redirected nowhere")))?;
            if origin(&next) != origin(&url) {
                return Err(Error::Auth(format!(
                    "{url} redirected to another origin ({next}); not followed"
                )));
            }
            url = next;
        }
        Err(Error::Auth(format!(
            "{url}: more than {} redirects",
            self.limits.max_redirects
        )))
    }

    /// GET `url` without following a redirect (the authorization request).
    #[cfg(feature = "oauth-client")]
    pub(crate) async fn get_no_follow(&self, url: &Uri) -> Result<Fetched, Error> {
        self.send(Method::GET, url, HeaderMap::new(), None).await
    }

    /// POST a form to `url` (a token endpoint), with `headers` (client authentication).
    pub(crate) async fn post_form(
        &self,
        url: &Uri,
        form: &Form,
        mut headers: HeaderMap,
    ) -> Result<Fetched, Error> {
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let body = Bytes::from(form.encode().into_bytes());
        self.send(Method::POST, url, headers, Some(body)).await
    }

    /// POST JSON to `url` (dynamic client registration), with a bearer token if given.
    #[cfg(feature = "oauth-client")]
    pub(crate) async fn post_json_with_token(
        &self,
        url: &Uri,
        body: &Value,
        token: Option<&Secret>,
    ) -> Result<Fetched, Error> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(token) = token {
            let mut value =
                HeaderValue::try_from(format!("Bearer {}", token.expose())).map_err(|_| {
                    Error::Auth("the initial access token is not valid in a header".into())
                })?;
            value.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, value);
        }
        let body = Bytes::from(body.to_string().into_bytes());
        self.send(Method::POST, url, headers, Some(body)).await
    }

    async fn send(
        &self,
        method: Method,
        url: &Uri,
        mut headers: HeaderMap,
        body: Option<Bytes>,
    ) -> Result<Fetched, Error> {
        self.check(url)?;
        headers
            .entry(ACCEPT)
            .or_insert(HeaderValue::from_static("application/json"));
        let mut request = Request::builder()
            .method(method)
            .uri(url.clone())
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| Error::Auth(format!("building a request to {url}: {e}")))?;
        *request.headers_mut() = headers;
        let max = self.limits.max_body;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                Error::Auth(format!(
                    "{url}: {}",
                    crate::transport::http_client::error_chain(&e)
                ))
            })?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, max)
                .collect()
                .await
                .map_err(|e| Error::Auth(format!("{url}: reading the answer: {e}")))?
                .to_bytes();
            Ok(Fetched {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(self.limits.timeout, exchange)
            .await
            .map_err(|_| Error::Auth(format!("{url} did not answer in time")))?
    }
}

/// `localhost` or a loopback literal (not names under `.localhost`, which some resolvers
/// send to DNS).
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Scheme, host and port (the default port filled in).
pub(crate) fn origin(url: &Uri) -> (String, String, u16) {
    let scheme = url.scheme_str().unwrap_or("").to_ascii_lowercase();
    let host = url.host().unwrap_or("").to_ascii_lowercase();
    let port = url
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    (scheme, host, port)
}

/// `reference` (absolute, or a path) resolved against `base`.
pub(crate) fn resolve(base: &Uri, reference: &str) -> Option<Uri> {
    if let Ok(uri) = reference.parse::<Uri>()
        && uri.scheme().is_some()
    {
        return Some(uri);
    }
    if !reference.starts_with('/') || reference.starts_with("//") {
        return None;
    }
    let authority = base.authority()?;
    format!("{}://{authority}{reference}", base.scheme_str()?)
        .parse()
        .ok()
}
