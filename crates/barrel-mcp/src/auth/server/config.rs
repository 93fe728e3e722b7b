//! [`AuthConfig`]: the authenticator, the protected-resource metadata and the scope policy that
//! [`HttpConfig::auth`](crate::http::HttpConfig::auth) puts in front of the HTTP server, and the
//! challenges they make together.

use std::fmt;
use std::sync::Arc;

use super::{Authenticator, ProtectedResource, ScopePolicy};
use crate::auth::Challenge;

/// How the HTTP server authenticates and authorizes requests.
///
/// ```
/// use barrel_mcp::auth::AuthInfo;
/// use barrel_mcp::auth::server::{
///     AuthConfig, Authenticator, ProtectedResource, Rejection, ScopePolicy,
/// };
/// use barrel_mcp::peer::BoxFuture;
///
/// /// Lets one fixed token in (a real server uses a provider such as `JwtBearer`).
/// struct OneToken;
///
/// impl Authenticator for OneToken {
///     fn authenticate<'a>(
///         &'a self,
///         head: &'a http::request::Parts,
///     ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
///         Box::pin(async move {
///             let Some(value) = head.headers.get(http::header::AUTHORIZATION) else {
///                 return Ok(None);
///             };
///             match value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")) {
///                 Some("let-me-in") => Ok(Some(AuthInfo::new("alice").with_scopes(["mcp:read"]))),
///                 Some(_) => Err(Rejection::invalid("unknown token")),
///                 None => Err(Rejection::malformed("expected a Bearer token")),
///             }
///         })
///     }
/// }
///
/// let auth = AuthConfig::new(OneToken)
///     .resource(
///         ProtectedResource::new("http://127.0.0.1:9090/mcp")?
///             .authorization_server("https://auth.example.com")?,
///     )
///     .scopes(ScopePolicy::new().require(["mcp:read"]));
/// # drop(auth);
/// # Ok::<(), barrel_mcp::Error>(())
/// ```
#[derive(Clone)]
pub struct AuthConfig {
    authenticator: Arc<dyn Authenticator>,
    resource: Option<ProtectedResource>,
    scopes: ScopePolicy,
    allow_anonymous: bool,
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

    /// Serves `resource` (RFC 9728) at its well-known URLs and names it in every challenge, so
    /// OAuth clients find the authorization server. Without it, challenges carry no
    /// `resource_metadata` (fine for API keys and Basic).
    #[must_use]
    pub fn resource(mut self, resource: ProtectedResource) -> Self {
        self.resource = Some(resource);
        self
    }

    /// The scopes each operation needs. Default: none beyond being authenticated.
    #[must_use]
    pub fn scopes(mut self, scopes: ScopePolicy) -> Self {
        self.scopes = scopes;
        self
    }

    /// Lets requests without credentials through (handlers see `Ctx::auth() == None`);
    /// operations that need a scope still get 401 (RFC 6750: the caller has to authenticate
    /// first). Bad credentials are refused all the same. Default false.
    #[must_use]
    pub fn allow_anonymous(mut self, allow: bool) -> Self {
        self.allow_anonymous = allow;
        self
    }

    /// The authenticator.
    pub fn authenticator(&self) -> &dyn Authenticator {
        &*self.authenticator
    }

    /// The protected-resource metadata, if set.
    pub fn protected_resource(&self) -> Option<&ProtectedResource> {
        self.resource.as_ref()
    }

    /// The scope policy.
    pub fn scope_policy(&self) -> &ScopePolicy {
        &self.scopes
    }

    /// True when requests without credentials are let through.
    pub fn allows_anonymous(&self) -> bool {
        self.allow_anonymous
    }

    /// The challenges of a 401: the authenticator's, with the `Bearer` one naming the
    /// metadata, the scopes every operation needs and, for refused credentials, the error
    /// (`error` is `None` when none were given: RFC 6750 §3.1 sends no error code then).
    pub fn unauthorized(&self, error: Option<(&str, &str)>, scopes: &[String]) -> Vec<Challenge> {
        let mut challenges = self.authenticator.challenges();
        for challenge in challenges
            .iter_mut()
            .filter(|challenge| challenge.is_scheme("Bearer"))
        {
            if let Some((code, description)) = error {
                challenge.params.push(("error".into(), code.into()));
                challenge
                    .params
                    .push(("error_description".into(), description.into()));
            }
            let scopes = if scopes.is_empty() {
                self.scopes.required()
            } else {
                scopes
            };
            if !scopes.is_empty() {
                challenge.params.push(("scope".into(), scopes.join(" ")));
            }
            if let Some(resource) = &self.resource {
                challenge
                    .params
                    .push(("resource_metadata".into(), resource.metadata_url()));
            }
        }
        challenges
    }

    /// The challenge of a 403: `insufficient_scope`, with every scope the operation needs.
    pub fn forbidden(&self, scopes: &[String]) -> Challenge {
        let mut challenge = Challenge::bearer()
            .with("error", "insufficient_scope")
            .with("scope", scopes.join(" "));
        if let Some(resource) = &self.resource {
            challenge = challenge.with("resource_metadata", resource.metadata_url());
        }
        challenge.with(
            "error_description",
            "the operation needs scopes the token does not grant",
        )
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
