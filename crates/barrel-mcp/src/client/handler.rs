//! [`ClientHandler`]: how a client answers what a server asks of it (sampling, elicitation,
//! roots) and hears what the server tells it (every notification).
//!
//! The trait is written with plain `async fn`s. The client stores it behind the one erasure
//! point of this module, [`DynHandler`], which boxes each future so the handler can be shared by
//! every connection task.

use std::future::Future;
use std::sync::Arc;

use barrel_mcp_types::method::names;
use barrel_mcp_types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorObject, ListRootsResult, RequestId,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::notification::ServerNotification;
use crate::peer::BoxFuture;

/// What a [`ClientHandler`] gets with each question from the server.
///
/// Example: [`ClientHandler`].
#[derive(Debug, Clone)]
pub struct HandlerContext {
    /// Fires when the server cancels the request, the call that needed the input is dropped, or
    /// the connection ends; for a request run as a task, when the server cancels the task
    /// (`tasks/cancel`), its TTL passes, or the connection ends. An answer given after it fired
    /// is discarded.
    pub cancel: CancellationToken,
    /// The JSON-RPC id of the server's request (sessionful revisions).
    pub request_id: Option<RequestId>,
    /// The key of the input request inside an `input_required` result (2026-07-28).
    pub input_key: Option<String>,
    /// The task this request runs as, when the server asked for one (2025-11-25
    /// task-augmented sampling and elicitation, see
    /// [`ClientBuilder::task_requests`](super::ClientBuilder::task_requests)): the server
    /// polls it with `tasks/get` and reads this handler's answer with `tasks/result`.
    pub task_id: Option<String>,
}

/// The client side of the questions a server may ask, and of its notifications.
///
/// Every method has a default: requests answer -32601 (method not found), notifications are
/// ignored, and no capability is declared. A handler may take as long as it likes to answer
/// (ask a user, call a model): its future simply completes later, from whatever task it waits
/// on. The same methods answer both the JSON-RPC requests of the sessionful revisions and the
/// `inputRequests` of a 2026-07-28 `input_required` result.
///
/// ```
/// use barrel_mcp::client::{ClientHandler, HandlerContext};
/// use barrel_mcp::types::{
///     ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorObject,
/// };
///
/// struct AlwaysYes;
///
/// impl ClientHandler for AlwaysYes {
///     fn capabilities(&self) -> ClientCapabilities {
///         ClientCapabilities {
///             elicitation: Some(ElicitationCapability::default()),
///             ..ClientCapabilities::default()
///         }
///     }
///
///     async fn elicit(
///         &self,
///         _params: ElicitRequestParams,
///         _cx: HandlerContext,
///     ) -> Result<ElicitResult, ErrorObject> {
///         Ok(ElicitResult::accept(serde_json::Map::new()))
///     }
/// }
/// ```
pub trait ClientHandler: Send + Sync + 'static {
    /// The capabilities the client declares. Declare only what the other methods answer.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }

    /// Answers `sampling/createMessage`.
    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<CreateMessageResult, ErrorObject>> + Send {
        let _ = (params, cx);
        async {
            Err(ErrorObject::method_not_found(
                names::SAMPLING_CREATE_MESSAGE,
            ))
        }
    }

    /// Answers `elicitation/create`, in form or URL mode. In form mode the client fills in the
    /// schema's `default`s for fields an accepted answer leaves out (see
    /// [`ClientBuilder::apply_elicitation_defaults`](super::ClientBuilder::apply_elicitation_defaults)).
    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<ElicitResult, ErrorObject>> + Send {
        let _ = (params, cx);
        async { Err(ErrorObject::method_not_found(names::ELICITATION_CREATE)) }
    }

    /// Answers `roots/list`.
    fn list_roots(
        &self,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<ListRootsResult, ErrorObject>> + Send {
        let _ = cx;
        async { Err(ErrorObject::method_not_found(names::ROOTS_LIST)) }
    }

    /// Answers a request the spec does not define (an extension's or the application's own
    /// method). The default refuses it (-32601).
    fn on_request(
        &self,
        method: String,
        params: Option<Value>,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<Value, ErrorObject>> + Send {
        let _ = (params, cx);
        async move { Err(ErrorObject::method_not_found(&method)) }
    }

    /// Receives every server notification, in arrival order, one at a time: log messages,
    /// list changes, resource updates, URL elicitation completions, and progress for tokens no
    /// call of this client is waiting on. (Progress for a call goes to that call's options;
    /// `notifications/cancelled` is handled by the connection.)
    fn on_notification(&self, notification: ServerNotification) -> impl Future<Output = ()> + Send {
        let _ = notification;
        async {}
    }
}

/// The handler that declares nothing and answers nothing.
///
/// Example: [`ClientHandler`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHandler;

impl ClientHandler for NoHandler {}

/// The erased form of a [`ClientHandler`]: the one place its futures are boxed.
pub(crate) trait DynHandler: Send + Sync {
    fn capabilities(&self) -> ClientCapabilities;
    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>>;
    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>>;
    fn list_roots(
        &self,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>>;
    fn on_request(
        &self,
        method: String,
        params: Option<Value>,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>>;
    fn on_notification(&self, notification: ServerNotification) -> BoxFuture<'static, ()>;
}

/// A [`ClientHandler`] behind an `Arc`, so each boxed future owns what it borrows.
pub(crate) struct Erased<H>(pub(crate) Arc<H>);

impl<H: ClientHandler> DynHandler for Erased<H> {
    fn capabilities(&self) -> ClientCapabilities {
        self.0.capabilities()
    }

    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorObject>> {
        let handler = Arc::clone(&self.0);
        Box::pin(async move { handler.create_message(params, cx).await })
    }

    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorObject>> {
        let handler = Arc::clone(&self.0);
        Box::pin(async move { handler.elicit(params, cx).await })
    }

    fn list_roots(
        &self,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<ListRootsResult, ErrorObject>> {
        let handler = Arc::clone(&self.0);
        Box::pin(async move { handler.list_roots(cx).await })
    }

    fn on_request(
        &self,
        method: String,
        params: Option<Value>,
        cx: HandlerContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let handler = Arc::clone(&self.0);
        Box::pin(async move { handler.on_request(method, params, cx).await })
    }

    fn on_notification(&self, notification: ServerNotification) -> BoxFuture<'static, ()> {
        let handler = Arc::clone(&self.0);
        Box::pin(async move { handler.on_notification(notification).await })
    }
}

/// A shared handler, so the caller can keep a handle on its state.
impl<H: ClientHandler> ClientHandler for Arc<H> {
    fn capabilities(&self) -> ClientCapabilities {
        (**self).capabilities()
    }

    fn create_message(
        &self,
        params: CreateMessageParams,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<CreateMessageResult, ErrorObject>> + Send {
        (**self).create_message(params, cx)
    }

    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<ElicitResult, ErrorObject>> + Send {
        (**self).elicit(params, cx)
    }

    fn list_roots(
        &self,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<ListRootsResult, ErrorObject>> + Send {
        (**self).list_roots(cx)
    }

    fn on_request(
        &self,
        method: String,
        params: Option<Value>,
        cx: HandlerContext,
    ) -> impl Future<Output = Result<Value, ErrorObject>> + Send {
        (**self).on_request(method, params, cx)
    }

    fn on_notification(&self, notification: ServerNotification) -> impl Future<Output = ()> + Send {
        (**self).on_notification(notification)
    }
}
