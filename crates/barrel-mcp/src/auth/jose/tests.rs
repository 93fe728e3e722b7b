//! JOSE tests: round trips for every algorithm, the confusion cases, and tokens signed by an
//! independent implementation (PyJWT 2.10.1 with `cryptography`, `testdata/pyjwt.json`,
//! regenerated with `scripts/interop/jwt_fixtures.py`).

use serde_json::{Map, Value, json};

use super::*;

const MAX: usize = 8192;

fn claims() -> Value {
    json!({"sub": "alice", "aud": "https://mcp.example/mcp", "exp": 4_102_444_800_u64})
}

#[test]
fn every_generated_key_round_trips() {
    for alg in [Algorithm::ES256, Algorithm::ES384, Algorithm::EdDSA] {
        let (key, _) = SigningKey::generate(alg).expect("generate");
        let key = key.with_kid(format!("k-{alg}"));
        let token = key.sign(Map::new(), &claims()).expect("sign");
        let public = VerifyingKey::from_jwk(&key.public_jwk().expect("public")).expect("jwk");
        let verified = verify(&token, &[public], MAX).unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(verified.claims["sub"], "alice");
        assert_eq!(verified.header["kid"], format!("k-{alg}"));
    }
    for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
        let secret = [7u8; 64];
        let token = SigningKey::hmac(&secret, alg)
            .expect("key")
            .sign(Map::new(), &claims())
            .expect("sign");
        let key = VerifyingKey::hmac(&secret, alg, None).expect("key");
        assert!(
            verify(&token, std::slice::from_ref(&key), MAX).is_ok(),
            "{alg}"
        );
        let other = VerifyingKey::hmac(&[8u8; 64], alg, None).expect("key");
        assert_eq!(verify(&token, &[other], MAX), Err(JoseError::Signature));
    }
}

#[test]
fn none_unknown_and_critical_are_refused() {
    let secret = [1u8; 32];
    let key = VerifyingKey::hmac(&secret, Algorithm::HS256, None).expect("key");
    let b64 = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let payload = b64(claims());
    for header in [json!({"alg": "none"}), json!({"alg": "HS999"}), json!({})] {
        let token = format!("{}.{payload}.", b64(header.clone()));
        assert_eq!(
            verify(&token, std::slice::from_ref(&key), MAX),
            Err(JoseError::Algorithm),
            "{header}"
        );
    }
    let signer = SigningKey::hmac(&secret, Algorithm::HS256).expect("signer");
    let mut crit = Map::new();
    crit.insert("crit".into(), json!(["exp"]));
    let token = signer.sign(crit, &claims()).expect("sign");
    assert_eq!(verify(&token, &[key], MAX), Err(JoseError::Critical));
}

#[test]
fn an_rsa_public_key_never_checks_an_hmac() {
    let fixtures = fixtures();
    let rsa = VerifyingKey::from_jwk(&fixtures["jwks"]["keys"][0]).expect("rsa jwk");
    assert!(!rsa.allows(Algorithm::HS256));
    // The classic confusion: HS256 "signed" with the RSA public key's bytes as the secret.
    let public_bytes = fixtures["jwks"]["keys"][0].to_string();
    let forged = SigningKey::hmac(public_bytes.as_bytes(), Algorithm::HS256)
        .expect("any bytes make an HMAC key")
        .with_kid(
            fixtures["jwks"]["keys"][0]["kid"]
                .as_str()
                .unwrap_or_default(),
        )
        .sign(Map::new(), &claims())
        .expect("sign");
    assert_eq!(verify(&forged, &[rsa], MAX), Err(JoseError::NoKey));
}

#[test]
fn malformed_tokens_are_refused_without_panic() {
    let key = VerifyingKey::hmac(&[1u8; 32], Algorithm::HS256, None).expect("key");
    for token in [
        "",
        "a",
        "a.b",
        "a.b.c.d",
        "...",
        "!!.??.**",
        "e30.e30.",
        "e30=.e30.AA",
    ] {
        assert!(
            verify(token, std::slice::from_ref(&key), MAX).is_err(),
            "{token}"
        );
    }
    let long = "a".repeat(MAX + 1);
    assert_eq!(verify(&long, &[key], MAX), Err(JoseError::TooLong));
}

#[test]
fn a_jwk_is_pinned_to_its_alg_and_use() {
    assert!(
        VerifyingKey::from_jwk(&json!({"kty": "oct", "k": "c2hvcnQ"})).is_err(),
        "short"
    );
    let fixtures = fixtures();
    let mut rsa = fixtures["jwks"]["keys"][0].clone();
    rsa["use"] = json!("enc");
    assert!(VerifyingKey::from_jwk(&rsa).is_err(), "use enc");
    let mut rsa = fixtures["jwks"]["keys"][0].clone();
    rsa["alg"] = json!("ES256");
    assert!(VerifyingKey::from_jwk(&rsa).is_err(), "alg of another kty");
    let mut pinned = fixtures["jwks"]["keys"][0].clone();
    pinned["alg"] = json!("PS256");
    let pinned = VerifyingKey::from_jwk(&pinned).expect("pinned");
    assert!(pinned.allows(Algorithm::PS256) && !pinned.allows(Algorithm::RS256));
}

fn fixtures() -> Value {
    serde_json::from_str(include_str!("../testdata/pyjwt.json")).expect("fixture JSON")
}

#[test]
fn tokens_from_an_independent_signer_verify() {
    let fixtures = fixtures();
    let keys = VerifyingKey::from_jwks(&fixtures["jwks"], 64).expect("jwks");
    let hmac = URL_SAFE_NO_PAD
        .decode(fixtures["hmac_secret"].as_str().expect("secret"))
        .expect("base64url");
    let tokens = fixtures["tokens"].as_object().expect("tokens");
    assert_eq!(tokens.len(), 12, "one token per algorithm");
    for (name, token) in tokens {
        let alg = Algorithm::from_name(name).expect("a known algorithm");
        let token = token.as_str().expect("a string");
        let verified = if alg.hmac().is_some() {
            let key = VerifyingKey::hmac(&hmac, alg, None).expect("hmac key");
            verify(token, &[key], MAX)
        } else {
            verify(token, &keys, MAX)
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(verified.claims["sub"], "pyjwt-user", "{name}");
        // One flipped signature byte is refused.
        let mut tampered = token.to_owned();
        let last = tampered.pop().expect("non-empty");
        tampered.push(if last == 'A' { 'B' } else { 'A' });
        assert!(verify(&tampered, &keys, MAX).is_err(), "{name} tampered");
    }
}
