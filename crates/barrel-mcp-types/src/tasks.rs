//! The core tasks of 2025-11-25: task-augmented requests, `tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel` and `notifications/tasks/status`. Removed from the core in
//! 2026-07-28 (where tasks became the `io.modelcontextprotocol/tasks` extension).

use serde::{Deserialize, Serialize};

use crate::meta::{JsonObject, Meta};

/// The state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    #[default]
    Working,
    /// Waiting for input from the requester.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// True for `completed`, `failed` and `cancelled`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task id.
    pub task_id: String,
    /// Its state.
    pub status: TaskStatus,
    /// A human-readable note on the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last update.
    pub last_updated_at: String,
    /// Retention from creation in milliseconds; `null` (`None`) for unlimited. Always written.
    #[serde(default)]
    pub ttl: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

/// The `task` member of a task-augmented request's params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// Requested retention in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// The value of `_meta["io.modelcontextprotocol/related-task"]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The related task.
    pub task_id: String,
}

/// Result of a task-augmented request: the created task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The task.
    pub task: Task,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task id.
    pub task_id: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tasks/get`.
pub type GetTaskParams = TaskIdParams;
/// Params of `tasks/result`.
pub type GetTaskPayloadParams = TaskIdParams;
/// Params of `tasks/cancel`.
pub type CancelTaskParams = TaskIdParams;

/// A task with metadata: the result of `tasks/get` and `tasks/cancel`, and the params of
/// `notifications/tasks/status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task fields, inline.
    #[serde(flatten)]
    pub task: Task,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Result of `tasks/get`.
pub type GetTaskResult = TaskResult;
/// Result of `tasks/cancel`.
pub type CancelTaskResult = TaskResult;
/// Params of `notifications/tasks/status`.
pub type TaskStatusNotificationParams = TaskResult;

/// Result of `tasks/result`: the result of the original request (a `CallToolResult` for
/// `tools/call`), kept raw.
pub type GetTaskPayloadResult = JsonObject;

/// Result of `tasks/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// This page of tasks.
    pub tasks: Vec<Task>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_wire() {
        let v = json!({
            "taskId": "t1", "status": "input_required", "createdAt": "2025-11-25T10:00:00Z",
            "lastUpdatedAt": "2025-11-25T10:00:01Z", "ttl": null, "pollInterval": 500,
            "_meta": {"k": 1}
        });
        let r: GetTaskResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.task.status, TaskStatus::InputRequired);
        assert!(!r.task.status.is_terminal());
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }
}
