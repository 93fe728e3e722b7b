//! JWS compact serialization (RFC 7515) over ring: verify and sign, with the algorithms of
//! RFC 7518 and RFC 8037 that MCP authorization servers use.
//!
//! Written here rather than taken from a JWT crate (see `docs/ARCHITECTURE.md`): ring, already
//! the TLS provider, does every cryptographic operation; this file only parses the three parts,
//! picks the key and calls ring. The rules that make the classic JWT attacks impossible by
//! construction:
//! - a key is pinned to the algorithms of its type ([`VerifyingKey`]): an RSA key never checks
//!   an HMAC, so "HS256 signed with the RSA public key" has no key to verify against;
//! - `alg: none` (or any unknown name) is not an [`Algorithm`];
//! - a `crit` header is refused (no extension is understood);
//! - `jku`, `x5u`, `jwk` and `x5c` headers are never read: keys come from the configuration;
//! - the token's size is capped before anything is decoded.
//!
//! ES512 is not offered: ring has no P-521.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, KeyPair as _};
use serde_json::{Map, Value, json};

use crate::Error;

/// A JWS algorithm this crate verifies and signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Algorithm {
    HS256,
    HS384,
    HS512,
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 12] = [
        Self::HS256,
        Self::HS384,
        Self::HS512,
        Self::RS256,
        Self::RS384,
        Self::RS512,
        Self::PS256,
        Self::PS384,
        Self::PS512,
        Self::ES256,
        Self::ES384,
        Self::EdDSA,
    ];

    /// The algorithm named `name` (`"RS256"`); `None` for `none` and anything unknown.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|alg| alg.name() == name)
    }

    /// The JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            Self::HS256 => "HS256",
            Self::HS384 => "HS384",
            Self::HS512 => "HS512",
            Self::RS256 => "RS256",
            Self::RS384 => "RS384",
            Self::RS512 => "RS512",
            Self::PS256 => "PS256",
            Self::PS384 => "PS384",
            Self::PS512 => "PS512",
            Self::ES256 => "ES256",
            Self::ES384 => "ES384",
            Self::EdDSA => "EdDSA",
        }
    }

    fn family(self) -> Family {
        match self {
            Self::HS256 | Self::HS384 | Self::HS512 => Family::Hmac,
            Self::RS256 | Self::RS384 | Self::RS512 | Self::PS256 | Self::PS384 | Self::PS512 => {
                Family::Rsa
            }
            Self::ES256 => Family::Ec(Curve::P256),
            Self::ES384 => Family::Ec(Curve::P384),
            Self::EdDSA => Family::Ed25519,
        }
    }

    fn hmac(self) -> Option<ring::hmac::Algorithm> {
        match self {
            Self::HS256 => Some(ring::hmac::HMAC_SHA256),
            Self::HS384 => Some(ring::hmac::HMAC_SHA384),
            Self::HS512 => Some(ring::hmac::HMAC_SHA512),
            _ => None,
        }
    }

    fn verification(self) -> Option<&'static dyn signature::VerificationAlgorithm> {
        Some(match self {
            Self::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            Self::RS384 => &signature::RSA_PKCS1_2048_8192_SHA384,
            Self::RS512 => &signature::RSA_PKCS1_2048_8192_SHA512,
            Self::PS256 => &signature::RSA_PSS_2048_8192_SHA256,
            Self::PS384 => &signature::RSA_PSS_2048_8192_SHA384,
            Self::PS512 => &signature::RSA_PSS_2048_8192_SHA512,
            Self::ES256 => &signature::ECDSA_P256_SHA256_FIXED,
            Self::ES384 => &signature::ECDSA_P384_SHA384_FIXED,
            Self::EdDSA => &signature::ED25519,
            Self::HS256 | Self::HS384 | Self::HS512 => return None,
        })
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Hmac,
    Rsa,
    Ec(Curve),
    Ed25519,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

