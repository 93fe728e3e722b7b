//! Several nodes, one service: two `StreamableHttp` servers (each its own `Server` of the same
//! tools, on its own port) share one session store and one bus, and a session started on one
//! continues on the other (`HttpConfig::shared_sessions`).
//!
//! In process: a [`MemorySessionStore`] (wrapped in [`TestStore`], which can fail on demand and
//! counts touches) and two nodes of a [`LocalHub`]. `state.rs`: the session and its state
//! carried across nodes; `lifetimes.rs`: deletion, expiry, store failures, principals, caps and
//! concurrent restores; `asks.rs`: a server-to-client request answered on the other node, and a
//! cancellation sent to the other node; `retag.rs`: a node that takes a new tag rebuilds its
//! copies; `replay.rs`: streams shared through an event store; `follow.rs`: streams followed
//! from it (a stalled reader cut off, a quiet GET stream kept alive, GET streams opened on two
//! nodes at once); `legacy.rs`: a legacy HTTP+SSE session whose POSTs reach the other node, and
//! `legacy_bounds.rs` the bounds on what is sent on; `whole.rs`: which streams are stored whole; `tasks.rs`: a
//! 2026-07-28 task run on one node and answered on the other. With feature `redis`, `redis.rs` runs the
//! continuation over `RedisSessionStore` and `RedisBus`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use barrel_mcp::http::{HttpConfig, SharedSessions};
use barrel_mcp::peer::BoxFuture;
use barrel_mcp::server::Server;
use barrel_mcp::store::{
    Bus, Created, LocalHub, MemorySessionStore, SessionChange, SessionLimits, SessionRecord,
    SessionStore, StoreError, Updated,
};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Client, Response, SseReader, TestServer, initialize, session_id};
use crate::server::fixture::Probe;

mod asks;
mod follow;
mod legacy;
mod legacy_bounds;
mod lifetimes;
#[cfg(feature = "redis")]
mod redis;
mod replay;
mod retag;
mod state;
mod tasks;
mod test_bus;
mod whole;

/// A memory store that answers `Unavailable` while `fail` is set, counts touches, and takes
/// `load_delay` milliseconds to load.
#[derive(Default)]
pub(crate) struct TestStore {
    pub(crate) inner: MemorySessionStore,
    fail: AtomicBool,
    pub(crate) touches: AtomicUsize,
    pub(crate) load_delay: AtomicU64,
}

impl TestStore {
    pub(crate) fn failing(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }

    fn down<T: Send + 'static>(&self) -> Option<BoxFuture<'static, Result<T, StoreError>>> {
        self.fail
            .load(Ordering::SeqCst)
            .then(|| -> BoxFuture<'static, Result<T, StoreError>> {
                Box::pin(async { Err(StoreError::Unavailable("the test says so".into())) })
            })
    }
}

impl SessionStore for TestStore {
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        limits: &'a SessionLimits,
    ) -> BoxFuture<'a, Result<Created, StoreError>> {
        self.down()
            .unwrap_or_else(|| self.inner.create(record, limits))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        let delay = Duration::from_millis(self.load_delay.load(Ordering::SeqCst));
        self.down().unwrap_or_else(|| {
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                self.inner.load(id).await
            })
        })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
    ) -> BoxFuture<'a, Result<Updated, StoreError>> {
        self.down().unwrap_or_else(|| self.inner.update(id, change))
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.touches.fetch_add(1, Ordering::SeqCst);
        self.down()
            .unwrap_or_else(|| self.inner.touch(id, idle_ttl))
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.down().unwrap_or_else(|| self.inner.delete(id))
    }

    fn delete_uninitialized<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.down()
            .unwrap_or_else(|| self.inner.delete_uninitialized(id))
    }
}

/// Two nodes of one service.
pub(crate) struct Nodes {
    pub(crate) a: TestServer,
    pub(crate) b: TestServer,
    pub(crate) a_server: Server,
    pub(crate) b_server: Server,
    /// What the fixture's tools saw on each node.
    pub(crate) a_probe: Arc<Probe>,
    pub(crate) b_probe: Arc<Probe>,
}

