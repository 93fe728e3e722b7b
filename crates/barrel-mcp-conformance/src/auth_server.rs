//! A test authorization server (tests and interop only, never a product feature): RFC 8414
//! metadata, a JWK Set, dynamic client registration, an authorization endpoint that approves at
//! once (302 with `code`, `state` and `iss`), and a token endpoint for the code grant with PKCE
//! `S256`, single-use rotating refresh tokens (issued when `offline_access` was granted, as
//! many providers do), and client credentials (no refresh token, RFC 6749 §4.4.3).
//!
//! Access tokens are ES256 JWTs with `iss`, `aud` (the `resource` of the request), `sub`,
//! `client_id`, `scope`, `exp`, signed by a key published at `/jwks`. Every request is recorded
//! (path, form or query fields, `Authorization`) for tests to assert on; [`Switches`] make the
//! server misbehave.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use barrel_mcp::auth::jose::{Algorithm, SigningKey};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// How the server misbehaves (everything off by default).
#[derive(Debug, Clone, Default)]
pub struct Switches {
    /// Leave `S256` out of `code_challenge_methods_supported`.
    pub no_s256: bool,
    /// Put this `iss` in the redirect instead of the issuer.
    pub redirect_iss: Option<String>,
    /// Name this issuer in the metadata instead of the real one.
    pub metadata_issuer: Option<String>,
    /// Send back this `state` instead of the one received.
    pub redirect_state: Option<String>,
    /// Lifetime of access tokens, in seconds (default 3600).
    pub access_ttl: Option<u64>,
    /// The scopes it grants at most (default: whatever is asked).
    pub grantable: Option<Vec<String>>,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `/register`, `/authorize`, `/token`, `/metadata` or `/jwks`.
    pub path: String,
    /// The form or query fields (for `/register`, the JSON body's string fields and
    /// `grant_types` as JSON).
    pub fields: HashMap<String, String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
}

/// A client known to the server: its secret, if confidential.
type Clients = HashMap<String, Option<String>>;

#[derive(Default)]
struct Grants {
    /// code → (client_id, challenge, scope, resource)
    codes: HashMap<String, (String, String, String, String)>,
    /// live refresh token → (client_id, scope, resource)
    refresh: HashMap<String, (String, String, String)>,
    clients: Clients,
    counter: u64,
}

struct Inner {
    issuer: String,
    switches: Switches,
    key: SigningKey,
    seen: Mutex<Vec<Seen>>,
    grants: Mutex<Grants>,
}

/// A running test authorization server.
#[derive(Clone)]
pub struct TestAuthorizationServer {
    inner: Arc<Inner>,
    addr: SocketAddr,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TestAuthorizationServer {
    /// Starts on `listener` (its address is the issuer: `http://127.0.0.1:PORT`).
    pub fn start(listener: tokio::net::TcpListener, switches: Switches) -> anyhow::Result<Self> {
        let addr = listener.local_addr()?;
        let (key, _) = SigningKey::generate(Algorithm::ES256)?;
        // A kid of its own per key, so a restarted server's tokens make verifiers refetch.
        let x = key
            .public_jwk()
            .and_then(|jwk| {
                jwk["x"]
                    .as_str()
                    .map(|x| x.chars().take(12).collect::<String>())
            })
            .unwrap_or_default();
        let inner = Arc::new(Inner {
            issuer: format!("http://{addr}"),
            switches,
            key: key.with_kid(format!("test-as-{x}")),
            seen: Mutex::new(Vec::new()),
            grants: Mutex::new(Grants::default()),
        });
        let app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/.well-known/openid-configuration", get(metadata))
            .route("/jwks", get(jwks))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(Arc::clone(&inner));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { inner, addr })
    }

    /// Binds 127.0.0.1 on a free port and starts.
    pub async fn start_local(switches: Switches) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        Self::start(listener, switches)
    }

    /// The issuer (`http://127.0.0.1:PORT`).
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The JWK Set URL.
    pub fn jwks_url(&self) -> String {
        format!("{}/jwks", self.inner.issuer)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Registers a confidential client for the client credentials grant.
    pub fn add_client(&self, client_id: &str, secret: &str) {
        lock(&self.inner.grants)
            .clients
            .insert(client_id.to_owned(), Some(secret.to_owned()));
    }

    /// Every request seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.inner.seen).clone()
    }

    /// The requests to `path`.
    pub fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    /// A token as the server issues them, for `resource` with `scope`, to `client_id`.
    pub fn mint(&self, client_id: &str, scope: &str, resource: &str) -> String {
        mint(&self.inner, client_id, scope, resource, 1)
    }
}

