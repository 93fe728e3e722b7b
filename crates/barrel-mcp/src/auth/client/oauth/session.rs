//! The client's side of each request: presenting the token (with a DPoP proof when it is
//! bound), refreshing it, and what a refusal leads to (a DPoP nonce, step-up, a new grant).

use std::time::SystemTime;

use super::dpop::{keep_nonce, nonce};
use super::{Credential, Flow, Inner, Outgoing, Refusal, discovery, presented, split_scopes};
use crate::Error;
use crate::auth::form::Form;

impl Inner {
    pub(super) async fn authorization(
        &self,
        request: Outgoing<'_>,
    ) -> Result<Option<Credential>, Error> {
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

    pub(super) async fn refused(&self, refusal: &Refusal) -> Result<bool, Error> {
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
}
