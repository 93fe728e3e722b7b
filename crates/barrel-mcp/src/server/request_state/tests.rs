//! Tests of sealing, opening and tampering with `requestState` tokens, of the legacy `v1`
//! form, and of the digest.

use serde_json::json;

use super::*;

const KEY: &[u8; 32] = b"0123456789abcdef0123456789abcdef";
const NOW: u64 = 1_800_000_000_000;

fn codec() -> RequestStateCodec {
    RequestStateCodec::new(KEY).expect("32-byte key")
}

fn state() -> RequestState {
    let mut answers = Map::new();
    answers.insert("confirm".into(), json!({"action": "accept"}));
    RequestState {
        method: "tools/call".into(),
        params_digest: params_digest("tools/call", &json!({"name": "deploy"})),
        principal: Some("alice".into()),
        expires_at_ms: 0,
        answers,
        round: 2,
    }
}

fn open(codec: &RequestStateCodec, token: &str) -> Result<RequestState, RequestStateError> {
    let s = state();
    codec.open_at(token, &s.method, &s.params_digest, Some("alice"), NOW)
}

#[test]
fn round_trips() {
    let codec = codec();
    let token = codec.seal_at(&state(), NOW);
    let kid = KeyRing::kid_of(KEY);
    assert!(token.starts_with(&format!("v2.{kid}.")), "{token}");
    assert_eq!(token.split('.').count(), 4);
    let opened = open(&codec, &token).expect("opens");
    let ttl = u64::try_from(DEFAULT_TTL.as_millis()).expect("fits");
    assert_eq!(
        opened,
        RequestState {
            expires_at_ms: NOW + ttl,
            ..state()
        }
    );
    // The real clock works too.
    let now = codec.seal(&state());
    let s = state();
    assert!(
        codec
            .open(&now, &s.method, &s.params_digest, Some("alice"))
            .is_ok()
    );
}

#[test]
fn any_flipped_byte_breaks_the_signature() {
    let codec = codec();
    let token = codec.seal_at(&state(), NOW);
    let (payload_end, _) = token.rmatch_indices('.').next().expect("has a dot");
    for i in PREFIX.len()..token.len() {
        if token.as_bytes()[i] == b'.' {
            continue;
        }
        let mut bytes = token.clone().into_bytes();
        // Swap to another base64url character so only the MAC can catch the change.
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(bytes).expect("ASCII");
        let err = open(&codec, &forged).expect_err("tampered");
        assert!(
            matches!(
                err,
                RequestStateError::BadSignature | RequestStateError::Malformed(_)
            ),
            "byte {i}: {err:?}"
        );
        if i < payload_end {
            // The key id and the payload are both covered.
            assert_eq!(err, RequestStateError::BadSignature, "byte {i}");
        }
    }
}

#[test]
fn another_key_or_a_forged_payload_is_refused() {
    let token = codec().seal_at(&state(), NOW);
    let other = RequestStateCodec::new(&[7u8; 48]).expect("long key");
    assert_eq!(open(&other, &token), Err(RequestStateError::BadSignature));
    // A payload the client wrote itself, with the old MAC attached.
    let mut mine = state();
    mine.round = 99;
    mine.expires_at_ms = u64::MAX;
    let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&mine).expect("json"));
    let tag = token.rsplit('.').next().expect("tag");
    let kid = KeyRing::kid_of(KEY);
    let forged = format!("v2.{kid}.{forged_payload}.{tag}");
    assert_eq!(
        open(&codec(), &forged),
        Err(RequestStateError::BadSignature)
    );
    // A truncated MAC is refused too.
    let short = &token[..token.len() - 4];
    assert!(open(&codec(), short).is_err());
}

#[test]
fn expires() {
    let codec = codec().ttl(Duration::from_secs(60));
    let token = codec.seal_at(&state(), NOW);
    let s = state();
    let at = |now| codec.open_at(&token, &s.method, &s.params_digest, Some("alice"), now);
    assert!(at(NOW + 59_999).is_ok());
    assert_eq!(at(NOW + 60_000), Err(RequestStateError::Expired));
    assert_eq!(at(u64::MAX), Err(RequestStateError::Expired));
    // The caller's expires_at_ms is ignored: a seal always starts a new lifetime.
    let long_ago = RequestState {
        expires_at_ms: 1,
        ..state()
    };
    let token = codec.seal_at(&long_ago, NOW);
    assert!(
        codec
            .open_at(&token, &s.method, &s.params_digest, Some("alice"), NOW)
            .is_ok()
    );
}

