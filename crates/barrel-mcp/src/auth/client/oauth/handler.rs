//! The interactive step of the authorization code grant: sending the user to the
//! authorization server and getting the redirect back.
//!
//! An [`AuthorizationHandler`] names the redirect URI registered for the client and, given an
//! [`AuthorizationRequest`], returns the parameters the redirect carried ([`Callback`]). The
//! OAuth client checks them (`state`, RFC 9207 `iss`) before the code is redeemed.
//!
//! - [`Headless`]: GETs the authorization URL itself, without following its redirect, and
//!   reads the `Location`: for tests, conformance runs and authorization servers that approve
//!   without a person.
//! - Your own: open a browser and listen on the redirect URI, show a link, ask in a UI.

use http::Uri;

use crate::Error;
use crate::auth::fetch::Fetcher;
use crate::auth::form::Form;
use crate::peer::BoxFuture;

/// What the authorization server's redirect carried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Callback {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` sent, echoed back.
    pub state: Option<String>,
    /// RFC 9207: the issuer that answered.
    pub iss: Option<String>,
    /// An OAuth error code (`access_denied`, ...).
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
}

impl Callback {
    /// The parameters of a redirect URL (its query).
    pub fn from_redirect(url: &str) -> Self {
        let query = url
            .split_once('?')
            .map_or("", |(_, q)| q.split('#').next().unwrap_or(""));
        let form = Form::parse(query);
        let take = |name: &str| form.get(name).map(str::to_owned);
        Self {
            code: take("code"),
            state: take("state"),
            iss: take("iss"),
            error: take("error"),
            error_description: take("error_description"),
        }
    }
}

/// One authorization request, handed to an [`AuthorizationHandler`].
#[derive(Debug)]
pub struct AuthorizationRequest<'a> {
    pub(crate) url: &'a str,
    pub(crate) fetcher: &'a Fetcher,
}

impl AuthorizationRequest<'_> {
    /// The URL to send the user to.
    pub fn url(&self) -> &str {
        self.url
    }

    /// GETs the URL without following its redirect, with the OAuth client's SSRF guard and
    /// limits, and returns the `Location` the authorization server answered with.
    pub async fn follow_without_user(&self) -> Result<String, Error> {
        let url: Uri = self
            .url
            .parse()
            .map_err(|_| Error::Auth("invalid authorization URL".into()))?;
        let fetched = self.fetcher.get_no_follow(&url).await?;
        if !fetched.status.is_redirection() {
            return Err(Error::Auth(format!(
                "the authorization endpoint answered {} instead of redirecting",
                fetched.status
            )));
        }
        fetched
            .location()
            .map(str::to_owned)
            .ok_or_else(|| Error::Auth("the authorization redirect has no Location".into()))
    }
}

/// The interactive step of the authorization code grant.
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// The redirect URI registered for the client and sent in the authorization request.
    fn redirect_uri(&self) -> String;

    /// Has the user authorize, and returns what the redirect to
    /// [`redirect_uri`](Self::redirect_uri) carried.
    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest<'a>,
    ) -> BoxFuture<'a, Result<Callback, Error>>;
}

/// Follows the authorization URL itself and reads the redirect (no person involved).
#[derive(Debug, Clone)]
pub struct Headless {
    redirect_uri: String,
}

impl Headless {
    /// Registers `redirect_uri`, which is never contacted.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
        }
    }
}

impl AuthorizationHandler for Headless {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest<'a>,
    ) -> BoxFuture<'a, Result<Callback, Error>> {
        Box::pin(async move {
            let location = request.follow_without_user().await?;
            Ok(Callback::from_redirect(&location))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_is_read() {
        let callback = Callback::from_redirect(
            "http://localhost:3000/cb?code=c%2B1&state=s&iss=https%3A%2F%2Fas#x",
        );
        assert_eq!(callback.code.as_deref(), Some("c+1"));
        assert_eq!(callback.state.as_deref(), Some("s"));
        assert_eq!(callback.iss.as_deref(), Some("https://as"));
        assert_eq!(Callback::from_redirect("http://x/cb"), Callback::default());
    }
}
