//! Authenticators that ask another server (feature `auth`), over real sockets: bearer JWTs
//! against a JWK Set fetched by URL (rotation, the refetch floor, single flight, outages
//! answered 503) and RFC 7662 introspection (active, inactive, audience, caching, outage).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::http::{StatusCode as AxumStatus, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use barrel_mcp::auth::jose::{Algorithm, SigningKey};
use barrel_mcp::auth::server::{
    AuthConfig, Introspection, JwtBearer, RemoteJwks, RemoteJwksConfig,
};
use barrel_mcp::http::HttpConfig;
use http::StatusCode;
use serde_json::{Map, Value, json};

use super::{TestServer, initialize};
use crate::support::within;

/// A small HTTP server for one route, answering with what `state` says, counting requests.
struct Upstream {
    url: String,
    hits: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
    body: Arc<Mutex<Value>>,
}

async fn upstream(path: &'static str, initial: Value, is_post: bool) -> Upstream {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}{path}", listener.local_addr().expect("addr"));
    let hits = Arc::new(AtomicUsize::new(0));
    let down = Arc::new(AtomicBool::new(false));
    let body = Arc::new(Mutex::new(initial));
    let (h, d, b) = (Arc::clone(&hits), Arc::clone(&down), Arc::clone(&body));
    let answer = move || {
        let (h, d, b) = (Arc::clone(&h), Arc::clone(&d), Arc::clone(&b));
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            // A slow upstream, so concurrent needs overlap.
            tokio::time::sleep(Duration::from_millis(50)).await;
            if d.load(Ordering::SeqCst) {
                return AxumStatus::INTERNAL_SERVER_ERROR.into_response();
            }
            let text = b.lock().expect("lock").to_string();
            ([(header::CONTENT_TYPE, "application/json")], text).into_response()
        }
    };
    let route = if is_post { post(answer) } else { get(answer) };
    let app = Router::new().route(path, route);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Upstream {
        url,
        hits,
        down,
        body,
    }
}

const AUDIENCE: &str = "https://mcp.test/mcp";

fn token(key: &SigningKey) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let claims = json!({"iss": "https://as.test", "aud": AUDIENCE, "sub": "u", "exp": now + 600});
    key.sign(Map::new(), &claims).expect("sign")
}

fn key(kid: &str) -> SigningKey {
    SigningKey::generate(Algorithm::ES256)
        .expect("generate")
        .0
        .with_kid(kid)
}

fn jwks(keys: &[&SigningKey]) -> Value {
    json!({"keys": keys.iter().map(|k| k.public_jwk().expect("jwk")).collect::<Vec<_>>()})
}

async fn status(server: &TestServer, token: &str) -> StatusCode {
    let auth = format!("Bearer {token}");
    server
        .client()
        .post_with(&initialize(1), &[("authorization", auth.as_str())])
        .await
        .status()
}

async fn jwks_server(jwks: &Arc<RemoteJwks>) -> TestServer {
    let auth = JwtBearer::with_remote_jwks(Arc::clone(jwks))
        .issuer("https://as.test")
        .audience(AUDIENCE);
    TestServer::start(HttpConfig {
        auth: Some(AuthConfig::new(auth)),
        ..HttpConfig::default()
    })
    .await
}

#[tokio::test]
async fn jwks_rotation_fetches_once_per_new_kid_and_never_within_the_floor() {
    within(async {
        let (k1, k2, k3) = (key("k1"), key("k2"), key("k3"));
        let set = upstream("/jwks", jwks(&[&k1]), false).await;
        let floor = Duration::from_millis(400);
        let config = RemoteJwksConfig {
            floor,
            ..RemoteJwksConfig::default()
        };
        let remote = Arc::new(RemoteJwks::with_config(&set.url, config).expect("jwks"));
        let server = jwks_server(&remote).await;

        assert_eq!(status(&server, &token(&k1)).await, StatusCode::OK);
        assert_eq!(status(&server, &token(&k1)).await, StatusCode::OK);
        assert_eq!(remote.fetches(), 1, "cached");

        // Rotation: k2 is published; its first token makes one fetch (after the floor).
        *set.body.lock().expect("lock") = jwks(&[&k1, &k2]);
        tokio::time::sleep(floor).await;
        assert_eq!(status(&server, &token(&k2)).await, StatusCode::OK);
        assert_eq!(remote.fetches(), 2);

        // An unknown kid right after: within the floor, no fetch, 401.
        assert_eq!(status(&server, &token(&k3)).await, StatusCode::UNAUTHORIZED);
        assert_eq!(remote.fetches(), 2);

        // After the floor, eight at once with an unknown kid: one fetch for all of them.
        tokio::time::sleep(floor).await;
        let statuses = futures_join(&server, &token(&k3), 8).await;
        assert!(
            statuses.iter().all(|s| *s == StatusCode::UNAUTHORIZED),
            "{statuses:?}"
        );
        assert_eq!(remote.fetches(), 3, "single flight");
        assert_eq!(set.hits.load(Ordering::SeqCst), 3);

        // The key server goes down: known keys keep working, an unknown kid is 503.
        set.down.store(true, Ordering::SeqCst);
        tokio::time::sleep(floor).await;
        assert_eq!(
            status(&server, &token(&k3)).await,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(status(&server, &token(&k1)).await, StatusCode::OK);
    })
    .await;
}

async fn futures_join(server: &TestServer, token: &str, n: usize) -> Vec<StatusCode> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        let client = server.client();
        let auth = format!("Bearer {token}");
        tasks.spawn(async move {
            client
                .post_with(&initialize(1), &[("authorization", auth.as_str())])
                .await
                .status()
        });
    }
    let mut out = Vec::new();
    while let Some(status) = tasks.join_next().await {
        out.push(status.expect("task"));
    }
    out
}

