//! Server tests over the in-memory transport, in both eras.
//!
//! A [`TestClient`] is a raw JSON-RPC peer that answers the server's sampling, elicitation and
//! roots requests from a script and records every notification, so each test asserts exactly
//! what went over the wire.

pub(crate) mod fixture;
mod handles;
mod key_ring;
mod lifecycle;
mod listen;
mod listing;
mod local;
mod resources_prompts;
mod result_form;
mod stateless;
mod task_extension;
mod task_lease;
mod tasks;
mod tools;

use std::sync::{Arc, Mutex};

use barrel_mcp::Error;
use barrel_mcp::peer::{
    self, BoxFuture, Handler, Peer, PeerConfig, RequestContext, RequestOptions,
};
use barrel_mcp::server::Server;
use barrel_mcp::transport::memory;
use barrel_mcp::types::{ErrorObject, Notification, Payload, Request};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::{as_payload, within};

/// The client side of a test connection.
pub(crate) struct TestClient {
    pub(crate) peer: Peer,
    notifications: tokio::sync::Mutex<mpsc::UnboundedReceiver<Notification>>,
    /// The server-to-client requests seen, as (method, params).
    pub(crate) asked: Arc<Mutex<Vec<(String, Value)>>>,
}

struct Answers {
    notifications: mpsc::UnboundedSender<Notification>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Answers {
    /// The answer, as a value.
    fn answer(
        &self,
        request: Request,
        _cx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let params = request.params.clone().unwrap_or(Value::Null);
        self.asked
            .lock()
            .expect("asked lock")
            .push((request.method.clone(), params));
        let answer = answer_for(&request.method);
        Box::pin(std::future::ready(answer))
    }
}

impl Handler for Answers {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        as_payload(self.answer(request, cx))
    }

    fn on_notification(&self, notification: Notification, _peer: &Peer) {
        let _ = self.notifications.send(notification);
    }
}

/// The scripted answer to a server-to-client request.
pub(crate) fn answer_for(method: &str) -> Result<Value, ErrorObject> {
    match method {
        "elicitation/create" => Ok(json!({ "action": "accept", "content": { "name": "Ada" } })),
        "sampling/createMessage" => Ok(json!({
            "role": "assistant",
            "content": { "type": "text", "text": "short" },
            "model": "test-model",
            "stopReason": "endTurn"
        })),
        "roots/list" => Ok(json!({ "roots": [{ "uri": "file:///work", "name": "work" }] })),
        other => Err(ErrorObject::method_not_found(other)),
    }
}

/// Connects a test client to `server` over an in-memory pair.
pub(crate) fn connect(server: &Server) -> TestClient {
    let (server_side, client_side) = memory();
    let server = server.clone();
    tokio::spawn(async move { server.serve(server_side).await });
    let (tx, rx) = mpsc::unbounded_channel();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let answers = Answers {
        notifications: tx,
        asked: Arc::clone(&asked),
    };
    let (peer, _task) = peer::serve(client_side, Arc::new(answers), PeerConfig::default());
    TestClient {
        peer,
        notifications: tokio::sync::Mutex::new(rx),
        asked,
    }
}

/// Full client capabilities, as a sessionful client declares them.
pub(crate) fn all_capabilities() -> Value {
    json!({ "sampling": { "tools": {} }, "elicitation": { "form": {}, "url": {} }, "roots": { "listChanged": true } })
}

impl TestClient {
    /// Sends a request and returns its result or its JSON-RPC error.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        match within(
            self.peer
                .request(method, Some(params), RequestOptions::default()),
        )
        .await
        {
            Ok(value) => Ok(value),
            Err(Error::Rpc(e)) => Err(e),
            Err(other) => panic!("{method} failed outside JSON-RPC: {other}"),
        }
    }

    /// Opens a session on `version` with every client capability; returns the result.
    pub(crate) async fn initialize(&self, version: &str) -> Value {
        let result = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": all_capabilities(),
                    "clientInfo": { "name": "test-client", "version": "1.0.0" }
                }),
            )
            .await
            .expect("initialize succeeds");
        within(self.peer.notify("notifications/initialized", None))
            .await
            .expect("initialized sent");
        result
    }

    /// Sends a 2026-07-28 request: `params` plus the per-request `_meta` envelope.
    pub(crate) async fn stateless(
        &self,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> Result<Value, ErrorObject> {
        self.request(method, envelope(params, capabilities)).await
    }

    /// The next notification from the server.
    pub(crate) async fn notification(&self) -> Notification {
        let mut rx = self.notifications.lock().await;
        within(rx.recv()).await.expect("the connection is open")
    }

    /// Every notification received so far, without waiting.
    pub(crate) fn drain_notifications(&self) -> Vec<Notification> {
        let Ok(mut rx) = self.notifications.try_lock() else {
            return Vec::new();
        };
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }
}

/// Adds the 2026-07-28 `_meta` envelope to `params`.
pub(crate) fn envelope(mut params: Value, capabilities: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "test-client", "version": "1.0.0" }
    });
    let object = params.as_object_mut().expect("params are an object");
    match object.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(existing) => {
            for (k, v) in meta.as_object().expect("meta object") {
                existing.insert(k.clone(), v.clone());
            }
        }
        None => {
            object.insert("_meta".into(), meta);
        }
    }
    params
}

/// The texts of a tool result's text content blocks, joined.
pub(crate) fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}
