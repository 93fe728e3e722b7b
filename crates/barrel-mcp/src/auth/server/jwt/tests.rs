//! The JWT attack matrix, at the authenticator: every forged, misdirected or stale token is a
//! refusal, and a good one becomes the caller.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::*;
use crate::auth::jose::{Algorithm, SigningKey};

const AUDIENCE: &str = "https://mcp.example/mcp";
const ISSUER: &str = "https://as.example";

fn head(authorization: Option<&str>) -> http::request::Parts {
    let mut builder = http::Request::builder().uri("/mcp");
    if let Some(value) = authorization {
        builder = builder.header("authorization", value);
    }
    builder.body(()).expect("request").into_parts().0
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn good_claims() -> Value {
    json!({
        "iss": ISSUER,
        "aud": [AUDIENCE, "https://other.example"],
        "sub": "alice",
        "client_id": "app",
        "exp": now() + 600,
        "iat": now(),
        "scope": "mcp:read mcp:write",
        "tenant": "acme",
    })
}

/// An ES256 signer with kid `k1`, and the authenticator that trusts it.
fn setup() -> (SigningKey, JwtBearer) {
    let (signer, _) = setup_with_der();
    signer
}

/// [`setup`], and the signer's PKCS#8 DER (to sign with the same key under another kid).
fn setup_with_der() -> ((SigningKey, JwtBearer), Vec<u8>) {
    let (signer, der) = SigningKey::generate(Algorithm::ES256).expect("key");
    let signer = signer.with_kid("k1");
    let jwks = json!({ "keys": [signer.public_jwk().expect("public")] });
    let auth = JwtBearer::from_jwks(&jwks)
        .expect("jwks")
        .issuer(ISSUER)
        .audience(AUDIENCE);
    ((signer, auth), der)
}

async fn verdict(auth: &JwtBearer, token: &str) -> Result<Option<AuthInfo>, Rejection> {
    let bearer = format!("Bearer {token}");
    auth.authenticate(&head(Some(&bearer))).await
}

fn with(claims: Value, change: impl FnOnce(&mut Map<String, Value>)) -> Value {
    let mut claims = claims.as_object().cloned().unwrap_or_default();
    change(&mut claims);
    Value::Object(claims)
}

#[tokio::test]
async fn a_good_token_becomes_the_caller() {
    let (signer, auth) = setup();
    let token = signer.sign(Map::new(), &good_claims()).expect("sign");
    let info = verdict(&auth, &token)
        .await
        .expect("accepted")
        .expect("a caller");
    assert_eq!(info.subject, "alice");
    assert_eq!(info.client_id.as_deref(), Some("app"));
    assert_eq!(info.issuer.as_deref(), Some(ISSUER));
    assert_eq!(info.scopes, ["mcp:read", "mcp:write"]);
    assert_eq!(info.claims["tenant"], "acme");
    assert!(
        !info.claims.contains_key("scope"),
        "consumed claims do not repeat"
    );
    assert!(info.expires_at.is_some());
    // No header, or another scheme: not this authenticator's business.
    assert_eq!(auth.authenticate(&head(None)).await, Ok(None));
    assert_eq!(auth.authenticate(&head(Some("Basic YTpi"))).await, Ok(None));
}

#[tokio::test]
async fn the_attack_matrix_is_refused() {
    let ((signer, auth), der) = setup_with_der();
    // The trusted key itself, naming a kid the configuration does not have.
    let same_key_no_kid = SigningKey::from_pkcs8(Algorithm::ES256, &der).expect("key");
    let sign = |claims: Value| signer.sign(Map::new(), &claims).expect("sign");
    let b64 = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let good = sign(good_claims());
    let (header, rest) = good.split_once('.').expect("three parts");
    let (payload, _signature) = rest.split_once('.').expect("three parts");

    let (other_signer, _) = SigningKey::generate(Algorithm::ES256).expect("key");
    let stranger = other_signer
        .with_kid("k1")
        .sign(Map::new(), &good_claims())
        .expect("sign");
    let hmac_with_public_key = SigningKey::hmac(
        signer.public_jwk().expect("jwk").to_string().as_bytes(),
        Algorithm::HS256,
    )
    .expect("key")
    .with_kid("k1")
    .sign(Map::new(), &good_claims())
    .expect("sign");
    let mut crit = Map::new();
    crit.insert("crit".into(), json!(["b64"]));
    let mut injected_kid = Map::new();
    injected_kid.insert("kid".into(), json!("../../etc/passwd"));
    let unknown_kid = SigningKey::generate(Algorithm::ES256)
        .expect("key")
        .0
        .with_kid("k2")
        .sign(Map::new(), &good_claims())
        .expect("sign");

    let cases: Vec<(&str, String)> = vec![
        (
            "alg none",
            format!("{}.{payload}.", b64(json!({"alg": "none"}))),
        ),
        ("HS256 with the public key", hmac_with_public_key),
        ("another key, same kid", stranger),
        (
            "bad signature",
            format!("{header}.{payload}.{}", URL_SAFE_NO_PAD.encode([0u8; 64])),
        ),
        ("unknown kid", unknown_kid),
        (
            "injected kid",
            same_key_no_kid
                .sign(injected_kid, &good_claims())
                .expect("sign"),
        ),
        ("crit", signer.sign(crit, &good_claims()).expect("sign")),
        (
            "wrong issuer",
            sign(with(good_claims(), |c| {
                c.insert("iss".into(), json!("https://evil.example"));
            })),
        ),
        (
            "no issuer",
            sign(with(good_claims(), |c| {
                c.remove("iss");
            })),
        ),
        (
            "wrong audience",
            sign(with(good_claims(), |c| {
                c.insert("aud".into(), json!("https://other.example"));
            })),
        ),
        (
            "no audience",
            sign(with(good_claims(), |c| {
                c.remove("aud");
            })),
        ),
        (
            "expired",
            sign(with(good_claims(), |c| {
                c.insert("exp".into(), json!(now() - 3600));
            })),
        ),
        (
            "no exp",
            sign(with(good_claims(), |c| {
                c.remove("exp");
            })),
        ),
        (
            "exp as a string",
            sign(with(good_claims(), |c| {
                c.insert("exp".into(), json!("4102444800"));
            })),
        ),
        (
            "nbf as a string",
            sign(with(good_claims(), |c| {
                c.insert("nbf".into(), json!("0"));
            })),
        ),
        (
            "not yet valid",
            sign(with(good_claims(), |c| {
                c.insert("nbf".into(), json!(now() + 3600));
            })),
        ),
        (
            "oversized",
            sign(with(good_claims(), |c| {
                c.insert("pad".into(), json!("x".repeat(9000)));
            })),
        ),
        ("garbage", "not.a.token".to_owned()),
        ("two parts", format!("{header}.{payload}")),
    ];
    for (name, token) in cases {
        match verdict(&auth, &token).await {
            Err(Rejection::Invalid(reason)) => {
                assert!(
                    !reason.contains(&token),
                    "{name}: the reason echoes the token"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn leeway_scope_claims_and_type() {
    let (signer, auth) = setup();
    // Expired 30 s ago: within the default 60 s leeway; not with none.
    let late = signer
        .sign(
            Map::new(),
            &with(good_claims(), |c| {
                c.insert("exp".into(), json!(now() - 30));
            }),
        )
        .expect("sign");
    assert!(verdict(&auth, &late).await.is_ok());
    let strict = auth.clone().leeway(Duration::ZERO);
    assert!(verdict(&strict, &late).await.is_err());
    // `scp` as an array, and a named claim.
    let scp = signer
        .sign(
            Map::new(),
            &with(good_claims(), |c| {
                c.remove("scope");
                c.insert("scp".into(), json!(["a", "b"]));
            }),
        )
        .expect("sign");
    let info = verdict(&auth, &scp).await.expect("ok").expect("caller");
    assert_eq!(info.scopes, ["a", "b"]);
    let named = auth
        .clone()
        .scope_claim(ScopeClaim::Named("permissions".into()));
    let permissions = signer
        .sign(
            Map::new(),
            &with(good_claims(), |c| {
                c.insert("permissions".into(), json!("x y"));
            }),
        )
        .expect("sign");
    let info = verdict(&named, &permissions)
        .await
        .expect("ok")
        .expect("caller");
    assert_eq!(info.scopes, ["x", "y"]);
    // RFC 9068 type.
    let typed = auth.clone().token_type("at+jwt");
    assert!(verdict(&typed, &permissions).await.is_err(), "no typ");
    let mut header = Map::new();
    header.insert("typ".into(), json!("application/at+JWT"));
    let at = signer.sign(header, &good_claims()).expect("sign");
    assert!(verdict(&typed, &at).await.is_ok());
}

#[tokio::test]
async fn an_audience_is_required_and_malformed_headers_are_400() {
    let (signer, auth) = setup();
    let token = signer.sign(Map::new(), &good_claims()).expect("sign");
    let keys =
        JwtBearer::from_jwks(&json!({"keys": [signer.public_jwk().expect("jwk")]})).expect("jwks");
    assert!(matches!(
        verdict(&keys, &token).await,
        Err(Rejection::Invalid(_))
    ));
    for bad in ["Bearer ", "Bearer a b"] {
        assert!(
            matches!(
                auth.authenticate(&head(Some(bad))).await,
                Err(Rejection::Malformed(_))
            ),
            "{bad:?}"
        );
    }
    let mut twice = head(Some("Bearer x"));
    twice
        .headers
        .append("authorization", http::HeaderValue::from_static("Bearer y"));
    assert!(matches!(
        auth.authenticate(&twice).await,
        Err(Rejection::Malformed(_))
    ));
    assert!(JwtBearer::with_keys(Vec::new()).is_err());
}

#[tokio::test]
async fn pyjwt_tokens_are_accepted_with_the_right_audience() {
    let fixtures: Value =
        serde_json::from_str(include_str!("../../testdata/pyjwt.json")).expect("fixtures");
    let auth = JwtBearer::from_jwks(&fixtures["jwks"])
        .expect("jwks")
        .issuer("https://as.example")
        .audience("https://mcp.example/mcp");
    for alg in ["RS256", "PS512", "ES384", "EdDSA"] {
        let token = fixtures["tokens"][alg].as_str().expect("token");
        let info = verdict(&auth, token).await.expect(alg).expect("caller");
        assert_eq!(info.subject, "pyjwt-user");
        assert_eq!(info.scopes, ["mcp:read", "mcp:write"]);
    }
}

#[tokio::test]
async fn a_cached_token_still_expires_and_clones_start_empty() {
    let (signer, auth) = setup();
    let auth = auth.leeway(Duration::ZERO);
    // Valid for two more seconds.
    let short = signer
        .sign(
            Map::new(),
            &with(good_claims(), |c| {
                c.insert("exp".into(), json!(now() + 2));
            }),
        )
        .expect("sign");
    assert!(
        verdict(&auth, &short).await.is_ok(),
        "verified, then cached"
    );
    assert!(verdict(&auth, &short).await.is_ok(), "from the cache");
    tokio::time::sleep(Duration::from_millis(3_100)).await;
    assert!(
        verdict(&auth, &short).await.is_err(),
        "a cached token expires like any other"
    );
    // A clone with stricter rules does not take what the first one verified.
    let token = signer.sign(Map::new(), &good_claims()).expect("sign");
    assert!(verdict(&auth, &token).await.is_ok());
    let stricter = auth.clone().token_type("at+jwt");
    assert!(verdict(&stricter, &token).await.is_err());
    // Nor does the same one given another rule after use.
    let other = auth.issuer("https://someone-else.example");
    assert!(verdict(&other, &token).await.is_err());
}
