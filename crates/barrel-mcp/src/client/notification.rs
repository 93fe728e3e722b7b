//! [`ServerNotification`]: every notification a server may send a client, decoded.

use barrel_mcp_types::method::names;
use barrel_mcp_types::{
    ElicitationCompleteParams, LoggingMessageParams, Notification, ProgressParams,
    ReplayTruncatedParams, ResourceUpdatedParams, SubscriptionsAcknowledgedParams,
    TaskStatusNotificationParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A notification from the server, as a [`ClientHandler`](super::ClientHandler) receives it.
///
/// A known method whose params do not decode arrives as [`ServerNotification::Other`], so
/// nothing the server sends is lost.
///
/// # Example
///
/// ```
/// use barrel_mcp::client::{ClientHandler, ServerNotification};
///
/// struct Watcher;
///
/// impl ClientHandler for Watcher {
///     async fn on_notification(&self, notification: ServerNotification) {
///         match notification {
///             ServerNotification::ToolListChanged => println!("list the tools again"),
///             ServerNotification::LoggingMessage(log) => println!("{:?}: {}", log.level, log.data),
///             ServerNotification::TaskStatus(task) => println!("task {}", task.task.task_id),
///             // Resume gave up events: read again what matters rather than trust the stream.
///             ServerNotification::ReplayTruncated(_) => println!("resync"),
///             _ => {}
///         }
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerNotification {
    /// `notifications/progress` for a token no call of this client is waiting on.
    Progress(ProgressParams),
    /// `notifications/message`: a log message.
    LoggingMessage(LoggingMessageParams),
    /// `notifications/tools/list_changed`.
    ToolListChanged,
    /// `notifications/prompts/list_changed`.
    PromptListChanged,
    /// `notifications/resources/list_changed`.
    ResourceListChanged,
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated(ResourceUpdatedParams),
    /// `notifications/elicitation/complete`: a URL elicitation finished (2025-11-25).
    ElicitationComplete(ElicitationCompleteParams),
    /// `notifications/subscriptions/acknowledged`: what a `subscriptions/listen` will deliver
    /// (2026-07-28).
    SubscriptionsAcknowledged(SubscriptionsAcknowledgedParams),
    /// `notifications/replay_truncated`: a resumed Streamable HTTP stream (from a barrel-mcp
    /// server) lost events older than the server kept.
    ReplayTruncated(ReplayTruncatedParams),
    /// `notifications/tasks/status`: a task of this client changed status (2025-11-25; the
    /// server may send it, and a [`TaskHandle`](super::TaskHandle) does not depend on it).
    TaskStatus(TaskStatusNotificationParams),
    /// Any other notification, or a known one whose params did not decode.
    Other(Notification),
}

impl ServerNotification {
    /// Decodes a raw notification.
    ///
    /// Example: [`ServerNotification`].
    pub fn parse(notification: Notification) -> Self {
        let params = notification.params.as_ref();
        let decoded = match notification.method.as_str() {
            names::NOTIFICATIONS_PROGRESS => decode(params).map(Self::Progress),
            names::NOTIFICATIONS_MESSAGE => decode(params).map(Self::LoggingMessage),
            names::NOTIFICATIONS_TOOLS_LIST_CHANGED => Some(Self::ToolListChanged),
            names::NOTIFICATIONS_PROMPTS_LIST_CHANGED => Some(Self::PromptListChanged),
            names::NOTIFICATIONS_RESOURCES_LIST_CHANGED => Some(Self::ResourceListChanged),
            names::NOTIFICATIONS_RESOURCES_UPDATED => decode(params).map(Self::ResourceUpdated),
            names::NOTIFICATIONS_ELICITATION_COMPLETE => {
                decode(params).map(Self::ElicitationComplete)
            }
            names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED => {
                decode(params).map(Self::SubscriptionsAcknowledged)
            }
            names::NOTIFICATIONS_REPLAY_TRUNCATED => decode(params).map(Self::ReplayTruncated),
            names::NOTIFICATIONS_TASKS_STATUS => decode(params).map(Self::TaskStatus),
            _ => None,
        };
        decoded.unwrap_or(Self::Other(notification))
    }
}

fn decode<T: DeserializeOwned>(params: Option<&Value>) -> Option<T> {
    let params = params
        .cloned()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    serde_json::from_value(params).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_truncated_replay_is_decoded() {
        let notice = Notification {
            method: names::NOTIFICATIONS_REPLAY_TRUNCATED.to_owned(),
            params: Some(json!({ "lastEventId": "3.7", "firstAvailableEventId": null })),
        };
        assert_eq!(
            ServerNotification::parse(notice),
            ServerNotification::ReplayTruncated(ReplayTruncatedParams {
                last_event_id: "3.7".to_owned(),
                first_available_event_id: None,
            })
        );
    }

    #[test]
    fn a_task_status_is_decoded_and_a_malformed_one_kept_raw() {
        let status = Notification {
            method: names::NOTIFICATIONS_TASKS_STATUS.to_owned(),
            params: Some(json!({
                "taskId": "t1",
                "status": "working",
                "createdAt": "2026-01-01T00:00:00Z",
                "lastUpdatedAt": "2026-01-01T00:00:01Z",
                "ttl": null
            })),
        };
        match ServerNotification::parse(status) {
            ServerNotification::TaskStatus(params) => {
                assert_eq!(params.task.task_id, "t1");
                assert_eq!(params.task.status, barrel_mcp_types::TaskStatus::Working);
            }
            other => panic!("not decoded: {other:?}"),
        }
        let malformed = Notification {
            method: names::NOTIFICATIONS_TASKS_STATUS.to_owned(),
            params: Some(json!({ "taskId": 7 })),
        };
        assert_eq!(
            ServerNotification::parse(malformed.clone()),
            ServerNotification::Other(malformed)
        );
    }
}
