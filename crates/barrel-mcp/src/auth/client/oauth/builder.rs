//! Building an [`OAuthClient`]: the grant it runs ([`EnterpriseIdp`] for enterprise-managed
//! authorization), how it identifies itself, where it keeps tokens, and the bounds of its own
//! HTTP exchanges.

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use tokio::sync::Mutex;

use super::dpop::Dpop;
use super::{
    AuthorizationHandler, ClientIdentity, FetchLimits, Flow, Inner, MemoryStore, OAuthClient,
    RegisteredClient, TokenStore,
};
use crate::Error;
use crate::auth::Secret;
use crate::auth::fetch::{self, Fetcher};
use crate::auth::jose::{Algorithm, SigningKey};
use crate::auth::net::{self, NetPolicy};
use crate::transport::http_client::tls::ClientTls;

/// An identity provider for enterprise-managed authorization: its token endpoint exchanges
/// the user's ID token for an identity assertion grant the authorization server accepts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EnterpriseIdp {
    /// The identity provider's token endpoint.
    pub token_endpoint: String,
    /// This client's id at the identity provider.
    pub client_id: String,
    /// Its secret there, if it has one (sent with HTTP Basic).
    pub client_secret: Option<Secret>,
    /// The user's ID token (the subject of the exchange).
    pub id_token: Secret,
}

impl EnterpriseIdp {
    /// An identity provider at `token_endpoint`, where this client is `client_id`, exchanging
    /// `id_token`.
    pub fn new(
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        id_token: impl Into<Secret>,
    ) -> Self {
        Self {
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            id_token: id_token.into(),
        }
    }

    /// Sets the client's secret at the identity provider.
    #[must_use]
    pub fn with_secret(mut self, secret: impl Into<Secret>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

/// How the client gets tokens.
#[derive(Clone)]
pub(super) enum Grant {
    AuthorizationCode(Arc<dyn AuthorizationHandler>),
    ClientCredentials,
    JwtBearer(Secret),
    Enterprise(EnterpriseIdp),
}

impl Grant {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Self::AuthorizationCode(_) => "authorization_code",
            Self::ClientCredentials => "client_credentials",
            Self::JwtBearer(_) => "jwt-bearer",
            Self::Enterprise(_) => "enterprise-managed",
        }
    }
}

/// Builds an [`OAuthClient`].
pub struct OAuthClientBuilder {
    server: Uri,
    grant: Option<Grant>,
    identity: ClientIdentity,
    private_key: Option<Arc<SigningKey>>,
    scopes: Option<Vec<String>>,
    store: Arc<dyn TokenStore>,
    limits: FetchLimits,
    allow_private_networks: bool,
    allow_http: bool,
    offline_access: bool,
    dpop: bool,
    issuer: Option<String>,
    refresh_skew: Duration,
    tls: ClientTls,
}

impl std::fmt::Debug for OAuthClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientBuilder")
            .field("server", &self.server)
            .field("grant", &self.grant.as_ref().map(Grant::name))
            .finish_non_exhaustive()
    }
}

impl OAuthClientBuilder {
    /// The authorization code grant, with `handler` for the user's part.
    #[must_use]
    pub fn authorization_code(mut self, handler: impl AuthorizationHandler) -> Self {
        self.grant = Some(Grant::AuthorizationCode(Arc::new(handler)));
        self
    }

    /// The client credentials grant (a machine client): needs [`client_id`](Self::client_id)
    /// and a [`client_secret`](Self::client_secret) or a
    /// [`private_key_pem`](Self::private_key_pem).
    #[must_use]
    pub fn client_credentials(mut self) -> Self {
        self.grant = Some(Grant::ClientCredentials);
        self
    }

    /// The JWT bearer grant (RFC 7523) with an assertion you obtained (a workload identity
    /// token). A token error is final: no other grant is tried.
    #[must_use]
    pub fn jwt_bearer(mut self, assertion: impl Into<Secret>) -> Self {
        self.grant = Some(Grant::JwtBearer(assertion.into()));
        self
    }

    /// Enterprise-managed authorization: exchange the user's ID token at `idp`, then present
    /// the result to the authorization server (needs [`client_id`](Self::client_id)).
    #[must_use]
    pub fn enterprise(mut self, idp: EnterpriseIdp) -> Self {
        self.grant = Some(Grant::Enterprise(idp));
        self
    }

