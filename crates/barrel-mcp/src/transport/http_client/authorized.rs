//! Sending one HTTP request with the transport's [`TokenSource`]: the one place where the
//! `Authorization` header is set and where a 401 or 403 leads to a retry.
//!
//! Every request of both HTTP client transports goes through [`send`]: POSTs, the GET stream
//! and its resumptions, the re-run handshake and the DELETE. A refused request is sent again
//! (same method, URL, headers and body, with the new credential) when the source says so, at
//! most [`MAX_AUTH_RETRIES`] times; otherwise the refusal is returned as it came, and the caller
//! turns it into [`Error::Http`](crate::Error::Http).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;

use super::connector::HttpClient;
use crate::Error;
use crate::auth::Challenge;
use crate::auth::client::{MAX_AUTH_RETRIES, Outgoing, Refusal, TokenSource};

/// The transport's credential source, shared by its tasks.
#[derive(Clone)]
pub(crate) struct Credentials(pub(crate) Arc<dyn TokenSource>);

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSource(<redacted>)")
    }
}

/// Sends `request`, with the source's credential when there is a source, resending it after a
/// refusal the source can answer. Each answer must begin within `limit` (the source's own
/// work, a person authorizing in a browser, is not counted). A failure to reach the server is
/// `Err(Unreachable)`; a failure of the source is `Err(Source)`.
pub(super) async fn send(
    client: &HttpClient,
    credentials: Option<&Credentials>,
    request: Request<Full<Bytes>>,
    limit: Duration,
) -> Result<Response<Incoming>, SendError> {
    let Some(Credentials(source)) = credentials else {
        return answer(client, request, limit).await;
    };
    let (parts, body) = request.into_parts();
    let mut attempt = 0;
    loop {
        let mut request = Request::new(body.clone());
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = parts.uri.clone();
        *request.version_mut() = parts.version;
        *request.headers_mut() = parts.headers.clone();
        let outgoing = Outgoing {
            method: &parts.method,
            url: &parts.uri,
        };
        let sent = source
            .authorization(outgoing)
            .await
            .map_err(SendError::Source)?;
        if let Some(credential) = &sent {
            let headers = request.headers_mut();
            headers.insert(AUTHORIZATION, sensitive(&credential.authorization)?);
            if let Some(proof) = &credential.dpop {
                headers.insert(DPOP, sensitive(proof)?);
            }
        }
        let response = answer(client, request, limit).await?;
        let status = response.status();
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN
            || attempt >= MAX_AUTH_RETRIES
        {
            return Ok(response);
        }
        let refusal = Refusal {
            status: status.as_u16(),
            challenges: challenges(&response),
            rejected: sent.map(|credential| credential.authorization),
            attempt,
            dpop_nonce: response
                .headers()
                .get(DPOP_NONCE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        };
        if !source.refused(&refusal).await.map_err(SendError::Source)? {
            return Ok(response);
        }
        attempt += 1;
        tracing::debug!(%status, attempt, "sending the request again with a new credential");
    }
}

const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");
const DPOP_NONCE: http::HeaderName = http::HeaderName::from_static("dpop-nonce");

/// A credential as a header value that `Debug` and HTTP/2 compression leave alone.
fn sensitive(value: &crate::auth::Secret) -> Result<HeaderValue, SendError> {
    let mut header = HeaderValue::try_from(value.expose()).map_err(|_| {
        SendError::Source(Error::Protocol(
            "the token source gave a credential HTTP does not allow in a header".into(),
        ))
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The challenges of an answer's `WWW-Authenticate` headers.
fn challenges<B>(response: &Response<B>) -> Vec<Challenge> {
    Challenge::parse_all(
        response
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}

/// One exchange, bounded by `limit` until the answer begins.
async fn answer(
    client: &HttpClient,
    request: Request<Full<Bytes>>,
    limit: Duration,
) -> Result<Response<Incoming>, SendError> {
    match tokio::time::timeout(limit, client.request(request)).await {
        Ok(answer) => answer.map_err(SendError::Unreachable),
        Err(_) => Err(SendError::TimedOut),
    }
}

/// Why [`send`] got no answer.
pub(super) enum SendError {
    /// The server could not be reached (or the connection broke).
    Unreachable(hyper_util::client::legacy::Error),
    /// The answer did not begin in time.
    TimedOut,
    /// The token source failed.
    Source(Error),
}

impl SendError {
    /// The error a transport reports for a request to `url`.
    pub(super) fn into_error(self, url: &http::Uri, limit: Duration) -> Error {
        let message = match self {
            Self::Source(error) => return error,
            Self::Unreachable(e) => format!("{url}: {}", super::state::error_chain(&e)),
            Self::TimedOut => {
                format!("{url}: no answer within {limit:?} (HttpClientConfig::response_timeout)")
            }
        };
        Error::Http(crate::HttpError {
            status: None,
            message,
            www_authenticate: None,
        })
    }
}