/// The public (or, for HMAC, secret) material of a verifying key.
#[derive(Clone)]
enum Material {
    /// The HMAC key, its schedule computed once (not per token).
    Hmac(ring::hmac::Key),
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// The uncompressed point `04 || x || y`.
    Ec {
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
}

/// A key that checks signatures, pinned to the algorithms of its type (and to one of them when
/// its JWK names an `alg`).
#[derive(Clone)]
pub struct VerifyingKey {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    material: Material,
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("kid", &self.kid)
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

fn b64(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}

fn field<'a>(jwk: &'a Map<String, Value>, name: &str) -> Result<&'a str, Error> {
    jwk.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Definition(format!("JWK without {name:?}")))
}

fn field_bytes(jwk: &Map<String, Value>, name: &str) -> Result<Vec<u8>, Error> {
    b64(field(jwk, name)?)
        .ok_or_else(|| Error::Definition(format!("JWK {name:?} is not base64url")))
}

impl VerifyingKey {
    /// An HMAC secret for `algorithm` (HS256, HS384 or HS512). The secret must be at least as
    /// long as the hash (RFC 7518 §3.2).
    pub fn hmac(secret: &[u8], algorithm: Algorithm, kid: Option<String>) -> Result<Self, Error> {
        let minimum = match algorithm {
            Algorithm::HS256 => 32,
            Algorithm::HS384 => 48,
            Algorithm::HS512 => 64,
            other => {
                return Err(Error::Definition(format!(
                    "{other} is not an HMAC algorithm"
                )));
            }
        };
        if secret.len() < minimum {
            return Err(Error::Definition(format!(
                "an {algorithm} secret needs at least {minimum} bytes"
            )));
        }
        let hmac = algorithm
            .hmac()
            .ok_or_else(|| Error::Definition(format!("{algorithm} is not an HMAC algorithm")))?;
        Ok(Self {
            kid,
            algorithms: vec![algorithm],
            material: Material::Hmac(ring::hmac::Key::new(hmac, secret)),
        })
    }

    /// A key from one JWK (RFC 7517): `kty` RSA (`n`, `e`), EC (P-256 or P-384, `x`, `y`), OKP
    /// (Ed25519, `x`) or oct (`k`). Its `alg`, when given, pins it to that algorithm; a `use`
    /// other than `sig` or `key_ops` without `verify` is refused.
    pub fn from_jwk(jwk: &Value) -> Result<Self, Error> {
        let jwk = jwk
            .as_object()
            .ok_or_else(|| Error::Definition("a JWK is a JSON object".into()))?;
        if jwk.get("use").is_some_and(|u| u.as_str() != Some("sig")) {
            return Err(Error::Definition("a JWK whose use is not sig".into()));
        }
        if let Some(ops) = jwk.get("key_ops")
            && !ops
                .as_array()
                .is_some_and(|ops| ops.iter().any(|op| op.as_str() == Some("verify")))
        {
            return Err(Error::Definition(
                "a JWK whose key_ops exclude verify".into(),
            ));
        }
        let kid = jwk.get("kid").and_then(Value::as_str).map(str::to_owned);
        let (material, family) = match field(jwk, "kty")? {
            "RSA" => {
                let n = field_bytes(jwk, "n")?;
                let e = field_bytes(jwk, "e")?;
                let bits = n.iter().skip_while(|b| **b == 0).count() * 8;
                if !(2048..=8192).contains(&bits) {
                    return Err(Error::Definition(format!(
                        "an RSA key of {bits} bits (2048 to 8192 accepted)"
                    )));
                }
                (Material::Rsa { n, e }, Family::Rsa)
            }
            "EC" => {
                let (curve, size) = match field(jwk, "crv")? {
                    "P-256" => (Curve::P256, 32),
                    "P-384" => (Curve::P384, 48),
                    other => {
                        return Err(Error::Definition(format!("unsupported curve {other:?}")));
                    }
                };
                let x = field_bytes(jwk, "x")?;
                let y = field_bytes(jwk, "y")?;
                if x.len() != size || y.len() != size {
                    return Err(Error::Definition("EC coordinates of the wrong size".into()));
                }
                let mut point = vec![4];
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                (Material::Ec { point }, Family::Ec(curve))
            }
            "OKP" => {
                if field(jwk, "crv")? != "Ed25519" {
                    return Err(Error::Definition(
                        "only Ed25519 OKP keys are supported".into(),
                    ));
                }
                let x = field_bytes(jwk, "x")?;
                if x.len() != 32 {
                    return Err(Error::Definition("an Ed25519 key is 32 bytes".into()));
                }
                (Material::Ed25519(x), Family::Ed25519)
            }
            "oct" => {
                let k = field_bytes(jwk, "k")?;
                let alg = jwk
                    .get("alg")
                    .and_then(Value::as_str)
                    .and_then(Algorithm::from_name)
                    .unwrap_or(Algorithm::HS256);
                return Self::hmac(&k, alg, kid);
            }
            other => return Err(Error::Definition(format!("unsupported kty {other:?}"))),
        };
        let algorithms = match jwk.get("alg").and_then(Value::as_str) {
            Some(name) => {
                let alg = Algorithm::from_name(name)
                    .filter(|alg| alg.family() == family)
                    .ok_or_else(|| {
                        Error::Definition(format!("JWK alg {name:?} does not fit its kty"))
                    })?;
                vec![alg]
            }
            None => Algorithm::ALL
                .into_iter()
                .filter(|alg| alg.family() == family)
                .collect(),
        };
        Ok(Self {
            kid,
            algorithms,
            material,
        })
    }

