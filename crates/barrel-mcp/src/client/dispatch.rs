//! The client's side of the connection: answers the server's requests through the handler (or,
//! when the server asks for a task, through the task receiver) and queues its notifications for
//! the handler, one at a time, in order.

use std::sync::Arc;

use barrel_mcp_types::method::names;
use barrel_mcp_types::{
    ClientCapabilities, ErrorCode, ErrorObject, InputRequest, Notification, Payload, Request,
    ResourceUpdatedParams,
};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::cache::ResponseCache;
use super::handler::{DynHandler, HandlerContext};
use super::input;
use super::notification::ServerNotification;
use super::task_receiver::{self, TaskReceiver, Work};
use crate::peer::{BoxFuture, Handler, Peer, RequestContext};

/// What resource subscriptions hear of.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    /// `notifications/resources/updated`.
    Updated(ResourceUpdatedParams),
    /// `notifications/subscriptions/acknowledged`, with the resources the server will watch.
    Acknowledged(Vec<String>),
}

pub(crate) struct Dispatch {
    /// Woken by `list_changed` notifications (see `ClientBuilder::changes`).
    pub(crate) changes: Option<Arc<tokio::sync::Notify>>,
    /// Dropped from as notifications say what changed.
    pub(crate) cache: Arc<ResponseCache>,
    pub(crate) handler: Arc<dyn DynHandler>,
    pub(crate) queue: mpsc::Sender<ServerNotification>,
    pub(crate) events: broadcast::Sender<Event>,
    pub(crate) apply_defaults: bool,
    /// What the client declared: a server request for anything else is refused.
    pub(crate) capabilities: ClientCapabilities,
    /// The tasks run for the server, when the client declared task-augmented requests.
    pub(crate) tasks: Option<Arc<TaskReceiver>>,
}

impl Handler for Dispatch {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        let answer = self.answer(request, cx);
        Box::pin(async move { answer.await.map(Payload::from) })
    }

    fn on_notification(&self, notification: Notification, _peer: &Peer) {
        self.cache
            .invalidate(&notification.method, notification.params.as_ref());
        if notification.method.ends_with("/list_changed")
            && let Some(changes) = &self.changes
        {
            changes.notify_one();
        }
        let notification = ServerNotification::parse(notification);
        let event = match &notification {
            ServerNotification::ResourceUpdated(p) => Some(Event::Updated(p.clone())),
            ServerNotification::SubscriptionsAcknowledged(p) => Some(Event::Acknowledged(
                p.notifications
                    .resource_subscriptions
                    .clone()
                    .unwrap_or_default(),
            )),
            _ => None,
        };
        if let Some(event) = event {
            // No receiver means no subscription is open: nothing to deliver.
            let _ = self.events.send(event);
        }
        if let Err(mpsc::error::TrySendError::Full(dropped)) = self.queue.try_send(notification) {
            tracing::warn!(
                ?dropped,
                "client notification queue full; notification dropped"
            );
        }
    }
}

impl Dispatch {
    /// Answers one of the server's requests.
    fn answer(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let Request { method, params, .. } = request;
        // `tasks/*` about the tasks this client runs for the server.
        if let Some(tasks) = self.tasks.as_ref().filter(|t| t.answers(&method)) {
            let tasks = Arc::clone(tasks);
            return Box::pin(
                async move { tasks.answer(&method, params.as_ref(), &cx.cancel).await },
            );
        }
        match method.as_str() {
            names::PING => Box::pin(async { Ok(json!({})) }),
            names::SAMPLING_CREATE_MESSAGE | names::ELICITATION_CREATE | names::ROOTS_LIST => {
                let mut params = params.unwrap_or(json!({}));
                // A task asked for where the client declared none is ignored: served normally.
                let as_task = match &self.tasks {
                    Some(tasks) if tasks.takes(&method) => task_receiver::take_task(&mut params),
                    _ => None,
                };
                let raw = json!({ "method": method, "params": params });
                let request: InputRequest = match serde_json::from_value(raw) {
                    Ok(request) => request,
                    Err(e) => {
                        let error = ErrorObject::invalid_params(format!("invalid params: {e}"));
                        return Box::pin(async move { Err(error) });
                    }
                };
                if !input::declared(&self.capabilities, &request) {
                    let error = ErrorObject::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!(
                            "{}: this client did not declare that capability",
                            request.method()
                        ),
                    );
                    return Box::pin(async move { Err(error) });
                }
                let handler = Arc::clone(&self.handler);
                let apply_defaults = self.apply_defaults;
                if let (Some(asked_ttl), Some(tasks)) = (as_task, &self.tasks) {
                    let tasks = Arc::clone(tasks);
                    let work = Work {
                        handler,
                        request,
                        request_id: cx.id,
                        apply_defaults,
                        peer: cx.peer.unrelated(),
                    };
                    return Box::pin(async move { tasks.start(work, asked_ttl).await });
                }
                let cx = HandlerContext {
                    cancel: cx.cancel,
                    request_id: Some(cx.id),
                    input_key: None,
                    task_id: None,
                };
                Box::pin(async move { input::answer(&handler, request, cx, apply_defaults).await })
            }
            other if barrel_mcp_types::method::is_spec_method(other) => {
                let error = ErrorObject::method_not_found(other);
                Box::pin(async move { Err(error) })
            }
            // Not the spec's: the application's handler answers (or refuses) it.
            _ => {
                let cx = HandlerContext {
                    cancel: cx.cancel,
                    request_id: Some(cx.id),
                    input_key: None,
                    task_id: None,
                };
                self.handler.on_request(method, params, cx)
            }
        }
    }
}

/// Hands queued notifications to the handler, one at a time, until the connection ends.
pub(crate) async fn pump(
    mut queue: mpsc::Receiver<ServerNotification>,
    handler: Arc<dyn DynHandler>,
) {
    while let Some(notification) = queue.recv().await {
        handler.on_notification(notification).await;
    }
}
