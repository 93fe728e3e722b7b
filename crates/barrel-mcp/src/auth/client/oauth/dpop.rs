//! DPoP (RFC 9449): proof-of-possession for the OAuth client's tokens.
//!
//! When the authorization server advertises `ES256` in `dpop_signing_alg_values_supported`,
//! every token request carries a proof signed by a key this client made for itself (P-256,
//! held in memory only), the server binds the token to that key (`token_type: DPoP`), and
//! every request to the MCP server then carries `Authorization: DPoP <token>` and a fresh
//! proof naming its method, its URL (without query or fragment), the time, a unique `jti` and
//! the token's hash (`ath`). A server that answers `use_dpop_nonce` with a `DPoP-Nonce` gets
//! that nonce in the next proofs (RFC 9449 §8 for the authorization server, §9 for the MCP
//! server).

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::Uri;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::pkce::random;
use crate::Error;
use crate::auth::Secret;
use crate::auth::jose::{Algorithm, SigningKey};

/// The algorithm proofs are signed with.
pub(crate) const DPOP_ALG: &str = "ES256";

/// This client's DPoP key and the nonces servers gave it.
pub(crate) struct Dpop {
    key: SigningKey,
    /// The public key, as the proofs' `jwk` header (no private part, no `kid`).
    jwk: Value,
    /// The authorization server's nonce.
    pub(crate) as_nonce: Mutex<Option<String>>,
    /// The MCP server's nonce.
    pub(crate) rs_nonce: Mutex<Option<String>>,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpop").finish_non_exhaustive()
    }
}

impl Dpop {
    /// A fresh key.
    pub(crate) fn new() -> Result<Self, Error> {
        let (key, _) = SigningKey::generate(Algorithm::ES256)?;
        let public = key
            .public_jwk()
            .ok_or_else(|| Error::Auth("the DPoP key has no public form".into()))?;
        let mut jwk = Map::new();
        for member in ["kty", "crv", "x", "y"] {
            if let Some(value) = public.get(member) {
                jwk.insert(member.to_owned(), value.clone());
            }
        }
        Ok(Self {
            key,
            jwk: Value::Object(jwk),
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
        })
    }

    /// A proof for one request: `method` on `url`, for `access_token` when one is presented,
    /// with `nonce` when the server asked for one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Uri,
        access_token: Option<&str>,
        nonce: Option<String>,
    ) -> Result<Secret, Error> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut claims = json!({
            "jti": random(16)?,
            "htm": method,
            "htu": htu(url),
            "iat": now,
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let mut header = Map::new();
        header.insert("typ".into(), json!("dpop+jwt"));
        header.insert("jwk".into(), self.jwk.clone());
        self.key
            .sign(header, &claims)
            .map(Secret::new)
            .map_err(|e| Error::Auth(format!("signing a DPoP proof: {e}")))
    }
}

/// Reads a nonce slot.
pub(crate) fn nonce(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Keeps a nonce a server sent.
pub(crate) fn keep_nonce(slot: &Mutex<Option<String>>, nonce: String) {
    *slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(nonce);
}

/// The `htu` of a request: its URL without query and fragment.
fn htu(url: &Uri) -> String {
    format!(
        "{}://{}{}",
        url.scheme_str().unwrap_or("https"),
        url.authority().map(|a| a.as_str()).unwrap_or(""),
        url.path()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::jose::{VerifyingKey, verify};

    #[test]
    fn a_proof_names_the_request_and_the_token() {
        let dpop = Dpop::new().unwrap();
        let url: Uri = "https://mcp.example/mcp?x=1".parse().unwrap();
        let proof = dpop
            .proof("POST", &url, Some("tok"), Some("n1".into()))
            .unwrap();
        let key = VerifyingKey::from_jwk(&dpop.jwk).unwrap();
        let verified = verify(proof.expose(), &[key], 8192).unwrap();
        assert_eq!(verified.header["typ"], "dpop+jwt");
        assert!(verified.header["jwk"].get("d").is_none());
        assert_eq!(verified.claims["htm"], "POST");
        assert_eq!(verified.claims["htu"], "https://mcp.example/mcp");
        assert_eq!(verified.claims["nonce"], "n1");
        assert_eq!(
            verified.claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok"))
        );
        let other = dpop.proof("POST", &url, None, None).unwrap();
        let again = verify(
            other.expose(),
            &[VerifyingKey::from_jwk(&dpop.jwk).unwrap()],
            8192,
        )
        .unwrap();
        assert_ne!(again.claims["jti"], verified.claims["jti"]);
        assert!(again.claims.get("ath").is_none());
    }
}
