//! `barrel-mcp serve` protected: the auth flags, turned into the HTTP server's `AuthConfig`.
//!
//! Bearer JWTs checked against a key the server holds (an HS256 secret file, or a JWK Set
//! file), the RFC 9728 metadata naming the authorization servers, and scopes for every
//! operation or per tool. Secrets are read from files, never from the command line (where
//! `ps` and shell history would keep them).

use std::path::PathBuf;

use anyhow::{Context, bail};
use barrel_mcp::auth::jose::Algorithm;
use barrel_mcp::auth::server::{AuthConfig, JwtBearer, ProtectedResource, ScopePolicy};

/// The auth flags of `serve`.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct AuthArgs {
    /// Require bearer JWTs signed with the HS256 secret in this file (at least 32 bytes; a
    /// trailing newline is ignored).
    #[arg(long, value_name = "FILE", conflicts_with = "auth_jwks_file")]
    auth_jwt_secret_file: Option<PathBuf>,
    /// Require bearer JWTs signed with a key of the JWK Set in this file.
    #[arg(long, value_name = "FILE")]
    auth_jwks_file: Option<PathBuf>,
    /// The issuer tokens must name (`iss`).
    #[arg(long, value_name = "URL")]
    auth_issuer: Option<String>,
    /// The audience tokens must name (`aud`); default: the resource URL.
    #[arg(long, value_name = "URL")]
    auth_audience: Option<String>,
    /// The endpoint's public URL, for the protected-resource metadata and as the default
    /// audience; default: http(s)://ADDR/mcp.
    #[arg(long, value_name = "URL")]
    resource_url: Option<String>,
    /// An authorization server that issues tokens for this endpoint (RFC 9728). Repeatable.
    #[arg(long = "authorization-server", value_name = "URL")]
    authorization_servers: Vec<String>,
    /// A scope every operation needs. Repeatable.
    #[arg(long = "required-scope", value_name = "SCOPE")]
    required_scopes: Vec<String>,
    /// A scope one tool needs, as TOOL=SCOPE. Repeatable.
    #[arg(long = "tool-scope", value_name = "TOOL=SCOPE")]
    tool_scopes: Vec<String>,
}

impl AuthArgs {
    /// The `AuthConfig` these flags ask for, or `None` when no authentication flag is given.
    pub(crate) fn config(&self, default_resource: &str) -> anyhow::Result<Option<AuthConfig>> {
        let resource_url = self
            .resource_url
            .clone()
            .unwrap_or_else(|| default_resource.to_owned());
        let audience = self
            .auth_audience
            .clone()
            .unwrap_or_else(|| resource_url.clone());
        let jwt = match (&self.auth_jwt_secret_file, &self.auth_jwks_file) {
            (Some(path), _) => {
                let secret = read(path)?;
                let secret = secret.strip_suffix(b"\n").unwrap_or(&secret);
                JwtBearer::hmac(secret, Algorithm::HS256)?
            }
            (None, Some(path)) => {
                let jwks: serde_json::Value = serde_json::from_slice(&read(path)?)
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                JwtBearer::from_jwks(&jwks)?
            }
            (None, None) => {
                if self.auth_issuer.is_some()
                    || !self.authorization_servers.is_empty()
                    || !self.required_scopes.is_empty()
                    || !self.tool_scopes.is_empty()
                {
                    bail!("auth flags need --auth-jwt-secret-file or --auth-jwks-file");
                }
                return Ok(None);
            }
        };
        let jwt = match &self.auth_issuer {
            Some(issuer) => jwt.issuer(issuer.as_str()),
            None => jwt,
        }
        .audience(audience);
        let mut resource = ProtectedResource::new(resource_url)?;
        for server in &self.authorization_servers {
            resource = resource.authorization_server(server.as_str())?;
        }
        let mut scopes = ScopePolicy::new().require(self.required_scopes.iter().cloned());
        let mut supported = self.required_scopes.clone();
        for entry in &self.tool_scopes {
            let Some((tool, scope)) = entry.split_once('=') else {
                bail!("--tool-scope takes TOOL=SCOPE, not {entry:?}");
            };
            scopes = scopes.tool(tool, [scope]);
            supported.push(scope.to_owned());
        }
        supported.dedup();
        let resource = resource.scopes_supported(supported);
        Ok(Some(AuthConfig::new(jwt).resource(resource).scopes(scopes)))
    }
}

fn read(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}
