//! [`JwtBearer`]: bearer JWT access tokens checked against keys the server holds (a secret, or
//! a JWK Set given in the configuration) or fetches ([`RemoteJwks`]: a JWK Set URL, cached),
//! with the claim rules of RFC 7519, RFC 9068 and the MCP authorization spec.
//!
//! The rules, each a refusal (401 `invalid_token`) when broken:
//! - the signature, by [`jose::verify`](crate::auth::jose::verify) (algorithm pinned by the
//!   key, no `none`, no `crit`, a size cap);
//! - `exp` is required and a number, and not past (with the leeway); `nbf` and `iat`, when
//!   present, are numbers (a string date never passes as "no date": the CVE-2026-25537 class),
//!   and `nbf` is not in the future;
//! - `iss` equals the configured issuer, when one is configured;
//! - `aud` (a string or an array) contains this server's audience, always: a token minted for
//!   another resource is refused (no passthrough);
//! - `typ`, when a type is required (`at+jwt`, RFC 9068).
//!
//! Scopes come from the `scope` claim (space separated) or the `scp` array, or a claim named in
//! the configuration; the subject from `sub` (else `client_id`); the client from `client_id` or
//! `azp`. Every other claim lands in [`AuthInfo::claims`].

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::AUTHORIZATION;
use serde_json::{Map, Value};

use super::jwks::RemoteJwks;
use super::{Authenticator, Rejection};
use crate::Error;
use crate::auth::AuthInfo;
use crate::auth::jose::{self, VerifyingKey};
use crate::peer::BoxFuture;
use cache::TokenCache;

/// Where the granted scopes are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeClaim {
    /// `scope` as a space-separated string, else `scp` as an array (or string). The default.
    Standard,
    /// This claim, as a space-separated string or an array (`permissions`, `roles`).
    Named(String),
}

/// Bearer JWT authentication with keys held by the server.
///
/// ```
/// use barrel_mcp::auth::server::JwtBearer;
///
/// let jwks = serde_json::json!({"keys": [{
///     "kty": "EC", "crv": "P-256", "kid": "k1",
///     "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
///     "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
/// }]});
/// let auth = JwtBearer::from_jwks(&jwks)?
///     .issuer("https://auth.example.com")
///     .audience("https://mcp.example.com/mcp");
/// # drop(auth);
/// # Ok::<(), barrel_mcp::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct JwtBearer {
    keys: Keys,
    issuer: Option<String>,
    audience: Option<String>,
    leeway: Duration,
    scope_claim: ScopeClaim,
    token_type: Option<String>,
    max_token_len: usize,
    /// Tokens verified lately (a clone starts empty).
    cache: TokenCache,
}

impl JwtBearer {
    /// Tokens signed with one of `keys`.
    pub fn with_keys(keys: Vec<VerifyingKey>) -> Result<Self, Error> {
        if keys.is_empty() {
            return Err(Error::Definition("JwtBearer needs at least one key".into()));
        }
        Ok(Self::new(Keys::Held(Arc::new(keys))))
    }

    /// Tokens signed with a key of the JWK Set at `url` (`https://`, or `http://` on loopback),
    /// fetched and cached as [`RemoteJwks::new`] says.
    pub fn from_jwks_url(url: &str) -> Result<Self, Error> {
        Ok(Self::with_remote_jwks(Arc::new(RemoteJwks::new(url)?)))
    }

    /// Tokens signed with a key of `jwks` (keep a clone of the `Arc` to read
    /// [`RemoteJwks::fetches`]).
    pub fn with_remote_jwks(jwks: Arc<RemoteJwks>) -> Self {
        Self::new(Keys::Remote(jwks))
    }

    fn new(keys: Keys) -> Self {
        Self {
            keys,
            issuer: None,
            audience: None,
            leeway: Duration::from_secs(60),
            scope_claim: ScopeClaim::Standard,
            token_type: None,
            max_token_len: 8 * 1024,
            cache: TokenCache::new(1024, Duration::from_secs(60)),
        }
    }

    /// Tokens signed with an HMAC secret (HS256, HS384 or HS512; the secret at least as long as
    /// the hash).
    pub fn hmac(secret: &[u8], algorithm: jose::Algorithm) -> Result<Self, Error> {
        Self::with_keys(vec![VerifyingKey::hmac(secret, algorithm, None)?])
    }

    /// Tokens signed with a key of a JWK Set document (`{"keys": [...]}`), held in the
    /// configuration (at most 64 keys).
    pub fn from_jwks(jwks: &Value) -> Result<Self, Error> {
        Self::with_keys(VerifyingKey::from_jwks(jwks, 64)?)
    }

