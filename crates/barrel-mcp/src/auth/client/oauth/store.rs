//! Where the OAuth client keeps what it obtained: client registrations keyed by issuer (a
//! client id from one authorization server is never shown to another), and tokens keyed by
//! the protected resource (with the issuer that granted them, so tokens from a replaced
//! authorization server are not used).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::Error;
use crate::auth::Secret;

/// A client registered with (or pre-registered at) one authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegisteredClient {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// The token endpoint authentication method the server registered, if it said.
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URI it was registered with (dynamic registration), if any.
    pub redirect_uri: Option<String>,
}

impl RegisteredClient {
    /// A client known by `client_id`, with no secret.
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            redirect_uri: None,
        }
    }

    /// Sets the secret.
    #[must_use]
    pub fn with_secret(mut self, secret: impl Into<Secret>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

/// Tokens for one protected resource.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The authorization server that issued them.
    pub issuer: String,
    /// The access token.
    pub access_token: Secret,
    /// How it is presented: `Bearer`, or `DPoP` for a token bound to this client's DPoP key
    /// (which lives in memory only: such a token is not reused by another process).
    pub token_type: String,
    /// The refresh token, if one was issued.
    pub refresh_token: Option<Secret>,
    /// When the access token expires, if the server said.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted (or requested, when the server did not say).
    pub scopes: Vec<String>,
}

/// Where the OAuth client keeps registrations and tokens.
pub trait TokenStore: Send + Sync + 'static {
    /// The client registered with `issuer`.
    fn client(&self, issuer: &str) -> Result<Option<RegisteredClient>, Error>;
    /// Keeps the client registered with `issuer`.
    fn save_client(&self, issuer: &str, client: &RegisteredClient) -> Result<(), Error>;
    /// The tokens for `resource`.
    fn tokens(&self, resource: &str) -> Result<Option<StoredTokens>, Error>;
    /// Keeps the tokens for `resource`.
    fn save_tokens(&self, resource: &str, tokens: &StoredTokens) -> Result<(), Error>;
    /// Forgets the tokens for `resource`.
    fn remove_tokens(&self, resource: &str) -> Result<(), Error>;
}

/// Keeps everything in memory, for the life of the process (the default).
#[derive(Debug, Default)]
pub struct MemoryStore {
    clients: Mutex<HashMap<String, RegisteredClient>>,
    tokens: Mutex<HashMap<String, StoredTokens>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl TokenStore for MemoryStore {
    fn client(&self, issuer: &str) -> Result<Option<RegisteredClient>, Error> {
        Ok(lock(&self.clients).get(issuer).cloned())
    }

    fn save_client(&self, issuer: &str, client: &RegisteredClient) -> Result<(), Error> {
        lock(&self.clients).insert(issuer.to_owned(), client.clone());
        Ok(())
    }

    fn tokens(&self, resource: &str) -> Result<Option<StoredTokens>, Error> {
        Ok(lock(&self.tokens).get(resource).cloned())
    }

    fn save_tokens(&self, resource: &str, tokens: &StoredTokens) -> Result<(), Error> {
        lock(&self.tokens).insert(resource.to_owned(), tokens.clone());
        Ok(())
    }

    fn remove_tokens(&self, resource: &str) -> Result<(), Error> {
        lock(&self.tokens).remove(resource);
        Ok(())
    }
}
