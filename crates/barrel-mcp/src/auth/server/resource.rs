//! [`ProtectedResource`]: the RFC 9728 protected-resource metadata of the MCP endpoint: which
//! authorization servers issue its tokens and which scopes it knows. Clients find it through the
//! `resource_metadata` of a 401 challenge or at the well-known URLs, and it is the audience
//! tokens must be issued for.

use serde_json::{Map, Value, json};

use crate::Error;

/// The well-known path prefix of RFC 9728 §3.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The RFC 9728 metadata of the MCP endpoint.
///
/// ```
/// use barrel_mcp::auth::server::ProtectedResource;
///
/// let resource = ProtectedResource::new("https://mcp.example.com/mcp")?
///     .authorization_server("https://auth.example.com")?
///     .scopes_supported(["mcp:read", "mcp:write"])
///     .name("Example MCP server");
/// assert_eq!(
///     resource.metadata_url(),
///     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// # Ok::<(), barrel_mcp::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ProtectedResource {
    resource: String,
    origin: String,
    path: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    name: Option<String>,
    documentation: Option<String>,
    metadata_url: Option<String>,
}

/// Splits an absolute `http(s)` URL into its origin and path, refusing what a header or a
/// metadata document must not carry: a fragment, user info, quotes, backslashes, spaces and
/// control characters.
fn split_url(url: &str, what: &str) -> Result<(String, String), Error> {
    let bad = |why: &str| Error::Definition(format!("{what} {url:?}: {why}"));
    if url
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '"' || c == '\\')
    {
        return Err(bad(
            "has a quote, a backslash, a space or a control character",
        ));
    }
    if url.contains('#') {
        return Err(bad("has a fragment"));
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| bad("is not an absolute http(s) URL"))?;
    let scheme = &url[..url.len() - rest.len()];
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(bad("needs a host and no user info"));
    }
    if path.contains('?') {
        return Err(bad("has a query"));
    }
    Ok((
        format!("{scheme}{}", authority.to_ascii_lowercase()),
        path.to_owned(),
    ))
}

impl ProtectedResource {
    /// The metadata of the endpoint at `resource`, its absolute URL (what clients connect to,
    /// and the audience its tokens carry).
    pub fn new(resource: impl Into<String>) -> Result<Self, Error> {
        let resource = resource.into();
        let (origin, path) = split_url(&resource, "resource")?;
        Ok(Self {
            resource,
            origin,
            path,
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            name: None,
            documentation: None,
            metadata_url: None,
        })
    }

    /// Adds an authorization server (its issuer URL) whose tokens the endpoint accepts.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Result<Self, Error> {
        let issuer = issuer.into();
        split_url(&issuer, "authorization server")?;
        self.authorization_servers.push(issuer);
        Ok(self)
    }

    /// The scopes the endpoint knows (`scopes_supported`): what a client asks for when a
    /// challenge names none.
    #[must_use]
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A name for people (`resource_name`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A page for developers (`resource_documentation`).
    #[must_use]
    pub fn documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// Names another URL for the metadata in challenges (a proxy in front of the server serves
    /// it elsewhere). Default: [`metadata_url`](Self::metadata_url)'s derived form.
    pub fn with_metadata_url(mut self, url: impl Into<String>) -> Result<Self, Error> {
        let url = url.into();
        split_url(&url, "metadata URL")?;
        self.metadata_url = Some(url);
        Ok(self)
    }

    /// The endpoint's URL.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The authorization servers.
    pub fn authorization_servers(&self) -> &[String] {
        &self.authorization_servers
    }

    /// The path the metadata is served at on this host: the well-known prefix followed by the
    /// resource's path (RFC 9728 §3.1).
    pub fn metadata_path(&self) -> String {
        format!("{WELL_KNOWN}{}", self.path.trim_end_matches('/'))
    }

    /// The URL `resource_metadata` names in challenges.
    pub fn metadata_url(&self) -> String {
        match &self.metadata_url {
            Some(url) => url.clone(),
            None => format!("{}{}", self.origin, self.metadata_path()),
        }
    }

    /// The metadata document.
    pub fn document(&self) -> Value {
        let mut document = Map::new();
        document.insert("resource".into(), json!(self.resource));
        document.insert(
            "authorization_servers".into(),
            json!(self.authorization_servers),
        );
        if !self.scopes_supported.is_empty() {
            document.insert("scopes_supported".into(), json!(self.scopes_supported));
        }
        document.insert("bearer_methods_supported".into(), json!(["header"]));
        if let Some(name) = &self.name {
            document.insert("resource_name".into(), json!(name));
        }
        if let Some(url) = &self.documentation {
            document.insert("resource_documentation".into(), json!(url));
        }
        Value::Object(document)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_sits_at_the_path_suffixed_well_known_url() {
        let at_root = ProtectedResource::new("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            at_root.metadata_url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
        let nested = ProtectedResource::new("https://MCP.example.com/api/mcp/").unwrap();
        assert_eq!(
            nested.metadata_path(),
            "/.well-known/oauth-protected-resource/api/mcp"
        );
        assert_eq!(
            nested.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
        );
    }

    #[test]
    fn the_document_names_servers_and_scopes() {
        let resource = ProtectedResource::new("https://a.example/mcp")
            .unwrap()
            .authorization_server("https://as.example")
            .unwrap()
            .scopes_supported(["r", "w"]);
        assert_eq!(
            resource.document(),
            json!({
                "resource": "https://a.example/mcp",
                "authorization_servers": ["https://as.example"],
                "scopes_supported": ["r", "w"],
                "bearer_methods_supported": ["header"],
            })
        );
    }

    #[test]
    fn what_a_header_cannot_carry_is_refused_at_build() {
        for bad in [
            "mcp.example.com/mcp",
            "ftp://a/b",
            "https://a/b#frag",
            "https://a/b?q=1",
            "https://a/\"b",
            "https://a/b\r\nX: y",
            "https://user@a/b",
            "https:///b",
            "https://a/b c",
        ] {
            assert!(ProtectedResource::new(bad).is_err(), "{bad}");
        }
        assert!(
            ProtectedResource::new("https://a/b")
                .unwrap()
                .authorization_server("not a url")
                .is_err()
        );
    }
}