#[test]
fn binds_method_params_and_principal() {
    let codec = codec();
    let token = codec.seal_at(&state(), NOW);
    let s = state();
    let other_params = params_digest("tools/call", &json!({"name": "delete"}));
    let cases = [
        (
            "prompts/get",
            s.params_digest.as_str(),
            Some("alice"),
            "method",
        ),
        ("tools/call", other_params.as_str(), Some("alice"), "params"),
        (
            "tools/call",
            s.params_digest.as_str(),
            Some("mallory"),
            "principal",
        ),
        ("tools/call", s.params_digest.as_str(), None, "principal"),
    ];
    for (method, digest, principal, what) in cases {
        assert_eq!(
            codec.open_at(&token, method, digest, principal, NOW),
            Err(RequestStateError::Mismatch(what))
        );
    }
    let anonymous = RequestState {
        principal: None,
        ..state()
    };
    let token = codec.seal_at(&anonymous, NOW);
    assert_eq!(
        codec.open_at(&token, &s.method, &s.params_digest, Some("alice"), NOW),
        Err(RequestStateError::Mismatch("principal"))
    );
    assert!(
        codec
            .open_at(&token, &s.method, &s.params_digest, None, NOW)
            .is_ok()
    );
}

#[test]
fn garbage_is_malformed_and_never_panics() {
    let codec = codec();
    let huge = format!("v1.{}.x", "A".repeat(MAX_TOKEN_LEN));
    let cases = [
        "",
        ".",
        "..",
        "v1",
        "v1.",
        "v1..",
        "v2.abc.def",
        "v1.abc",
        "v1.abc.!!!",
        "v1.abc.def.ghi",
        "v1.é.é",
        "V1.abc.def",
        huge.as_str(),
    ];
    for token in cases {
        match open(&codec, token) {
            Err(RequestStateError::Malformed(_) | RequestStateError::BadSignature) => {}
            other => panic!("{token:.40}: {other:?}"),
        }
    }
    assert_eq!(
        open(&codec, ""),
        Err(RequestStateError::Malformed("unknown version"))
    );
    assert_eq!(
        open(&codec, &huge),
        Err(RequestStateError::Malformed("too long"))
    );
    // A payload that is signed but not a state (only the server could do this).
    let mut token = format!("v2.{}.", KeyRing::kid_of(KEY));
    URL_SAFE_NO_PAD.encode_string(b"[1,2]", &mut token);
    let tag = codec
        .keys
        .sealer()
        .mac
        .clone()
        .chain_update(token.as_bytes())
        .finalize();
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(tag.into_bytes(), &mut token);
    assert_eq!(
        open(&codec, &token),
        Err(RequestStateError::Malformed("payload is not a state"))
    );
}

#[test]
fn keys_are_checked_and_hidden() {
    assert_eq!(
        RequestStateCodec::new(&[0u8; 31]).err(),
        Some(KeyError::TooShort { len: 31 })
    );
    let random = RequestStateCodec::random().expect("OS randomness");
    let token = random.seal_at(&state(), NOW);
    assert_eq!(open(&codec(), &token), Err(RequestStateError::BadSignature));
    assert!(open(&random, &token).is_ok());
    let debug = format!("{:?}", codec());
    assert!(debug.contains(&KeyRing::kid_of(KEY)), "{debug}");
    assert!(
        !debug.contains("0123") && !debug.contains("48, 49"),
        "{debug}"
    );
}

/// A token in the form barrel-mcp 0.1 issued: `v1.<payload>.<mac over "v1.<payload>">`.
fn legacy_token(key: &[u8], state: &RequestState) -> String {
    let mut token = String::from(LEGACY_PREFIX);
    URL_SAFE_NO_PAD.encode_string(serde_json::to_vec(state).expect("json"), &mut token);
    let tag = <HmacSha256 as hmac::KeyInit>::new_from_slice(key)
        .expect("any key length")
        .chain_update(token.as_bytes())
        .finalize();
    token.push('.');
    URL_SAFE_NO_PAD.encode_string(tag.into_bytes(), &mut token);
    token
}

