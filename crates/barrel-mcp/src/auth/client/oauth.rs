//! The OAuth 2.1 client of the MCP authorization spec (feature `oauth-client`), as a
//! [`TokenSource`] for the HTTP client transports.
//!
//! On a 401 from the MCP server, [`OAuthClient`]:
//! 1. **discovers** the authorization server: the protected-resource metadata the challenge
//!    names (or the well-known URLs), the `resource` check, the authorization server's
//!    metadata in the spec's order, the issuer check ([`discovery`]); with no metadata at all,
//!    the 2025-03-26 fallbacks;
//! 2. **gets a client id** there: pre-registered, a client ID metadata document, or dynamic
//!    registration, kept per issuer in the [`TokenStore`] ([`ClientIdentity`]);
//! 3. **runs the grant** it was built for:
//!    - the authorization code grant with PKCE `S256` (refused when the server does not offer
//!      it), a single-use `state`, the RFC 9207 `iss` check and the RFC 8707 `resource` on
//!      every request; the user's part is an [`AuthorizationHandler`];
//!    - client credentials, with a secret or `private_key_jwt`;
//!    - a JWT bearer assertion given by the caller (workload identity);
//!    - enterprise-managed authorization: RFC 8693 token exchange at the identity provider
//!      for an identity assertion grant, then the RFC 7523 JWT bearer grant;
//! 4. and has the request sent again.
//!
//! Then: a 403 `insufficient_scope` re-authorizes with the scopes asked before plus the ones
//! the challenge names (at most [`MAX_AUTH_RETRIES`](super::MAX_AUTH_RETRIES) times per
//! request); a token near its expiry (or refused with 401) is refreshed first, a rotated
//! refresh token kept; a server that moved to another authorization server is discovered
//! again, and the client registers there afresh (credentials never cross issuers).
//!
//! Scopes: those configured, else the challenge's `scope`, else every scope the resource
//! metadata lists, else none (the parameter is left out); `offline_access` is added for the
//! authorization code grant when the authorization server lists it.
//!
//! Every URL discovery finds is fetched through an SSRF guard ([`crate::auth::net`]) with size and time
//! caps ([`FetchLimits`]); nothing of the MCP connection (its headers, its token) is sent to
//! an authorization server.
//!
//! ```no_run
//! # async fn run() -> barrel_mcp::Result<()> {
//! use barrel_mcp::auth::client::oauth::{Headless, OAuthClient};
//! use barrel_mcp::client::Client;
//! use barrel_mcp::transport::http_client::HttpClientTransport;
//!
//! let url = "http://127.0.0.1:8080/mcp";
//! let oauth = OAuthClient::builder(url)?
//!     .authorization_code(Headless::new("http://127.0.0.1:3000/callback"))
//!     .build()?;
//! let client = Client::builder()
//!     .connect_http(HttpClientTransport::new(url)?.auth(oauth))
//!     .await?;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::Uri;
use tokio::sync::Mutex;

use super::{Credential, Outgoing, Refusal, TokenSource};
use crate::Error;
use crate::auth::jose::SigningKey;
use crate::auth::{Challenge, Secret};
use crate::peer::BoxFuture;

mod builder;
pub mod discovery;
mod dpop;
mod file_store;
mod grant;
mod handler;
mod loopback;
mod pkce;
mod registration;
mod store;

pub use crate::auth::fetch::FetchLimits;
pub use builder::{EnterpriseIdp, OAuthClientBuilder};
pub use file_store::FileStore;
pub use handler::{AuthorizationHandler, AuthorizationRequest, Callback, Headless};
pub use loopback::{LoopbackRedirect, open_browser};
pub use registration::ClientIdentity;
pub use store::{MemoryStore, RegisteredClient, StoredTokens, TokenStore};

use crate::auth::fetch::Fetcher;
use crate::auth::form::Form;
use builder::Grant;
use discovery::Discovered;
use dpop::{DPOP_ALG, Dpop, keep_nonce, nonce};
use grant::{ClientAuth, TokenEndpoint, TokenResponse};
use pkce::{Pkce, random};
use registration::Wanted;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const OFFLINE_ACCESS: &str = "offline_access";

