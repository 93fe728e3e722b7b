//! [`Introspection`]: opaque bearer tokens checked by asking the authorization server
//! (RFC 7662 token introspection).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::header::AUTHORIZATION;
use http::{HeaderMap, Uri};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::jwt::bearer_token;
use super::{Authenticator, Rejection};
use crate::Error;
use crate::auth::fetch::{FetchLimits, Fetcher};
use crate::auth::form::{Form, basic_credentials};
use crate::auth::net::NetPolicy;
use crate::auth::{AuthInfo, Secret};
use crate::peer::BoxFuture;
use crate::transport::http_client::tls::ClientTls;

/// [`Introspection`]: opaque bearer tokens checked by asking the authorization server
/// (RFC 7662 token introspection).
///
/// The token is POSTed to the introspection endpoint (`token`, `token_type_hint=access_token`)
/// with this resource server's credentials (HTTP Basic). `active: true` makes the caller from the
/// answer's `sub`, `client_id`, `scope`, `iss`, `aud` and `exp`; anything else is a refusal
/// (401). The answer must name this server in `aud` (the audience is required), and a
/// configured issuer in `iss`. An endpoint that cannot be reached, or answers anything but
/// 200 with JSON, is 503, never 401.
///
/// Answers are cached by the SHA-256 of the token, for the cache TTL (default 60 s) but never
/// past the token's `exp`: active ones and refusals apart, each at most `max_cached` entries
/// (default 10,000; when full, expired entries go first, then that whole cache), so a flood of
/// junk tokens never evicts a good one. A token revoked at the authorization server keeps
/// working here for at most the TTL. A DPoP-bound answer (`cnf.jkt`) is refused: this
/// authenticator reads bearer tokens.
pub struct Introspection {
    endpoint: Uri,
    client_id: String,
    client_secret: Secret,
    audience: Option<String>,
    issuer: Option<String>,
    ttl: Duration,
    max_cached: usize,
    fetcher: Fetcher,
    /// Answers for active tokens, and (apart, so junk tokens cannot evict them) refusals.
    active: Mutex<HashMap<[u8; 32], Cached>>,
    refused: Mutex<HashMap<[u8; 32], Cached>>,
}

struct Cached {
    info: Option<AuthInfo>,
    until: Instant,
}

impl std::fmt::Debug for Introspection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl Introspection {
    /// Asks `endpoint`, authenticating as `client_id` with `client_secret`.
    pub fn new(
        endpoint: &str,
        client_id: impl Into<String>,
        client_secret: impl Into<Secret>,
    ) -> Result<Self, Error> {
        Self::with_limits(
            endpoint,
            client_id,
            client_secret,
            FetchLimits::default(),
            false,
        )
    }

    /// Like [`new`](Self::new), with the fetch limits, and `allow_http` for `http://` off
    /// loopback.
    pub fn with_limits(
        endpoint: &str,
        client_id: impl Into<String>,
        client_secret: impl Into<Secret>,
        limits: FetchLimits,
        allow_http: bool,
    ) -> Result<Self, Error> {
        let endpoint: Uri = endpoint.parse().map_err(|e| {
            Error::Definition(format!("invalid introspection URL {endpoint:?}: {e}"))
        })?;
        let fetcher = Fetcher::new(NetPolicy::PRIVATE, limits, allow_http, &ClientTls::new()?);
        fetcher
            .check(&endpoint)
            .map_err(|e| Error::Definition(e.to_string()))?;
        Ok(Self {
            endpoint,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            audience: None,
            issuer: None,
            ttl: Duration::from_secs(60),
            max_cached: 10_000,
            fetcher,
            active: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
        })
    }

    /// The audience an active token's `aud` must contain (this server's resource URL).
    /// Required, as for `JwtBearer`: until it is set every token is refused, so a token issued
    /// for another resource never passes here.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// The issuer an active token's `iss` must be, when the answer names one.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// How long an answer is reused. Default 60 s; zero asks every time.
    #[must_use]
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The most answers cached. Default 10,000.
    #[must_use]
    pub fn max_cached(mut self, max: usize) -> Self {
        self.max_cached = max;
        self
    }

