//! PKCE (RFC 7636, `S256` only) and the `state` value of an authorization request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::Error;
use crate::auth::Secret;

/// A fresh random value: `bytes` bytes from the operating system, base64url without padding.
pub(crate) fn random(bytes: usize) -> Result<String, Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer)
        .map_err(|e| Error::Auth(format!("no randomness from the operating system: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// One authorization request's PKCE pair.
#[derive(Debug)]
pub(crate) struct Pkce {
    /// Sent to the token endpoint only.
    pub(crate) verifier: Secret,
    /// `BASE64URL(SHA256(verifier))`, sent in the authorization request.
    pub(crate) challenge: String,
}

impl Pkce {
    /// A verifier of 32 random bytes (43 characters).
    pub(crate) fn new() -> Result<Self, Error> {
        let verifier = random(32)?;
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Ok(Self {
            verifier: Secret::new(verifier),
            challenge,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_hash_of_the_verifier() {
        let pkce = Pkce::new().unwrap();
        assert_eq!(pkce.verifier.expose().len(), 43);
        let expected = URL_SAFE_NO_PAD.encode(Sha256::digest(pkce.verifier.expose()));
        assert_eq!(pkce.challenge, expected);
        assert_ne!(Pkce::new().unwrap().challenge, pkce.challenge);
    }

    #[test]
    fn rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            URL_SAFE_NO_PAD.encode(Sha256::digest(verifier)),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
