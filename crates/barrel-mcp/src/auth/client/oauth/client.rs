//! The client at an authorization server: its client id (stored, or registered), the one
//! issuer credentials given in advance go to, and how it authenticates at the token endpoint.

use std::sync::Arc;

use super::builder::Grant;
use super::discovery::Discovered;
use super::dpop::{DPOP_ALG, Dpop};
use super::grant::{ClientAuth, TokenEndpoint};
use super::registration::{self, Wanted};
use super::{Inner, RegisteredClient};
use crate::Error;

impl Inner {
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

    /// The client id at `found`'s authorization server: stored, or obtained and stored.
    pub(super) async fn client(
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
    /// [`OAuthClientBuilder::issuer`](super::OAuthClientBuilder::issuer), else the first the
    /// MCP server sends them to.
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
    pub(super) fn token_endpoint<'a>(
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
}

/// A stored registration still serves when it was made for this redirect URI (a login on
/// another loopback port registers again).
fn client_fits(client: &RegisteredClient, redirect_uri: Option<&str>) -> bool {
    match (&client.redirect_uri, redirect_uri) {
        (Some(registered), Some(wanted)) => registered == wanted,
        _ => true,
    }
}
