//! One request through the proxy: buffer the body (bounded), pick the backend by the request's
//! sequence number, skip backends that refuse the connection, stream the response back, and
//! log the outcome.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::{BodyExt as _, Either, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::Config;
use super::headers::strip_hop_by_hop;
use super::log::{Log, Record, peek_json_rpc};

/// What the proxy answers with: a backend's streamed body, or its own short text.
pub(crate) type ProxyBody = Either<Incoming, Full<Bytes>>;

/// The header that names an MCP session.
const SESSION: &str = "mcp-session-id";

/// How long an idle pooled connection to a backend is kept.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// The shared state of every connection: the pooled client, the backends and the counter.
#[derive(Debug)]
pub(crate) struct Forwarder {
    client: Client<HttpConnector, Full<Bytes>>,
    backends: Vec<Authority>,
    /// Requests seen so far; the next request is number `next + 1`.
    next: AtomicU64,
    max_body: usize,
    body_timeout: Duration,
    log: Arc<Log>,
}

/// Why a request body was not read.
struct BodyRefused {
    status: StatusCode,
    why: String,
}

impl Forwarder {
    pub(crate) fn new(config: &Config, log: Arc<Log>) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(config.connect_timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
        Self {
            client,
            backends: config.backends.clone(),
            next: AtomicU64::new(0),
            max_body: config.max_body,
            body_timeout: config.body_timeout,
            log,
        }
    }

    /// Forwards one request and logs it. Never fails: trouble becomes a status.
    pub(crate) async fn handle(&self, request: Request<Incoming>) -> Response<ProxyBody> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (parts, body) = request.into_parts();
        let mut pending = Pending {
            log: &self.log,
            record: Record {
                n,
                method: parts.method.to_string(),
                path: parts.uri.path().to_owned(),
                session: header_text(&parts.headers, SESSION),
                ..Record::default()
            },
            written: false,
        };
        let record = &mut pending.record;
        let response = match self.read_body(&parts.headers, body).await {
            Err(refused) => {
                record.error = Some(refused.why.clone());
                local(refused.status, &refused.why)
            }
            Ok(body) => {
                if parts.method == Method::POST {
                    (record.rpc_method, record.rpc_id) = peek_json_rpc(&body);
                }
                let mut headers = parts.headers;
                strip_hop_by_hop(&mut headers);
                let target = parts.uri.path_and_query().cloned();
                self.send(n, &parts.method, target, &headers, body, record)
                    .await
            }
        };
        pending.finish(&response);
        response
    }

    /// Reads the whole body, within [`Config::max_body`] and [`Config::body_timeout`].
    async fn read_body(&self, headers: &HeaderMap, body: Incoming) -> Result<Bytes, BodyRefused> {
        let too_large = || BodyRefused {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            why: format!("the request body is larger than {} bytes", self.max_body),
        };
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_body as u64) {
            return Err(too_large());
        }
        let read = Limited::new(body, self.max_body).collect();
        match tokio::time::timeout(self.body_timeout, read).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
                Err(too_large())
            }
            Ok(Err(error)) => Err(BodyRefused {
                status: StatusCode::BAD_REQUEST,
                why: format!("reading the request body: {error}"),
            }),
            Err(_) => Err(BodyRefused {
                status: StatusCode::REQUEST_TIMEOUT,
                why: format!(
                    "the request body took longer than {} ms",
                    self.body_timeout.as_millis()
                ),
            }),
        }
    }

    /// Sends the request to backend `(n - 1) % backends`, then to the next ones while they
    /// refuse the connection (no byte of the request was sent to them). Any other failure is
    /// final: the backend may have received the request, and a POST must not run twice.
    async fn send(
        &self,
        n: u64,
        method: &Method,
        target: Option<PathAndQuery>,
        headers: &HeaderMap,
        body: Bytes,
        record: &mut Record,
    ) -> Response<ProxyBody> {
        let count = self.backends.len();
        let start = usize::try_from((n - 1) % count as u64).unwrap_or(0);
        let mut refusals = Vec::new();
        for index in (0..count).map(|k| (start + k) % count) {
            let request = match self.request(index, method, target.clone(), headers, &body) {
                Ok(request) => request,
                Err(why) => {
                    record.error = Some(why.clone());
                    return local(StatusCode::BAD_REQUEST, &why);
                }
            };
            record.backend = Some(index);
            match self.client.request(request).await {
                Ok(response) => {
                    let (mut parts, body) = response.into_parts();
                    strip_hop_by_hop(&mut parts.headers);
                    return Response::from_parts(parts, Either::Left(body));
                }
                Err(error) if error.is_connect() => {
                    record.backend = None;
                    record.skipped.push(index);
                    refusals.push(format!("backend {index}: {}", chain(&error)));
                }
                Err(error) => {
                    let why = format!("backend {index} failed: {}", chain(&error));
                    record.error = Some(why.clone());
                    return local(StatusCode::BAD_GATEWAY, &why);
                }
            }
        }
        let why = format!("no backend took the request ({})", refusals.join("; "));
        record.error = Some(why.clone());
        local(StatusCode::BAD_GATEWAY, &why)
    }

    /// The request for backend `index`: the client's path and query on the backend's
    /// authority, HTTP/1.1, the end-to-end headers as received (`Host` included).
    fn request(
        &self,
        index: usize,
        method: &Method,
        target: Option<PathAndQuery>,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<Request<Full<Bytes>>, String> {
        let uri = Uri::builder()
            .scheme(Scheme::HTTP)
            .authority(self.backends[index].clone())
            .path_and_query(target.unwrap_or_else(|| PathAndQuery::from_static("/")))
            .build()
            .map_err(|error| format!("the request target: {error}"))?;
        let mut request = Request::new(Full::new(body.clone()));
        *request.method_mut() = method.clone();
        *request.uri_mut() = uri;
        *request.version_mut() = Version::HTTP_11;
        *request.headers_mut() = headers.clone();
        Ok(request)
    }
}

/// A request's record on its way to the log: written once the response head is known, or, if
/// the client goes away before that (hyper then drops the request's future), on drop with
/// status 499 (nginx's "client closed request"), so that every `n` appears in the log.
struct Pending<'a> {
    log: &'a Log,
    record: Record,
    written: bool,
}

impl Pending<'_> {
    fn finish(&mut self, response: &Response<ProxyBody>) {
        self.record.status = response.status().as_u16();
        self.record.new_session = header_text(response.headers(), SESSION);
        self.written = true;
        self.log.write(std::mem::take(&mut self.record));
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.written {
            self.record.status = CLIENT_CLOSED;
            self.record.error = Some("the client went away before the response head".into());
            self.log.write(std::mem::take(&mut self.record));
        }
    }
}

/// The status logged for a request whose client went away first.
const CLIENT_CLOSED: u16 = 499;

/// A header as text, when present (lossy if it is not UTF-8).
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// An error and its sources, `: `-separated (hyper-util's own message is only the kind).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The proxy's own answer: a status and one line of text naming the proxy.
fn local(status: StatusCode, why: &str) -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(format!(
        "rr-proxy: {why}\n"
    )))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
