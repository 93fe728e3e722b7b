//! [`AuthConfig`]: the authenticator, the protected-resource metadata and the scope policy that
//! [`HttpConfig::auth`](crate::http::HttpConfig::auth) puts in front of the HTTP server.

use std::fmt;
use std::sync::Arc;

use super::{Authenticator, ProtectedResource, ScopePolicy};

/// How the HTTP server authenticates and authorizes requests.
#[derive(Clone)]
pub struct AuthConfig {
    /// Who is calling.
    pub authenticator: Arc<dyn Authenticator>,
    /// The RFC 9728 metadata served at the well-known URLs and named in every challenge.
    pub resource: Option<ProtectedResource>,
    /// The scopes each operation needs.
    pub scopes: ScopePolicy,
    /// Let requests without credentials through (`Ctx::auth()` is `None` for them); operations
    /// that need a scope still get 401. Default false.
    pub allow_anonymous: bool,
}

impl AuthConfig {
    /// Authenticates every request with `authenticator`.
    pub fn new(authenticator: impl Authenticator) -> Self {
        Self {
            authenticator: Arc::new(authenticator),
            resource: None,
            scopes: ScopePolicy::default(),
            allow_anonymous: false,
        }
    }
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("resource", &self.resource)
            .field("scopes", &self.scopes)
            .field("allow_anonymous", &self.allow_anonymous)
            .finish_non_exhaustive()
    }
}
