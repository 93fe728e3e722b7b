//! Getting a token: the scopes asked for, the grant the client was built for (the
//! authorization code grant with PKCE, client credentials, JWT bearer, enterprise-managed), and
//! keeping the response.

use http::Uri;

use super::builder::{EnterpriseIdp, Grant};
use super::discovery::Discovered;
use super::grant::{ClientAuth, TokenEndpoint, TokenResponse};
use super::pkce::{Pkce, random};
use super::{
    AuthorizationHandler, AuthorizationRequest, Flow, Inner, StoredTokens, check_callback,
    split_scopes,
};
use crate::Error;
use crate::auth::Challenge;
use crate::auth::form::Form;

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const OFFLINE_ACCESS: &str = "offline_access";

impl Inner {
    /// The scopes of a first authorization.
    pub(super) fn select_scopes(&self, flow: &Flow, challenge: Option<&Challenge>) -> Vec<String> {
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
    pub(super) async fn obtain(&self, flow: &mut Flow, scopes: Vec<String>) -> Result<(), Error> {
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
    pub(super) fn keep(
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
