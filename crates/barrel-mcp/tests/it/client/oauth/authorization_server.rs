//! A test authorization server on loopback: RFC 8414 metadata, dynamic registration, an
//! authorization endpoint that approves at once (302 with `code`, `state` and `iss`), and a
//! token endpoint for the code grant with PKCE, single-use rotating refresh tokens and client
//! credentials. Tokens are HS256 JWTs for the protected server's `JwtBearer`.
//!
//! Every request is recorded (path, form or query, `Authorization` header) so tests assert
//! what the client sent; [`Switches`] make it misbehave.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawForm, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use barrel_mcp::auth::jose::{Algorithm, SigningKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The HS256 key tokens are signed with (the protected server checks them with it).
pub(super) const KEY: &[u8] = b"an-hs256-key-of-the-test-authorization-server";

/// How the server misbehaves.
#[derive(Debug, Clone, Default)]
pub(super) struct Switches {
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
    /// Scopes it grants at most (default: whatever is asked).
    pub grantable: Option<Vec<String>>,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub path: String,
    pub fields: HashMap<String, String>,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Grants {
    /// code → (client_id, challenge, scope, resource)
    codes: HashMap<String, (String, String, String, String)>,
    /// live refresh token → (client_id, scope, resource)
    refresh: HashMap<String, (String, String, String)>,
    clients: HashMap<String, Option<String>>,
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
pub(super) struct TestAs {
    inner: Arc<Inner>,
}

impl TestAs {
    pub(super) async fn start(switches: Switches) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let inner = Arc::new(Inner {
            issuer: format!("http://{addr}"),
            switches,
            key: SigningKey::hmac(KEY, Algorithm::HS256).expect("key"),
            seen: Mutex::new(Vec::new()),
            grants: Mutex::new(Grants::default()),
        });
        let app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(Arc::clone(&inner));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { inner }
    }

    pub(super) fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// Every request seen so far.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.inner.seen.lock().expect("lock").clone()
    }

    /// The requests to `path`.
    pub(super) fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }
}

fn record(inner: &Inner, path: &str, fields: HashMap<String, String>, headers: &HeaderMap) {
    inner.seen.lock().expect("lock").push(Seen {
        path: path.to_owned(),
        fields,
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
}

fn form(raw: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(raw);
    text.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " "))
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
            "code_challenge_methods_supported": methods,
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["mcp:read", "mcp:write", "mcp:admin", "offline_access"],
        }),
    )
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
    let mut grants = inner.grants.lock().expect("lock");
    grants.counter += 1;
    let client_id = format!("client-{}", grants.counter);
    grants.clients.insert(client_id.clone(), None);
    json_response(
        StatusCode::CREATED,
        &json!({
            "client_id": client_id,
            "token_endpoint_auth_method": "none",
            "redirect_uris": body["redirect_uris"],
        }),
    )
}

async fn authorize(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = form(query.unwrap_or_default().as_bytes());
    record(&inner, "/authorize", query.clone(), &headers);
    let field = |k: &str| query.get(k).cloned().unwrap_or_default();
    let code = {
        let mut grants = inner.grants.lock().expect("lock");
        grants.counter += 1;
        let code = format!("code-{}", grants.counter);
        grants.codes.insert(
            code.clone(),
            (
                field("client_id"),
                field("code_challenge"),
                field("scope"),
                field("resource"),
            ),
        );
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
    let enc = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    let location = format!(
        "{}?code={}&state={}&iss={}",
        field("redirect_uri"),
        enc(&code),
        enc(&state),
        enc(&iss)
    );
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    RawForm(raw): RawForm,
) -> Response {
    let fields = form(&raw);
    record(&inner, "/token", fields.clone(), &headers);
    let field = |k: &str| fields.get(k).cloned().unwrap_or_default();
    let mut grants = inner.grants.lock().expect("lock");
    let (client_id, scope, resource) = match field("grant_type").as_str() {
        "authorization_code" => {
            let Some((client_id, challenge, scope, resource)) = grants.codes.remove(&field("code"))
            else {
                return error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier")));
            if computed != challenge || client_id != field("client_id") {
                return error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            (client_id, scope, resource)
        }
        "refresh_token" => {
            // Single use: a refresh token presented twice is refused.
            let Some(entry) = grants.refresh.remove(&field("refresh_token")) else {
                return error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            entry
        }
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
    let refresh = format!("refresh-{}", grants.counter);
    grants.refresh.insert(
        refresh.clone(),
        (client_id.clone(), scope.clone(), resource.clone()),
    );
    let ttl = inner.switches.access_ttl.unwrap_or(3600);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let claims = json!({
        "iss": inner.issuer, "aud": resource, "sub": "user-1", "client_id": client_id,
        "scope": scope, "iat": now, "exp": now + ttl, "jti": format!("t{}", grants.counter),
    });
    let access = inner.key.sign(Map::new(), &claims).expect("sign");
    json_response(
        StatusCode::OK,
        &json!({
            "access_token": access, "token_type": "Bearer", "expires_in": ttl,
            "refresh_token": refresh, "scope": scope,
        }),
    )
}
