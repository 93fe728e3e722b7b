//! Typed task notifications on the client: a 2025-11-25 server's `notifications/tasks/status`
//! reaches the client's handler as [`ServerNotification::TaskStatus`], for the task it names.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use barrel_mcp::client::{ClientHandler, ServerNotification, ToolTask};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::{ProtocolVersion, TaskStatus, Tool, ToolExecution};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{builder, connect_to};
use crate::support::within;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Keeps every task status it hears.
#[derive(Default)]
struct Statuses(Mutex<Vec<(String, TaskStatus)>>);

impl ClientHandler for Statuses {
    async fn on_notification(&self, notification: ServerNotification) {
        if let ServerNotification::TaskStatus(params) = notification {
            let mut seen = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            seen.push((params.task.task_id, params.task.status));
        }
    }
}

#[tokio::test]
async fn a_task_status_notification_reaches_the_handler_typed() {
    let tool = Tool {
        name: "job".into(),
        execution: Some(ToolExecution {
            task_support: Some("optional".into()),
        }),
        ..Tool::default()
    };
    let server = Server::builder()
        .name("task-status", "1.0.0")
        .tool_with(tool, |_: Ctx, _: NoArgs| async move { Ok("done") })
        .build()
        .expect("server");
    let statuses = Arc::new(Statuses::default());
    let client = connect_to(
        &server,
        builder(Some(ProtocolVersion::V2025_11_25)).handler(Arc::clone(&statuses)),
    )
    .await;
    let started = client
        .start_tool_task(barrel_mcp::types::CallToolParams::new("job"), None)
        .await
        .expect("started");
    let ToolTask::Started(handle) = started else {
        panic!("expected a task, got {started:?}");
    };
    let result = handle.result().await.expect("result");
    assert_eq!(result.text_content(), "done");
    within(async {
        loop {
            let seen = statuses
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            if let Some(last) = seen.last() {
                assert!(seen.iter().all(|(id, _)| id == handle.id()), "{seen:?}");
                if last.1 == TaskStatus::Completed {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}
