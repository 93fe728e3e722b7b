//! The service the ready listeners run on each connection: a request to the MCP endpoint's
//! path goes straight to [`endpoint::handle`]; any other path (the protected-resource
//! metadata, the legacy HTTP+SSE transport, 404) goes through the axum router.
//!
//! The router alone would serve every path the same, but at a price per request that the
//! endpoint's own path does not need: path matching, a boxed route future inside a boxed
//! handler future, extensions written for extractors nobody reads. Taking the endpoint's path
//! around them saves about 3,100 instructions per request under callgrind (5% of a sessionful
//! `tools/call`). The router stays what an application mounts; [`StreamableHttp::router`] and
//! this service answer every request alike
//! (`it http::security::the_listener_and_the_router_answer_alike`), with two exceptions kept
//! on the router's side: HEAD (axum empties every HEAD answer's body, which HTTP/2 needs and
//! hyper does only for HTTP/1) and a configured path written in axum's route syntax (`{…}`),
//! which only the router matches. On this path the request's URI is the original one, so
//! axum's `OriginalUri` extension is not added.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use hyper::body::Incoming;

use super::{State, StreamableHttp, endpoint};

/// What a request's answer is while it is being worked out.
type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// One connection's service: the endpoint, the router for the other paths, and the address
/// the connection came from (for the per-address session caps).
#[derive(Clone)]
pub(super) struct ListenerService {
    state: Arc<State>,
    router: axum::Router,
    remote: Option<SocketAddr>,
}

impl ListenerService {
    /// The service of one connection from `remote` (`None` when the IO has no address).
    pub(super) fn new(
        http: &StreamableHttp,
        router: axum::Router,
        remote: Option<SocketAddr>,
    ) -> Self {
        Self {
            state: Arc::clone(&http.state),
            router,
            remote,
        }
    }

    /// Whether `request` goes straight to the endpoint: not HEAD, and to one of its paths as
    /// written (one in axum's route syntax is left to the router, which matches it).
    fn is_direct(&self, request: &http::Request<Incoming>) -> bool {
        let path = request.uri().path();
        request.method() != http::Method::HEAD
            && self
                .state
                .config
                .endpoint_paths()
                .any(|served| served == path && !served.contains(['{', '}']))
    }
}

impl hyper::service::Service<http::Request<Incoming>> for ListenerService {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, mut request: http::Request<Incoming>) -> Self::Future {
        if let Some(remote) = self.remote {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(remote));
        }
        if self.is_direct(&request) {
            let state = Arc::clone(&self.state);
            return crate::peer::box_in_place(|| async move {
                Ok(endpoint::handle(state, request.map(Body::new)).await)
            });
        }
        Box::pin(tower::ServiceExt::oneshot(self.router.clone(), request))
    }
}