impl Nodes {
    /// Nodes A and B on their stores and buses, each configured by `tweak` (given `'a'` or
    /// `'b'`).
    pub(crate) async fn start(
        store_a: Arc<dyn SessionStore>,
        store_b: Arc<dyn SessionStore>,
        bus_a: Arc<dyn Bus>,
        bus_b: Arc<dyn Bus>,
        tweak: impl Fn(char, &mut HttpConfig),
    ) -> Self {
        let config = |node, store, bus| {
            let mut config = HttpConfig {
                shared_sessions: Some(SharedSessions::new(store, bus)),
                ..HttpConfig::default()
            };
            tweak(node, &mut config);
            config
        };
        let (a_server, a_probe) = crate::server::fixture::server();
        let (b_server, b_probe) = crate::server::fixture::server();
        let a = TestServer::start_with(a_server.clone(), config('a', store_a, bus_a)).await;
        let b = TestServer::start_with(b_server.clone(), config('b', store_b, bus_b)).await;
        Self {
            a,
            b,
            a_server,
            b_server,
            a_probe,
            b_probe,
        }
    }

    /// Nodes sharing `store` and one in-process hub.
    pub(crate) async fn local(
        store: Arc<TestStore>,
        tweak: impl Fn(char, &mut HttpConfig),
    ) -> Self {
        let hub = LocalHub::new();
        let (bus_a, bus_b) = (Arc::new(hub.join()), Arc::new(hub.join()));
        Self::start(store.clone(), store, bus_a, bus_b, tweak).await
    }

    /// A session opened on A and initialized there, and the same session seen from B.
    pub(crate) async fn opened(&self) -> (Client, Client) {
        let mut on_a = self.a.client();
        open(&mut on_a, &[]).await;
        assert_eq!(
            on_a.post(&initialized()).await.status(),
            StatusCode::ACCEPTED
        );
        let on_b = self.on_b(&on_a);
        (on_a, on_b)
    }

    /// A client of node B in the session of `client` (of node A).
    pub(crate) fn on_b(&self, client: &Client) -> Client {
        let mut on_b = self.b.client();
        on_b.session.clone_from(&client.session);
        on_b
    }

    pub(crate) async fn stop(mut self) {
        self.a.stop().await;
        self.b.stop().await;
    }
}

/// A request, answered as JSON only.
pub(crate) fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

pub(crate) async fn post_json(
    client: &Client,
    message: &Value,
    extra: &[(&str, &str)],
) -> Response {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json"),
    ];
    headers.extend_from_slice(extra);
    client
        .send(Method::POST, &headers, Some(&message.to_string()))
        .await
}

/// Polls `check` every 10 ms until it holds, for at most 5 s.
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(5);
    while !check().await {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The messages of one SSE answer, up to and with the response.
pub(crate) async fn answer_stream(response: Response) -> Vec<Value> {
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let mut messages = Vec::new();
    loop {
        let message = reader.next_message().await;
        let last = message.get("id").is_some();
        messages.push(message);
        if last {
            return messages;
        }
    }
}

/// `initialize` on `client`'s node, without `notifications/initialized`; keeps the id.
pub(crate) async fn open(client: &mut Client, extra: &[(&str, &str)]) {
    client.session = None;
    let response = client.post_with(&initialize(1), extra).await;
    assert_eq!(response.status(), StatusCode::OK);
    client.session = Some(session_id(response.headers()).expect("Mcp-Session-Id"));
    let result = SseReader::new(response).next_message().await;
    assert_eq!(result["result"]["protocolVersion"], "2025-11-25");
}

pub(crate) fn initialized() -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"})
}

pub(crate) fn echo(id: i64, message: &str) -> Value {
    request(
        id,
        "tools/call",
        json!({"name":"echo","arguments":{"message":message}}),
    )
}
