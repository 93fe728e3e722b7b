//! `subscriptions/listen` (2026-07-28): one long-lived request that delivers the change
//! notifications the client opted in to.
//!
//! The server subscribes to registry changes before it acknowledges, so nothing that happens
//! after the acknowledgement is missed. Every notification carries the listen request's id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]` and belongs to that request, so Streamable
//! HTTP puts it on the listen stream. The client ends a subscription by cancelling the request
//! (closing the stream over HTTP, `notifications/cancelled` on stdio); when the server ends it
//! (the connection's input ended, as when the HTTP server shuts down, or the server's event
//! channel closed), it answers the request with a complete result carrying the subscription id.
//!
//! With the tasks extension declared, a filter may name task ids: the acknowledgement echoes
//! those the caller can see, each is sent once as it stands, and each change of one arrives
//! as `notifications/tasks` with the whole `DetailedTask` (task changes come on a channel of
//! their own, apart from registry events).

use std::sync::atomic::Ordering;

use barrel_mcp_types::meta::SUBSCRIPTION_ID_KEY;
use barrel_mcp_types::{
    ErrorObject, Meta, SubscriptionFilter, SubscriptionsAcknowledgedParams,
    SubscriptionsListenParams,
};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::Server;
use super::context::Scope;
use super::events::ServerEvent;
use super::task_extension;
use crate::peer::RequestContext;

/// Holds one slot of the open-subscription cap until the subscription ends.
struct Slot<'a>(&'a Server);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0
            .inner
            .open_subscriptions
            .fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves one `subscriptions/listen` request until it is cancelled or the server goes away.
pub(crate) async fn listen(
    server: &Server,
    scope: &Scope,
    params: SubscriptionsListenParams,
    cx: RequestContext,
) -> Result<Value, ErrorObject> {
    let limit = server.config().max_subscriptions;
    let open = server
        .inner
        .open_subscriptions
        .fetch_add(1, Ordering::AcqRel);
    let _slot = Slot(server);
    if open >= limit {
        return Err(ErrorObject::internal(format!(
            "subscription limit reached ({limit} open)"
        )));
    }
    check_filter(server, &params.notifications)?;
    let mut events = server.inner.events.subscribe();
    let mut task_events = server.inner.task_events.subscribe();
    let mut honoured = params.notifications.clone();
    honoured.task_ids =
        task_extension::watchable(server, scope, &cx, &params.notifications).await?;
    let watches_tasks = honoured
        .task_ids
        .as_ref()
        .is_some_and(|ids| !ids.is_empty());
    let tag = tag_for(&cx);
    let ack = SubscriptionsAcknowledgedParams {
        notifications: honoured.clone(),
        meta: Some(tag.clone()),
    };
    let ack = serde_json::to_value(ack).map_err(|e| ErrorObject::internal(e.to_string()))?;
    send(&cx, "notifications/subscriptions/acknowledged", ack).await?;
    // Each watched task as it stands now, so a change made before the listen is not missed.
    for id in honoured.task_ids.iter().flatten() {
        if let Some(params) = task_extension::notification(server, &cx, &honoured, id, &tag).await {
            send(&cx, "notifications/tasks", params).await?;
        }
    }
    loop {
        let event = tokio::select! {
            () = cx.cancel.cancelled() => return Ok(Value::Null),
            // The connection is draining (the server shuts down, stdin closed): end gracefully.
            () = cx.peer.input_ended() => break,
            event = events.recv() => event,
            changed = task_events.recv(), if watches_tasks => {
                let ids = match changed {
                    Ok(id) => vec![id],
                    // Missed some: each watched task as it stands.
                    Err(RecvError::Lagged(_)) => honoured.task_ids.clone().unwrap_or_default(),
                    Err(RecvError::Closed) => break,
                };
                for id in ids {
                    let params =
                        task_extension::notification(server, &cx, &honoured, &id, &tag).await;
                    if let Some(params) = params {
                        send(&cx, "notifications/tasks", params).await?;
                    }
                }
                continue;
            }
        };
        let batch = match event {
            Ok(event) => vec![event],
            Err(RecvError::Lagged(skipped)) => {
                // What was missed is unknown: announce everything the filter watches.
                tracing::debug!(
                    skipped,
                    "listen stream fell behind; announcing every change"
                );
                let uris = honoured.resource_subscriptions.clone().unwrap_or_default();
                ServerEvent::after_lag(uris)
            }
            Err(RecvError::Closed) => break,
        };
        for event in batch {
            if let Some(params) = notification_params(&event, &honoured, &tag) {
                send(&cx, event.method(), params).await?;
            }
        }
    }
    Ok(json!({ "_meta": tag }))
}

/// Refuses a filter naming more resources than a session may subscribe to, or a URI over the
/// length limit (-32602), so one listen cannot make every change cost a long scan.
fn check_filter(server: &Server, filter: &SubscriptionFilter) -> Result<(), ErrorObject> {
    let config = server.config();
    let uris = filter.resource_subscriptions.as_deref().unwrap_or_default();
    if uris.len() > config.max_resource_subscriptions {
        return Err(ErrorObject::invalid_params(format!(
            "too many resource subscriptions in one filter ({}, limit {})",
            uris.len(),
            config.max_resource_subscriptions
        )));
    }
    for uri in uris {
        super::dispatch::check_subscription_uri(uri, config.max_subscription_uri_length)?;
    }
    Ok(())
}

fn tag_for(cx: &RequestContext) -> Meta {
    let mut meta = Meta::new();
    meta.insert(SUBSCRIPTION_ID_KEY.to_owned(), cx.id.to_value());
    meta
}

/// The params of the notification for `event`, or `None` when the filter does not want it.
fn notification_params(
    event: &ServerEvent,
    filter: &SubscriptionFilter,
    tag: &Meta,
) -> Option<Value> {
    let wanted = match event {
        ServerEvent::ToolsChanged => filter.tools_list_changed == Some(true),
        ServerEvent::PromptsChanged => filter.prompts_list_changed == Some(true),
        ServerEvent::ResourcesChanged => filter.resources_list_changed == Some(true),
        ServerEvent::ResourceUpdated(uri) => filter
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.contains(uri)),
    };
    if !wanted {
        return None;
    }
    Some(match event {
        ServerEvent::ResourceUpdated(uri) => json!({ "uri": uri, "_meta": tag }),
        _ => json!({ "_meta": tag }),
    })
}

async fn send(cx: &RequestContext, method: &str, params: Value) -> Result<(), ErrorObject> {
    cx.peer
        .notify(method, Some(params))
        .await
        .map_err(|e| e.to_error_object())
}