    /// The issuer tokens must name in `iss`. Default: any issuer (set it whenever the keys are
    /// shared with other issuers).
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        // Other rules: what was verified under the old ones is forgotten.
        self.cache = self.cache.clone();
        self
    }

    /// The audience tokens must name in `aud`: this server's resource URL (RFC 8707). Required:
    /// [`Authenticator::authenticate`] refuses every token until it is set.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        // Other rules: what was verified under the old ones is forgotten.
        self.cache = self.cache.clone();
        self
    }

    /// How far clocks may disagree when checking `exp` and `nbf`. Default 60 s.
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        // Other rules: what was verified under the old ones is forgotten.
        self.cache = self.cache.clone();
        self
    }

    /// Where scopes are read from. Default [`ScopeClaim::Standard`].
    #[must_use]
    pub fn scope_claim(mut self, claim: ScopeClaim) -> Self {
        self.scope_claim = claim;
        // Other rules: what was verified under the old ones is forgotten.
        self.cache = self.cache.clone();
        self
    }

    /// The `typ` header tokens must carry (`at+jwt` for RFC 9068 access tokens; compared
    /// case-insensitively, with or without `application/`). Default: not checked.
    #[must_use]
    pub fn token_type(mut self, typ: impl Into<String>) -> Self {
        self.token_type = Some(typ.into());
        // Other rules: what was verified under the old ones is forgotten.
        self.cache = self.cache.clone();
        self
    }

    /// The longest token accepted, in bytes. Default 8 KiB.
    #[must_use]
    pub fn max_token_len(mut self, max: usize) -> Self {
        self.max_token_len = max;
        // Other rules: what was verified under the old ones is forgotten.
        self.cache = self.cache.clone();
        self
    }

    /// Keeps up to `capacity` verified tokens for up to `ttl` (defaults 1,024 and 60 s; zero
    /// turns the cache off): a client sending the same token with every request pays for its
    /// signature check once. A cached token is still refused once it expires (`exp` and
    /// `nbf` are checked on every hit, with the leeway); a key withdrawn from a remote JWK Set
    /// stops vouching for its cached tokens within `ttl`.
    #[must_use]
    pub fn cache(mut self, capacity: usize, ttl: Duration) -> Self {
        self.cache = TokenCache::new(capacity, ttl);
        self
    }

    /// Checks one token and turns its claims into an [`AuthInfo`], with the keys held (for a
    /// [`RemoteJwks`], those in its cache: [`Authenticator::authenticate`] fetches them).
    pub fn check(&self, token: &str, now: SystemTime) -> Result<AuthInfo, Rejection> {
        let keys = match &self.keys {
            Keys::Held(keys) => Arc::clone(keys),
            Keys::Remote(jwks) => jwks.cached(),
        };
        let verified = jose::verify(token, &keys, self.max_token_len)
            .map_err(|e| Rejection::invalid(e.to_string()))?;
        self.claims(verified, now)
    }

    /// Checks one token against a remote JWK Set: the cached keys, and when none has the
    /// token's `kid`, the keys fetched again (within the set's floor).
    async fn check_remote(
        &self,
        jwks: &RemoteJwks,
        token: &str,
        now: SystemTime,
    ) -> Result<AuthInfo, Rejection> {
        let keys = jwks.keys().await?;
        let verified = match jose::verify(token, &keys, self.max_token_len) {
            // A new key: its `kid` is unknown, or (a token without one) no key checks it.
            Err(error @ (jose::JoseError::NoKey | jose::JoseError::Signature))
                if matches!(error, jose::JoseError::NoKey) || !names_a_kid(token) =>
            {
                match jwks.keys_after_unknown_kid(&keys).await? {
                    Some(newer) => jose::verify(token, &newer, self.max_token_len),
                    None => Err(error),
                }
            }
            other => other,
        }
        .map_err(|e| Rejection::invalid(e.to_string()))?;
        self.claims(verified, now)
    }

    /// The claim rules, on a token whose signature was checked.
    fn claims(&self, verified: jose::Verified, now: SystemTime) -> Result<AuthInfo, Rejection> {
        let Some(audience) = &self.audience else {
            return Err(Rejection::invalid("the server has no audience configured"));
        };
        if let Some(expected) = &self.token_type {
            let typ = verified
                .header
                .get("typ")
                .and_then(Value::as_str)
                .unwrap_or("");
            let bare = |t: &str| {
                let t = t.to_ascii_lowercase();
                t.strip_prefix("application/")
                    .map(str::to_owned)
                    .unwrap_or(t)
            };
            if bare(typ) != bare(expected) {
                return Err(Rejection::invalid("wrong token type"));
            }
        }
        let mut claims = verified.claims;
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let leeway = self.leeway.as_secs_f64();
        let exp = numeric(&claims, "exp")?.ok_or_else(|| Rejection::invalid("no exp"))?;
        if now > exp + leeway {
            return Err(Rejection::invalid("the token has expired"));
        }
        if let Some(nbf) = numeric(&claims, "nbf")?
            && now + leeway < nbf
        {
            return Err(Rejection::invalid("the token is not valid yet"));
        }
        numeric(&claims, "iat")?;
        let issuer = match claims.remove("iss") {
            None => None,
            Some(Value::String(iss)) => Some(iss),
            Some(_) => return Err(Rejection::invalid("iss is not a string")),
        };
        if let Some(expected) = &self.issuer
            && issuer.as_ref() != Some(expected)
        {
            return Err(Rejection::invalid("wrong issuer"));
        }
        let audiences = match claims.remove("aud") {
            Some(Value::String(aud)) => vec![aud],
            Some(Value::Array(list)) => list
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if !audiences.contains(audience) {
            return Err(Rejection::invalid("the token is not for this server (aud)"));
        }
        let scopes = self.scopes(&mut claims);
        let client_id =
            take_string(&mut claims, "client_id").or_else(|| take_string(&mut claims, "azp"));
        let subject = take_string(&mut claims, "sub")
            .or_else(|| client_id.clone())
            .ok_or_else(|| Rejection::invalid("no sub"))?;
        let expires_at = UNIX_EPOCH + Duration::from_secs_f64(exp.max(0.0));
        let mut info = AuthInfo::new(subject)
            .with_scopes(scopes)
            .with_audience(audiences)
            .with_expires_at(expires_at);
        info.issuer = issuer;
        info.client_id = client_id;
        info.claims = claims;
        Ok(info)
    }

    fn scopes(&self, claims: &mut Map<String, Value>) -> Vec<String> {
        let words = |value: Value| -> Vec<String> {
            match value {
                Value::String(text) => text.split_whitespace().map(str::to_owned).collect(),
                Value::Array(list) => list
                    .into_iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            }
        };
        match &self.scope_claim {
            ScopeClaim::Standard => claims
                .remove("scope")
                .or_else(|| claims.remove("scp"))
                .map(words)
                .unwrap_or_default(),
            ScopeClaim::Named(name) => claims.remove(name).map(words).unwrap_or_default(),
        }
    }
}

