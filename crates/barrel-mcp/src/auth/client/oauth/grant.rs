//! Token endpoint requests (RFC 6749 §3.2) and the client's authentication there:
//! `client_secret_basic`, `client_secret_post`, `none` and `private_key_jwt` (RFC 7523 §2.2).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::AUTHORIZATION;
use http::{HeaderMap, Uri};
use serde_json::{Map, Value, json};

use super::dpop::{Dpop, keep_nonce, nonce};
use super::pkce::random;
use crate::Error;
use crate::auth::Secret;
use crate::auth::fetch::Fetcher;
use crate::auth::form::{Form, basic_credentials};
use crate::auth::jose::SigningKey;

/// `client_assertion_type` of a JWT client assertion.
const JWT_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How the client proves who it is at the token endpoint.
#[derive(Debug, Clone)]
pub(crate) enum ClientAuth {
    /// A public client: `client_id` in the form.
    None,
    /// HTTP Basic with the id and secret (RFC 6749 §2.3.1).
    SecretBasic(Secret),
    /// The secret in the form.
    SecretPost(Secret),
    /// A JWT signed with the client's key.
    PrivateKeyJwt(std::sync::Arc<SigningKey>),
}

impl ClientAuth {
    /// The method's registered name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::SecretBasic(_) => "client_secret_basic",
            Self::SecretPost(_) => "client_secret_post",
            Self::PrivateKeyJwt(_) => "private_key_jwt",
        }
    }
}

/// Why a token request got no token.
#[derive(Debug)]
pub(crate) enum GrantError {
    /// The server answered with an OAuth error (`invalid_grant`, `invalid_client`, ...).
    Refused(Error),
    /// Anything else: the server could not be reached, or its answer was not one.
    Failed(Error),
}

impl GrantError {
    /// True when the server refused the grant (a refresh token it refused is dead).
    pub(crate) fn refused(&self) -> bool {
        matches!(self, Self::Refused(_))
    }
}

impl From<Error> for GrantError {
    fn from(error: Error) -> Self {
        Self::Failed(error)
    }
}

impl From<GrantError> for Error {
    fn from(error: GrantError) -> Self {
        match error {
            GrantError::Refused(error) | GrantError::Failed(error) => error,
        }
    }
}

/// A token endpoint's successful answer.
#[derive(Debug, Clone)]
pub(crate) struct TokenResponse {
    pub(crate) access_token: Secret,
    pub(crate) refresh_token: Option<Secret>,
    pub(crate) expires_at: Option<SystemTime>,
    pub(crate) scope: Option<String>,
    pub(crate) issued_token_type: Option<String>,
    /// `Bearer` or `DPoP`.
    pub(crate) token_type: String,
}

/// One client's requests to one token endpoint.
pub(crate) struct TokenEndpoint<'a> {
    pub(crate) fetcher: &'a Fetcher,
    pub(crate) url: Uri,
    /// The audience of a `private_key_jwt` assertion: the authorization server's issuer.
    pub(crate) issuer: &'a str,
    pub(crate) client_id: &'a str,
    pub(crate) auth: ClientAuth,
    /// The client's DPoP key, when the server binds tokens to it.
    pub(crate) dpop: Option<&'a Dpop>,
}

impl TokenEndpoint<'_> {
    /// POSTs `form` (the grant's fields) with the client's authentication, and reads the
    /// answer.
    pub(crate) async fn request(&self, mut form: Form) -> Result<TokenResponse, GrantError> {
        let mut headers = HeaderMap::new();
        match &self.auth {
            ClientAuth::None => {
                form.add("client_id", self.client_id);
            }
            ClientAuth::SecretBasic(secret) => {
                let value =
                    basic_credentials(self.client_id, secret.expose()).ok_or_else(|| {
                        Error::Auth("the client credentials are not valid in a header".into())
                    })?;
                headers.insert(AUTHORIZATION, value);
            }
            ClientAuth::SecretPost(secret) => {
                form.add("client_id", self.client_id)
                    .add("client_secret", secret.expose());
            }
            ClientAuth::PrivateKeyJwt(key) => {
                let assertion = client_assertion(key, self.client_id, self.issuer)?;
                form.add("client_id", self.client_id)
                    .add("client_assertion_type", JWT_ASSERTION)
                    .add("client_assertion", assertion.expose());
            }
        }
        // A DPoP proof with each attempt; one more attempt when the server asks for a nonce.
        let mut nonce_retried = false;
        let fetched = loop {
            let mut headers = headers.clone();
            if let Some(dpop) = self.dpop {
                let proof = dpop.proof("POST", &self.url, None, nonce(&dpop.as_nonce))?;
                headers.insert(DPOP, sensitive(&proof)?);
            }
            let fetched = self.fetcher.post_form(&self.url, &form, headers).await?;
            let wants_nonce = fetched.status.as_u16() == 400
                && fetched.json().is_some_and(|b| {
                    b.get("error").and_then(Value::as_str) == Some("use_dpop_nonce")
                });
            let offered = fetched
                .headers
                .get(DPOP_NONCE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match (self.dpop, wants_nonce, offered) {
                (Some(dpop), true, Some(offered)) if !nonce_retried => {
                    keep_nonce(&dpop.as_nonce, offered);
                    nonce_retried = true;
                }
                _ => break fetched,
            }
        };
        let body = fetched.json().unwrap_or(Value::Null);
        if !fetched.status.is_success() {
            let error = Error::Auth(describe_error(&self.url, fetched.status.as_u16(), &body));
            let oauth_error = fetched.status.is_client_error() && body.get("error").is_some();
            return Err(if oauth_error {
                GrantError::Refused(error)
            } else {
                GrantError::Failed(error)
            });
        }
        parse_token_response(&body).ok_or_else(|| {
            GrantError::Failed(Error::Auth(format!(
                "{}: the token response has no access_token",
                self.url
            )))
        })
    }
}

