//! Client tests: the client against the in-process fixture server over `transport::memory()`
//! in every revision, against scripted fake servers for what the fixture cannot do, and over
//! child processes.

use crate::server::fixture;

mod cache;
mod child;
mod custom;
mod eras;
mod federation;
mod handler;
#[cfg(all(feature = "http-client", feature = "http-server"))]
mod http;
#[cfg(all(feature = "http-client-tls", feature = "tls"))]
mod https;
mod keepalive;
#[cfg(feature = "http-client")]
mod lost_stream;
#[cfg(feature = "http-client")]
mod misbehaving;
mod mrtr;
mod pagination;
mod progress;
#[cfg(feature = "http-client")]
mod retry;
mod subscriptions;
mod task_receiver;
mod task_status;
mod tasks;

use std::sync::Arc;

use barrel_mcp::client::{Client, ClientBuilder, ClientHandler};
use barrel_mcp::peer::{self, BoxFuture, Handler, Peer, PeerConfig, RequestContext};
use barrel_mcp::server::Server;
use barrel_mcp::transport::memory;
use barrel_mcp::types::{ErrorObject, Notification, Payload, ProtocolVersion, Request};
use serde_json::Value;

use crate::support::{as_payload, within};

/// Every way to connect: pinned to each revision, and auto.
pub(crate) fn modes() -> Vec<Option<ProtocolVersion>> {
    let mut modes: Vec<_> = ProtocolVersion::ALL.into_iter().map(Some).collect();
    modes.push(None);
    modes
}

/// A builder pinned to `version`, or auto when `None`.
pub(crate) fn builder(version: Option<ProtocolVersion>) -> ClientBuilder {
    let builder = Client::builder().name("client-test", "1.0.0");
    match version {
        Some(version) => builder.pin(version),
        None => builder,
    }
}

/// Connects `builder` to `server` over a fresh memory pair.
pub(crate) async fn connect_to(server: &Server, builder: ClientBuilder) -> Client {
    let (a, b) = memory();
    let server = server.clone();
    tokio::spawn(async move { server.serve(b).await });
    within(builder.connect(a))
        .await
        .expect("the client connects")
}

/// Connects to the fixture server in `version` (auto when `None`) with `handler`.
pub(crate) async fn fixture_client(
    version: Option<ProtocolVersion>,
    handler: impl ClientHandler,
) -> Client {
    let (server, _) = fixture::server();
    connect_to(&server, builder(version).handler(handler)).await
}

/// What a scripted server does with one request.
pub(crate) type Script =
    dyn Fn(Request, Peer) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync;

/// A fake server: every request goes to `script`; notifications are ignored.
pub(crate) struct Fake(pub(crate) Arc<Script>);

impl Fake {
    /// The answer, as a value.
    fn answer(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        (self.0)(request, cx.peer)
    }
}

impl Handler for Fake {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        as_payload(self.answer(request, cx))
    }

    fn on_notification(&self, _: Notification, _: &Peer) {}
}

/// Connects `builder` to a fake server running `script`.
pub(crate) async fn connect_fake<F>(builder: ClientBuilder, script: F) -> Client
where
    F: Fn(Request, Peer) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync + 'static,
{
    let (a, b) = memory();
    let _ = peer::serve(b, Arc::new(Fake(Arc::new(script))), PeerConfig::default());
    within(builder.connect(a))
        .await
        .expect("the client connects")
}

/// A `server/discover` result for a modern fake server with `capabilities`.
pub(crate) fn discover_result(capabilities: Value) -> Value {
    serde_json::json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": capabilities,
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "fake", "version": "0" } }
    })
}