    /// A client id registered in advance.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        let secret = self
            .identity
            .pre_registered
            .take()
            .and_then(|c| c.client_secret);
        let mut client = RegisteredClient::new(client_id);
        client.client_secret = secret;
        self.identity.pre_registered = Some(client);
        self
    }

    /// The secret of the pre-registered client (set [`client_id`](Self::client_id) too).
    #[must_use]
    pub fn client_secret(mut self, secret: impl Into<Secret>) -> Self {
        let client = self
            .identity
            .pre_registered
            .get_or_insert_with(|| RegisteredClient::new(""));
        client.client_secret = Some(secret.into());
        self
    }

    /// Authenticates at token endpoints with a JWT signed by this PKCS#8 PEM key
    /// (`private_key_jwt`), with `algorithm` (`ES256`, `RS256`, `EdDSA`, ...).
    pub fn private_key_pem(mut self, algorithm: &str, pem: &[u8]) -> Result<Self, Error> {
        let algorithm = Algorithm::from_name(algorithm)
            .ok_or_else(|| Error::Definition(format!("unknown JWS algorithm {algorithm:?}")))?;
        let der = PrivateKeyDer::from_pem_slice(pem)
            .map_err(|e| Error::Definition(format!("reading the private key: {e}")))?;
        let PrivateKeyDer::Pkcs8(der) = der else {
            return Err(Error::Definition(
                "the private key must be PKCS#8 (BEGIN PRIVATE KEY)".into(),
            ));
        };
        self.private_key = Some(Arc::new(SigningKey::from_pkcs8(
            algorithm,
            der.secret_pkcs8_der(),
        )?));
        Ok(self)
    }

    /// The URL of this client's ID metadata document, used as its client id where the
    /// authorization server accepts them.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.identity.metadata_document = Some(url.into());
        self
    }

    /// Replaces how the client identifies itself at once.
    #[must_use]
    pub fn identity(mut self, identity: ClientIdentity) -> Self {
        self.identity = identity;
        self
    }

    /// Asks for these scopes instead of choosing from the server's challenge and metadata.
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Where registrations and tokens are kept (default: a [`MemoryStore`]).
    #[must_use]
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// The bounds of the client's own HTTP exchanges.
    #[must_use]
    pub fn limits(mut self, limits: FetchLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Lets authorization servers sit on private networks and loopback. Default: only when
    /// the MCP server's URL itself is on one (an IP literal, or `localhost`).
    #[must_use]
    pub fn allow_private_networks(mut self, allow: bool) -> Self {
        self.allow_private_networks = allow;
        self
    }

    /// Lets authorization servers be reached over plain `http://` off loopback (tests only).
    #[must_use]
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Adds `offline_access` to an authorization code request when the server lists it
    /// (default true), for a refresh token.
    #[must_use]
    pub fn offline_access(mut self, ask: bool) -> Self {
        self.offline_access = ask;
        self
    }

    /// The authorization server (its issuer identifier) the credentials given in advance are
    /// for: a client secret, a private key, an assertion, an enterprise identity, an initial
    /// access token. They are never sent to another one. Without it, they are bound to the
    /// first authorization server the MCP server names.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Binds tokens to a key of this client's (DPoP, RFC 9449) where the MCP server asks for
    /// it and the authorization server supports `ES256` proofs (default true). The key lives in
    /// memory: a stored DPoP-bound token is not used by another process.
    #[must_use]
    pub fn dpop(mut self, use_dpop: bool) -> Self {
        self.dpop = use_dpop;
        self
    }

    /// Trusts these CA certificates (PEM) for `https://` authorization servers too.
    pub fn add_root_certificates(mut self, pem: &[u8]) -> Result<Self, Error> {
        self.tls.add_roots_pem(pem)?;
        Ok(self)
    }

    /// The client.
    pub fn build(self) -> Result<OAuthClient, Error> {
        let grant = self.grant.ok_or_else(|| {
            Error::Definition(
                "choose a grant: authorization_code, client_credentials, jwt_bearer or \
                 enterprise"
                    .into(),
            )
        })?;
        let needs_client = !matches!(grant, Grant::AuthorizationCode(_));
        let has_client = self
            .identity
            .pre_registered
            .as_ref()
            .is_some_and(|c| !c.client_id.is_empty());
        if needs_client && !has_client {
            return Err(Error::Definition(format!(
                "the {} grant needs a client_id",
                grant.name()
            )));
        }
        let private = self.allow_private_networks
            || self.server.host().is_some_and(|host| {
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                fetch::is_loopback_host(host)
                    || bare
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| net::classify(ip) == net::AddressClass::Private)
            });
        let policy = if private {
            NetPolicy::PRIVATE
        } else {
            NetPolicy::PUBLIC
        };
        let fetcher = Fetcher::new(policy, self.limits, self.allow_http, &self.tls);
        Ok(OAuthClient {
            inner: Arc::new(Inner {
                key: self.server.to_string(),
                server: self.server,
                grant,
                identity: self.identity,
                private_key: self.private_key,
                scopes: self.scopes,
                store: self.store,
                fetcher,
                offline_access: self.offline_access,
                bound_issuer: std::sync::Mutex::new(self.issuer),
                dpop: if self.dpop { Some(Dpop::new()?) } else { None },
                refresh_skew: self.refresh_skew,
                flow: Mutex::new(Flow::default()),
            }),
        })
    }
}

impl OAuthClient {
    /// A client for the MCP server at `server_url` (choose a grant, then
    /// [`build`](OAuthClientBuilder::build)).
    pub fn builder(server_url: &str) -> Result<OAuthClientBuilder, Error> {
        let server: Uri = server_url
            .parse()
            .map_err(|e| Error::Definition(format!("invalid URL {server_url:?}: {e}")))?;
        if server.scheme().is_none() || server.host().is_none() {
            return Err(Error::Definition(format!(
                "{server_url:?} is not an absolute URL"
            )));
        }
        Ok(OAuthClientBuilder {
            server,
            grant: None,
            identity: ClientIdentity::default(),
            private_key: None,
            scopes: None,
            store: Arc::new(MemoryStore::new()),
            limits: FetchLimits::default(),
            allow_private_networks: false,
            allow_http: false,
            offline_access: true,
            dpop: true,
            issuer: None,
            refresh_skew: Duration::from_secs(60),
            tls: ClientTls::new()?,
        })
    }
}
