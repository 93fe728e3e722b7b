//! Authentication and authorization in front of the HTTP server (feature `auth`), over real
//! sockets: the exact challenges of 401, 400, 403 and 503 on every path and in both eras, the
//! protected-resource metadata, `Ctx::auth` in handlers, sessions and `requestState` bound to
//! the principal, and authentication before the body is read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use barrel_mcp::auth::AuthInfo;
use barrel_mcp::auth::server::{
    AuthConfig, Authenticator, ProtectedResource, Rejection, ScopePolicy,
};
use barrel_mcp::http::HttpConfig;
use barrel_mcp::peer::BoxFuture;
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::ElicitRequestParams;
use http::{HeaderName, Method, StatusCode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    Client, Response, SseReader, TestServer, body_json, enveloped, initialize, session_id,
};
use crate::support::within;

/// Fixed tokens, `secret-<name>-token`: `alice` (read), `alice-writer` (read and write, the
/// same principal), `bob` (read), `admin`; `down` stands for a verifier that cannot be reached.
struct Tokens {
    calls: Arc<AtomicUsize>,
}

impl Authenticator for Tokens {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let Some(value) = head.headers.get(http::header::AUTHORIZATION) else {
                return Ok(None);
            };
            let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")) else {
                return Err(Rejection::malformed("expected a Bearer token"));
            };
            let token = token
                .strip_prefix("secret-")
                .and_then(|t| t.strip_suffix("-token"))
                .unwrap_or("");
            let user = |name: &str, scopes: &[&str]| {
                Ok(Some(
                    AuthInfo::new(name)
                        .with_issuer("https://as.test")
                        .with_client_id("client")
                        .with_scopes(scopes.iter().copied()),
                ))
            };
            match token {
                "alice" => user("alice", &["read"]),
                "alice-writer" => user("alice", &["read", "write"]),
                "bob" => user("bob", &["read"]),
                "admin" => user("carol", &["admin"]),
                "down" => Err(Rejection::unavailable("the key server is down")),
                _ => Err(Rejection::invalid("unknown token")),
            }
        })
    }

    fn headers(&self) -> Vec<HeaderName> {
        vec![HeaderName::from_static("x-test-key")]
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Tools that tell who called (`whoami`), need `write` (`delete`), or ask the client a question
/// (`ask_name`).
fn server() -> Server {
    Server::builder()
        .name("auth-test", "1.0.0")
        .request_state_key(&[9u8; 32])
        .tool(
            "whoami",
            "Who is calling",
            |ctx: Ctx, _: NoArgs| async move {
                let who = ctx.auth().map_or_else(
                    || "anonymous".to_owned(),
                    |auth| format!("{} [{}]", auth.subject, auth.scopes.join(" ")),
                );
                // The ready listener tells every request where its connection came from.
                let from = ctx
                    .http_request()
                    .and_then(|head| {
                        head.extensions
                            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                    })
                    .map_or_else(|| "nowhere".to_owned(), |info| info.0.ip().to_string());
                Ok(format!("{who} from={from}"))
            },
        )
        .tool("delete", "Needs write", |_: Ctx, _: NoArgs| async move {
            Ok("deleted".to_owned())
        })
        .tool(
            "ask_name",
            "Asks a question",
            |ctx: Ctx, _: NoArgs| async move {
                let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
                let answer = ctx
                    .elicit(ElicitRequestParams::form(
                        "Name?",
                        schema.as_object().cloned().unwrap_or_default(),
                    ))
                    .await?;
                Ok(format!("{answer:?}"))
            },
        )
        .build()
        .expect("server")
}

/// A protected server: every operation needs `read`, `delete` needs `write`, `admin` implies
/// both.
struct Protected {
    server: TestServer,
    calls: Arc<AtomicUsize>,
    metadata_url: String,
}

async fn protected(configure: impl FnOnce(AuthConfig) -> AuthConfig) -> Protected {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let calls = Arc::new(AtomicUsize::new(0));
    let resource = ProtectedResource::new(format!("http://{addr}/mcp"))
        .and_then(|r| r.authorization_server("https://as.test"))
        .expect("resource")
        .scopes_supported(["read", "write"]);
    let metadata_url = resource.metadata_url();
    let auth = AuthConfig::new(Tokens {
        calls: Arc::clone(&calls),
    })
    .resource(resource)
    .scopes(
        ScopePolicy::new()
            .require(["read"])
            .tool("delete", ["write"])
            .implies("admin", ["read", "write"]),
    );
    let config = HttpConfig {
        auth: Some(configure(auth)),
        ..HttpConfig::default()
    };
    Protected {
        server: TestServer::start_on(listener, server(), config),
        calls,
        metadata_url,
    }
}

fn www_authenticate(response: &Response) -> Vec<String> {
    response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().expect("ascii").to_owned())
        .collect()
}

