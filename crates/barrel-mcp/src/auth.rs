//! Authentication and authorization: who is calling, and what they may do.
//!
//! What is always compiled (it needs no dependency, so handler code needs no `cfg`):
//! - [`AuthInfo`]: the authenticated caller, as a handler sees it through
//!   [`Ctx::auth`](crate::server::Ctx::auth) and as sessions and `requestState` tokens are bound
//!   to it ([`AuthInfo::principal`]);
//! - [`Secret`]: a credential in memory, redacted in `Debug`, wiped on drop;
//! - [`Challenge`]: one `WWW-Authenticate` challenge, built by servers and parsed by clients.
//!
//! Behind features:
//! - `server` (feature `auth`): the `Authenticator` trait, the built-in
//!   providers, scopes and the RFC 9728 protected-resource metadata, plugged into
//!   `HttpConfig::auth`.
//! - `client` (feature `http-client`): the `TokenSource` an HTTP client transport asks for
//!   credentials, a static token, and (feature `oauth-client`) the OAuth 2.1 client.

use std::fmt;
use std::time::SystemTime;

use serde_json::{Map, Value};
use zeroize::Zeroizing;

pub mod challenge;
#[cfg(feature = "http-client")]
pub mod client;
#[cfg(any(feature = "auth", feature = "oauth-client"))]
pub(crate) mod fetch;
#[cfg(any(feature = "auth", feature = "oauth-client"))]
pub(crate) mod form;
#[cfg(any(feature = "auth", feature = "oauth-client"))]
pub mod jose;
#[cfg(any(feature = "auth", feature = "oauth-client"))]
pub mod net;
#[cfg(feature = "auth")]
pub mod server;

pub use challenge::Challenge;

/// The authenticated caller of a request.
///
/// An `auth::server::Authenticator` makes one from the request head; handlers read it
/// with [`Ctx::auth`](crate::server::Ctx::auth). It never holds the raw credential (no token
/// passthrough): what a handler needs to know about the caller is here, and nothing it could
/// replay elsewhere.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct AuthInfo {
    /// Who the caller is: the token's `sub`, the API key's or the user's name.
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id` or `azp`), when known.
    pub client_id: Option<String>,
    /// Who vouched for the caller: the token's `iss`, when known.
    pub issuer: Option<String>,
    /// The scopes granted, in the order the credential listed them, without duplicates.
    pub scopes: Vec<String>,
    /// The audiences the credential was issued for (`aud`).
    pub audience: Vec<String>,
    /// When the credential stops being valid.
    pub expires_at: Option<SystemTime>,
    /// Everything else the credential said (a token's other claims, a key's metadata).
    pub claims: Map<String, Value>,
}

impl AuthInfo {
    /// A caller known by `subject`, with no scope.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            ..Self::default()
        }
    }

    /// Sets the OAuth client id.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets the issuer.
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Sets the granted scopes (duplicates are dropped, the first occurrence kept).
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.clear();
        for scope in scopes {
            let scope = scope.into();
            if !self.scopes.contains(&scope) {
                self.scopes.push(scope);
            }
        }
        self
    }

    /// Sets the audiences.
    #[must_use]
    pub fn with_audience<S: Into<String>>(mut self, audience: impl IntoIterator<Item = S>) -> Self {
        self.audience = audience.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the expiry.
    #[must_use]
    pub fn with_expires_at(mut self, expires_at: SystemTime) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// Adds one claim.
    #[must_use]
    pub fn with_claim(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.claims.insert(name.into(), value.into());
        self
    }

    /// True when `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }

    /// The key sessions, listen streams and `requestState` tokens are bound to: issuer, client
    /// id and subject together, so the same `sub` from two issuers (or two clients) is two
    /// principals. The form is an unambiguous encoding of the three; compare it, do not parse
    /// it.
    pub fn principal(&self) -> String {
        let parts = [
            self.issuer.as_deref().unwrap_or(""),
            self.client_id.as_deref().unwrap_or(""),
            self.subject.as_str(),
        ];
        // A JSON array of three strings: no separator can be forged inside a part.
        serde_json::to_string(&parts).unwrap_or_default()
    }
}

/// A credential held in memory: a token, a password, a client secret, a key.
///
/// `Debug` and `Display` never show it, and its bytes are overwritten when it is dropped. Read
/// it with [`Secret::expose`] only where it is used.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a credential.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(Zeroizing::new(secret.into()))
    }

    /// The credential itself.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the credential is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(secret: String) -> Self {
        Self::new(secret)
    }
}

impl From<&str> for Secret {
    fn from(secret: &str) -> Self {
        Self::new(secret)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_separates_issuer_client_and_subject() {
        let a = AuthInfo::new("b").with_issuer("a").with_client_id("");
        let b = AuthInfo::new("").with_issuer("a").with_client_id("b");
        let quoted = AuthInfo::new("x\",\"y").with_issuer("i");
        let split = AuthInfo::new("y").with_issuer("i").with_client_id("x");
        assert_ne!(a.principal(), b.principal());
        assert_ne!(quoted.principal(), split.principal());
        assert_eq!(
            a.principal(),
            AuthInfo::new("b").with_issuer("a").principal()
        );
    }

    #[test]
    fn scopes_keep_order_without_duplicates() {
        let info = AuthInfo::new("u").with_scopes(["b", "a", "b"]);
        assert_eq!(info.scopes, ["b", "a"]);
        assert!(info.has_scope("a"));
        assert!(!info.has_scope("c"));
    }

    #[test]
    fn secret_is_never_shown() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(secret.expose(), "hunter2");
    }
}