/// The OAuth 2.1 client (see the [module docs](self)). Cheap to clone: clones share their
/// tokens.
#[derive(Clone)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &self.inner.server)
            .field("grant", &self.inner.grant.name())
            .finish_non_exhaustive()
    }
}

struct Inner {
    server: Uri,
    /// Tokens are stored under the MCP server's URL.
    key: String,
    grant: Grant,
    identity: ClientIdentity,
    private_key: Option<Arc<SigningKey>>,
    scopes: Option<Vec<String>>,
    store: Arc<dyn TokenStore>,
    fetcher: Fetcher,
    offline_access: bool,
    /// The only authorization server credentials given in advance go to (see
    /// `check_bound_issuer`).
    bound_issuer: std::sync::Mutex<Option<String>>,
    /// The DPoP key, when allowed (used where both servers want it).
    dpop: Option<Dpop>,
    refresh_skew: Duration,
    /// One flow at a time; requests that meet a refusal meanwhile wait and reuse its token.
    flow: Mutex<Flow>,
}

#[derive(Default)]
struct Flow {
    found: Option<Discovered>,
    tokens: Option<StoredTokens>,
    /// The scopes of the last authorization request.
    requested: Vec<String>,
    loaded: bool,
}

impl OAuthClient {
    /// Gets a token now, before the first request: discovery from the server's well-known
    /// metadata (no challenge to read yet), the scopes configured or those the resource
    /// metadata lists, then the grant. For an interactive login, so that the user's time in
    /// the browser is not spent inside a request that may time out. Without it, the first
    /// request's 401 starts the same flow.
    pub async fn authorize(&self) -> Result<(), Error> {
        let inner = &self.inner;
        let mut flow = inner.flow.lock().await;
        flow.loaded = true;
        let found = discovery::discover(&inner.fetcher, &inner.server, None).await?;
        flow.tokens = None;
        flow.found = Some(found);
        let scopes = inner.select_scopes(&flow, None);
        inner.obtain(&mut flow, scopes).await
    }

    /// The scopes granted with the current token, if there is one.
    pub async fn granted_scopes(&self) -> Option<Vec<String>> {
        let flow = self.inner.flow.lock().await;
        flow.tokens.as_ref().map(|t| t.scopes.clone())
    }

    /// The issuer of the current token, if there is one.
    pub async fn issuer(&self) -> Option<String> {
        let flow = self.inner.flow.lock().await;
        flow.tokens.as_ref().map(|t| t.issuer.clone())
    }
}

impl TokenSource for OAuthClient {
    fn authorization<'a>(
        &'a self,
        request: Outgoing<'a>,
    ) -> BoxFuture<'a, Result<Option<Credential>, Error>> {
        Box::pin(self.inner.authorization(request))
    }

    fn refused<'a>(&'a self, refusal: &'a Refusal) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(self.inner.refused(refusal))
    }
}

/// The `Authorization` value of `tokens`: `Bearer …`, or `DPoP …` for a bound token.
fn presented(tokens: &StoredTokens) -> Secret {
    let scheme = if tokens.token_type.eq_ignore_ascii_case("dpop") {
        "DPoP"
    } else {
        "Bearer"
    };
    Secret::new(format!("{scheme} {}", tokens.access_token.expose()))
}

/// A stored registration still serves when it was made for this redirect URI (a login on
/// another loopback port registers again).
fn client_fits(client: &RegisteredClient, redirect_uri: Option<&str>) -> bool {
    match (&client.redirect_uri, redirect_uri) {
        (Some(registered), Some(wanted)) => registered == wanted,
        _ => true,
    }
}

