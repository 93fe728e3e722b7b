//! [`RemoteJwks`]: the signing keys of an authorization server, fetched from its JWK Set URL
//! and cached, for [`JwtBearer::with_remote_jwks`](super::JwtBearer::with_remote_jwks).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::Uri;

use super::Rejection;
use crate::Error;
use crate::auth::fetch::{FetchLimits, Fetcher};
use crate::auth::jose::VerifyingKey;
use crate::auth::net::NetPolicy;
use crate::transport::http_client::tls::ClientTls;

/// The most keys read from one JWK Set.
const MAX_KEYS: usize = 64;

/// [`RemoteJwks`]: the signing keys of an authorization server, fetched from its JWK Set URL
/// and cached, for [`JwtBearer::with_remote_jwks`](super::JwtBearer::with_remote_jwks).
///
/// - The keys are fetched on first use and again once they are older than the TTL (default
///   5 min).
/// - A token whose `kid` no cached key has (or, without a `kid`, that no cached key checks)
///   makes the cache fetch again at once (key rotation), but such fetches come at most once
///   per floor (default 30 s): a stream of tokens with made-up `kid`s costs the authorization
///   server one request per floor, not one per token; a genuinely new key's tokens may get 401
///   for up to one floor after a made-up one.
/// - One fetch at a time: requests that have stale keys keep using them meanwhile, the others
///   wait for it and share its result. After a failed fetch, the next waits for the floor.
/// - An outage is never a 401: with keys in the cache, they keep serving (stale) until the
///   server answers again; with none, or when a token's `kid` can only be checked by fetching,
///   the answer is 503 ([`Rejection::Unavailable`]).
/// - The fetch is bounded (1 MiB, 30 s, at most 64 keys), goes through auth's guarded HTTP
///   client, and follows no redirect to another origin. Private addresses are allowed (a JWK
///   Set is often internal); plain `http://` only on loopback unless allowed.
pub struct RemoteJwks {
    url: Uri,
    fetcher: Fetcher,
    ttl: Duration,
    floor: Duration,
    cache: Mutex<Cache>,
    /// Held while fetching, so concurrent needs make one request.
    flight: tokio::sync::Mutex<()>,
    fetches: AtomicU64,
}

#[derive(Default)]
struct Cache {
    keys: Arc<Vec<VerifyingKey>>,
    fetched_at: Option<Instant>,
    /// The last fetch made for a token no cached key could check.
    unknown_kid_at: Option<Instant>,
    /// The last fetch that failed.
    failed_at: Option<Instant>,
}

impl std::fmt::Debug for RemoteJwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteJwks")
            .field("url", &self.url)
            .field("ttl", &self.ttl)
            .field("floor", &self.floor)
            .finish_non_exhaustive()
    }
}

/// How [`RemoteJwks`] is configured.
/// Every field has a documented default.
#[derive(Debug, Clone)]
pub struct RemoteJwksConfig {
    /// How long fetched keys are used before they are fetched again. Default 5 min.
    pub ttl: Duration,
    /// The shortest time between two fetches for unknown `kid`s or after a failure. Default
    /// 30 s.
    pub floor: Duration,
    /// Size and time caps of a fetch.
    pub limits: FetchLimits,
    /// Allows `http://` off loopback (default false).
    pub allow_http: bool,
}

impl Default for RemoteJwksConfig {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            floor: Duration::from_secs(30),
            limits: FetchLimits::default(),
            allow_http: false,
        }
    }
}

