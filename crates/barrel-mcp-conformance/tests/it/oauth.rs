//! The OAuth client (feature `oauth-client`) against a protected barrel-mcp server (feature
//! `auth`, ES256 JWTs checked against the authorization server's JWK Set URL) and the test
//! authorization server, over real sockets: the whole code flow with registration, PKCE,
//! `resource` and step-up; refresh with rotation; client credentials; every refusal (no S256,
//! `state`, `iss`, the metadata issuer, the resource); the step-up bound; the SSRF guard; no
//! cross-origin redirect followed.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use barrel_mcp::auth::client::oauth::{Headless, OAuthClient};
use barrel_mcp::auth::server::{AuthConfig, JwtBearer, ProtectedResource, ScopePolicy};
use barrel_mcp::client::Client;
use barrel_mcp::http::HttpConfig;
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::transport::http_client::HttpClientTransport;
use barrel_mcp::types::CallToolParams;
use barrel_mcp_conformance::auth_server::{Switches, TestAuthorizationServer as TestAs};
use schemars::JsonSchema;
use serde::Deserialize;

/// Fails a test that hangs.
async fn within<T>(test: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), test)
        .await
        .expect("the test did not finish within 30 s")
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// What the protected server is told about its authorization server.
struct Protection {
    /// The issuer its metadata names (and its tokens must carry).
    issuer: String,
    /// The `resource` its metadata names (default: its own URL).
    resource: Option<String>,
    /// The scope `write` needs.
    write_scope: &'static str,
}

/// A protected server: every operation needs `mcp:read`, `write` needs `write_scope`.
async fn protected(protection: Protection) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let url = format!("http://{addr}/mcp");
    // Forbidden issuers (the SSRF test) cannot serve keys: any loopback URL will do.
    let jwks = match protection.issuer.strip_prefix("http://127.0.0.1") {
        Some(_) => format!("{}/jwks", protection.issuer),
        None => "http://127.0.0.1:9/jwks".to_owned(),
    };
    let jwt = JwtBearer::from_jwks_url(&jwks)
        .expect("jwks")
        .issuer(protection.issuer.clone())
        .audience(url.clone());
    let resource = ProtectedResource::new(protection.resource.unwrap_or_else(|| url.clone()))
        .and_then(|r| r.authorization_server(protection.issuer))
        .expect("resource")
        .scopes_supported(["mcp:read", "mcp:write"]);
    let auth = AuthConfig::new(jwt).resource(resource).scopes(
        ScopePolicy::new()
            .require(["mcp:read"])
            .tool("write", [protection.write_scope]),
    );
    let server = Server::builder()
        .name("protected", "1.0.0")
        .tool("read", "Reads", |_: Ctx, _: NoArgs| async move {
            Ok("read ok".to_owned())
        })
        .tool("write", "Writes", |_: Ctx, _: NoArgs| async move {
            Ok("write ok".to_owned())
        })
        .build()
        .expect("server");
    let config = HttpConfig {
        auth: Some(auth),
        ..HttpConfig::default()
    };
    let http = barrel_mcp::http::StreamableHttp::new(server, config);
    let task = tokio::spawn(async move {
        let _ = barrel_mcp::http::serve(listener, http, std::future::pending()).await;
    });
    (url, task)
}

async fn standard(switches: Switches, write_scope: &'static str) -> (TestAs, String) {
    let authorization = TestAs::start_local(switches).await.expect("start");
    let (url, _task) = protected(Protection {
        issuer: authorization.issuer().to_owned(),
        resource: None,
        write_scope,
    })
    .await;
    (authorization, url)
}

fn oauth(url: &str) -> OAuthClient {
    OAuthClient::builder(url)
        .expect("url")
        .authorization_code(Headless::new("http://127.0.0.1:9/callback"))
        .build()
        .expect("oauth client")
}

async fn connect(url: &str, oauth: OAuthClient) -> barrel_mcp::Result<Client> {
    let transport = HttpClientTransport::new(url)?.auth(oauth);
    Client::builder().connect_http(transport).await
}

async fn call(client: &Client, tool: &str) -> barrel_mcp::Result<String> {
    let result = client.call_tool(CallToolParams::new(tool)).await?;
    Ok(result.text_content())
}

