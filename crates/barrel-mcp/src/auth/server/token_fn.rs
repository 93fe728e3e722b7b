//! [`TokenAuth`], the "simple interface" of barrel_mcp's custom authentication (a function from
//! a token to a caller), and [`AnyOf`], several authenticators tried in order.

use std::future::Future;
use std::sync::Arc;

use http::HeaderName;

use super::jwt::bearer_token;
use super::{Authenticator, Rejection};
use crate::auth::{AuthInfo, Challenge};
use crate::peer::BoxFuture;

/// The function inside a [`TokenAuth`].
type CheckFn = dyn Fn(String) -> BoxFuture<'static, Option<AuthInfo>> + Send + Sync;

/// Authenticates with a function of the token: `Authorization: Bearer <token>`, else the
/// `X-API-Key` header. The function answers the caller, or `None` for a token it refuses (the
/// client sees `invalid_token`, never why).
///
/// ```
/// use barrel_mcp::auth::AuthInfo;
/// use barrel_mcp::auth::server::TokenAuth;
///
/// let auth = TokenAuth::new(|token: String| async move {
///     (token == "let-me-in").then(|| AuthInfo::new("alice").with_scopes(["mcp:read"]))
/// });
/// # drop(auth);
/// ```
#[derive(Clone)]
pub struct TokenAuth {
    check: Arc<CheckFn>,
}

impl std::fmt::Debug for TokenAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenAuth(..)")
    }
}

/// The header [`TokenAuth`] reads when there is no bearer token.
const API_KEY: HeaderName = HeaderName::from_static("x-api-key");

impl TokenAuth {
    /// Checks every token with `check`.
    pub fn new<F, Fut>(check: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<AuthInfo>> + Send + 'static,
    {
        Self {
            check: Arc::new(move |token| Box::pin(check(token))),
        }
    }
}

impl Authenticator for TokenAuth {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        Box::pin(async move {
            let token = match bearer_token(head)? {
                Some(token) => token.to_owned(),
                None => match head.headers.get(API_KEY) {
                    Some(value) => value
                        .to_str()
                        .map_err(|_| Rejection::malformed("X-API-Key is not visible ASCII"))?
                        .to_owned(),
                    None => return Ok(None),
                },
            };
            match (self.check)(token).await {
                Some(info) => Ok(Some(info)),
                None => Err(Rejection::invalid("the token was refused")),
            }
        })
    }

    fn headers(&self) -> Vec<HeaderName> {
        vec![API_KEY]
    }
}

/// Several authenticators, tried in order (a JWT for people, an API key for machines).
///
/// The first that recognises credentials decides: its caller, or its refusal. One that finds
/// nothing it reads (`Ok(None)`) passes to the next. When a verifier cannot be reached
/// (`Unavailable`), the next ones are still tried, and the outage is the answer only if none
/// accepted. The challenges of a 401 are all of theirs; the headers browsers may send, the union.
#[derive(Clone, Default)]
pub struct AnyOf {
    members: Vec<Arc<dyn Authenticator>>,
}

impl std::fmt::Debug for AnyOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyOf")
            .field("members", &self.members.len())
            .finish()
    }
}

impl AnyOf {
    /// No authenticator yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one, tried after those already added.
    #[must_use]
    pub fn or(mut self, authenticator: impl Authenticator) -> Self {
        self.members.push(Arc::new(authenticator));
        self
    }
}

impl Authenticator for AnyOf {
    fn authenticate<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
        super::unshared(self.authenticate_shared(head))
    }

    fn authenticate_shared<'a>(
        &'a self,
        head: &'a http::request::Parts,
    ) -> BoxFuture<'a, Result<Option<Arc<AuthInfo>>, Rejection>> {
        Box::pin(async move {
            let mut outage = None;
            for member in &self.members {
                match member.authenticate_shared(head).await {
                    Ok(None) => {}
                    Err(Rejection::Unavailable(reason)) => {
                        outage.get_or_insert(Rejection::Unavailable(reason));
                    }
                    decided => return decided,
                }
            }
            outage.map_or(Ok(None), Err)
        })
    }

    fn headers(&self) -> Vec<HeaderName> {
        let mut headers: Vec<HeaderName> = Vec::new();
        for name in self.members.iter().flat_map(|m| m.headers()) {
            if !headers.contains(&name) {
                headers.push(name);
            }
        }
        headers
    }

    fn challenges(&self) -> Vec<Challenge> {
        let mut challenges: Vec<Challenge> = Vec::new();
        for challenge in self.members.iter().flat_map(|m| m.challenges()) {
            if !challenges.contains(&challenge) {
                challenges.push(challenge);
            }
        }
        challenges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut builder = http::Request::builder();
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).expect("request").into_parts().0
    }

    fn tokens() -> TokenAuth {
        TokenAuth::new(
            |token: String| async move { (token == "good").then(|| AuthInfo::new("alice")) },
        )
    }

    /// An authenticator whose verifier is down.
    struct Down;

    impl Authenticator for Down {
        fn authenticate<'a>(
            &'a self,
            _: &'a http::request::Parts,
        ) -> BoxFuture<'a, Result<Option<AuthInfo>, Rejection>> {
            Box::pin(std::future::ready(Err(Rejection::unavailable("down"))))
        }

        fn challenges(&self) -> Vec<Challenge> {
            vec![Challenge::basic("mcp")]
        }
    }

    #[tokio::test]
    async fn a_token_function_reads_bearer_then_api_key() {
        let auth = tokens();
        let who =
            |result: Result<Option<AuthInfo>, Rejection>| result.map(|i| i.map(|i| i.subject));
        assert_eq!(
            who(auth
                .authenticate(&head(&[("authorization", "Bearer good")]))
                .await),
            Ok(Some("alice".into()))
        );
        assert_eq!(
            who(auth.authenticate(&head(&[("x-api-key", "good")])).await),
            Ok(Some("alice".into()))
        );
        assert_eq!(who(auth.authenticate(&head(&[])).await), Ok(None));
        let refused = auth.authenticate(&head(&[("x-api-key", "bad")])).await;
        assert_eq!(refused, Err(Rejection::invalid("the token was refused")));
        assert_eq!(auth.headers(), [API_KEY]);
    }

    #[tokio::test]
    async fn any_of_lets_the_first_that_recognises_decide() {
        let auth = AnyOf::new().or(Down).or(tokens());
        // The outage does not hide a good token further down.
        let ok = auth
            .authenticate(&head(&[("authorization", "Bearer good")]))
            .await;
        assert_eq!(ok.map(|i| i.map(|i| i.subject)), Ok(Some("alice".into())));
        // A refusal decides; an outage is the answer when nobody accepted.
        let refused = auth.authenticate(&head(&[("x-api-key", "bad")])).await;
        assert!(matches!(refused, Err(Rejection::Invalid(_))));
        let nobody = auth.authenticate(&head(&[])).await;
        assert_eq!(nobody, Err(Rejection::unavailable("down")));
        assert_eq!(
            AnyOf::new().or(tokens()).authenticate(&head(&[])).await,
            Ok(None)
        );
        assert_eq!(
            auth.challenges(),
            [Challenge::basic("mcp"), Challenge::bearer()]
        );
        assert_eq!(auth.headers(), [API_KEY]);
    }
}
