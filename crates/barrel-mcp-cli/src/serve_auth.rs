//! `barrel-mcp serve` protected: the auth flags, turned into the HTTP server's `AuthConfig`.
//!
//! Bearer JWTs checked against a key the server holds (an HS256 secret file, or a JWK Set
//! file) or fetches (a JWK Set URL), opaque tokens introspected at the authorization server
//! (RFC 7662), API keys (`--auth-api-keys`), HTTP Basic users (`--auth-basic`), any of them at once
//! (tried in that order), the RFC 9728 metadata naming the authorization servers, and scopes
//! for every operation or per tool. Secrets are read from files, never from the command line (where
//! `ps` and shell history would keep them).

use std::path::PathBuf;

use anyhow::{Context, bail};
use barrel_mcp::auth::AuthInfo;
use barrel_mcp::auth::jose::Algorithm;
use barrel_mcp::auth::server::{
    AnyOf, ApiKeys, AuthConfig, BasicAuth, Introspection, JwtBearer, ProtectedResource, ScopePolicy,
};

/// The auth flags of `serve`.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct AuthArgs {
    /// Require bearer JWTs signed with the HS256 secret in this file (at least 32 bytes; a
    /// trailing newline is ignored).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["auth_jwks_file", "auth_jwks_url"])]
    auth_jwt_secret_file: Option<PathBuf>,
    /// Require bearer JWTs signed with a key of the JWK Set in this file.
    #[arg(long, value_name = "FILE", conflicts_with = "auth_jwks_url")]
    auth_jwks_file: Option<PathBuf>,
    /// Require bearer JWTs signed with a key of the JWK Set at this URL (fetched and cached;
    /// https, or http on loopback).
    #[arg(long, value_name = "URL")]
    auth_jwks_url: Option<String>,
    /// Accept opaque tokens the authorization server's introspection endpoint (RFC 7662) says
    /// are active; needs --auth-introspection-client-id and --auth-introspection-secret-file.
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["auth_introspection_client_id", "auth_introspection_secret_file"]
    )]
    auth_introspection_url: Option<String>,
    /// This server's client id at the introspection endpoint.
    #[arg(long, value_name = "ID")]
    auth_introspection_client_id: Option<String>,
    /// The file holding this server's secret at the introspection endpoint.
    #[arg(long, value_name = "FILE")]
    auth_introspection_secret_file: Option<PathBuf>,
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
    /// Accept the API keys listed in this file, one `<hash> <subject> [scope,scope…]` per line
    /// (hashes from `barrel-mcp hash-key`); needs --auth-pepper-file.
    #[arg(long, value_name = "FILE", requires = "auth_pepper_file")]
    auth_api_keys: Option<PathBuf>,
    /// The pepper the API key hashes were made with.
    #[arg(long, value_name = "FILE")]
    auth_pepper_file: Option<PathBuf>,
    /// The header API keys come in. Default: X-API-Key.
    #[arg(long, value_name = "NAME")]
    auth_api_key_header: Option<String>,
    /// Accept HTTP Basic users listed in this file, one `<user> <hash> [scope,scope…]` per
    /// line (hashes from `barrel-mcp hash-password`).
    #[arg(long, value_name = "FILE")]
    auth_basic: Option<PathBuf>,
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
        let mut any = AnyOf::new();
        let mut count = 0;
        let jwt = match (
            &self.auth_jwt_secret_file,
            &self.auth_jwks_file,
            &self.auth_jwks_url,
        ) {
            (Some(path), _, _) => {
                let secret = read(path)?;
                let secret = secret.strip_suffix(b"\n").unwrap_or(&secret);
                Some(JwtBearer::hmac(secret, Algorithm::HS256)?)
            }
            (None, Some(path), _) => {
                let jwks: serde_json::Value = serde_json::from_slice(&read(path)?)
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                Some(JwtBearer::from_jwks(&jwks)?)
            }
            (None, None, Some(url)) => Some(JwtBearer::from_jwks_url(url)?),
            (None, None, None) => None,
        };
        if let Some(jwt) = jwt {
            let jwt = match &self.auth_issuer {
                Some(issuer) => jwt.issuer(issuer.as_str()),
                None => jwt,
            };
            any = any.or(jwt.audience(audience.as_str()));
            count += 1;
        }
        if let Some(url) = &self.auth_introspection_url {
            any = any.or(self.introspection(url, &audience)?);
            count += 1;
        }
        if let Some(path) = &self.auth_api_keys {
            any = any.or(self.api_keys(path)?);
            count += 1;
        }
        if let Some(path) = &self.auth_basic {
            any = any.or(basic_users(path)?);
            count += 1;
        }
        if count == 0 {
            if self.auth_issuer.is_some()
                || !self.authorization_servers.is_empty()
                || !self.required_scopes.is_empty()
                || !self.tool_scopes.is_empty()
            {
                bail!(
                    "auth flags need a provider: --auth-jwt-secret-file, --auth-jwks-file, \
                     --auth-jwks-url, --auth-introspection-url, --auth-api-keys or --auth-basic"
                );
            }
            return Ok(None);
        }
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
        Ok(Some(AuthConfig::new(any).resource(resource).scopes(scopes)))
    }

    fn introspection(&self, url: &str, audience: &str) -> anyhow::Result<Introspection> {
        let (Some(id), Some(secret)) = (
            &self.auth_introspection_client_id,
            &self.auth_introspection_secret_file,
        ) else {
            bail!(
                "--auth-introspection-url needs --auth-introspection-client-id and --auth-introspection-secret-file"
            );
        };
        let secret = crate::hash_commands::read_secret_file(secret)?;
        let mut introspection = Introspection::new(url, id.as_str(), secret)?.audience(audience);
        if let Some(issuer) = &self.auth_issuer {
            introspection = introspection.issuer(issuer.as_str());
        }
        Ok(introspection)
    }

    fn api_keys(&self, path: &PathBuf) -> anyhow::Result<ApiKeys> {
        let pepper = match &self.auth_pepper_file {
            Some(pepper) => crate::hash_commands::read_secret_file(pepper)?,
            None => bail!("--auth-api-keys needs --auth-pepper-file"),
        };
        let mut keys = ApiKeys::new(pepper);
        if let Some(header) = &self.auth_api_key_header {
            let header = http::HeaderName::from_bytes(header.to_ascii_lowercase().as_bytes())
                .with_context(|| format!("{header:?} is not a header name"))?;
            keys = keys.header(header);
        }
        for (hash, subject, scopes) in entries(path)? {
            keys = keys.key(&hash, AuthInfo::new(subject).with_scopes(scopes))?;
        }
        Ok(keys)
    }
}

/// The users of a `--auth-basic` file.
fn basic_users(path: &PathBuf) -> anyhow::Result<BasicAuth> {
    let mut users = BasicAuth::new("barrel-mcp");
    for (user, hash, scopes) in entries(path)? {
        users = users.user(
            &user,
            &hash,
            AuthInfo::new(user.as_str()).with_scopes(scopes),
        )?;
    }
    Ok(users)
}

/// The lines of a key or user file: two words and optional comma-separated scopes; blank lines
/// and `#` comments skipped.
fn entries(path: &PathBuf) -> anyhow::Result<Vec<(String, String, Vec<String>)>> {
    let text = String::from_utf8(read(path)?)
        .with_context(|| format!("{} is not UTF-8", path.display()))?;
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(first), Some(second)) = (words.next(), words.next()) else {
            bail!(
                "{}:{}: expected two words and optional scopes",
                path.display(),
                number + 1
            );
        };
        let scopes = words
            .next()
            .map(|s| s.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        out.push((first.to_owned(), second.to_owned(), scopes));
    }
    Ok(out)
}

fn read(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}
