//! The auth rungs of the ladder (feature `auth`), when [`HttpConfig::auth`] is set:
//!
//! - [`authenticate`], in [`guard::front_door`](super::guard::front_door) on every path (the
//!   endpoint and the legacy ones), right after `Host`/`Origin`: the request head becomes an
//!   [`AuthInfo`] in the request's extensions, or the request is answered 401 (no or bad
//!   credentials), 400 (malformed credentials, a token in the query string) or 503 (the
//!   credentials could not be checked). Nothing has been read or allocated for the request yet.
//! - [`authorize`], once the body is parsed and before anything is answered (so before any SSE
//!   head), in both eras and on the legacy transport: the operation's scopes, 403
//!   `insufficient_scope` when the caller lacks one (401 for an anonymous caller).
//! - [`metadata`]: the RFC 9728 document at the well-known URLs, without authentication.
//!
//! Refusals carry an OAuth error body (`{"error", "error_description"}`) and the challenges in
//! `WWW-Authenticate`; descriptions never contain a credential.
//!
//! [`HttpConfig::auth`]: super::HttpConfig::auth

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use barrel_mcp_types::jsonrpc::Members;
use http::header::{self, HeaderValue};
use http::{Method, StatusCode};
use serde_json::json;

use super::State;
use crate::auth::server::{AuthConfig, Rejection};
use crate::auth::{AuthInfo, Challenge};

/// Authenticates the request head; on success the [`AuthInfo`] (if any) is in
/// `parts.extensions` as an `Arc<AuthInfo>`.
pub(crate) async fn authenticate(
    auth: &AuthConfig,
    parts: &mut http::request::Parts,
) -> Result<(), Response> {
    if carries_query_token(parts.uri.query()) {
        return Err(refusal(
            auth,
            &Rejection::malformed("access tokens are not accepted in the query string"),
        ));
    }
    match auth.authenticator().authenticate_shared(parts).await {
        Ok(Some(info)) => {
            tracing::debug!(subject = %info.subject, "request authenticated");
            parts.extensions.insert(info);
            Ok(())
        }
        Ok(None) if auth.allows_anonymous() => Ok(()),
        Ok(None) => {
            tracing::debug!("request without credentials refused");
            Err(challenge_response(
                StatusCode::UNAUTHORIZED,
                auth.unauthorized(None, &[]),
                "invalid_token",
                "authentication required",
            ))
        }
        Err(rejection) => Err(refusal(auth, &rejection)),
    }
}

/// RFC 6750 §2.3 puts tokens in the query string, where logs and caches keep them; the MCP
/// authorization spec forbids it, so the request is refused rather than the token ignored.
fn carries_query_token(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}

fn refusal(auth: &AuthConfig, rejection: &Rejection) -> Response {
    tracing::debug!(reason = rejection.reason(), "credentials refused");
    match rejection {
        Rejection::Invalid(reason) => challenge_response(
            StatusCode::UNAUTHORIZED,
            auth.unauthorized(Some(("invalid_token", reason)), &[]),
            "invalid_token",
            reason,
        ),
        Rejection::Malformed(reason) => challenge_response(
            StatusCode::BAD_REQUEST,
            auth.unauthorized(Some(("invalid_request", reason)), &[]),
            "invalid_request",
            reason,
        ),
        Rejection::Unavailable(_) => {
            let mut response = oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the credentials cannot be checked now; try again later",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

/// Checks that the caller holds every scope the operation in `body` needs: 403 when it lacks
/// one, 401 when it is anonymous (it has to authenticate first).
pub(crate) fn authorize(
    auth: &AuthConfig,
    parts: &http::request::Parts,
    body: &Members,
) -> Result<(), Response> {
    let policy = auth.scope_policy();
    if policy.is_empty() {
        return Ok(());
    }
    // Responses and notifications carry no operation.
    let (Some(method), true) = (body.method(), body.get("id").is_some()) else {
        return Ok(());
    };
    let caller = parts.extensions.get::<Arc<AuthInfo>>();
    let granted = caller.map_or(&[][..], |info| info.scopes.as_slice());
    let Some(needed) = policy.check(granted, method, body.get("params")) else {
        return Ok(());
    };
    if caller.is_none() {
        return Err(challenge_response(
            StatusCode::UNAUTHORIZED,
            auth.unauthorized(None, &needed),
            "invalid_token",
            "authentication required",
        ));
    }
    tracing::debug!(%method, needed = %needed.join(" "), "insufficient scope");
    Err(challenge_response(
        StatusCode::FORBIDDEN,
        vec![auth.forbidden(&needed)],
        "insufficient_scope",
        "the operation needs scopes the token does not grant",
    ))
}

/// The RFC 9728 document: `Host` checked (DNS rebinding), no authentication (a client reads it
/// to learn how to authenticate), `Access-Control-Allow-Origin: *` (it is public, so any origin
/// may read it), cacheable for an hour.
pub(crate) fn metadata(state: &Arc<State>, request: http::Request<Body>) -> Response {
    let (parts, _) = request.into_parts();
    if let Err(response) = super::guard::check_host(&state.config, &parts) {
        return response;
    }
    let Some(resource) = state
        .config
        .auth
        .as_ref()
        .and_then(AuthConfig::protected_resource)
    else {
        return super::reply::empty(StatusCode::NOT_FOUND);
    };
    let mut response = match parts.method {
        Method::GET | Method::HEAD => {
            let mut response = Response::new(Body::from(resource.document().to_string()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            );
            response
        }
        Method::OPTIONS => {
            let mut response = super::reply::empty(StatusCode::NO_CONTENT);
            response.headers_mut().insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, OPTIONS"),
            );
            response
        }
        _ => super::reply::method_not_allowed("GET, OPTIONS"),
    };
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// A refusal with challenges and an OAuth error body.
fn challenge_response(
    status: StatusCode,
    challenges: Vec<Challenge>,
    error: &str,
    description: &str,
) -> Response {
    let mut response = oauth_error(status, error, description);
    for challenge in challenges {
        if let Ok(value) = HeaderValue::from_str(&challenge.to_string()) {
            response
                .headers_mut()
                .append(header::WWW_AUTHENTICATE, value);
        }
    }
    response
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = json!({ "error": error, "error_description": description });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_tokens_are_recognised_by_name_only() {
        assert!(carries_query_token(Some("access_token=x")));
        assert!(carries_query_token(Some("a=1&access_token=")));
        assert!(carries_query_token(Some("access_token")));
        assert!(!carries_query_token(Some("my_access_token=x")));
        assert!(!carries_query_token(Some("sessionId=access_token")));
        assert!(!carries_query_token(None));
    }
}
