//! Finding the authorization server of an MCP server: the protected-resource metadata
//! (RFC 9728), then the authorization server's metadata (RFC 8414, or OpenID Connect
//! discovery), in the orders the MCP spec gives, with the 2025-03-26 fallbacks.
//!
//! Two checks decide whether the client goes on:
//! - **The resource.** The metadata's `resource` must be the MCP server's origin with a path
//!   that is a segment-wise prefix of the server's path; otherwise no authorization server is
//!   contacted at all. The `resource` sent in every OAuth request is that value.
//! - **The issuer.** The authorization server's metadata must name the issuer it was found
//!   for (RFC 8414 §3.3), compared as strings (a root issuer may differ by its trailing `/`).
//!   On the 2025-03-26 path (no protected-resource metadata), the issuer must be on the MCP
//!   server's origin. The issuer recorded, for the RFC 9207 `iss` check and to key client
//!   credentials, is the metadata's own.

use http::Uri;
use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use crate::auth::Challenge;
use crate::auth::fetch::{Fetcher, origin, resolve};

/// An RFC 9728 protected-resource metadata document (the fields the client reads).
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// Issuers of the authorization servers it trusts.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// RFC 9449: the algorithms it accepts DPoP proofs in.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// RFC 9449: it accepts DPoP-bound tokens only.
    #[serde(default)]
    pub dpop_bound_access_tokens_required: bool,
}