/// The `Authorization` value of the token named `name`: `Bearer secret-<name>-token`, a
/// string that must never reach a log.
fn bearer(name: &str) -> String {
    format!("Bearer secret-{name}-token")
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}})
}

/// `initialize` and `notifications/initialized` with a token; the client keeps the session.
async fn open_session(client: &mut Client, token: &str) {
    let auth = bearer(token);
    let response = client
        .post_with(&initialize(1), &[("authorization", auth.as_str())])
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    client.session = Some(session_id(response.headers()).expect("session id"));
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let ack = client
        .post_with(&initialized, &[("authorization", auth.as_str())])
        .await;
    assert_eq!(ack.status(), StatusCode::ACCEPTED);
}

/// POSTs a 2026-07-28 request with its headers.
async fn post_stateless(client: &Client, body: &Value, token: Option<&str>) -> Response {
    let method = body["method"].as_str().expect("method").to_owned();
    let name = body["params"]["name"].as_str().map(str::to_owned);
    let auth = token.map(bearer);
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method.as_str()),
    ];
    if let Some(name) = &name {
        headers.push(("mcp-name", name.as_str()));
    }
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    client
        .send(Method::POST, &headers, Some(&body.to_string()))
        .await
}

fn tool_text(message: &Value) -> String {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {message}"))
        .to_owned()
}

#[tokio::test]
async fn no_credentials_get_the_exact_challenge_on_every_path() {
    let protected = protected(|auth| auth).await;
    let client = protected.server.client();
    let expected = format!(
        r#"Bearer scope="read", resource_metadata="{}""#,
        protected.metadata_url
    );
    let json = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let cases: Vec<(Method, &str, Option<String>)> = vec![
        (Method::POST, "/mcp", Some(initialize(1).to_string())),
        (
            Method::POST,
            "/mcp",
            Some(enveloped(1, "tools/list", json!({})).to_string()),
        ),
        (Method::GET, "/mcp", None),
        (Method::DELETE, "/mcp", None),
        (Method::GET, "/sse", None),
        (
            Method::POST,
            "/messages?sessionId=x",
            Some(call(1, "whoami").to_string()),
        ),
    ];
    for (method, path, body) in cases {
        let response = client
            .send_to(method.clone(), path, &json, body.as_deref())
            .await;
        assert_eq!(
            response.status(),
            StatusCode::UNAUTHORIZED,
            "{method} {path}"
        );
        assert_eq!(
            www_authenticate(&response),
            std::slice::from_ref(&expected),
            "{method} {path}"
        );
        let body = body_json(response).await;
        assert_eq!(body["error"], "invalid_token", "{method} {path}");
    }
    assert_eq!(protected.server.http.session_count(), 0);
}

#[tokio::test]
async fn refused_credentials_say_why_without_echoing_them() {
    let protected = protected(|auth| auth).await;
    let client = protected.server.client();
    let metadata = &protected.metadata_url;
    let cases = [
        (
            "Bearer secret-stolen-looking-token-token",
            StatusCode::UNAUTHORIZED,
            format!(
                r#"Bearer error="invalid_token", error_description="unknown token", scope="read", resource_metadata="{metadata}""#
            ),
        ),
        (
            "Basic YTpi",
            StatusCode::BAD_REQUEST,
            format!(
                r#"Bearer error="invalid_request", error_description="expected a Bearer token", scope="read", resource_metadata="{metadata}""#
            ),
        ),
    ];
    for (authorization, status, challenge) in cases {
        let response = client
            .post_with(&initialize(1), &[("authorization", authorization)])
            .await;
        assert_eq!(response.status(), status, "{authorization}");
        assert_eq!(www_authenticate(&response), [challenge]);
        let body = super::body_bytes(response).await;
        let text = String::from_utf8_lossy(&body);
        assert!(!text.contains("stolen-looking-token"), "{text}");
    }
    // A verifier that cannot be reached is 503, never 401: the token may be good.
    let down = client
        .post_with(
            &initialize(1),
            &[("authorization", "Bearer secret-down-token")],
        )
        .await;
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(down.headers()["retry-after"], "5");
    assert!(www_authenticate(&down).is_empty());
}

