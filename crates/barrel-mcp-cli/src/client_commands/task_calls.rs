//! Tools run as tasks for `call` and `task`: whether a tool needs a task, starting one and
//! waiting for its result with its status on stderr, and one line about a task.

use barrel_mcp::client::{Client, TaskHandle, ToolTask};
use barrel_mcp::types::CallToolParams;

/// True when `tool` declares that it must run as a task (only asked of servers that run tools
/// as tasks).
pub(super) async fn requires_task(client: &Client, tool: &str) -> anyhow::Result<bool> {
    if !client.supports_tool_tasks() {
        return Ok(false);
    }
    let tools = client.list_all_tools().await?;
    Ok(tools.iter().any(|t| {
        t.name == tool
            && t.execution.as_ref().and_then(|e| e.task_support.as_deref()) == Some("required")
    }))
}

/// Runs a tool as a task: its status on stderr whenever it changes, then its result.
pub(super) async fn run_as_task(
    client: &Client,
    params: CallToolParams,
    quiet: bool,
) -> anyhow::Result<barrel_mcp::types::CallToolResult> {
    match client.start_tool_task(params, None).await? {
        ToolTask::Started(handle) => run_task_handle(handle, quiet).await,
        ToolTask::Finished(result) => Ok(result),
    }
}

/// Waits for a task's result, its status on stderr whenever it changes.
pub(super) async fn run_task_handle(
    handle: TaskHandle,
    quiet: bool,
) -> anyhow::Result<barrel_mcp::types::CallToolResult> {
    let id = handle.id().to_owned();
    let last = std::sync::Arc::new(std::sync::Mutex::new(None));
    let said = std::sync::Arc::clone(&last);
    let say = move |task: &barrel_mcp::types::Task| {
        use std::io::Write as _;
        *said
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task.status);
        if quiet {
            return;
        }
        let status = serde_json::to_value(task.status).unwrap_or_default();
        let status = status.as_str().unwrap_or("?");
        let message = task
            .status_message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        // A closed stderr is no reason to stop the task's command.
        let _ = writeln!(std::io::stderr(), "task {id}: {status}{message}");
    };
    say(handle.task());
    let result = handle.result_with(say.clone()).await?;
    // 2025-11-25 hands over the result without a last status change: say how it ended.
    let seen_end = last
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_some_and(|status| status.is_terminal());
    if !seen_end {
        let mut ended = handle.task().clone();
        ended.status = if result.is_error() {
            barrel_mcp::types::TaskStatus::Failed
        } else {
            barrel_mcp::types::TaskStatus::Completed
        };
        ended.status_message = None;
        say(&ended);
    }
    Ok(result)
}

/// One line about a task: id, status, message, creation time.
pub(super) fn describe_task(task: &barrel_mcp::types::Task) -> String {
    let status = serde_json::to_value(task.status).unwrap_or_default();
    let message = task.status_message.as_deref().unwrap_or_default();
    format!(
        "{:<34} {:<15} {}  {message}",
        task.task_id,
        status.as_str().unwrap_or("?"),
        task.created_at
    )
    .trim_end()
    .to_owned()
}

/// True when `error` is a 2026-07-28 server saying the call needs the tasks extension.
pub(super) fn needs_task(error: &barrel_mcp::Error) -> bool {
    matches!(error, barrel_mcp::Error::Rpc(e)
        if e.code == barrel_mcp::types::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            && e.data.as_ref().and_then(|d| d.pointer("/requiredCapabilities/extensions"))
                .and_then(|x| x.get(barrel_mcp::task::EXTENSION)).is_some())
}