const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");
const DPOP_NONCE: http::HeaderName = http::HeaderName::from_static("dpop-nonce");

fn sensitive(value: &Secret) -> Result<http::HeaderValue, Error> {
    let mut header = http::HeaderValue::try_from(value.expose())
        .map_err(|_| Error::Auth("a DPoP proof that is not a header value".into()))?;
    header.set_sensitive(true);
    Ok(header)
}

/// An OAuth error answer, for people (never a token: the answer failed).
fn describe_error(url: &Uri, status: u16, body: &Value) -> String {
    let code = body
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("no error code");
    let description = body
        .get("error_description")
        .and_then(Value::as_str)
        .map(|d| format!(": {}", d.chars().take(200).collect::<String>()))
        .unwrap_or_default();
    format!("{url} answered HTTP {status} ({code}{description})")
}

fn parse_token_response(body: &Value) -> Option<TokenResponse> {
    let access_token = body.get("access_token")?.as_str()?;
    if access_token.is_empty() {
        return None;
    }
    let expires_at = body
        .get("expires_in")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .map(|seconds| SystemTime::now() + Duration::from_secs(seconds.min(10 * 365 * 86_400)));
    Some(TokenResponse {
        access_token: Secret::new(access_token),
        refresh_token: body
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(Secret::new),
        expires_at,
        scope: body.get("scope").and_then(Value::as_str).map(str::to_owned),
        issued_token_type: body
            .get("issued_token_type")
            .and_then(Value::as_str)
            .map(str::to_owned),
        token_type: body
            .get("token_type")
            .and_then(Value::as_str)
            .unwrap_or("Bearer")
            .to_owned(),
    })
}

/// A client assertion (RFC 7523 §3): `iss` = `sub` = the client id, `aud` = the issuer, a
/// fresh `jti`, valid for one minute.
pub(crate) fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
) -> Result<Secret, Error> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": random(16)?,
        "iat": now,
        "exp": now + 60,
    });
    key.sign(Map::new(), &claims)
        .map(Secret::new)
        .map_err(|e| Error::Auth(format!("signing the client assertion: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_responses_are_read_strictly() {
        let ok = parse_token_response(&json!({
            "access_token": "a", "token_type": "Bearer", "expires_in": 60,
            "refresh_token": "r", "scope": "x y"
        }))
        .unwrap();
        assert_eq!(ok.access_token.expose(), "a");
        assert_eq!(ok.refresh_token.unwrap().expose(), "r");
        assert!(ok.expires_at.unwrap() > SystemTime::now());
        assert!(parse_token_response(&json!({ "access_token": "" })).is_none());
        assert!(parse_token_response(&json!({ "token_type": "Bearer" })).is_none());
    }

    #[test]
    fn a_client_assertion_names_the_client_and_the_issuer() {
        use crate::auth::jose::{Algorithm, VerifyingKey, verify};
        let (key, _) = SigningKey::generate(Algorithm::ES256).unwrap();
        let public = VerifyingKey::from_jwk(&key.public_jwk().unwrap()).unwrap();
        let token = client_assertion(&key, "c1", "https://as.example").unwrap();
        let verified = verify(token.expose(), &[public], 8192).unwrap();
        assert_eq!(verified.claims["iss"], "c1");
        assert_eq!(verified.claims["sub"], "c1");
        assert_eq!(verified.claims["aud"], "https://as.example");
        assert!(verified.claims["jti"].as_str().unwrap().len() >= 16);
    }
}