    /// The signing keys of a JWK Set (`{"keys": [...]}`), at most `max_keys`; keys this crate
    /// cannot use (an encryption key, an unknown type) are skipped.
    pub fn from_jwks(set: &Value, max_keys: usize) -> Result<Vec<Self>, Error> {
        let keys = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Definition("a JWK Set has a keys array".into()))?;
        if keys.len() > max_keys {
            return Err(Error::Definition(format!(
                "a JWK Set of {} keys (at most {max_keys})",
                keys.len()
            )));
        }
        Ok(keys
            .iter()
            .filter_map(|jwk| match Self::from_jwk(jwk) {
                Ok(key) => Some(key),
                Err(error) => {
                    tracing::debug!(%error, "JWK skipped");
                    None
                }
            })
            .collect())
    }

    /// The key id, if any.
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// True when this key may check `algorithm`.
    pub fn allows(&self, algorithm: Algorithm) -> bool {
        self.algorithms.contains(&algorithm)
    }

    fn verify(&self, algorithm: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        if !self.allows(algorithm) {
            return false;
        }
        match (&self.material, algorithm.hmac(), algorithm.verification()) {
            (Material::Hmac(key), Some(_), _) => {
                ring::hmac::verify(key, message, signature).is_ok()
            }
            (Material::Rsa { n, e }, _, _) => rsa_parameters(algorithm).is_some_and(|params| {
                signature::RsaPublicKeyComponents { n, e }
                    .verify(params, message, signature)
                    .is_ok()
            }),
            (Material::Ec { point } | Material::Ed25519(point), _, Some(alg)) => {
                signature::UnparsedPublicKey::new(alg, point)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

fn rsa_parameters(algorithm: Algorithm) -> Option<&'static signature::RsaParameters> {
    Some(match algorithm {
        Algorithm::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &signature::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &signature::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &signature::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &signature::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &signature::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

/// Why a token was refused. The text is safe to show: it never holds the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoseError {
    /// Longer than the configured cap.
    TooLong,
    /// Not three base64url parts, or a header or payload that is not a JSON object.
    Malformed(&'static str),
    /// `alg` is `none`, unknown, or missing.
    Algorithm,
    /// The header has `crit`: an extension this crate does not understand.
    Critical,
    /// No configured key has the token's `kid` and may check its `alg`.
    NoKey,
    /// No key's signature matched.
    Signature,
}

impl fmt::Display for JoseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLong => f.write_str("the token is too long"),
            Self::Malformed(why) => write!(f, "malformed token: {why}"),
            Self::Algorithm => f.write_str("unsupported or missing alg"),
            Self::Critical => f.write_str("the token has critical header parameters"),
            Self::NoKey => f.write_str("no key for the token's kid and alg"),
            Self::Signature => f.write_str("bad signature"),
        }
    }
}

/// A token whose signature was checked: its header and its claims.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The protected header.
    pub header: Map<String, Value>,
    /// The claims.
    pub claims: Map<String, Value>,
}

fn json_object(part: &str, what: &'static str) -> Result<Map<String, Value>, JoseError> {
    let bytes = b64(part).ok_or(JoseError::Malformed(what))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(object)) => Ok(object),
        _ => Err(JoseError::Malformed(what)),
    }
}