#[tokio::test]
async fn the_code_flow_registers_authorizes_and_steps_up() {
    within(async {
        let (authorization, url) = standard(Switches::default(), "mcp:write").await;
        let client = connect(&url, oauth(&url)).await.expect("connect");
        assert_eq!(call(&client, "read").await.expect("read"), "read ok");
        assert_eq!(call(&client, "write").await.expect("write"), "write ok");

        let registrations = authorization.seen_at("/register");
        assert_eq!(registrations.len(), 1, "registered once");
        assert_eq!(registrations[0].fields["application_type"], "native");
        assert!(registrations[0].fields["grant_types"].contains("refresh_token"));
        let authorizations = authorization.seen_at("/authorize");
        assert_eq!(
            authorizations.len(),
            2,
            "a first authorization and one step-up"
        );
        // The challenge's scope (offline_access because the authorization server offers it),
        // then the union with what the 403 names.
        assert_eq!(authorizations[0].fields["scope"], "mcp:read offline_access");
        assert_eq!(
            authorizations[1].fields["scope"],
            "mcp:read offline_access mcp:write"
        );
        for request in &authorizations {
            assert_eq!(request.fields["code_challenge_method"], "S256");
            assert_eq!(request.fields["resource"], url);
            assert!(request.fields["state"].len() >= 43);
        }
        for request in authorization.seen_at("/token") {
            assert_eq!(request.fields["resource"], url);
            assert_eq!(request.fields["code_verifier"].len(), 43);
        }
        // Nothing of the MCP connection reached the authorization server.
        assert!(
            authorization
                .seen()
                .iter()
                .all(|s| s.authorization.is_none())
        );
        client.close();
    })
    .await;
}

#[tokio::test]
async fn a_scope_first_asked_for_by_a_403_is_added_to_the_next_authorization() {
    within(async {
        let (authorization, url) = standard(Switches::default(), "mcp:admin").await;
        let client = connect(&url, oauth(&url)).await.expect("connect");
        assert_eq!(call(&client, "write").await.expect("write"), "write ok");
        let scopes: Vec<String> = authorization
            .seen_at("/authorize")
            .iter()
            .map(|s| s.fields["scope"].clone())
            .collect();
        assert_eq!(scopes.len(), 2);
        assert_eq!(
            scopes[1], "mcp:read offline_access mcp:admin",
            "the union of what was asked and what the 403 names"
        );
        client.close();
    })
    .await;
}

#[tokio::test]
async fn step_up_is_bounded() {
    within(async {
        let switches = Switches {
            grantable: Some(vec!["mcp:read".into(), "mcp:write".into()]),
            ..Switches::default()
        };
        let (authorization, url) = standard(switches, "mcp:admin").await;
        let client = connect(&url, oauth(&url)).await.expect("connect");
        let refused = call(&client, "write").await.unwrap_err();
        assert!(refused.is_auth(), "{refused}");
        // One authorization at connect, then at most three for the one call.
        assert!(authorization.seen_at("/authorize").len() <= 4);
    })
    .await;
}

#[tokio::test]
async fn tokens_are_refreshed_before_they_expire_and_rotated() {
    within(async {
        // Tokens live 30 s: within the client's 60 s margin, so every request refreshes
        // first; the server accepts each refresh token once.
        let switches = Switches {
            access_ttl: Some(30),
            ..Switches::default()
        };
        let (authorization, url) = standard(switches, "mcp:write").await;
        let client = connect(&url, oauth(&url)).await.expect("connect");
        for _ in 0..3 {
            assert_eq!(call(&client, "read").await.expect("read"), "read ok");
        }
        let refreshes: Vec<String> = authorization
            .seen_at("/token")
            .iter()
            .filter(|s| s.fields["grant_type"] == "refresh_token")
            .map(|s| s.fields["refresh_token"].clone())
            .collect();
        assert!(refreshes.len() >= 3, "{refreshes:?}");
        let mut unique = refreshes.clone();
        unique.dedup();
        assert_eq!(
            unique, refreshes,
            "each refresh used the newest refresh token"
        );
        assert_eq!(authorization.seen_at("/authorize").len(), 1);
        client.close();
    })
    .await;
}

/// Connecting fails with an auth error, and the authorization server saw nothing at `never`.
async fn refused(switches: Switches, never: &str) -> TestAs {
    let (authorization, url) = standard(switches, "mcp:write").await;
    let error = connect(&url, oauth(&url)).await.unwrap_err();
    assert!(error.is_auth(), "{error}");
    assert!(
        authorization.seen_at(never).is_empty(),
        "{never} was contacted: {error}"
    );
    authorization
}

#[tokio::test]
async fn no_s256_means_no_authorization() {
    within(refused(
        Switches {
            no_s256: true,
            ..Switches::default()
        },
        "/authorize",
    ))
    .await;
}