#[tokio::test]
async fn a_jwks_that_cannot_be_fetched_is_503_never_401() {
    within(async {
        let k1 = key("k1");
        let set = upstream("/jwks", jwks(&[&k1]), false).await;
        set.down.store(true, Ordering::SeqCst);
        let remote = Arc::new(RemoteJwks::new(&set.url).expect("jwks"));
        let server = jwks_server(&remote).await;
        assert_eq!(
            status(&server, &token(&k1)).await,
            StatusCode::SERVICE_UNAVAILABLE
        );
        // Within the floor the outage is not asked again.
        assert_eq!(
            status(&server, &token(&k1)).await,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(remote.fetches(), 1);
    })
    .await;
}

#[test]
fn a_jwks_url_must_be_https_off_loopback() {
    assert!(RemoteJwks::new("http://keys.example.com/jwks").is_err());
    assert!(RemoteJwks::new("https://keys.example.com/jwks").is_ok());
    assert!(RemoteJwks::new("http://127.0.0.1:1/jwks").is_ok());
    assert!(RemoteJwks::new("https://169.254.169.254/jwks").is_err());
}

async fn introspected(
    body: Value,
    configure: impl FnOnce(Introspection) -> Introspection,
) -> (Upstream, TestServer) {
    let endpoint = upstream("/introspect", body, true).await;
    let auth = configure(
        Introspection::new(&endpoint.url, "rs", "rs-secret")
            .expect("introspection")
            .audience(AUDIENCE),
    );
    let server = TestServer::start(HttpConfig {
        auth: Some(AuthConfig::new(auth)),
        ..HttpConfig::default()
    })
    .await;
    (endpoint, server)
}

#[tokio::test]
async fn introspection_accepts_active_tokens_for_this_server_only() {
    within(async {
        let active = json!({"active": true, "sub": "u", "aud": AUDIENCE, "scope": "a b"});
        let (endpoint, server) = introspected(active, |i| i).await;
        assert_eq!(status(&server, "opaque-1").await, StatusCode::OK);
        assert_eq!(status(&server, "opaque-1").await, StatusCode::OK);
        assert_eq!(endpoint.hits.load(Ordering::SeqCst), 1, "cached");

        *endpoint.body.lock().expect("lock") =
            json!({"active": true, "sub": "u", "aud": "https://other"});
        assert_eq!(status(&server, "opaque-2").await, StatusCode::UNAUTHORIZED);
        *endpoint.body.lock().expect("lock") = json!({"active": false});
        assert_eq!(status(&server, "opaque-3").await, StatusCode::UNAUTHORIZED);
        // A DPoP-bound token presented as a bearer token.
        *endpoint.body.lock().expect("lock") =
            json!({"active": true, "sub": "u", "aud": AUDIENCE, "cnf": {"jkt": "abc"}});
        assert_eq!(status(&server, "opaque-5").await, StatusCode::UNAUTHORIZED);
        endpoint.down.store(true, Ordering::SeqCst);
        assert_eq!(
            status(&server, "opaque-4").await,
            StatusCode::SERVICE_UNAVAILABLE
        );
    })
    .await;
}

#[tokio::test]
async fn introspection_without_a_cache_asks_every_time() {
    within(async {
        let active = json!({"active": true, "sub": "u", "aud": [AUDIENCE]});
        let (endpoint, server) = introspected(active, |i| i.cache_ttl(Duration::ZERO)).await;
        for _ in 0..3 {
            assert_eq!(status(&server, "opaque").await, StatusCode::OK);
        }
        assert_eq!(endpoint.hits.load(Ordering::SeqCst), 3);
    })
    .await;
}
