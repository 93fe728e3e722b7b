//! A protected Streamable HTTP server: a custom authenticator (fixed bearer tokens, as the
//! "custom authentication" guide of barrel_mcp does), the RFC 9728 metadata that tells OAuth
//! clients where to get a token, and scopes per tool.
//!
//! Run it with `cargo run -p barrel-mcp-examples --example auth_server -- 127.0.0.1:8080`, then
//! `curl -i http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp`, or call it with
//! `Authorization: Bearer reader-token` (scope `mcp:read`) or `writer-token` (`mcp:write` too).

use barrel_mcp::auth::AuthInfo;
use barrel_mcp::auth::server::{
    AuthConfig, Authenticator, ProtectedResource, Rejection, ScopePolicy,
};
use barrel_mcp::http::{HttpConfig, StreamableHttp};
use barrel_mcp::peer::BoxFuture;
use barrel_mcp::server::{Ctx, Server};
use schemars::JsonSchema;
use serde::Deserialize;

/// Two fixed tokens. A real server checks JWTs or asks its identity provider.
struct FixedTokens;

impl Authenticator for FixedTokens {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        Box::pin(async move {
            let Some(value) = head.headers.get(http::header::AUTHORIZATION) else {
                return Ok(None);
            };
            let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")) else {
                return Err(Rejection::malformed("expected a Bearer token"));
            };
            match token {
                "reader-token" => Ok(Some(AuthInfo::new("reader").with_scopes(["mcp:read"]))),
                "writer-token" => Ok(Some(
                    AuthInfo::new("writer").with_scopes(["mcp:read", "mcp:write"]),
                )),
                _ => Err(Rejection::invalid("unknown token")),
            }
        })
    }
}

/// The arguments of `note`.
#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// What to write down.
    text: String,
}

/// The arguments of a tool that takes none.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[tokio::main]
async fn main() -> barrel_mcp::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let server = Server::builder()
        .name("protected", "0.1.0")
        .tool(
            "whoami",
            "Who is calling",
            |ctx: Ctx, _: NoArgs| async move {
                let who = ctx.auth().map_or("anonymous", |auth| auth.subject.as_str());
                Ok(format!("you are {who}"))
            },
        )
        .tool(
            "note",
            "Writes a note (needs mcp:write)",
            |_: Ctx, args: NoteArgs| async move { Ok(format!("noted: {}", args.text)) },
        )
        .build()?;
    let resource = ProtectedResource::new(format!("http://{addr}/mcp"))?
        .authorization_server("https://auth.example.com")?
        .scopes_supported(["mcp:read", "mcp:write"]);
    let auth = AuthConfig::new(FixedTokens).resource(resource).scopes(
        ScopePolicy::new()
            .require(["mcp:read"])
            .tool("note", ["mcp:write"]),
    );
    let config = HttpConfig {
        auth: Some(auth),
        ..HttpConfig::default()
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("serving a protected endpoint on http://{addr}/mcp");
    barrel_mcp::http::serve(listener, StreamableHttp::new(server, config), async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
