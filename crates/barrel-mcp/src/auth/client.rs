//! The client side of auth: where an HTTP client transport gets the credentials it sends.
//!
//! A [`TokenSource`] is asked for the `Authorization` value of every request an HTTP client
//! transport sends (POST, the GET stream and its resumptions, DELETE), and is told when the
//! server refuses one with 401 or 403, so it can get a new token and have the request sent
//! again. Both [`HttpClientTransport::auth`](crate::transport::http_client::HttpClientTransport::auth)
//! and [`LegacySseTransport::auth`](crate::transport::http_client::LegacySseTransport::auth)
//! take one.
//!
//! - [`StaticToken`]: a fixed bearer token (or any fixed `Authorization` value); a refusal is
//!   final.
//! - `oauth::OAuthClient` (feature `oauth-client`): the OAuth 2.1 client the MCP spec
//!   describes, from discovery to refresh.
//!
//! The transport owns the retry: it resends a refused request at most
//! [`MAX_AUTH_RETRIES`] times, each time only when the source says a new credential is worth
//! trying; the source owns every OAuth decision.

use std::sync::Arc;

use crate::Error;
use crate::auth::{Challenge, Secret};
use crate::peer::BoxFuture;

#[cfg(feature = "oauth-client")]
pub mod oauth;

/// How many times one request is resent after 401 or 403. Three covers a first authorization
/// and two scope step-ups (the spec's bound on step-up, which keeps a server that always says
/// 403 from making the client authorize forever).
pub const MAX_AUTH_RETRIES: u32 = 3;

/// The request a credential is asked for: DPoP proofs name its method and URL.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The HTTP method.
    pub method: &'a http::Method,
    /// The URL.
    pub url: &'a http::Uri,
}

/// What a request carries to authenticate: the `Authorization` value, and for a DPoP-bound
/// token (RFC 9449) the `DPoP` proof.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credential {
    /// `Authorization` (`Bearer …`, `DPoP …`).
    pub authorization: Secret,
    /// The `DPoP` header, a proof for this one request.
    pub dpop: Option<Secret>,
}

impl Credential {
    /// `Authorization: <value>` alone.
    pub fn authorization(value: impl Into<Secret>) -> Self {
        Self {
            authorization: value.into(),
            dpop: None,
        }
    }
}

/// The server refused a request for want of (other) credentials.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Refusal {
    /// 401 or 403.
    pub status: u16,
    /// The challenges of the answer's `WWW-Authenticate` headers.
    pub challenges: Vec<Challenge>,
    /// The `Authorization` value the refused request carried, if any: a source that already
    /// replaced it (another request got a new token meanwhile) just says "retry".
    pub rejected: Option<Secret>,
    /// How many times this request was already resent after a refusal (0 the first time).
    pub attempt: u32,
    /// The answer's `DPoP-Nonce` header (RFC 9449 §9), if any.
    pub dpop_nonce: Option<String>,
}

impl Refusal {
    /// The `Bearer` challenge, else the `DPoP` one, if the server sent either.
    pub fn bearer(&self) -> Option<&Challenge> {
        self.challenges
            .iter()
            .find(|c| c.is_scheme("Bearer"))
            .or_else(|| self.challenges.iter().find(|c| c.is_scheme("DPoP")))
    }

    /// True when the server asks for a DPoP nonce (`error="use_dpop_nonce"` and a
    /// `DPoP-Nonce` header).
    pub fn wants_dpop_nonce(&self) -> bool {
        self.dpop_nonce.is_some()
            && self
                .challenges
                .iter()
                .any(|c| c.get("error") == Some("use_dpop_nonce"))
    }

    /// True for a 403 whose challenge says `error="insufficient_scope"`: the token is good
    /// but does not reach far enough.
    pub fn is_insufficient_scope(&self) -> bool {
        self.status == 403
            && self
                .bearer()
                .and_then(|c| c.get("error"))
                .is_some_and(|e| e == "insufficient_scope")
    }
}