#[test]
fn legacy_tokens_open_with_the_first_key_only() {
    let state = RequestState {
        expires_at_ms: NOW + 1_000,
        ..state()
    };
    let old = legacy_token(KEY, &state);
    assert_eq!(open(&codec(), &old), Ok(state.clone()));
    // A ring that rotated in the same step: the old key second no longer opens v1 tokens.
    let rotated = RequestStateCodec::with_keys(KeyRing::new([&[9u8; 32][..], KEY]).expect("ring"));
    assert_eq!(open(&rotated, &old), Err(RequestStateError::BadSignature));
    // A v1 token with a v2 MAC (or the other way round) does not open.
    let fresh = codec().seal_at(&state, NOW);
    let tag = fresh.rsplit('.').next().expect("tag");
    let payload = old.split('.').nth(1).expect("payload");
    assert_eq!(
        open(&codec(), &format!("v1.{payload}.{tag}")),
        Err(RequestStateError::BadSignature)
    );
    let kid = KeyRing::kid_of(KEY);
    let old_tag = old.rsplit('.').next().expect("tag");
    assert_eq!(
        open(&codec(), &format!("v2.{kid}.{payload}.{old_tag}")),
        Err(RequestStateError::BadSignature)
    );
}

#[test]
fn a_ring_seals_with_its_first_key_and_opens_with_any() {
    let old = RequestStateCodec::new(KEY).expect("key");
    let new_key = [5u8; 40];
    let rotated =
        RequestStateCodec::with_keys(KeyRing::new([&new_key[..], KEY]).expect("two keys"));
    let token = old.seal_at(&state(), NOW);
    assert!(open(&rotated, &token).is_ok(), "the old key still opens");
    let sealed = rotated.seal_at(&state(), NOW);
    assert!(sealed.starts_with(&format!("v2.{}.", KeyRing::kid_of(&new_key))));
    assert!(open(&rotated, &sealed).is_ok());
    // A node that has not got the new key yet refuses, as a forgery.
    assert_eq!(open(&old, &sealed), Err(RequestStateError::BadSignature));
    // The old key gone, its tokens are refused.
    let retired = RequestStateCodec::new(&new_key).expect("key");
    assert_eq!(open(&retired, &token), Err(RequestStateError::BadSignature));
    assert_eq!(rotated.keys().current_kid(), KeyRing::kid_of(&new_key));
}

#[test]
fn digest_ignores_round_members_and_key_order() {
    let base = params_digest(
        "tools/call",
        &json!({"name": "t", "arguments": {"a": 1, "b": [1, {"y": 2, "x": 1}]}}),
    );
    let same = params_digest(
        "tools/call",
        &json!({
            "arguments": {"b": [1, {"x": 1, "y": 2}], "a": 1},
            "name": "t",
            "_meta": {"progressToken": 5},
            "inputResponses": {"k": {}},
            "requestState": "v1.x.y",
        }),
    );
    assert_eq!(base, same);
    assert_eq!(base.len(), 43);
    let differs = [
        params_digest(
            "prompts/get",
            &json!({"name": "t", "arguments": {"a": 1, "b": [1, {"y": 2, "x": 1}]}}),
        ),
        params_digest(
            "tools/call",
            &json!({"name": "t", "arguments": {"a": 2, "b": [1, {"y": 2, "x": 1}]}}),
        ),
        params_digest(
            "tools/call",
            &json!({"name": "t", "arguments": {"a": 1, "b": [{"y": 2, "x": 1}, 1]}}),
        ),
        // Nested `_meta` is user data and counts.
        params_digest(
            "tools/call",
            &json!({"name": "t", "arguments": {"a": 1, "b": [1, {"y": 2, "x": 1}], "_meta": 1}}),
        ),
    ];
    for d in differs {
        assert_ne!(base, d);
    }
    assert_ne!(
        params_digest("m", &Value::Null),
        params_digest("m", &json!({}))
    );
}

#[test]
fn canonical_json_is_sorted_and_compact() {
    let mut out = Vec::new();
    write_canonical(
        &mut out,
        &json!({"b": [true, null, 1.5, "q\"\n"], "a": {"é": -1, "Z": {}}, "": []}),
    );
    assert_eq!(
        String::from_utf8(out).expect("utf-8"),
        r#"{"":[],"a":{"Z":{},"é":-1},"b":[true,null,1.5,"q\"\n"]}"#
    );
}
