//! [`BasicAuth`]: HTTP Basic (RFC 7617) against users whose passwords are stored as
//! PBKDF2-SHA256 hashes (barrel_mcp's `barrel_mcp_auth_basic` format,
//! `pbkdf2-sha256$<iterations>$<base64 salt>$<base64 hash>`).
//!
//! A check costs one PBKDF2 derivation (600,000 iterations by default, OWASP's floor for
//! PBKDF2-SHA256; barrel_mcp used 100,000): it runs on the blocking pool, at most
//! [`BasicAuth::max_concurrent`] at once, so a flood of Basic requests cannot take every core.
//! An unknown user costs the same derivation against a dummy hash, so timing does not tell which
//! users exist. Machine clients should prefer API keys or bearer tokens, which cost a hash.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::AUTHORIZATION;
use tokio::sync::Semaphore;

use super::{Authenticator, Rejection};
use crate::Error;
use crate::auth::{AuthInfo, Challenge, Secret};
use crate::peer::BoxFuture;

/// The iterations [`hash_password`] uses unless told otherwise.
pub const DEFAULT_ITERATIONS: u32 = 600_000;

/// The most iterations a stored hash may ask for (a hash from a hostile configuration must not
/// make one check take minutes).
const MAX_ITERATIONS: u32 = 10_000_000;

/// A parsed stored hash.
#[derive(Clone)]
struct Stored {
    iterations: NonZeroU32,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

fn parse(stored: &str) -> Result<Stored, Error> {
    let bad =
        || Error::Definition("a password hash is pbkdf2-sha256$<iterations>$<salt>$<hash>".into());
    let mut parts = stored.split('$');
    let (Some("pbkdf2-sha256"), Some(iterations), Some(salt), Some(hash), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(bad());
    };
    let iterations = iterations
        .parse::<u32>()
        .ok()
        .filter(|n| *n <= MAX_ITERATIONS)
        .and_then(NonZeroU32::new)
        .ok_or_else(bad)?;
    let salt = STANDARD.decode(salt).map_err(|_| bad())?;
    let hash = STANDARD.decode(hash).map_err(|_| bad())?;
    if salt.is_empty() || hash.len() < 16 {
        return Err(bad());
    }
    Ok(Stored {
        iterations,
        salt,
        hash,
    })
}

/// The stored form of `password`: a fresh 16-byte salt and `iterations` rounds of
/// PBKDF2-HMAC-SHA256 (32-byte hash).
pub fn hash_password(password: &Secret, iterations: u32) -> Result<String, Error> {
    let iterations = NonZeroU32::new(iterations.min(MAX_ITERATIONS))
        .ok_or_else(|| Error::Definition("at least one iteration".into()))?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|_| Error::Definition("the random source failed".into()))?;
    let mut hash = [0u8; 32];
    ring::pbkdf2::derive(
        ring::pbkdf2::PBKDF2_HMAC_SHA256,
        iterations,
        &salt,
        password.expose().as_bytes(),
        &mut hash,
    );
    Ok(format!(
        "pbkdf2-sha256${iterations}${}${}",
        STANDARD.encode(salt),
        STANDARD.encode(hash)
    ))
}

/// True when `password` matches `stored` (compared in constant time by ring).
pub fn verify_password(password: &Secret, stored: &str) -> bool {
    parse(stored).is_ok_and(|stored| check(&stored, password.expose()))
}

fn check(stored: &Stored, password: &str) -> bool {
    ring::pbkdf2::verify(
        ring::pbkdf2::PBKDF2_HMAC_SHA256,
        stored.iterations,
        &stored.salt,
        password.as_bytes(),
        &stored.hash,
    )
    .is_ok()
}

/// HTTP Basic users with PBKDF2 password hashes.
///
/// ```
/// use barrel_mcp::auth::{AuthInfo, Secret};
/// use barrel_mcp::auth::server::{BasicAuth, basic};
///
/// let stored = basic::hash_password(&Secret::new("correct horse"), 1_000)?; // use the default in production
/// let users = BasicAuth::new("mcp").user("ada", &stored, AuthInfo::new("ada"))?;
/// # drop(users);
/// # Ok::<(), barrel_mcp::Error>(())
/// ```
pub struct BasicAuth {
    realm: String,
    users: HashMap<String, (Stored, AuthInfo)>,
    dummy: Stored,
    running: Arc<Semaphore>,
    max_concurrent: usize,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("realm", &self.realm)
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

impl BasicAuth {
    /// No user yet; the challenge names `realm`.
    pub fn new(realm: impl Into<String>) -> Self {
        Self {
            realm: realm.into(),
            users: HashMap::new(),
            dummy: Stored {
                iterations: NonZeroU32::new(DEFAULT_ITERATIONS).unwrap_or(NonZeroU32::MIN),
                salt: vec![0; 16],
                hash: vec![0; 32],
            },
            running: Arc::new(Semaphore::new(2)),
            max_concurrent: 2,
        }
    }

    /// How many password checks may run at once (default 2); more wait.
    #[must_use]
    pub fn max_concurrent(mut self, checks: usize) -> Self {
        self.max_concurrent = checks.max(1);
        self.running = Arc::new(Semaphore::new(self.max_concurrent));
        self
    }

