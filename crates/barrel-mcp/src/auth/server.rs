//! The server side of auth: who is calling ([`Authenticator`]), what they may do
//! ([`ScopePolicy`]), and where clients learn how to get a token ([`ProtectedResource`]).
//!
//! An [`AuthConfig`] in [`HttpConfig::auth`](crate::http::HttpConfig::auth) puts them in front of
//! every path of the HTTP server. Authentication runs on the request head, before the body is
//! read and before anything is allocated for the request; scopes are checked once the body is
//! parsed, before any answer (or SSE head) is sent.

use std::sync::Arc;

use crate::auth::{AuthInfo, Challenge};
use crate::peer::BoxFuture;

pub mod api_key;
pub mod basic;
mod config;
mod introspection;
mod jwks;
mod jwt;
mod resource;
mod scopes;
mod token_fn;

pub use api_key::ApiKeys;
pub use basic::BasicAuth;
pub use config::AuthConfig;
pub use introspection::Introspection;
pub use jwks::{RemoteJwks, RemoteJwksConfig};
pub use jwt::{JwtBearer, ScopeClaim};
pub use resource::{ProtectedResource, WELL_KNOWN};
pub use scopes::ScopePolicy;
pub use token_fn::{AnyOf, TokenAuth};

/// Turns a request head into the caller it authenticates.
///
/// The verdict:
/// - `Ok(Some(info))`: the credentials are good; `info` reaches handlers through
///   [`Ctx::auth`](crate::server::Ctx::auth).
/// - `Ok(None)`: the request carries no credentials this authenticator reads. Without
///   [`AuthConfig::allow_anonymous`] that is a 401 with the challenges.
/// - `Err(rejection)`: credentials were given and refused, or could not be checked
///   (see [`Rejection`]).
///
/// Implementations must not log or keep the credentials they read.
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates one request from its head.
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>>;

    /// [`authenticate`](Self::authenticate) with the caller shared: what the HTTP server
    /// calls. An authenticator that keeps callers (a cache of verified tokens) overrides it to
    /// hand out the one it keeps instead of a copy.
    fn authenticate_shared<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<Arc<AuthInfo>>, Rejection>> {
        Box::pin(async move { self.authenticate(head).await.map(|info| info.map(Arc::new)) })
    }

    /// The request headers this authenticator reads besides `Authorization` (an API key's
    /// header), so browsers are allowed to send them (CORS). Lower case.
    fn headers(&self) -> Vec<http::HeaderName> {
        Vec::new()
    }

    /// The challenges a 401 names, before [`AuthConfig`] adds `resource_metadata`, `scope` and
    /// `error` to the `Bearer` one. Default: one `Bearer` challenge.
    fn challenges(&self) -> Vec<Challenge> {
        vec![Challenge::bearer()]
    }
}

impl<A: Authenticator + ?Sized> Authenticator for Arc<A> {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        (**self).authenticate(head)
    }

    fn authenticate_shared<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<Arc<AuthInfo>>, Rejection>> {
        (**self).authenticate_shared(head)
    }

    fn headers(&self) -> Vec<http::HeaderName> {
        (**self).headers()
    }

    fn challenges(&self) -> Vec<Challenge> {
        (**self).challenges()
    }
}

/// The caller an `authenticate_shared` future yields, as `authenticate` returns it: for
/// authenticators whose shared form is the primary one.
pub(crate) fn unshared(
    shared: BoxFuture<'_, Result<Option<Arc<AuthInfo>>, Rejection>>,
) -> BoxFuture<'_, Result<Option<AuthInfo>, Rejection>> {
    Box::pin(async move { Ok(shared.await?.map(Arc::unwrap_or_clone)) })
}

/// Why an [`Authenticator`] refused a request. The text is for the server's log and, for
/// [`Rejection::Invalid`] and [`Rejection::Malformed`], the `error_description` the client
/// sees: never put a credential in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The credentials are wrong, expired, revoked or for another audience: 401 with
    /// `error="invalid_token"`.
    Invalid(String),
    /// The credentials are malformed (an `Authorization` header that is not `Bearer <token>`,
    /// a token in the query string): 400 with `error="invalid_request"`.
    Malformed(String),
    /// The credentials could not be checked now (the JWKS or introspection endpoint is down):
    /// 503 with `Retry-After`, never 401, so clients do not throw away a good token.
    Unavailable(String),
}

impl Rejection {
    /// [`Rejection::Invalid`].
    pub fn invalid(reason: impl Into<String>) -> Self {
        Self::Invalid(reason.into())
    }

    /// [`Rejection::Malformed`].
    pub fn malformed(reason: impl Into<String>) -> Self {
        Self::Malformed(reason.into())
    }

    /// [`Rejection::Unavailable`].
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self::Unavailable(reason.into())
    }

    /// The reason given.
    pub fn reason(&self) -> &str {
        match self {
            Self::Invalid(reason) | Self::Malformed(reason) | Self::Unavailable(reason) => reason,
        }
    }
}
