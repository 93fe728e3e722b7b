//! Getting a client id at an authorization server, in the spec's order: credentials given in
//! advance, a client ID metadata document (when the server accepts them), dynamic client
//! registration (RFC 7591), or a clear error.

use serde_json::{Value, json};

use super::discovery::Discovered;
use super::store::RegisteredClient;
use crate::Error;
use crate::auth::Secret;
use crate::auth::fetch::{Fetcher, is_loopback_host};

/// How the client identifies itself to authorization servers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientIdentity {
    /// A client registered in advance (used at every authorization server it is offered to:
    /// set it only for a server that knows it).
    pub pre_registered: Option<RegisteredClient>,
    /// The URL of the client's ID metadata document, used as its client id where the server
    /// accepts such documents.
    pub metadata_document: Option<String>,
    /// Register dynamically where the server offers it. Default true.
    pub dynamic_registration: bool,
    /// `client_name` in a registration.
    pub client_name: String,
    /// An initial access token for the registration endpoint (RFC 7591 §3).
    pub initial_access_token: Option<Secret>,
}

impl Default for ClientIdentity {
    fn default() -> Self {
        Self {
            pre_registered: None,
            metadata_document: None,
            dynamic_registration: true,
            client_name: "barrel-mcp".into(),
            initial_access_token: None,
        }
    }
}

/// What a registration asks for.
pub(crate) struct Wanted<'a> {
    pub(crate) redirect_uri: Option<&'a str>,
    pub(crate) grant_types: &'a [&'a str],
    pub(crate) scope: Option<&'a str>,
}

/// A client id for the authorization server `found`.
pub(crate) async fn register(
    fetcher: &Fetcher,
    identity: &ClientIdentity,
    found: &Discovered,
    wanted: &Wanted<'_>,
) -> Result<RegisteredClient, Error> {
    if let Some(client) = &identity.pre_registered {
        return Ok(client.clone());
    }
    if let Some(url) = &identity.metadata_document
        && found.server.client_id_metadata_document_supported
    {
        return Ok(RegisteredClient::new(url.clone()));
    }
    if !identity.dynamic_registration || found.server.registration_endpoint.is_none() {
        return Err(Error::Auth(format!(
            "no client id for {}: it offers no registration this client can use; give a \
             pre-registered client id",
            found.issuer()
        )));
    }
    let endpoint = found.endpoint("registration")?;
    let method = registration_auth_method(found);
    let mut body = json!({
        "client_name": identity.client_name,
        "grant_types": wanted.grant_types,
        "token_endpoint_auth_method": method,
    });
    if let Some(redirect) = wanted.redirect_uri {
        body["redirect_uris"] = json!([redirect]);
        body["response_types"] = json!(["code"]);
        // A loopback redirect is a native application's (RFC 8252).
        let native = redirect
            .parse::<http::Uri>()
            .ok()
            .and_then(|u| u.host().map(is_loopback_host))
            .unwrap_or(false)
            || !redirect.starts_with("http");
        body["application_type"] = json!(if native { "native" } else { "web" });
    }
    if let Some(scope) = wanted.scope {
        body["scope"] = json!(scope);
    }
    let fetched = fetcher
        .post_json_with_token(&endpoint, &body, identity.initial_access_token.as_ref())
        .await?;
    let answer = fetched.json().unwrap_or(Value::Null);
    if !fetched.status.is_success() {
        let code = answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no error code");
        return Err(Error::Auth(format!(
            "registering at {endpoint} failed: HTTP {} ({code})",
            fetched.status
        )));
    }
    let client_id = answer
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Error::Auth(format!("{endpoint} registered no client_id")))?;
    Ok(RegisteredClient {
        client_id: client_id.to_owned(),
        client_secret: answer
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::new),
        token_endpoint_auth_method: answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .map(str::to_owned),
        redirect_uri: wanted.redirect_uri.map(str::to_owned),
    })
}

/// The method a registration asks for: `none` (a public client using PKCE) where the server
/// takes it, else the first secret method it lists, else `client_secret_basic` (RFC 8414's
/// default).
fn registration_auth_method(found: &Discovered) -> &'static str {
    let Some(methods) = &found.server.token_endpoint_auth_methods_supported else {
        return "client_secret_basic";
    };
    for candidate in ["none", "client_secret_basic", "client_secret_post"] {
        if methods.iter().any(|m| m == candidate) {
            return candidate;
        }
    }
    "client_secret_basic"
}