    /// Adds a user by the stored hash of their password; `info` is who they are.
    pub fn user(mut self, name: &str, stored: &str, info: AuthInfo) -> Result<Self, Error> {
        let stored = parse(stored)?;
        // Unknown users cost what the most expensive known user costs.
        if stored.iterations > self.dummy.iterations || self.users.is_empty() {
            self.dummy = Stored {
                iterations: stored.iterations,
                salt: vec![0; stored.salt.len()],
                hash: vec![0; stored.hash.len()],
            };
        }
        self.users.insert(name.to_owned(), (stored, info));
        Ok(self)
    }
}

/// The user and password of `Authorization: Basic …`; `Ok(None)` without one.
fn credentials(head: &http::request::Parts) -> Result<Option<(String, Secret)>, Rejection> {
    let Some(value) = head.headers.get(AUTHORIZATION) else {
        return Ok(None);
    };
    let Some((scheme, encoded)) = value.to_str().ok().and_then(|v| v.split_once(' ')) else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Ok(None);
    }
    let decoded = STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| Rejection::malformed("Basic credentials are not base64 UTF-8"))?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| Rejection::malformed("Basic credentials need user:password"))?;
    Ok(Some((user.to_owned(), Secret::new(password))))
}

impl Authenticator for BasicAuth {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        Box::pin(async move {
            let Some((user, password)) = credentials(head)? else {
                return Ok(None);
            };
            let known = self.users.get(&user);
            let stored = known.map_or_else(|| self.dummy.clone(), |(stored, _)| stored.clone());
            let _permit = Arc::clone(&self.running)
                .acquire_owned()
                .await
                .map_err(|_| Rejection::unavailable("password checks are shut down"))?;
            let matched = tokio::task::spawn_blocking(move || check(&stored, password.expose()))
                .await
                .map_err(|_| Rejection::unavailable("the password check failed"))?;
            match (known, matched) {
                (Some((_, info)), true) => Ok(Some(info.clone())),
                _ => Err(Rejection::invalid("wrong user or password")),
            }
        })
    }

    fn challenges(&self) -> Vec<Challenge> {
        vec![Challenge::basic(self.realm.as_str())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(user: &str, password: &str) -> http::request::Parts {
        let value = format!("Basic {}", STANDARD.encode(format!("{user}:{password}")));
        http::Request::builder()
            .header("authorization", value)
            .body(())
            .expect("request")
            .into_parts()
            .0
    }

    #[test]
    fn rfc_7914_pbkdf2_vector() {
        // RFC 7914 §11: PBKDF2-HMAC-SHA256, P "passwd", S "salt", c 1, 64 bytes (also what
        // Python's hashlib.pbkdf2_hmac gives).
        let mut out = [0u8; 64];
        ring::pbkdf2::derive(
            ring::pbkdf2::PBKDF2_HMAC_SHA256,
            NonZeroU32::MIN,
            b"salt",
            b"passwd",
            &mut out,
        );
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc\
             49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        );
    }

    #[test]
    fn hashes_verify_and_refuse() {
        let stored = hash_password(&Secret::new("s3cret"), 1_000).expect("hash");
        assert!(stored.starts_with("pbkdf2-sha256$1000$"));
        assert!(verify_password(&Secret::new("s3cret"), &stored));
        assert!(!verify_password(&Secret::new("s3cre"), &stored));
        for bad in [
            "",
            "pbkdf2-sha256$0$AA==$AA==",
            "sha1$1$a$b",
            "pbkdf2-sha256$99999999999$AA==$AA==",
        ] {
            assert!(!verify_password(&Secret::new("x"), bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn users_log_in_and_strangers_cost_the_same() {
        let stored = hash_password(&Secret::new("pw"), 1_000).expect("hash");
        let auth = BasicAuth::new("mcp")
            .user("ada", &stored, AuthInfo::new("ada").with_scopes(["read"]))
            .expect("user");
        assert_eq!(
            auth.dummy.iterations.get(),
            1_000,
            "the dummy costs what a user costs"
        );
        let ok = auth.authenticate(&head("ada", "pw")).await;
        assert_eq!(ok.map(|i| i.map(|i| i.subject)), Ok(Some("ada".into())));
        for (user, password) in [("ada", "nope"), ("bob", "pw")] {
            let refused = auth.authenticate(&head(user, password)).await;
            assert_eq!(refused, Err(Rejection::invalid("wrong user or password")));
        }
        let malformed = http::Request::builder()
            .header("authorization", "Basic !!!")
            .body(())
            .expect("request")
            .into_parts()
            .0;
        assert!(matches!(
            auth.authenticate(&malformed).await,
            Err(Rejection::Malformed(_))
        ));
        assert_eq!(auth.challenges(), [Challenge::basic("mcp")]);
    }

    #[tokio::test]
    async fn checks_run_a_bounded_number_at_once() {
        let stored = hash_password(&Secret::new("pw"), 20_000).expect("hash");
        let auth = Arc::new(
            BasicAuth::new("mcp")
                .max_concurrent(2)
                .user("ada", &stored, AuthInfo::new("ada"))
                .expect("user"),
        );
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (auth, peak) = (Arc::clone(&auth), Arc::clone(&peak));
            tasks.push(tokio::spawn(async move {
                let watcher = {
                    let (auth, peak) = (Arc::clone(&auth), Arc::clone(&peak));
                    tokio::spawn(async move {
                        for _ in 0..50 {
                            let busy = 2 - auth.running.available_permits();
                            peak.fetch_max(busy, std::sync::atomic::Ordering::SeqCst);
                            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                        }
                    })
                };
                let verdict = auth.authenticate(&head("ada", "pw")).await;
                watcher.abort();
                verdict
            }));
        }
        for task in tasks {
            assert!(task.await.expect("join").is_ok());
        }
        assert!(peak.load(std::sync::atomic::Ordering::SeqCst) <= 2);
        assert_eq!(auth.running.available_permits(), 2, "every permit is back");
    }
}
