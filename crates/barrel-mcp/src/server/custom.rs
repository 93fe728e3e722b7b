//! Declared extensions and custom (non-spec) requests.
//!
//! An extension is declared with [`ServerBuilder::extension`]: its identifier and settings
//! object are advertised inline under `capabilities.extensions` (SEP-2133), in
//! `server/discover` and in `initialize` for the revisions that carry extensions. A custom
//! request is a method the specification does not define (`skills/list`, `acme/search`),
//! answered by a handler registered with [`ServerBuilder::request`]; dispatch reaches it only
//! after every spec method, so a custom handler can never shadow one.
//!
//! [`ServerBuilder::extension`]: super::ServerBuilder::extension
//! [`ServerBuilder::request`]: super::ServerBuilder::request

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use barrel_mcp_types::method::is_spec_method;
use barrel_mcp_types::{ErrorObject, JsonObject, Meta};
use serde_json::{Map, Value};

use super::Server;
use super::context::{Ctx, Scope};
use super::input::{InputMode, Rounds};
use crate::Error;
use crate::peer::{BoxFuture, RequestContext};

type RequestFn = dyn Fn(Ctx, Value) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync;

/// A custom request's handler, erased: it gets the request's [`Ctx`] and its params (`{}` when
/// absent) and returns the result object, or the JSON-RPC error to answer with.
///
/// Example: [`ServerBuilder::request`](super::ServerBuilder::request).
#[derive(Clone)]
pub struct RequestHandler(Arc<RequestFn>);

impl RequestHandler {
    /// A handler from an async function.
    ///
    /// Example: [`ServerBuilder::request`](super::ServerBuilder::request).
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        Self(Arc::new(move |ctx, params| Box::pin(f(ctx, params))))
    }
}

impl std::fmt::Debug for RequestHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestHandler")
    }
}

/// Methods of extensions this server serves itself (the tasks extension's `tasks/update`):
/// with the spec's own, no custom handler can take them.
const RESERVED_METHODS: &[&str] = &["tasks/update"];

/// Checks a custom notification name: not empty, not the spec's, no `rpc.` prefix.
pub(crate) fn check_notification(method: &str) -> Result<(), Error> {
    if method.is_empty() || is_spec_method(method) || method.starts_with("rpc.") {
        return Err(Error::Definition(format!(
            "custom notification {method:?}: empty, defined by the specification, or reserved"
        )));
    }
    Ok(())
}

/// Checks a custom method name: not empty, not a spec method, not a notification, no
/// `rpc.` prefix (reserved by JSON-RPC).
pub(crate) fn check_method(method: &str) -> Result<(), Error> {
    let refuse = |why: &str| {
        Err(Error::Definition(format!(
            "custom request {method:?}: {why}"
        )))
    };
    if method.is_empty() {
        return refuse("the method name is empty");
    }
    if is_spec_method(method) || RESERVED_METHODS.contains(&method) {
        return refuse("the specification defines this method; it cannot be replaced");
    }
    if method.starts_with("notifications/") {
        return refuse("notifications/ names notifications, not requests");
    }
    if method.starts_with("rpc.") {
        return refuse("JSON-RPC reserves the rpc. prefix");
    }
    Ok(())
}

/// A custom notification's handler: it gets the params, and its work runs on a task of its
/// own (a notification has no answer, and the connection does not wait for it).
pub(crate) type NotificationHandler =
    Arc<dyn Fn(Option<Value>) -> BoxFuture<'static, ()> + Send + Sync>;

/// The custom requests, custom notifications and declared extensions of a server.
#[derive(Default)]
pub(crate) struct CustomRequests {
    handlers: HashMap<String, RequestHandler>,
    notifications: HashMap<String, NotificationHandler>,
    extensions: JsonObject,
}

impl CustomRequests {
    /// Registers `handler` for `method` (checked by the builder first); a second handler for
    /// the same method replaces the first.
    pub(crate) fn insert(&mut self, method: String, handler: RequestHandler) {
        self.handlers.insert(method, handler);
    }

    /// Registers `handler` for the notification `method` (replacing an earlier one).
    pub(crate) fn insert_notification(&mut self, method: String, handler: NotificationHandler) {
        self.notifications.insert(method, handler);
    }

    /// The handler of the custom notification `method`, if any.
    pub(crate) fn notification(&self, method: &str) -> Option<NotificationHandler> {
        self.notifications.get(method).cloned()
    }

    /// Declares the extension `id` with its settings (replacing an earlier declaration).
    pub(crate) fn declare(&mut self, id: String, settings: JsonObject) {
        self.extensions.insert(id, Value::Object(settings));
    }

    /// The declared extensions, for `capabilities.extensions` (`None` when there are none).
    pub(crate) fn extensions(&self) -> Option<JsonObject> {
        (!self.extensions.is_empty()).then(|| self.extensions.clone())
    }

    fn get(&self, method: &str) -> Option<RequestHandler> {
        self.handlers.get(method).cloned()
    }
}

/// Answers a request no spec arm took: its custom handler, else -32601.
pub(crate) async fn route(
    server: &Server,
    scope: Scope,
    method: &str,
    params: Option<Value>,
    cx: RequestContext,
) -> Result<Value, ErrorObject> {
    let Some(handler) = server.read_registry().custom.get(method) else {
        return Err(ErrorObject::method_not_found(method));
    };
    let params = params.unwrap_or_else(|| Value::Object(Map::new()));
    let meta: Meta = params
        .get("_meta")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // A custom request has no multi round-trip state: in 2026-07-28 a question the handler asks
    // ends in an error rather than `input_required`.
    let input = if scope.is_stateless() {
        InputMode::Rounds(Rounds::new(Map::new()))
    } else {
        InputMode::Session
    };
    let ctx = Ctx::new(
        cx.id,
        meta,
        scope,
        cx.cancel,
        cx.peer,
        server.clone(),
        input,
        cx.caller,
    );
    let result = (handler.0)(ctx, params).await?;
    if !result.is_object() {
        tracing::warn!(%method, "a custom request handler returned a result that is not an object");
        return Err(ErrorObject::internal(
            "the handler's result is not a JSON object",
        ));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_methods_and_reserved_names_are_refused() {
        for method in [
            "tools/call",
            "initialize",
            "tasks/update",
            "",
            "notifications/x",
            "rpc.x",
        ] {
            assert!(check_method(method).is_err(), "{method:?} was accepted");
        }
        assert!(check_method("skills/list").is_ok());
        assert!(check_method("acme/search").is_ok());
    }
}