/// An authorization server's metadata (RFC 8414; the fields the client reads).
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct ServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where users authorize.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are issued.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes it issues.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; the client requires `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint (RFC 8414 default:
    /// `client_secret_basic`).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Grants it supports.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Client ID metadata documents are accepted as client ids.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// RFC 9449: the algorithms it accepts DPoP proofs in.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// True when the server lists `scope`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter to send (RFC 8707).
    pub(crate) resource: String,
    /// The protected-resource metadata, when the server has some.
    pub(crate) resource_metadata: Option<ResourceMetadata>,
    /// The authorization server (with no metadata at all, the 2025-03-26 default endpoints,
    /// PKCE `S256` assumed).
    pub(crate) server: ServerMetadata,
    /// The MCP server takes DPoP-bound tokens (its metadata says so, or it challenged with
    /// `DPoP`).
    pub(crate) dpop_wanted: bool,
}

impl Discovered {
    /// The issuer, as the metadata names it.
    pub(crate) fn issuer(&self) -> &str {
        &self.server.issuer
    }

    pub(crate) fn endpoint(&self, which: &str) -> Result<Uri, Error> {
        let value = match which {
            "authorization" => self.server.authorization_endpoint.as_deref(),
            "token" => self.server.token_endpoint.as_deref(),
            "registration" => self.server.registration_endpoint.as_deref(),
            _ => None,
        };
        let value = value.ok_or_else(|| {
            Error::Auth(format!(
                "the authorization server {} has no {which} endpoint",
                self.server.issuer
            ))
        })?;
        value
            .parse()
            .map_err(|_| Error::Auth(format!("invalid {which} endpoint {value:?}")))
    }
}

/// Discovers the authorization server for the MCP server at `server`, given the challenge of
/// its 401 (if any).
pub(crate) async fn discover(
    fetcher: &Fetcher,
    server: &Uri,
    challenge: Option<&Challenge>,
) -> Result<Discovered, Error> {
    let Some(metadata) = resource_metadata(fetcher, server, challenge).await? else {
        return legacy(fetcher, server).await;
    };
    check_resource(server, &metadata.resource)?;
    let issuer = metadata.authorization_servers.first().ok_or_else(|| {
        Error::Auth(format!(
            "the protected-resource metadata of {server} names no authorization server"
        ))
    })?;
    let server_metadata = server_metadata(fetcher, issuer).await?.ok_or_else(|| {
        Error::Auth(format!(
            "no authorization server metadata found for {issuer}"
        ))
    })?;
    if !issuers_match(issuer, &server_metadata.issuer) {
        return Err(Error::Auth(format!(
            "the metadata found for {issuer} names another issuer ({}); not used",
            server_metadata.issuer
        )));
    }
    let dpop_wanted = metadata.dpop_bound_access_tokens_required
        || metadata.dpop_signing_alg_values_supported.is_some();
    Ok(Discovered {
        resource: metadata.resource.clone(),
        resource_metadata: Some(metadata),
        server: server_metadata,
        dpop_wanted,
    })
}

/// The protected-resource metadata: the challenge's `resource_metadata` (same origin as the
/// server), then the path-suffixed well-known URL, then the root one.
async fn resource_metadata(
    fetcher: &Fetcher,
    server: &Uri,
    challenge: Option<&Challenge>,
) -> Result<Option<ResourceMetadata>, Error> {
    let mut candidates = Vec::new();
    if let Some(url) = challenge
        .and_then(|c| c.get("resource_metadata"))
        .and_then(|url| resolve(server, url))
    {
        if origin(&url) == origin(server) {
            candidates.push(url);
        } else {
            tracing::warn!(%url, "resource_metadata on another origin; ignored");
        }
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.extend(resolve(
            server,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    candidates.extend(resolve(server, "/.well-known/oauth-protected-resource"));
    for url in candidates {
        let fetched = fetcher.get_json(&url).await?;
        if !fetched.status.is_success() {
            continue;
        }
        let Some(value) = fetched.json() else {
            continue;
        };
        if let Ok(metadata) = serde_json::from_value::<ResourceMetadata>(value) {
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// Refuses a `resource` that is not the server, or a path-prefix of it on the same origin.
pub(crate) fn check_resource(server: &Uri, resource: &str) -> Result<(), Error> {
    let mismatch = || {
        Error::Auth(format!(
            "the protected-resource metadata is for {resource}, not for {server}; no \
             authorization server was contacted"
        ))
    };
    let parsed: Uri = resource.parse().map_err(|_| mismatch())?;
    if parsed.scheme().is_none() || origin(&parsed) != origin(server) {
        return Err(mismatch());
    }
    let segments = |uri: &Uri| {
        uri.path()
            .split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (prefix, full) = (segments(&parsed), segments(server));
    if prefix.len() > full.len() || prefix[..] != full[..prefix.len()] {
        return Err(mismatch());
    }
    Ok(())
}

/// The metadata URLs of `issuer`, in the spec's order.
fn metadata_urls(issuer: &Uri) -> Vec<Uri> {
    let path = issuer.path().trim_end_matches('/');
    let mut paths = Vec::new();
    if path.is_empty() {
        paths.push("/.well-known/oauth-authorization-server".to_owned());
        paths.push("/.well-known/openid-configuration".to_owned());
    } else {
        paths.push(format!("/.well-known/oauth-authorization-server{path}"));
        paths.push(format!("/.well-known/openid-configuration{path}"));
        paths.push(format!("{path}/.well-known/openid-configuration"));
    }
    paths.iter().filter_map(|p| resolve(issuer, p)).collect()
}

/// The first metadata document found for `issuer`.
async fn server_metadata(fetcher: &Fetcher, issuer: &str) -> Result<Option<ServerMetadata>, Error> {
    let url: Uri = issuer
        .parse()
        .map_err(|_| Error::Auth(format!("invalid issuer {issuer:?}")))?;
    for candidate in metadata_urls(&url) {
        let fetched = fetcher.get_json(&candidate).await?;
        if !fetched.status.is_success() {
            continue;
        }
        if let Some(metadata) = fetched
            .json()
            .and_then(|v: Value| serde_json::from_value::<ServerMetadata>(v).ok())
        {
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// RFC 8414 §3.3: the same string; a root issuer may differ by its trailing `/`.
pub(crate) fn issuers_match(expected: &str, found: &str) -> bool {
    if expected == found {
        return true;
    }
    let root = |s: &str| {
        s.parse::<Uri>()
            .is_ok_and(|u| u.path() == "/" || u.path().is_empty())
    };
    root(expected) && root(found) && expected.trim_end_matches('/') == found.trim_end_matches('/')
}

/// 2025-03-26: no protected-resource metadata. The authorization server is the MCP server's
/// origin: its RFC 8414 metadata if it has some (an issuer on that origin), else the default
/// endpoints `/authorize`, `/token` and `/register`.
async fn legacy(fetcher: &Fetcher, server: &Uri) -> Result<Discovered, Error> {
    let base = format!(
        "{}://{}",
        server.scheme_str().unwrap_or("https"),
        server.authority().map(|a| a.as_str()).unwrap_or("")
    );
    let resource = server.to_string();
    if let Some(url) = resolve(server, "/.well-known/oauth-authorization-server") {
        let fetched = fetcher.get_json(&url).await?;
        if fetched.status.is_success()
            && let Some(metadata) = fetched
                .json()
                .and_then(|v| serde_json::from_value::<ServerMetadata>(v).ok())
        {
            let same_origin = metadata
                .issuer
                .parse::<Uri>()
                .is_ok_and(|issuer| origin(&issuer) == origin(server));
            if !same_origin {
                return Err(Error::Auth(format!(
                    "the authorization server metadata at {url} names an issuer on another \
                     origin ({}); not used",
                    metadata.issuer
                )));
            }
            return Ok(Discovered {
                resource,
                resource_metadata: None,
                server: metadata,
                dpop_wanted: false,
            });
        }
    }
    Ok(Discovered {
        resource,
        resource_metadata: None,
        server: ServerMetadata {
            issuer: base.clone(),
            authorization_endpoint: Some(format!("{base}/authorize")),
            token_endpoint: Some(format!("{base}/token")),
            registration_endpoint: Some(format!("{base}/register")),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..ServerMetadata::default()
        },
        dpop_wanted: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_must_be_the_server_or_a_prefix_of_it() {
        let server: Uri = "http://h:1/api/mcp".parse().unwrap();
        assert!(check_resource(&server, "http://h:1/api/mcp").is_ok());
        assert!(check_resource(&server, "http://h:1/api").is_ok());
        assert!(check_resource(&server, "http://h:1").is_ok());
        assert!(check_resource(&server, "http://H:1/").is_ok());
        assert!(check_resource(&server, "http://h:1/ap").is_err());
        assert!(check_resource(&server, "http://h:1/api/mcp/x").is_err());
        assert!(check_resource(&server, "https://h:1/api/mcp").is_err());
        assert!(check_resource(&server, "http://evil.example.com/api/mcp").is_err());
        assert!(check_resource(&server, "/api/mcp").is_err());
    }

    #[test]
    fn metadata_urls_follow_the_spec_order() {
        let with_path: Uri = "https://as.example/tenant1".parse().unwrap();
        let urls: Vec<String> = metadata_urls(&with_path)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            urls,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        let root: Uri = "https://as.example".parse().unwrap();
        assert_eq!(metadata_urls(&root).len(), 2);
    }

    #[test]
    fn issuers_are_compared_as_strings() {
        assert!(issuers_match("https://a.example", "https://a.example/"));
        assert!(issuers_match("https://a.example/t", "https://a.example/t"));
        assert!(!issuers_match(
            "https://a.example/t",
            "https://a.example/t/"
        ));
        assert!(!issuers_match(
            "https://a.example",
            "https://attacker.example"
        ));
    }
}