#[tokio::test]
async fn a_wrong_state_or_iss_means_no_token_request() {
    within(async {
        refused(
            Switches {
                redirect_state: Some("forged".into()),
                ..Switches::default()
            },
            "/token",
        )
        .await;
        for iss in ["http://attacker.example", "http://127.0.0.1:1"] {
            refused(
                Switches {
                    redirect_iss: Some(iss.into()),
                    ..Switches::default()
                },
                "/token",
            )
            .await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_metadata_issuer_mismatch_means_no_registration() {
    within(refused(
        Switches {
            metadata_issuer: Some("http://attacker.example".into()),
            ..Switches::default()
        },
        "/register",
    ))
    .await;
}

#[tokio::test]
async fn a_resource_mismatch_means_no_contact_with_the_authorization_server() {
    within(async {
        let authorization = TestAs::start_local(Switches::default())
            .await
            .expect("start");
        let (url, _task) = protected(Protection {
            issuer: authorization.issuer().to_owned(),
            resource: Some("https://evil.example.com/mcp".into()),
            write_scope: "mcp:write",
        })
        .await;
        let error = connect(&url, oauth(&url)).await.unwrap_err();
        assert!(error.is_auth(), "{error}");
        assert!(error.to_string().contains("evil.example.com"), "{error}");
        assert!(authorization.seen().is_empty());
    })
    .await;
}

#[tokio::test]
async fn authorization_servers_on_forbidden_addresses_are_never_contacted() {
    within(async {
        // Link-local (cloud metadata), in several spellings, and metadata host names: refused
        // before any connection, even for a server on loopback.
        for issuer in [
            "https://169.254.169.254",
            "https://[::ffff:169.254.169.254]",
            "https://[fe80::1]",
            "https://metadata.google.internal",
            "https://0.0.0.0:1",
        ] {
            let (url, _task) = protected(Protection {
                issuer: issuer.to_owned(),
                resource: None,
                write_scope: "mcp:write",
            })
            .await;
            let started = std::time::Instant::now();
            let error = connect(&url, oauth(&url)).await.unwrap_err();
            assert!(error.is_auth(), "{issuer}: {error}");
            assert!(error.to_string().contains("refus"), "{issuer}: {error}");
            assert!(started.elapsed() < Duration::from_secs(5), "{issuer}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    within(async {
        // The other origin counts what reaches it.
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let other = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let other_addr = other.local_addr().expect("addr");
        let counter = std::sync::Arc::clone(&hits);
        let app = Router::new().fallback(get(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { "{}" }
        }));
        tokio::spawn(async move {
            let _ = axum::serve(other, app).await;
        });
        // An "authorization server" whose metadata redirects there.
        let redirecting = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let issuer = format!("http://{}", redirecting.local_addr().expect("addr"));
        let target = format!("http://{other_addr}/.well-known/oauth-authorization-server");
        let app = Router::new().fallback(get(move || {
            let target = target.clone();
            async move { axum::response::Redirect::temporary(&target) }
        }));
        tokio::spawn(async move {
            let _ = axum::serve(redirecting, app).await;
        });
        let (url, _task) = protected(Protection {
            issuer,
            resource: None,
            write_scope: "mcp:write",
        })
        .await;
        let error = connect(&url, oauth(&url)).await.unwrap_err();
        assert!(error.is_auth(), "{error}");
        assert!(error.to_string().contains("another origin"), "{error}");
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    })
    .await;
}

#[tokio::test]
async fn client_credentials_with_a_secret() {
    within(async {
        let (authorization, url) = standard(Switches::default(), "mcp:write").await;
        authorization.add_client("machine", "machine-secret");
        let oauth = OAuthClient::builder(&url)
            .expect("url")
            .client_id("machine")
            .client_secret("machine-secret")
            .client_credentials()
            .build()
            .expect("oauth client");
        let client = connect(&url, oauth).await.expect("connect");
        assert_eq!(call(&client, "write").await.expect("write"), "write ok");
        let tokens = authorization.seen_at("/token");
        assert!(
            tokens
                .iter()
                .all(|t| t.fields["grant_type"] == "client_credentials")
        );
        assert!(tokens.iter().all(|t| {
            t.authorization
                .as_deref()
                .is_some_and(|a| a.starts_with("Basic "))
        }));
        assert_eq!(tokens.len(), 2, "a first token, then the step-up for write");
        client.close();
    })
    .await;
}

#[tokio::test]
async fn a_wrong_client_secret_is_an_auth_error() {
    within(async {
        let (authorization, url) = standard(Switches::default(), "mcp:write").await;
        authorization.add_client("machine", "machine-secret");
        let oauth = OAuthClient::builder(&url)
            .expect("url")
            .client_id("machine")
            .client_secret("wrong")
            .client_credentials()
            .build()
            .expect("oauth client");
        let error = connect(&url, oauth).await.unwrap_err();
        assert!(error.is_auth(), "{error}");
        assert!(error.to_string().contains("invalid_client"), "{error}");
        assert!(
            !error.to_string().contains("wrong"),
            "no secret in errors: {error}"
        );
    })
    .await;
}

#[tokio::test]
async fn credentials_given_in_advance_go_to_their_issuer_only() {
    within(async {
        let (authorization, url) = standard(Switches::default(), "mcp:write").await;
        authorization.add_client("machine", "machine-secret");
        let oauth = OAuthClient::builder(&url)
            .expect("url")
            .client_id("machine")
            .client_secret("machine-secret")
            .issuer("https://the-right-one.example")
            .client_credentials()
            .build()
            .expect("oauth client");
        let error = connect(&url, oauth).await.unwrap_err();
        assert!(error.is_auth(), "{error}");
        assert!(error.to_string().contains("not sent"), "{error}");
        assert!(authorization.seen_at("/token").is_empty());
    })
    .await;
}
