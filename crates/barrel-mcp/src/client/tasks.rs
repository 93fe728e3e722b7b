//! Tasks from the client side, in the 2025-11-25 form: call a tool as a task and hold a
//! [`TaskHandle`] (status, result, cancel), or just await the result; list the tasks this
//! client created.

use std::time::Duration;

use barrel_mcp_types::{CallToolParams, CallToolResult, CreateTaskResult, ListTasksResult, Task};
use serde_json::{Value, json};

use super::{CallOptions, Client};
use crate::{Error, Result};

/// The wait for a task without a TTL (the server keeps it until it restarts).
const UNBOUNDED_TASK_WAIT: Duration = Duration::from_secs(3600);

/// A task this client started (2025-11-25): its status, its result, its cancellation.
///
/// The server must advertise `tasks.requests.tools.call`, and the tool must take tasks
/// (`execution.taskSupport` `optional` or `required`); otherwise the call fails before
/// anything is sent ([`Error::Unsupported`]). Waiting for a result is `tasks/result`, which the
/// server answers once the task ends (a question the task asks in between reaches the client's
/// handler like any other); the wait is bounded by the task's TTL.
#[derive(Debug, Clone)]
pub struct TaskHandle {
    client: Client,
    task: Task,
}

impl TaskHandle {
    /// The task id.
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// The task as the server described it when it was created.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The task as it stands now (`tasks/get`).
    pub async fn status(&self) -> Result<Task> {
        self.client
            .call_method("tasks/get", Some(self.id_params()), &CallOptions::new())
            .await
    }

    /// Waits until the task ends and returns its result (`tasks/result`): the tool's result,
    /// or the JSON-RPC error the task failed with ([`Error::Rpc`]).
    pub async fn result(&self) -> Result<CallToolResult> {
        let wait = self
            .task
            .ttl
            .map_or(UNBOUNDED_TASK_WAIT, Duration::from_millis);
        let options = CallOptions::new().timeout(wait).max_total(wait);
        self.client
            .call_method("tasks/result", Some(self.id_params()), &options)
            .await
    }

    /// Cancels the task (`tasks/cancel`); the server answers with it `cancelled`.
    pub async fn cancel(&self) -> Result<Task> {
        self.client
            .call_method("tasks/cancel", Some(self.id_params()), &CallOptions::new())
            .await
    }

    fn id_params(&self) -> Value {
        json!({ "taskId": self.task.task_id })
    }
}

impl Client {
    /// True when the server runs `tools/call` as tasks (2025-11-25 `tasks.requests.tools.call`).
    pub fn supports_tool_tasks(&self) -> bool {
        !self.is_modern()
            && self
                .capabilities()
                .tasks
                .as_ref()
                .and_then(|t| t.pointer("/requests/tools/call"))
                .is_some()
    }

    /// Starts `tools/call` as a task, kept by the server for `ttl` (or its default), and
    /// returns a handle to it.
    pub async fn start_tool_task(
        &self,
        params: CallToolParams,
        ttl: Option<Duration>,
    ) -> Result<TaskHandle> {
        self.require_session("tasks")?;
        if !self.supports_tool_tasks() {
            return Err(Error::Unsupported(
                "the server does not run tools as tasks".into(),
            ));
        }
        let mut value = serde_json::to_value(&params)?;
        let task = match ttl {
            Some(ttl) => json!({ "ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX) }),
            None => json!({}),
        };
        if let Value::Object(params) = &mut value {
            params.insert("task".into(), task);
        }
        let created: CreateTaskResult = self
            .call_method("tools/call", Some(value), &CallOptions::new())
            .await?;
        Ok(TaskHandle {
            client: self.clone(),
            task: created.task,
        })
    }

    /// Runs `tools/call` as a task and waits for its result.
    pub async fn call_tool_as_task(&self, params: CallToolParams) -> Result<CallToolResult> {
        self.start_tool_task(params, None).await?.result().await
    }

    /// The tasks this client created that the server still keeps, a page at a time
    /// (`tasks/list`).
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<ListTasksResult> {
        self.require_session("tasks/list")?;
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        self.call_method("tasks/list", Some(params), &CallOptions::new())
            .await
    }
}