fn lock(cache: &Mutex<Cache>) -> std::sync::MutexGuard<'_, Cache> {
    cache.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RemoteJwks {
    /// The JWK Set at `url` (`https://`, or `http://` on loopback), with the default TTL and
    /// floor.
    pub fn new(url: &str) -> Result<Self, Error> {
        Self::with_config(url, RemoteJwksConfig::default())
    }

    /// The JWK Set at `url` with `config`.
    pub fn with_config(url: &str, config: RemoteJwksConfig) -> Result<Self, Error> {
        let url: Uri = url
            .parse()
            .map_err(|e| Error::Definition(format!("invalid JWKS URL {url:?}: {e}")))?;
        let fetcher = Fetcher::new(
            NetPolicy::PRIVATE,
            config.limits,
            config.allow_http,
            &ClientTls::new()?,
        );
        fetcher
            .check(&url)
            .map_err(|e| Error::Definition(e.to_string()))?;
        Ok(Self {
            url,
            fetcher,
            ttl: config.ttl,
            floor: config.floor,
            cache: Mutex::new(Cache::default()),
            flight: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        })
    }

    /// How many times the JWK Set was requested so far.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The keys to check a token with: the cached ones while fresh, else fetched.
    pub(crate) async fn keys(&self) -> Result<Arc<Vec<VerifyingKey>>, Rejection> {
        if let Some(keys) = self.fresh() {
            return Ok(keys);
        }
        // While another request fetches, the keys held serve (a slow key server must not
        // hold every request up).
        let _flight = match self.flight.try_lock() {
            Ok(flight) => flight,
            Err(_) => {
                let stale = self.cached();
                if !stale.is_empty() {
                    return Ok(stale);
                }
                self.flight.lock().await
            }
        };
        if let Some(keys) = self.fresh() {
            return Ok(keys);
        }
        let (stale, may_fetch) = {
            let cache = lock(&self.cache);
            (Arc::clone(&cache.keys), self.after_floor(cache.failed_at))
        };
        if !may_fetch {
            return if stale.is_empty() {
                Err(Rejection::unavailable("the JWK Set cannot be fetched"))
            } else {
                Ok(stale)
            };
        }
        match self.fetch().await {
            Ok(keys) => Ok(keys),
            Err(why) if !stale.is_empty() => {
                tracing::warn!(url = %self.url, %why, "the JWK Set could not be fetched; using the cached keys");
                Ok(stale)
            }
            Err(why) => Err(Rejection::unavailable(why)),
        }
    }

    /// After a token's `kid` matched none of `seen`: newer keys if another request fetched
    /// them meanwhile, or a fetch unless the floor forbids it (`Ok(None)`: the token stays
    /// unknown). A failed fetch is 503: the token may be good.
    pub(crate) async fn keys_after_unknown_kid(
        &self,
        seen: &Arc<Vec<VerifyingKey>>,
    ) -> Result<Option<Arc<Vec<VerifyingKey>>>, Rejection> {
        let _flight = self.flight.lock().await;
        {
            let cache = lock(&self.cache);
            if !Arc::ptr_eq(&cache.keys, seen) {
                return Ok(Some(Arc::clone(&cache.keys)));
            }
            if !self.after_floor(cache.unknown_kid_at) || !self.after_floor(cache.failed_at) {
                return Ok(None);
            }
        }
        lock(&self.cache).unknown_kid_at = Some(Instant::now());
        self.fetch().await.map(Some).map_err(Rejection::unavailable)
    }

    /// The keys in the cache now, fresh or not (none before the first fetch).
    pub(crate) fn cached(&self) -> Arc<Vec<VerifyingKey>> {
        Arc::clone(&lock(&self.cache).keys)
    }

    fn fresh(&self) -> Option<Arc<Vec<VerifyingKey>>> {
        let cache = lock(&self.cache);
        let fresh = cache
            .fetched_at
            .is_some_and(|at| at.elapsed() < self.ttl && !cache.keys.is_empty());
        fresh.then(|| Arc::clone(&cache.keys))
    }

    /// True when `at` (a fetch of some kind) is longer ago than the floor.
    fn after_floor(&self, at: Option<Instant>) -> bool {
        at.is_none_or(|at| at.elapsed() >= self.floor)
    }

    /// Fetches the set (the caller holds the flight lock) and caches it.
    async fn fetch(&self) -> Result<Arc<Vec<VerifyingKey>>, String> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let fetched = self.fetch_once().await;
        if fetched.is_err() {
            lock(&self.cache).failed_at = Some(Instant::now());
        }
        fetched
    }

    async fn fetch_once(&self) -> Result<Arc<Vec<VerifyingKey>>, String> {
        let fetched = self
            .fetcher
            .get_json(&self.url)
            .await
            .map_err(|e| e.to_string())?;
        if !fetched.status.is_success() {
            return Err(format!("{} answered {}", self.url, fetched.status));
        }
        let set = fetched
            .json()
            .ok_or_else(|| format!("{} is not JSON", self.url))?;
        let keys =
            VerifyingKey::from_jwks(&set, MAX_KEYS).map_err(|e| format!("{}: {e}", self.url))?;
        if keys.is_empty() {
            return Err(format!("{} holds no usable key", self.url));
        }
        let keys = Arc::new(keys);
        let mut cache = lock(&self.cache);
        cache.keys = Arc::clone(&keys);
        cache.fetched_at = Some(Instant::now());
        tracing::debug!(url = %self.url, keys = keys.len(), "JWK Set fetched");
        Ok(keys)
    }
}