/// Where an HTTP client transport gets the `Authorization` header of its requests.
///
/// Implementations must not log what they hand out.
pub trait TokenSource: Send + Sync + 'static {
    /// The credential for the next request, or `None` to send none. Called before every
    /// request; a source that caches a token answers from memory. An error fails the request
    /// (a call fails; the connection ends when the handshake cannot start).
    fn authorization<'a>(
        &'a self,
        request: Outgoing<'a>,
    ) -> BoxFuture<'a, Result<Option<Credential>, Error>>;

    /// The server refused a request: `Ok(true)` when the request should be sent again (with
    /// what [`authorization`](Self::authorization) answers next), `Ok(false)` to give up (the
    /// request fails with [`Error::Http`], [`is_auth`](Error::is_auth) true). Called once per
    /// refusal, at most [`MAX_AUTH_RETRIES`] times for one request.
    fn refused<'a>(&'a self, refusal: &'a Refusal) -> BoxFuture<'a, Result<bool, Error>>;
}

impl<T: TokenSource + ?Sized> TokenSource for Arc<T> {
    fn authorization<'a>(
        &'a self,
        request: Outgoing<'a>,
    ) -> BoxFuture<'a, Result<Option<Credential>, Error>> {
        (**self).authorization(request)
    }

    fn refused<'a>(&'a self, refusal: &'a Refusal) -> BoxFuture<'a, Result<bool, Error>> {
        (**self).refused(refusal)
    }
}

/// A fixed credential: every request carries it, and a refusal is final.
#[derive(Debug, Clone)]
pub struct StaticToken {
    value: Secret,
}

impl StaticToken {
    /// `Authorization: Bearer <token>`.
    pub fn bearer(token: impl Into<String>) -> Self {
        Self {
            value: Secret::new(format!("Bearer {}", token.into())),
        }
    }

    /// `Authorization: <value>` as given (`Basic …`, a scheme of your own).
    pub fn authorization(value: impl Into<String>) -> Self {
        Self {
            value: Secret::new(value.into()),
        }
    }
}

impl TokenSource for StaticToken {
    fn authorization<'a>(
        &'a self,
        _: Outgoing<'a>,
    ) -> BoxFuture<'a, Result<Option<Credential>, Error>> {
        let value = Credential::authorization(self.value.clone());
        Box::pin(async move { Ok(Some(value)) })
    }

    fn refused<'a>(&'a self, _: &'a Refusal) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async { Ok(false) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(status: u16, header: &str) -> Refusal {
        Refusal {
            status,
            challenges: Challenge::parse_all([header]),
            rejected: None,
            attempt: 0,
            dpop_nonce: None,
        }
    }

    #[test]
    fn insufficient_scope_needs_a_403_that_says_so() {
        let step_up = r#"Bearer error="insufficient_scope", scope="a b""#;
        assert!(refusal(403, step_up).is_insufficient_scope());
        assert!(!refusal(401, step_up).is_insufficient_scope());
        assert!(!refusal(403, r#"Bearer error="invalid_token""#).is_insufficient_scope());
        assert!(!refusal(403, r#"Basic realm="x""#).is_insufficient_scope());
    }

    #[tokio::test]
    async fn a_static_token_never_retries() {
        let source = StaticToken::bearer("t0k");
        let (method, url) = (http::Method::GET, http::Uri::from_static("http://x/mcp"));
        let outgoing = Outgoing {
            method: &method,
            url: &url,
        };
        let value = source.authorization(outgoing).await.unwrap().unwrap();
        assert_eq!(value.authorization.expose(), "Bearer t0k");
        assert_eq!(value.dpop, None);
        assert!(!source.refused(&refusal(401, "Bearer")).await.unwrap());
        assert!(!format!("{source:?}").contains("t0k"));
    }
}