/// True when the token's (unverified) header names a key.
fn names_a_kid(token: &str) -> bool {
    jose::peek_header(token).is_some_and(|header| header.contains_key("kid"))
}

/// A time claim: absent, or a JSON number (seconds). Anything else is a refusal: a string date
/// must never read as "no date".
fn numeric(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, Rejection> {
    match claims.get(name) {
        None => Ok(None),
        Some(value) => value
            .as_f64()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| Rejection::invalid(format!("{name} is not a number"))),
    }
}

fn take_string(claims: &mut Map<String, Value>, name: &str) -> Option<String> {
    match claims.remove(name) {
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            claims.insert(name.to_owned(), other);
            None
        }
        None => None,
    }
}

/// The bearer token of `Authorization: Bearer <token>`: `Ok(None)` without the header or with
/// another scheme (another authenticator may read it); malformed when the header repeats or the
/// token is empty or not visible ASCII.
pub(crate) fn bearer_token(head: &http::request::Parts) -> Result<Option<&str>, Rejection> {
    let mut values = head.headers.get_all(AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Rejection::malformed("more than one Authorization header"));
    }
    let text = value
        .to_str()
        .map_err(|_| Rejection::malformed("the Authorization header is not visible ASCII"))?;
    let Some((scheme, token)) = text.split_once(' ') else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim();
    if token.is_empty() || token.contains(' ') {
        return Err(Rejection::malformed(
            "expected Authorization: Bearer <token>",
        ));
    }
    Ok(Some(token))
}

/// Where the keys come from.
#[derive(Debug, Clone)]
enum Keys {
    Held(Arc<Vec<VerifyingKey>>),
    Remote(Arc<RemoteJwks>),
}

impl JwtBearer {
    /// Remembers a token that passed.
    fn remember(&self, token: &str, info: &Arc<AuthInfo>) {
        let expires = info
            .expires_at
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64());
        let not_before = info.claims.get("nbf").and_then(Value::as_f64);
        if let Some(expires) = expires {
            self.cache.put(token, info, not_before, expires);
        }
    }
}

impl Authenticator for JwtBearer {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        super::unshared(self.authenticate_shared(head))
    }

    fn authenticate_shared<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<Arc<AuthInfo>>, Rejection>> {
        let token = match bearer_token(head) {
            Ok(Some(token)) => token,
            Ok(None) => return Box::pin(std::future::ready(Ok(None))),
            Err(rejection) => return Box::pin(std::future::ready(Err(rejection))),
        };
        let now = SystemTime::now();
        if let Some(info) = self.cache.get(token, now, self.leeway) {
            return Box::pin(std::future::ready(Ok(Some(info))));
        }
        match &self.keys {
            Keys::Held(_) => {
                let verdict = self.check(token, now).map(Arc::new);
                if let Ok(info) = &verdict {
                    self.remember(token, info);
                }
                Box::pin(std::future::ready(verdict.map(Some)))
            }
            Keys::Remote(jwks) => Box::pin(async move {
                if self.audience.is_none() {
                    return Err(Rejection::invalid("the server has no audience configured"));
                }
                let info = Arc::new(self.check_remote(jwks, token, now).await?);
                self.remember(token, &info);
                Ok(Some(info))
            }),
        }
    }
}

mod cache;
#[cfg(test)]
mod tests;