    async fn introspect(&self, token: &str) -> Result<AuthInfo, Rejection> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(cached) = self.lookup(&digest) {
            return cached.ok_or_else(|| Rejection::invalid("the token is not active"));
        }
        let mut form = Form::new();
        form.add("token", token)
            .add("token_type_hint", "access_token");
        let mut headers = HeaderMap::new();
        let value = basic_credentials(&self.client_id, self.client_secret.expose())
            .ok_or_else(|| Rejection::unavailable("the introspection credentials are invalid"))?;
        headers.insert(AUTHORIZATION, value);
        let fetched = self
            .fetcher
            .post_form(&self.endpoint, &form, headers)
            .await
            .map_err(|e| Rejection::unavailable(e.to_string()))?;
        if !fetched.status.is_success() {
            return Err(Rejection::unavailable(format!(
                "the introspection endpoint answered {}",
                fetched.status
            )));
        }
        let answer = fetched
            .json()
            .ok_or_else(|| Rejection::unavailable("the introspection answer is not JSON"))?;
        let verdict = self.judge(&answer);
        let exp = answer.get("exp").and_then(Value::as_u64);
        self.remember(digest, verdict.as_ref().ok().cloned(), exp);
        verdict
    }

    /// An introspection answer turned into a caller, or a refusal.
    fn judge(&self, answer: &Value) -> Result<AuthInfo, Rejection> {
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(Rejection::invalid("the token is not active"));
        }
        // A token bound to a DPoP key (RFC 9449 §6.2) presented as a bearer token is a replay.
        if answer.pointer("/cnf/jkt").is_some() {
            return Err(Rejection::invalid(
                "a DPoP-bound token presented as a bearer token",
            ));
        }
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if answer
            .get("exp")
            .and_then(Value::as_u64)
            .is_some_and(|exp| exp <= now)
        {
            return Err(Rejection::invalid("the token has expired"));
        }
        if let (Some(expected), Some(iss)) = (&self.issuer, text("iss"))
            && &iss != expected
        {
            return Err(Rejection::invalid("wrong issuer"));
        }
        let audiences: Vec<String> = match answer.get("aud") {
            Some(Value::String(aud)) => vec![aud.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let Some(expected) = &self.audience else {
            return Err(Rejection::invalid("the server has no audience configured"));
        };
        if !audiences.contains(expected) {
            return Err(Rejection::invalid("the token is not for this server (aud)"));
        }
        let client_id = text("client_id");
        let subject = text("sub")
            .or_else(|| client_id.clone())
            .ok_or_else(|| Rejection::invalid("the introspection answer names no subject"))?;
        let scopes = text("scope").unwrap_or_default();
        let mut info = AuthInfo::new(subject)
            .with_scopes(scopes.split_whitespace())
            .with_audience(audiences);
        info.client_id = client_id;
        info.issuer = text("iss");
        if let Some(exp) = answer.get("exp").and_then(Value::as_u64) {
            info.expires_at = UNIX_EPOCH.checked_add(Duration::from_secs(exp));
        }
        Ok(info)
    }

    fn lookup(&self, digest: &[u8; 32]) -> Option<Option<AuthInfo>> {
        let now = Instant::now();
        let found = |cache: &Mutex<HashMap<[u8; 32], Cached>>| {
            let cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
            cache
                .get(digest)
                .filter(|c| c.until > now)
                .map(|c| c.info.clone())
        };
        found(&self.active).or_else(|| found(&self.refused))
    }

    fn remember(&self, digest: [u8; 32], info: Option<AuthInfo>, exp: Option<u64>) {
        if self.ttl.is_zero() || self.max_cached == 0 {
            return;
        }
        let mut ttl = self.ttl;
        if let Some(exp) = exp {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            ttl = ttl.min(Duration::from_secs(exp.saturating_sub(now)));
        }
        let cache = if info.is_some() {
            &self.active
        } else {
            &self.refused
        };
        let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= self.max_cached {
            let now = Instant::now();
            cache.retain(|_, c| c.until > now);
            if cache.len() >= self.max_cached {
                cache.clear();
            }
        }
        cache.insert(
            digest,
            Cached {
                info,
                until: Instant::now() + ttl,
            },
        );
    }
}

impl Authenticator for Introspection {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        Box::pin(async move {
            match bearer_token(head)? {
                Some(token) => self.introspect(token).await.map(Some),
                None => Ok(None),
            }
        })
    }
}
