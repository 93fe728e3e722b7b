//! [`FileStore`]: registrations and tokens in one JSON file that only its owner can read, for
//! command-line clients that log in once and connect many times.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::store::{RegisteredClient, StoredTokens, TokenStore};
use crate::Error;
use crate::auth::Secret;

/// [`FileStore`]: registrations and tokens in one JSON file that only its owner can read, for
/// command-line clients that log in once and connect many times.
///
/// The file (mode 0600, in a directory created 0700) holds
/// `{"clients": {issuer: client}, "tokens": {server URL: tokens}}`. Every change rewrites it
/// whole through a temporary file (a fresh random name, created exclusively with mode 0600) and
/// a rename, so a reader never sees half a file. There is no lock: two processes saving at
/// once may each write, and the last write wins (the other's rotated refresh token is lost,
/// and that login has to be renewed).
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// The store in `path` (created on the first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every server URL that has tokens, with them.
    pub fn all_tokens(&self) -> Result<Vec<(String, StoredTokens)>, Error> {
        let document = self.read()?;
        let tokens = document
            .get("tokens")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        Ok(tokens
            .into_iter()
            .filter_map(|(resource, value)| Some((resource, tokens_from(&value)?)))
            .collect())
    }

    fn read(&self) -> Result<Value, Error> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::Auth(format!(
                    "{} is not a credentials file: {e}",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
            Err(e) => Err(Error::Io(e)),
        }
    }

    fn update(&self, change: impl FnOnce(&mut Map<String, Value>)) -> Result<(), Error> {
        let mut document = match self.read()? {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        change(&mut document);
        self.write(&Value::Object(document))
    }

    fn write(&self, document: &Value) -> Result<(), Error> {
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        // A fresh name, created exclusively: never a file (or a link) someone made beforehand.
        let temporary = self
            .path
            .with_extension(format!("tmp-{}", super::pkce::random(12)?));
        let text = serde_json::to_vec_pretty(document)?;
        write_private(&temporary, &text)?;
        std::fs::rename(&temporary, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            Error::Io(e)
        })
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.exists() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(Error::Io)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(Error::Io)
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    Ok(())
}

fn client_to(client: &RegisteredClient) -> Value {
    json!({
        "client_id": client.client_id,
        "client_secret": client.client_secret.as_ref().map(Secret::expose),
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "redirect_uri": client.redirect_uri,
    })
}

fn client_from(value: &Value) -> Option<RegisteredClient> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(RegisteredClient {
        client_id: text("client_id")?,
        client_secret: text("client_secret").map(Secret::new),
        token_endpoint_auth_method: text("token_endpoint_auth_method"),
        redirect_uri: text("redirect_uri"),
    })
}

fn tokens_to(tokens: &StoredTokens) -> Value {
    let expires_at = tokens
        .expires_at
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_secs());
    json!({
        "issuer": tokens.issuer,
        "access_token": tokens.access_token.expose(),
        "token_type": tokens.token_type,
        "refresh_token": tokens.refresh_token.as_ref().map(Secret::expose),
        "expires_at": expires_at,
        "scopes": tokens.scopes,
    })
}

fn tokens_from(value: &Value) -> Option<StoredTokens> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(StoredTokens {
        issuer: text("issuer")?,
        access_token: Secret::new(text("access_token")?),
        token_type: text("token_type").unwrap_or_else(|| "Bearer".to_owned()),
        refresh_token: text("refresh_token").map(Secret::new),
        expires_at: value
            .get("expires_at")
            .and_then(Value::as_u64)
            .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s))),
        scopes: value
            .get("scopes")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// Changes the object `name` of `document` (made empty when missing or not an object).
fn in_section(
    document: &mut Map<String, Value>,
    name: &str,
    change: impl FnOnce(&mut Map<String, Value>),
) {
    let mut section = match document.remove(name) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    change(&mut section);
    document.insert(name.to_owned(), Value::Object(section));
}

impl TokenStore for FileStore {
    fn client(&self, issuer: &str) -> Result<Option<RegisteredClient>, Error> {
        Ok(self
            .read()?
            .get("clients")
            .and_then(|c| c.get(issuer))
            .and_then(client_from))
    }

    fn save_client(&self, issuer: &str, client: &RegisteredClient) -> Result<(), Error> {
        self.update(|document| {
            in_section(document, "clients", |clients| {
                clients.insert(issuer.to_owned(), client_to(client));
            });
        })
    }

    fn tokens(&self, resource: &str) -> Result<Option<StoredTokens>, Error> {
        Ok(self
            .read()?
            .get("tokens")
            .and_then(|t| t.get(resource))
            .and_then(tokens_from))
    }

    fn save_tokens(&self, resource: &str, tokens: &StoredTokens) -> Result<(), Error> {
        self.update(|document| {
            in_section(document, "tokens", |all| {
                all.insert(resource.to_owned(), tokens_to(tokens));
            });
        })
    }

    fn remove_tokens(&self, resource: &str) -> Result<(), Error> {
        self.update(|document| {
            in_section(document, "tokens", |all| {
                all.remove(resource);
            });
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "barrel-mcp-file-store-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn round_trips_privately() {
        let dir = temp_dir("round-trip");
        let store = FileStore::new(dir.join("sub/credentials.json"));
        assert_eq!(store.tokens("http://x/mcp").unwrap(), None);
        let client = RegisteredClient::new("c1").with_secret("s1");
        store.save_client("https://as", &client).unwrap();
        let tokens = StoredTokens {
            issuer: "https://as".into(),
            access_token: Secret::new("a1"),
            token_type: "Bearer".into(),
            refresh_token: Some(Secret::new("r1")),
            expires_at: Some(UNIX_EPOCH + Duration::from_secs(2_000_000_000)),
            scopes: vec!["s".into()],
        };
        store.save_tokens("http://x/mcp", &tokens).unwrap();
        let again = FileStore::new(store.path());
        assert_eq!(again.client("https://as").unwrap(), Some(client));
        assert_eq!(again.client("https://other").unwrap(), None);
        assert_eq!(again.tokens("http://x/mcp").unwrap(), Some(tokens));
        assert_eq!(again.all_tokens().unwrap().len(), 1);
        again.remove_tokens("http://x/mcp").unwrap();
        assert_eq!(again.tokens("http://x/mcp").unwrap(), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(store.path()), 0o600);
            assert_eq!(mode(&dir.join("sub")), 0o700);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