fn split_scopes(text: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in text.split_ascii_whitespace() {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    scopes
}

impl Inner {
    async fn authorization(&self, request: Outgoing<'_>) -> Result<Option<Credential>, Error> {
        let mut flow = self.flow.lock().await;
        if !flow.loaded {
            flow.loaded = true;
            // A DPoP-bound token is bound to a key that lived in the process that got it.
            flow.tokens = self
                .store
                .tokens(&self.key)?
                .filter(|t| !t.token_type.eq_ignore_ascii_case("dpop"));
        }
        let expiring = flow.tokens.as_ref().is_some_and(|t| {
            t.refresh_token.is_some()
                && t.expires_at
                    .is_some_and(|at| at <= SystemTime::now() + self.refresh_skew)
        });
        if expiring && let Err(error) = self.refresh(&mut flow).await {
            tracing::debug!(%error, "refreshing ahead of expiry failed");
        }
        let Some(tokens) = &flow.tokens else {
            return Ok(None);
        };
        let mut credential = Credential::authorization(presented(tokens));
        if tokens.token_type.eq_ignore_ascii_case("dpop") {
            let dpop = self.dpop.as_ref().ok_or_else(|| {
                Error::Auth("a DPoP-bound token, and no DPoP key to present it with".into())
            })?;
            credential.dpop = Some(dpop.proof(
                request.method.as_str(),
                request.url,
                Some(tokens.access_token.expose()),
                nonce(&dpop.rs_nonce),
            )?);
        }
        Ok(Some(credential))
    }

    /// The DPoP key, when this client has one, the MCP server asks for DPoP (a `DPoP`
    /// challenge, or its metadata), and the authorization server accepts the key's proofs.
    fn dpop_for(&self, found: &Discovered) -> Option<&Dpop> {
        let accepted = found
            .server
            .dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|algs| algs.iter().any(|a| a == DPOP_ALG));
        self.dpop.as_ref().filter(|_| accepted && found.dpop_wanted)
    }

    async fn refused(&self, refusal: &Refusal) -> Result<bool, Error> {
        let mut flow = self.flow.lock().await;
        // The MCP server wants a DPoP nonce: the same token, a proof with the nonce.
        if let (Some(dpop), Some(offered)) = (&self.dpop, &refusal.dpop_nonce)
            && refusal.wants_dpop_nonce()
            && nonce(&dpop.rs_nonce).as_ref() != Some(offered)
        {
            keep_nonce(&dpop.rs_nonce, offered.clone());
            return Ok(true);
        }
        // Another request got a new token since this one was sent: try that one.
        if let Some(tokens) = &flow.tokens
            && refusal.rejected.as_ref() != Some(&presented(tokens))
        {
            return Ok(true);
        }
        if refusal.status == 403 && !refusal.is_insufficient_scope() {
            return Ok(false);
        }
        let challenge = refusal.bearer();
        // The server may have moved to another authorization server: discover every time.
        let mut found = discovery::discover(&self.fetcher, &self.server, challenge).await?;
        found.dpop_wanted |= refusal.challenges.iter().any(|c| c.is_scheme("DPoP"));
        let moved = flow
            .tokens
            .as_ref()
            .is_some_and(|t| t.issuer != found.issuer());
        if moved {
            tracing::debug!(issuer = found.issuer(), "the authorization server changed");
            flow.tokens = None;
            self.store.remove_tokens(&self.key)?;
        }
        flow.found = Some(found);
        if refusal.is_insufficient_scope() {
            let mut scopes = flow.requested.clone();
            if let Some(tokens) = &flow.tokens {
                scopes.extend(tokens.scopes.iter().cloned());
            }
            scopes.extend(
                challenge
                    .and_then(|c| c.get("scope"))
                    .map(split_scopes)
                    .unwrap_or_default(),
            );
            let scopes = split_scopes(&scopes.join(" "));
            self.obtain(&mut flow, scopes).await?;
            return Ok(true);
        }
        if refusal.rejected.is_some()
            && flow
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some())
        {
            match self.refresh(&mut flow).await {
                Ok(()) => return Ok(true),
                Err(error) => tracing::debug!(%error, "refreshing after a 401 failed"),
            }
        }
        let scopes = self.select_scopes(&flow, challenge);
        self.obtain(&mut flow, scopes).await?;
        Ok(true)
    }

    /// The scopes of a first authorization.
    fn select_scopes(&self, flow: &Flow, challenge: Option<&Challenge>) -> Vec<String> {
        let mut scopes = if let Some(configured) = &self.scopes {
            configured.clone()
        } else if let Some(scope) = challenge.and_then(|c| c.get("scope")) {
            split_scopes(scope)
        } else {
            flow.found
                .as_ref()
                .and_then(|f| f.resource_metadata.as_ref())
                .and_then(|m| m.scopes_supported.clone())
                .unwrap_or_default()
        };
        let offer_offline = self.offline_access
            && matches!(self.grant, Grant::AuthorizationCode(_))
            && flow
                .found
                .as_ref()
                .is_some_and(|f| f.server.supports_scope(OFFLINE_ACCESS));
        if offer_offline && !scopes.iter().any(|s| s == OFFLINE_ACCESS) {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        scopes
    }

    /// Runs the grant for `scopes` and keeps the token.
    async fn obtain(&self, flow: &mut Flow, scopes: Vec<String>) -> Result<(), Error> {
        let found = flow
            .found
            .clone()
            .ok_or_else(|| Error::Auth("no authorization server was discovered".into()))?;
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        let response = match &self.grant {
            Grant::AuthorizationCode(handler) => {
                self.authorization_code(&found, handler.as_ref(), scope.as_deref())
                    .await?
            }
            Grant::ClientCredentials => {
                let client = self
                    .client(&found, None, &["client_credentials"], scope.as_deref())
                    .await?;
                let mut form = Form::new();
                form.add("grant_type", "client_credentials")
                    .add_opt("scope", scope.clone())
                    .add("resource", found.resource.clone());
                self.token_endpoint(&found, &client)?.request(form).await?
            }
            Grant::JwtBearer(assertion) => {
                let client = self
                    .client(&found, None, &[JWT_BEARER], scope.as_deref())
                    .await?;
                let mut form = Form::new();
                form.add("grant_type", JWT_BEARER)
                    .add("assertion", assertion.expose())
                    .add_opt("scope", scope.clone())
                    .add("resource", found.resource.clone());
                self.token_endpoint(&found, &client)?.request(form).await?
            }
            Grant::Enterprise(idp) => self.enterprise(&found, idp, scope.as_deref()).await?,
        };
        self.keep(flow, &found, response, scopes, false);
        Ok(())
    }

    /// Keeps a token response: in memory first (a refresh token may be spent already), then in
    /// the store (a failure there is logged: the token is still good). `refreshed` carries the
    /// previous refresh token over when the server did not rotate it.
    fn keep(
        &self,
        flow: &mut Flow,
        found: &Discovered,
        response: TokenResponse,
        requested: Vec<String>,
        refreshed: bool,
    ) {
        let previous_refresh = flow
            .tokens
            .take()
            .and_then(|t| t.refresh_token)
            .filter(|_| refreshed);
        let tokens = StoredTokens {
            issuer: found.issuer().to_owned(),
            access_token: response.access_token,
            token_type: response.token_type,
            refresh_token: response.refresh_token.or(previous_refresh),
            expires_at: response.expires_at,
            scopes: response
                .scope
                .as_deref()
                .map(split_scopes)
                .unwrap_or_else(|| requested.clone()),
        };
        if let Err(error) = self.store.save_tokens(&self.key, &tokens) {
            tracing::warn!(%error, "the token could not be stored; it is kept in memory");
        }
        flow.tokens = Some(tokens);
        flow.requested = requested;
    }

    /// The client id at `found`'s authorization server: stored, or obtained and stored.
    async fn client(
        &self,
        found: &Discovered,
        redirect_uri: Option<&str>,
        grant_types: &[&str],
        scope: Option<&str>,
    ) -> Result<RegisteredClient, Error> {
        let given_in_advance = self.identity.pre_registered.is_some()
            || self.identity.initial_access_token.is_some()
            || !matches!(self.grant, Grant::AuthorizationCode(_));
        if given_in_advance {
            self.check_bound_issuer(found.issuer())?;
        }
        if let Some(client) = self.store.client(found.issuer())?
            && client_fits(&client, redirect_uri)
        {
            return Ok(client);
        }
        let wanted = Wanted {
            redirect_uri,
            grant_types,
            scope,
        };
        let client = registration::register(&self.fetcher, &self.identity, found, &wanted).await?;
        self.store.save_client(found.issuer(), &client)?;
        Ok(client)
    }

    /// Credentials given in advance (a client secret, a key, an assertion, an initial access
    /// token) go to one authorization server only: the one named with
    /// [`OAuthClientBuilder::issuer`], else the first the MCP server sends them to.
    fn check_bound_issuer(&self, issuer: &str) -> Result<(), Error> {
        let mut bound = self
            .bound_issuer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match bound.as_deref() {
            Some(expected) if expected != issuer => Err(Error::Auth(format!(
                "the MCP server sends this client to {issuer}, but its credentials are for \
                 {expected}; not sent"
            ))),
            Some(_) => Ok(()),
            None => {
                *bound = Some(issuer.to_owned());
                Ok(())
            }
        }
    }

    /// How `client` authenticates at `found`'s token endpoint.
    fn token_endpoint<'a>(
        &'a self,
        found: &'a Discovered,
        client: &'a RegisteredClient,
    ) -> Result<TokenEndpoint<'a>, Error> {
        let supported = found
            .server
            .token_endpoint_auth_methods_supported
            .as_deref();
        let offers = |method: &str| supported.is_none_or(|list| list.iter().any(|m| m == method));
        let auth = if let Some(key) = &self.private_key {
            ClientAuth::PrivateKeyJwt(Arc::clone(key))
        } else if let Some(secret) = &client.client_secret {
            match client.token_endpoint_auth_method.as_deref() {
                Some("client_secret_post") => ClientAuth::SecretPost(secret.clone()),
                Some("client_secret_basic") => ClientAuth::SecretBasic(secret.clone()),
                Some("none") => ClientAuth::None,
                _ if offers("client_secret_basic") => ClientAuth::SecretBasic(secret.clone()),
                _ if offers("client_secret_post") => ClientAuth::SecretPost(secret.clone()),
                _ => ClientAuth::SecretBasic(secret.clone()),
            }
        } else {
            ClientAuth::None
        };
        tracing::debug!(method = auth.name(), "token endpoint authentication");
        Ok(TokenEndpoint {
            fetcher: &self.fetcher,
            url: found.endpoint("token")?,
            issuer: found.issuer(),
            client_id: &client.client_id,
            auth,
            dpop: self.dpop_for(found),
        })
    }

    /// The authorization code grant with PKCE.
    async fn authorization_code(
        &self,
        found: &Discovered,
        handler: &dyn AuthorizationHandler,
        scope: Option<&str>,
    ) -> Result<TokenResponse, Error> {
        let s256 = found
            .server
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
        if !s256 {
            return Err(Error::Auth(format!(
                "{} does not offer PKCE with S256; not authorizing there",
                found.issuer()
            )));
        }
        let redirect_uri = handler.redirect_uri();
        let client = self
            .client(
                found,
                Some(&redirect_uri),
                &["authorization_code", "refresh_token"],
                scope,
            )
            .await?;
        let pkce = Pkce::new()?;
        let state = random(32)?;
        let endpoint = found.endpoint("authorization")?.to_string();
        let mut query = Form::new();
        query
            .add("response_type", "code")
            .add("client_id", client.client_id.clone())
            .add("redirect_uri", redirect_uri.clone())
            .add("code_challenge", pkce.challenge.clone())
            .add("code_challenge_method", "S256")
            .add("state", state.clone())
            .add_opt("scope", scope)
            .add("resource", found.resource.clone());
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{separator}{}", query.encode());
        let callback = handler
            .authorize(AuthorizationRequest {
                url: &url,
                fetcher: &self.fetcher,
            })
            .await?;
        check_callback(found, &callback, &state)?;
        let code = callback
            .code
            .ok_or_else(|| Error::Auth("the authorization redirect carries no code".into()))?;
        let mut form = Form::new();
        form.add("grant_type", "authorization_code")
            .add("code", code)
            .add("redirect_uri", redirect_uri)
            .add("code_verifier", pkce.verifier.expose())
            .add("resource", found.resource.clone());
        Ok(self.token_endpoint(found, &client)?.request(form).await?)
    }

    /// Refreshes the current token (keeping a refresh token the server did not rotate).
    async fn refresh(&self, flow: &mut Flow) -> Result<(), Error> {
        let tokens = flow
            .tokens
            .clone()
            .ok_or_else(|| Error::Auth("nothing to refresh".into()))?;
        let refresh_token = tokens
            .refresh_token
            .clone()
            .ok_or_else(|| Error::Auth("no refresh token".into()))?;
        if flow.found.is_none() {
            flow.found = Some(discovery::discover(&self.fetcher, &self.server, None).await?);
        }
        let found = flow
            .found
            .clone()
            .ok_or_else(|| Error::Auth("no authorization server".into()))?;
        if found.issuer() != tokens.issuer {
            return Err(Error::Auth(
                "the refresh token is from another authorization server".into(),
            ));
        }
        let client = self
            .store
            .client(found.issuer())?
            .or_else(|| self.identity.pre_registered.clone())
            .ok_or_else(|| Error::Auth("no client registered for the refresh".into()))?;
        let mut form = Form::new();
        form.add("grant_type", "refresh_token")
            .add("refresh_token", refresh_token.expose())
            .add("resource", found.resource.clone());
        let response = match self.token_endpoint(&found, &client)?.request(form).await {
            Ok(response) => response,
            Err(error) => {
                // A refresh token the server refused is dead: do not try it again.
                if error.refused()
                    && let Some(tokens) = &mut flow.tokens
                {
                    tokens.refresh_token = None;
                }
                return Err(error.into());
            }
        };
        let requested = flow.requested.clone();
        let requested = if requested.is_empty() {
            tokens.scopes.clone()
        } else {
            requested
        };
        self.keep(flow, &found, response, requested, true);
        Ok(())
    }

    /// Enterprise-managed authorization: the ID token for an identity assertion grant at the
    /// identity provider (RFC 8693), then that grant for a token at the authorization server
    /// (RFC 7523).
    async fn enterprise(
        &self,
        found: &Discovered,
        idp: &EnterpriseIdp,
        scope: Option<&str>,
    ) -> Result<TokenResponse, Error> {
        let idp_endpoint: Uri = idp.token_endpoint.parse().map_err(|_| {
            Error::Auth(format!(
                "invalid IdP token endpoint {:?}",
                idp.token_endpoint
            ))
        })?;
        let exchange = TokenEndpoint {
            fetcher: &self.fetcher,
            url: idp_endpoint,
            issuer: &idp.token_endpoint,
            client_id: &idp.client_id,
            auth: idp
                .client_secret
                .clone()
                .map_or(ClientAuth::None, ClientAuth::SecretBasic),
            dpop: None,
        };
        let mut form = Form::new();
        form.add("grant_type", TOKEN_EXCHANGE)
            .add("requested_token_type", ID_JAG)
            .add("audience", found.issuer())
            .add("resource", found.resource.clone())
            .add("subject_token", idp.id_token.expose())
            .add("subject_token_type", ID_TOKEN)
            .add_opt("scope", scope);
        let grant = exchange.request(form).await?;
        if grant
            .issued_token_type
            .as_deref()
            .is_some_and(|t| t != ID_JAG)
        {
            return Err(Error::Auth(
                "the identity provider issued something other than an identity assertion grant"
                    .into(),
            ));
        }
        let client = self.client(found, None, &[JWT_BEARER], scope).await?;
        let mut form = Form::new();
        form.add("grant_type", JWT_BEARER)
            .add("assertion", grant.access_token.expose())
            .add_opt("scope", scope)
            .add("resource", found.resource.clone());
        Ok(self.token_endpoint(found, &client)?.request(form).await?)
    }
}

/// The redirect's checks, before anything in it is acted on: `state` (exactly the one sent),
/// then RFC 9207 `iss` (required and equal when the server advertises it, equal when present
/// anyway), then an error the server reported.
fn check_callback(found: &Discovered, callback: &Callback, state: &str) -> Result<(), Error> {
    if callback.state.as_deref() != Some(state) {
        return Err(Error::Auth(
            "the authorization redirect's state does not match the request".into(),
        ));
    }
    let advertised = found.server.authorization_response_iss_parameter_supported;
    match &callback.iss {
        None if advertised => {
            return Err(Error::Auth(format!(
                "{} advertises the iss parameter, and the redirect has none",
                found.issuer()
            )));
        }
        Some(iss) if iss != found.issuer() => {
            return Err(Error::Auth(format!(
                "the redirect comes from issuer {iss:?}, not {:?} (mix-up?)",
                found.issuer()
            )));
        }
        _ => {}
    }
    if let Some(error) = &callback.error {
        return Err(Error::Auth(format!(
            "the authorization was refused: {error}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