/// The protected header of a compact JWS, **not verified**: only to choose how to verify it
/// (never to trust what it says). `None` when it is not a base64url JSON object.
pub fn peek_header(token: &str) -> Option<Map<String, Value>> {
    let first = token.split('.').next()?;
    json_object(first, "header").ok()
}

/// Checks a compact JWS against `keys`: at most `max_len` bytes, three base64url parts, a
/// known `alg`, no `crit`, and a signature from a key that has the token's `kid` (any key,
/// when the token names none) and may check its `alg`.
pub fn verify(token: &str, keys: &[VerifyingKey], max_len: usize) -> Result<Verified, JoseError> {
    if token.len() > max_len {
        return Err(JoseError::TooLong);
    }
    let mut parts = token.split('.');
    let (Some(header_part), Some(payload_part), Some(signature_part), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JoseError::Malformed("a JWS has three parts"));
    };
    let header = json_object(header_part, "the header is not a base64url JSON object")?;
    let algorithm = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Algorithm::from_name)
        .ok_or(JoseError::Algorithm)?;
    if header.contains_key("crit") {
        return Err(JoseError::Critical);
    }
    let signature =
        b64(signature_part).ok_or(JoseError::Malformed("the signature is not base64url"))?;
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.as_str()),
        Some(_) => return Err(JoseError::Malformed("kid is not a string")),
    };
    let message = &token.as_bytes()[..header_part.len() + 1 + payload_part.len()];
    let mut candidates = keys
        .iter()
        .filter(|key| key.allows(algorithm) && (kid.is_none() || key.kid() == kid))
        .peekable();
    if candidates.peek().is_none() {
        return Err(JoseError::NoKey);
    }
    if !candidates.any(|key| key.verify(algorithm, message, &signature)) {
        return Err(JoseError::Signature);
    }
    let claims = json_object(payload_part, "the payload is not a base64url JSON object")?;
    Ok(Verified { header, claims })
}

/// A private key that signs tokens (tests, the test authorization server, the OAuth client's
/// `private_key_jwt`).
pub struct SigningKey {
    algorithm: Algorithm,
    kid: Option<String>,
    material: SigningMaterial,
}

enum SigningMaterial {
    Hmac(ring::hmac::Key),
    Ecdsa(signature::EcdsaKeyPair),
    Rsa(signature::RsaKeyPair),
    Ed25519(signature::Ed25519KeyPair),
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// An HMAC key for HS256, HS384 or HS512.
    pub fn hmac(secret: &[u8], algorithm: Algorithm) -> Result<Self, Error> {
        let hmac = algorithm
            .hmac()
            .ok_or_else(|| Error::Definition(format!("{algorithm} is not an HMAC algorithm")))?;
        Ok(Self {
            algorithm,
            kid: None,
            material: SigningMaterial::Hmac(ring::hmac::Key::new(hmac, secret)),
        })
    }

