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
use std::time::Duration;

use http::Uri;
use tokio::sync::Mutex;

use super::{Credential, Outgoing, Refusal, TokenSource};
use crate::Error;
use crate::auth::Secret;
use crate::auth::jose::SigningKey;
use crate::peer::BoxFuture;

mod builder;
mod client;
pub mod discovery;
mod dpop;
mod file_store;
mod grant;
mod handler;
mod loopback;
mod obtain;
mod pkce;
mod registration;
mod session;
mod store;

pub use crate::auth::fetch::FetchLimits;
pub use builder::{EnterpriseIdp, OAuthClientBuilder};
pub use file_store::FileStore;
pub use handler::{AuthorizationHandler, AuthorizationRequest, Callback, Headless};
pub use loopback::{LoopbackRedirect, open_browser};
pub use registration::ClientIdentity;
pub use store::{MemoryStore, RegisteredClient, StoredTokens, TokenStore};

use crate::auth::fetch::Fetcher;
use builder::Grant;
use discovery::Discovered;
use dpop::Dpop;

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

fn split_scopes(text: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in text.split_ascii_whitespace() {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    scopes
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