fn record(inner: &Inner, path: &str, fields: HashMap<String, String>, headers: &HeaderMap) {
    lock(&inner.seen).push(Seen {
        path: path.to_owned(),
        fields,
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
}

fn form(raw: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(raw)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn error(status: StatusCode, code: &str) -> Response {
    json_response(status, &json!({ "error": code }))
}

async fn metadata(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    record(&inner, "/metadata", HashMap::new(), &headers);
    let issuer = &inner.issuer;
    let methods: &[&str] = if inner.switches.no_s256 {
        &["plain"]
    } else {
        &["S256"]
    };
    json_response(
        StatusCode::OK,
        &json!({
            "issuer": inner.switches.metadata_issuer.clone().unwrap_or_else(|| issuer.clone()),
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": methods,
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["mcp:read", "mcp:write", "mcp:admin", "offline_access"],
        }),
    )
}

async fn jwks(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    record(&inner, "/jwks", HashMap::new(), &headers);
    let jwk = inner.key.public_jwk().unwrap_or(Value::Null);
    json_response(StatusCode::OK, &json!({ "keys": [jwk] }))
}

async fn register(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut fields = HashMap::new();
    for key in [
        "client_name",
        "token_endpoint_auth_method",
        "application_type",
    ] {
        if let Some(v) = body.get(key).and_then(Value::as_str) {
            fields.insert(key.to_owned(), v.to_owned());
        }
    }
    fields.insert("grant_types".into(), body["grant_types"].to_string());
    record(&inner, "/register", fields, &headers);
    let mut grants = lock(&inner.grants);
    grants.counter += 1;
    let client_id = format!("client-{}", grants.counter);
    let confidential = body["token_endpoint_auth_method"]
        .as_str()
        .is_some_and(|m| m.starts_with("client_secret"));
    let secret = confidential.then(|| format!("secret-{}", grants.counter));
    grants.clients.insert(client_id.clone(), secret.clone());
    let mut answer = json!({
        "client_id": client_id,
        "token_endpoint_auth_method": body["token_endpoint_auth_method"].as_str().unwrap_or("none"),
        "redirect_uris": body["redirect_uris"],
        "grant_types": body["grant_types"],
    });
    if let Some(secret) = secret {
        answer["client_secret"] = json!(secret);
    }
    json_response(StatusCode::CREATED, &answer)
}

async fn authorize(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = form(query.unwrap_or_default().as_bytes());
    record(&inner, "/authorize", query.clone(), &headers);
    let field = |k: &str| query.get(k).cloned().unwrap_or_default();
    if !lock(&inner.grants)
        .clients
        .contains_key(&field("client_id"))
    {
        return error(StatusCode::BAD_REQUEST, "invalid_client");
    }
    let code = {
        let mut grants = lock(&inner.grants);
        grants.counter += 1;
        let code = format!("code-{}", grants.counter);
        let entry = (
            field("client_id"),
            field("code_challenge"),
            field("scope"),
            field("resource"),
        );
        grants.codes.insert(code.clone(), entry);
        code
    };
    let state = inner
        .switches
        .redirect_state
        .clone()
        .unwrap_or_else(|| field("state"));
    let iss = inner
        .switches
        .redirect_iss
        .clone()
        .unwrap_or_else(|| inner.issuer.clone());
    let enc = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
    let location = format!(
        "{}?code={}&state={}&iss={}",
        field("redirect_uri"),
        enc(&code),
        enc(&state),
        enc(&iss)
    );
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

/// The client a token request authenticates as: Basic, or `client_id` (+ `client_secret`) in
/// the form; `None` when a confidential client's secret is wrong.
fn client_of(
    clients: &Clients,
    headers: &HeaderMap,
    fields: &HashMap<String, String>,
) -> Option<String> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pair| {
            let (id, secret) = pair.split_once(':')?;
            Some((decode(id), Some(decode(secret))))
        });
    let (id, secret) = basic.or_else(|| {
        let id = fields.get("client_id")?.clone();
        Some((id, fields.get("client_secret").cloned()))
    })?;
    match clients.get(&id)? {
        Some(expected) if Some(expected) != secret.as_ref() => None,
        _ => Some(id),
    }
}

async fn token(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let fields = form(&body);
    record(&inner, "/token", fields.clone(), &headers);
    let field = |k: &str| fields.get(k).cloned().unwrap_or_default();
    let mut grants = lock(&inner.grants);
    let Some(client) = client_of(&grants.clients, &headers, &fields) else {
        return error(StatusCode::UNAUTHORIZED, "invalid_client");
    };
    let grant_type = field("grant_type");
    let (client_id, scope, resource) = match grant_type.as_str() {
        "authorization_code" => {
            let Some((client_id, challenge, scope, resource)) = grants.codes.remove(&field("code"))
            else {
                return error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier")));
            if computed != challenge || client_id != client {
                return error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            (client_id, scope, resource)
        }
        "refresh_token" => {
            // Single use: a refresh token presented twice is refused.
            match grants.refresh.remove(&field("refresh_token")) {
                Some(entry) if entry.0 == client => entry,
                _ => return error(StatusCode::BAD_REQUEST, "invalid_grant"),
            }
        }
        "client_credentials" => (client, field("scope"), field("resource")),
        _ => return error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    };
    let scope = match &inner.switches.grantable {
        Some(allowed) => scope
            .split_whitespace()
            .filter(|s| allowed.iter().any(|a| a == s))
            .collect::<Vec<_>>()
            .join(" "),
        None => scope,
    };
    grants.counter += 1;
    let n = grants.counter;
    let offline = grant_type != "client_credentials"
        && scope.split_whitespace().any(|s| s == "offline_access");
    let refresh = offline.then(|| format!("refresh-{n}"));
    if let Some(refresh) = &refresh {
        let entry = (client_id.clone(), scope.clone(), resource.clone());
        grants.refresh.insert(refresh.clone(), entry);
    }
    drop(grants);
    let ttl = inner.switches.access_ttl.unwrap_or(3600);
    let access = mint(&inner, &client_id, &scope, &resource, n);
    let mut answer = json!({
        "access_token": access, "token_type": "Bearer", "expires_in": ttl, "scope": scope,
    });
    if let Some(refresh) = refresh {
        answer["refresh_token"] = json!(refresh);
    }
    json_response(StatusCode::OK, &answer)
}

fn mint(inner: &Inner, client_id: &str, scope: &str, resource: &str, n: u64) -> String {
    let ttl = inner.switches.access_ttl.unwrap_or(3600);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({
        "iss": inner.issuer, "aud": resource, "sub": "user-1", "client_id": client_id,
        "scope": scope, "iat": now, "exp": now + ttl, "jti": format!("t{n}"),
    });
    inner.key.sign(Map::new(), &claims).unwrap_or_default()
}