    /// A private key in PKCS#8 DER for `algorithm` (ES256/ES384, RS*/PS*, EdDSA).
    pub fn from_pkcs8(algorithm: Algorithm, der: &[u8]) -> Result<Self, Error> {
        let bad = |e: &dyn fmt::Display| Error::Definition(format!("{algorithm} key: {e}"));
        let rng = ring::rand::SystemRandom::new();
        let material = match algorithm.family() {
            Family::Ec(curve) => {
                let alg = match curve {
                    Curve::P256 => &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    Curve::P384 => &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
                };
                SigningMaterial::Ecdsa(
                    signature::EcdsaKeyPair::from_pkcs8(alg, der, &rng).map_err(|e| bad(&e))?,
                )
            }
            Family::Rsa => {
                SigningMaterial::Rsa(signature::RsaKeyPair::from_pkcs8(der).map_err(|e| bad(&e))?)
            }
            Family::Ed25519 => SigningMaterial::Ed25519(
                signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).map_err(|e| bad(&e))?,
            ),
            Family::Hmac => return Err(Error::Definition("use SigningKey::hmac".into())),
        };
        Ok(Self {
            algorithm,
            kid: None,
            material,
        })
    }

    /// A fresh ECDSA or Ed25519 key (ES256, ES384, EdDSA), and its PKCS#8 DER.
    pub fn generate(algorithm: Algorithm) -> Result<(Self, Vec<u8>), Error> {
        let rng = ring::rand::SystemRandom::new();
        let der = match algorithm {
            Algorithm::ES256 => signature::EcdsaKeyPair::generate_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &rng,
            ),
            Algorithm::ES384 => signature::EcdsaKeyPair::generate_pkcs8(
                &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
                &rng,
            ),
            Algorithm::EdDSA => signature::Ed25519KeyPair::generate_pkcs8(&rng),
            other => return Err(Error::Definition(format!("cannot generate an {other} key"))),
        }
        .map_err(|_| Error::Definition("the random source failed".into()))?;
        let der = der.as_ref().to_vec();
        Ok((Self::from_pkcs8(algorithm, &der)?, der))
    }

    /// Names the key in the tokens it signs (`kid`).
    #[must_use]
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The public JWK of this key (with `kid`, `alg` and `use`), to publish in a JWK Set;
    /// `None` for an HMAC key, whose material is secret.
    pub fn public_jwk(&self) -> Option<Value> {
        let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        let mut jwk = match &self.material {
            SigningMaterial::Hmac(_) => return None,
            SigningMaterial::Ecdsa(pair) => {
                let point = pair.public_key().as_ref();
                let size = (point.len() - 1) / 2;
                let crv = if size == 32 { "P-256" } else { "P-384" };
                json!({"kty": "EC", "crv": crv, "x": b64(&point[1..=size]), "y": b64(&point[1 + size..])})
            }
            SigningMaterial::Rsa(pair) => {
                let components: signature::RsaPublicKeyComponents<Vec<u8>> = pair.public().into();
                json!({"kty": "RSA", "n": b64(&components.n), "e": b64(&components.e)})
            }
            SigningMaterial::Ed25519(pair) => {
                json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())})
            }
        };
        jwk["alg"] = json!(self.algorithm.name());
        jwk["use"] = json!("sig");
        if let Some(kid) = &self.kid {
            jwk["kid"] = json!(kid);
        }
        Some(jwk)
    }

    /// Signs `claims` into a compact JWS; `header` adds fields (`typ`) to `alg` and `kid`.
    pub fn sign(&self, header: Map<String, Value>, claims: &Value) -> Result<String, Error> {
        let mut header = header;
        header.insert("alg".into(), json!(self.algorithm.name()));
        if let Some(kid) = &self.kid {
            header.insert("kid".into(), json!(kid));
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(Value::Object(header).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = ring::rand::SystemRandom::new();
        let failed = |_| Error::Definition("signing failed".into());
        let signature = match &self.material {
            SigningMaterial::Hmac(key) => ring::hmac::sign(key, signing_input.as_bytes())
                .as_ref()
                .to_vec(),
            SigningMaterial::Ecdsa(pair) => pair
                .sign(&rng, signing_input.as_bytes())
                .map_err(failed)?
                .as_ref()
                .to_vec(),
            SigningMaterial::Ed25519(pair) => pair.sign(signing_input.as_bytes()).as_ref().to_vec(),
            SigningMaterial::Rsa(pair) => {
                let padding: &dyn signature::RsaEncoding = match self.algorithm {
                    Algorithm::RS256 => &signature::RSA_PKCS1_SHA256,
                    Algorithm::RS384 => &signature::RSA_PKCS1_SHA384,
                    Algorithm::RS512 => &signature::RSA_PKCS1_SHA512,
                    Algorithm::PS256 => &signature::RSA_PSS_SHA256,
                    Algorithm::PS384 => &signature::RSA_PSS_SHA384,
                    _ => &signature::RSA_PSS_SHA512,
                };
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(padding, &rng, signing_input.as_bytes(), &mut out)
                    .map_err(failed)?;
                out
            }
        };
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }
}

#[cfg(test)]
mod tests;