#[tokio::test]
async fn tokens_in_the_query_string_are_refused() {
    let protected = protected(|auth| auth).await;
    let client = protected.server.client();
    let response = client
        .send_to(
            Method::POST,
            "/mcp?access_token=alice",
            &[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            Some(&initialize(1).to_string()),
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        protected.calls.load(Ordering::SeqCst),
        0,
        "never authenticated"
    );
    assert_eq!(body_json(response).await["error"], "invalid_request");
}

#[tokio::test]
async fn handlers_see_the_caller_in_both_eras() {
    let protected = protected(|auth| auth).await;
    let mut client = protected.server.client();
    open_session(&mut client, "alice").await;
    let response = client
        .post_with(
            &call(2, "whoami"),
            &[("authorization", "Bearer secret-alice-token")],
        )
        .await;
    let answer = SseReader::new(response).next_message().await;
    assert_eq!(tool_text(&answer), "alice [read] from=127.0.0.1");

    let stateless = client.clone();
    let response = post_stateless(
        &Client {
            session: None,
            ..stateless
        },
        &enveloped(3, "tools/call", json!({"name": "whoami", "arguments": {}})),
        Some("bob"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        tool_text(&body_json(response).await),
        "bob [read] from=127.0.0.1"
    );
}

#[tokio::test]
async fn missing_scopes_are_403_with_every_scope_the_operation_needs() {
    let protected = protected(|auth| auth).await;
    let metadata = &protected.metadata_url;
    let expected = format!(
        r#"Bearer error="insufficient_scope", scope="read write", resource_metadata="{metadata}", error_description="the operation needs scopes the token does not grant""#
    );
    let mut client = protected.server.client();
    open_session(&mut client, "alice").await;
    // Sessionful: 403 instead of an SSE stream.
    let response = client
        .post_with(
            &call(2, "delete"),
            &[("authorization", "Bearer secret-alice-token")],
        )
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(www_authenticate(&response), std::slice::from_ref(&expected));
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(body_json(response).await["error"], "insufficient_scope");
    // The same principal with more scopes (step-up) continues the session.
    let response = client
        .post_with(
            &call(3, "delete"),
            &[("authorization", "Bearer secret-alice-writer-token")],
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        tool_text(&SseReader::new(response).next_message().await),
        "deleted"
    );
    // A scope that implies the others.
    let mut admin = protected.server.client();
    open_session(&mut admin, "admin").await;
    let response = admin
        .post_with(
            &call(2, "delete"),
            &[("authorization", "Bearer secret-admin-token")],
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);

    // 2026-07-28.
    let stateless = protected.server.client();
    let body = enveloped(4, "tools/call", json!({"name": "delete", "arguments": {}}));
    let response = post_stateless(&stateless, &body, Some("bob")).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(www_authenticate(&response), std::slice::from_ref(&expected));

    // Legacy HTTP+SSE: the POST to the messages endpoint is refused before it reaches the
    // session.
    let (session, mut stream) = open_legacy(&protected.server, "alice").await;
    let path = format!("/messages?sessionId={session}");
    let json = [
        ("content-type", "application/json"),
        ("authorization", "Bearer secret-alice-token"),
    ];
    let initialize = initialize(1).to_string();
    let response = stateless
        .send_to(Method::POST, &path, &json, Some(&initialize))
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert_eq!(stream.next_message().await["id"], 1);
    let response = stateless
        .send_to(
            Method::POST,
            &path,
            &json,
            Some(&call(2, "delete").to_string()),
        )
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(www_authenticate(&response), [expected]);
}

/// Opens a legacy HTTP+SSE session with a token: its id and its stream.
async fn open_legacy(server: &TestServer, token: &str) -> (String, SseReader) {
    let auth = bearer(token);
    let response = server
        .client()
        .send_to(
            Method::GET,
            "/sse",
            &[
                ("accept", "text/event-stream"),
                ("authorization", auth.as_str()),
            ],
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);
    let endpoint = stream.next_event().await.expect("endpoint").data;
    let session = endpoint
        .split_once("sessionId=")
        .map(|(_, id)| id.to_owned())
        .expect("session id");
    (session, stream)
}

#[tokio::test]
async fn legacy_sessions_carry_the_caller_and_belong_to_it() {
    let protected = protected(|auth| auth).await;
    let (session, mut stream) = open_legacy(&protected.server, "alice").await;
    let client = protected.server.client();
    let path = format!("/messages?sessionId={session}");
    let post = |token: &'static str, body: Value| {
        let client = client.clone();
        let path = path.clone();
        async move {
            let auth = bearer(token);
            client
                .send_to(
                    Method::POST,
                    &path,
                    &[
                        ("content-type", "application/json"),
                        ("authorization", auth.as_str()),
                    ],
                    Some(&body.to_string()),
                )
                .await
        }
    };
    assert_eq!(
        post("alice", initialize(1)).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(stream.next_message().await["id"], 1);
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(
        post("alice", initialized).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        post("alice", call(2, "whoami")).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        tool_text(&stream.next_message().await),
        "alice [read] from=127.0.0.1"
    );
    // Bob cannot post into Alice's session: it does not exist for him.
    assert_eq!(
        post("bob", call(3, "whoami")).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_session_belongs_to_the_principal_that_opened_it() {
    let protected = protected(|auth| auth).await;
    let mut alice = protected.server.client();
    open_session(&mut alice, "alice").await;
    let bob = Client {
        session: alice.session.clone(),
        ..protected.server.client()
    };
    let sse = [
        ("accept", "text/event-stream"),
        ("authorization", "Bearer secret-bob-token"),
    ];
    let cases = [
        bob.post_with(
            &call(2, "whoami"),
            &[("authorization", "Bearer secret-bob-token")],
        )
        .await,
        bob.send(Method::GET, &sse, None).await,
        bob.send(
            Method::DELETE,
            &[("authorization", "Bearer secret-bob-token")],
            None,
        )
        .await,
    ];
    for response in cases {
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    // Alice's session lives on.
    let response = alice
        .post_with(
            &call(3, "whoami"),
            &[("authorization", "Bearer secret-alice-token")],
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    // Her stronger token is the same principal: the GET stream opens.
    let response = alice
        .send(
            Method::GET,
            &[
                ("accept", "text/event-stream"),
                ("authorization", "Bearer secret-alice-writer-token"),
            ],
            None,
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn request_state_opens_only_for_the_principal_it_was_sealed_for() {
    let protected = protected(|auth| auth).await;
    let client = protected.server.client();
    let params = json!({"name": "ask_name", "arguments": {}});
    let first = post_stateless(
        &client,
        &enveloped(1, "tools/call", params.clone()),
        Some("alice"),
    )
    .await;
    let first = body_json(first).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let key = first["result"]["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("a question");
    let mut retry = params;
    retry["inputResponses"] = json!({ key: {"action": "accept", "content": {"name": "Ada"}} });
    retry["requestState"] = first["result"]["requestState"].clone();
    let stolen = post_stateless(
        &client,
        &enveloped(2, "tools/call", retry.clone()),
        Some("bob"),
    )
    .await;
    let stolen = body_json(stolen).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let own = post_stateless(
        &client,
        &enveloped(3, "tools/call", retry),
        Some("alice-writer"),
    )
    .await;
    let own = body_json(own).await;
    assert_eq!(own["result"]["resultType"], "complete", "{own}");
}

#[tokio::test]
async fn credentials_are_checked_before_the_body_is_read() {
    let protected = protected(|auth| auth).await;
    let mut socket = tokio::net::TcpStream::connect(protected.server.addr)
        .await
        .expect("connect");
    // A 3 MiB body is announced and never sent: the answer must not wait for it.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        protected.server.addr,
        3 * 1024 * 1024
    );
    socket.write_all(head.as_bytes()).await.expect("write");
    let mut answer = vec![0u8; 512];
    let read = within(socket.read(&mut answer)).await.expect("read");
    let text = String::from_utf8_lossy(&answer[..read]);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    assert_eq!(protected.server.http.session_count(), 0);
}

#[tokio::test]
async fn protected_resource_metadata_is_public() {
    let protected = protected(|auth| auth).await;
    let client = protected.server.client();
    let origin = [("origin", "https://elsewhere.example")];
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = client.send_to(Method::GET, path, &origin, None).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        let document = body_json(response).await;
        assert_eq!(
            document,
            json!({
                "resource": format!("http://{}/mcp", protected.server.addr),
                "authorization_servers": ["https://as.test"],
                "scopes_supported": ["read", "write"],
                "bearer_methods_supported": ["header"],
            })
        );
    }
    assert_eq!(
        protected.metadata_url,
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            protected.server.addr
        )
    );
    // Still behind the Host check.
    let rebound = client
        .send_to(
            Method::GET,
            "/.well-known/oauth-protected-resource",
            &[("host", "evil.example")],
            None,
        )
        .await;
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn browsers_may_send_the_authenticator_headers_and_read_the_challenge() {
    let protected = protected(|auth| auth).await;
    let client = protected.server.client();
    let origin = [("origin", "http://localhost:3000")];
    let preflight = client
        .send(
            Method::OPTIONS,
            &[
                ("origin", "http://localhost:3000"),
                ("access-control-request-method", "POST"),
            ],
            None,
        )
        .await;
    assert_eq!(preflight.status(), StatusCode::NO_CONTENT);
    let allowed = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .expect("ascii");
    assert!(
        allowed.contains("authorization") && allowed.contains("x-test-key"),
        "{allowed}"
    );
    let refused = client.send(Method::GET, &origin, None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused.headers()["access-control-allow-origin"],
        "http://localhost:3000"
    );
    let exposed = refused.headers()["access-control-expose-headers"]
        .to_str()
        .expect("ascii");
    assert!(exposed.contains("www-authenticate"), "{exposed}");
}

#[tokio::test]
async fn anonymous_callers_pass_where_no_scope_is_needed() {
    let protected = protected(|auth| {
        auth.scopes(ScopePolicy::new().tool("delete", ["write"]))
            .allow_anonymous(true)
    })
    .await;
    let client = protected.server.client();
    let response = post_stateless(
        &client,
        &enveloped(1, "tools/call", json!({"name": "whoami", "arguments": {}})),
        None,
    )
    .await;
    assert_eq!(
        tool_text(&body_json(response).await),
        "anonymous from=127.0.0.1"
    );
    // An operation that needs a scope asks an anonymous caller to authenticate: 401.
    let response = post_stateless(
        &client,
        &enveloped(2, "tools/call", json!({"name": "delete", "arguments": {}})),
        None,
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        www_authenticate(&response),
        [format!(
            r#"Bearer scope="write", resource_metadata="{}""#,
            protected.metadata_url
        )]
    );
    // Bad credentials are still refused.
    let response = post_stateless(
        &client,
        &enveloped(3, "tools/call", json!({"name": "whoami", "arguments": {}})),
        Some("forged"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

thread_local! {
    /// What this thread logged since [`capture_logs`], when it captures.
    static CAPTURED: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

fn capturing() -> bool {
    CAPTURED.with(|captured| captured.borrow().is_some())
}

/// Writes to this thread's capture buffer.
struct ThreadCapture;

impl std::io::Write for ThreadCapture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        CAPTURED.with(|captured| {
            if let Some(buffer) = captured.borrow_mut().as_mut() {
                buffer.extend_from_slice(bytes);
            }
        });
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Lets through the events of capturing threads. Every call site stays "sometimes" interesting,
/// so one first reached on a thread that does not capture is not switched off for good.
struct CapturingThreads;

impl<S> tracing_subscriber::layer::Filter<S> for CapturingThreads {
    fn enabled(
        &self,
        _: &tracing::Metadata<'_>,
        _: &tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        capturing()
    }

    fn callsite_enabled(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
}

/// Captures everything this thread logs, at every level, from now on. The subscriber is the
/// process's global one (installed once), so no call site's interest is cached as "nobody
/// listens" by a test running meanwhile; it formats only the events of capturing threads.
fn capture_logs() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::prelude::*;
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(|| ThreadCapture)
            .with_filter(CapturingThreads);
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer));
    });
    CAPTURED.with(|captured| *captured.borrow_mut() = Some(Vec::new()));
}

fn captured_logs() -> String {
    CAPTURED.with(|captured| {
        String::from_utf8_lossy(captured.borrow().as_deref().unwrap_or_default()).into_owned()
    })
}

#[tokio::test]
async fn a_trace_log_of_a_whole_auth_run_holds_no_secret() {
    // The test's runtime has one thread: the server's tasks log on it too.
    capture_logs();
    let protected = protected(|auth| auth).await;
    let mut client = protected.server.client();
    let forged = bearer("forged");
    let refused = client
        .post_with(&initialize(1), &[("authorization", forged.as_str())])
        .await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    open_session(&mut client, "alice").await;
    let alice = bearer("alice");
    let response = client
        .post_with(&call(2, "delete"), &[("authorization", alice.as_str())])
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = client
        .post_with(&call(3, "whoami"), &[("authorization", alice.as_str())])
        .await;
    SseReader::new(response).next_message().await;
    let stateless = Client {
        session: None,
        ..client.clone()
    };
    let body = enveloped(4, "tools/call", json!({"name": "whoami", "arguments": {}}));
    body_json(post_stateless(&stateless, &body, Some("bob")).await).await;
    let (_, mut stream) = open_legacy(&protected.server, "alice-writer").await;
    drop(stream.next_event());

    let log = captured_logs();
    assert!(
        log.contains("request authenticated"),
        "the run was logged:\n{log}"
    );
    for name in ["forged", "alice", "bob", "alice-writer"] {
        let secret = format!("secret-{name}-token");
        assert!(!log.contains(&secret), "{secret} in the log:\n{log}");
    }
}

#[tokio::test]
async fn jwt_bearer_over_the_wire_with_the_exact_challenges() {
    use barrel_mcp::auth::jose::{Algorithm, SigningKey};
    use barrel_mcp::auth::server::JwtBearer;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let resource_url = format!("http://{addr}/mcp");
    let secret = [42u8; 32];
    let resource = ProtectedResource::new(resource_url.as_str())
        .and_then(|r| r.authorization_server("https://as.test"))
        .expect("resource");
    let metadata = resource.metadata_url();
    let jwt = JwtBearer::hmac(&secret, Algorithm::HS256)
        .expect("key")
        .issuer("https://as.test")
        .audience(resource_url.as_str());
    let config = HttpConfig {
        auth: Some(AuthConfig::new(jwt).resource(resource)),
        ..HttpConfig::default()
    };
    let server = TestServer::start_on(listener, server(), config);
    let signer = SigningKey::hmac(&secret, Algorithm::HS256).expect("signer");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let token = |exp: u64, aud: &str| {
        signer
            .sign(
                serde_json::Map::new(),
                &json!({"iss": "https://as.test", "aud": aud, "sub": "jwt-user", "exp": exp, "scope": "read"}),
            )
            .expect("sign")
    };
    let client = server.client();
    let body = enveloped(1, "tools/call", json!({"name": "whoami", "arguments": {}}));
    let call = |token: String| {
        let client = client.clone();
        let body = body.clone();
        async move {
            let auth = format!("Bearer {token}");
            let headers = [
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "whoami"),
                ("authorization", auth.as_str()),
            ];
            client
                .send(Method::POST, &headers, Some(&body.to_string()))
                .await
        }
    };
    let ok = call(token(now + 300, &resource_url)).await;
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(
        tool_text(&body_json(ok).await),
        "jwt-user [read] from=127.0.0.1"
    );
    let cases = [
        (token(now - 3600, &resource_url), "the token has expired"),
        (
            token(now + 300, "https://elsewhere/mcp"),
            "the token is not for this server (aud)",
        ),
        ("e30.e30.".to_owned(), "unsupported or missing alg"),
    ];
    for (token, reason) in cases {
        let refused = call(token).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{reason}");
        assert_eq!(
            www_authenticate(&refused),
            [format!(
                r#"Bearer error="invalid_token", error_description="{reason}", resource_metadata="{metadata}""#
            )]
        );
    }
}
