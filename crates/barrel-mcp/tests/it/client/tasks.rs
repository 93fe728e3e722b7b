//! Calling tools as tasks (2025-11-25) from the client: a handle's status, result and cancel,
//! the result awaited in one call, the list, and what is refused before anything is sent.

use std::time::Duration;

use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::{CallToolParams, ProtocolVersion, TaskStatus, Tool, ToolExecution};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{builder, connect_to};
use crate::support::within;

#[derive(Deserialize, JsonSchema)]
struct Work {
    /// Milliseconds to work.
    ms: u64,
}

fn server() -> Server {
    let slow = Tool {
        name: "slow".into(),
        execution: Some(ToolExecution {
            task_support: Some("optional".into()),
        }),
        ..Tool::default()
    };
    Server::builder()
        .name("task-server", "1.0.0")
        .tool_with(slow, |_: Ctx, work: Work| async move {
            tokio::time::sleep(Duration::from_millis(work.ms)).await;
            Ok(format!("{} ms of work", work.ms))
        })
        .build()
        .expect("server")
}

fn slow(ms: u64) -> CallToolParams {
    CallToolParams::new("slow")
        .with_arguments(json!({ "ms": ms }).as_object().cloned().unwrap_or_default())
}

#[tokio::test]
async fn a_task_handle_polls_waits_and_cancels() {
    within(async {
        let server = server();
        let client = connect_to(&server, builder(Some(ProtocolVersion::V2025_11_25))).await;
        assert!(client.supports_tool_tasks());
        let handle = client
            .start_tool_task(slow(100), Some(Duration::from_secs(30)))
            .await
            .expect("started");
        assert_eq!(handle.task().ttl, Some(30_000));
        assert_eq!(
            handle.status().await.expect("status").status,
            TaskStatus::Working
        );
        let result = handle.result().await.expect("result");
        assert_eq!(result.text_content(), "100 ms of work");
        assert_eq!(
            handle.status().await.expect("status").status,
            TaskStatus::Completed
        );

        let result = client.call_tool_as_task(slow(0)).await.expect("awaited");
        assert_eq!(result.text_content(), "0 ms of work");

        let long = client
            .start_tool_task(slow(60_000), None)
            .await
            .expect("started");
        assert_eq!(
            long.cancel().await.expect("cancel").status,
            TaskStatus::Cancelled
        );
        let listed = client.list_tasks(None).await.expect("list");
        assert_eq!(listed.tasks.len(), 3);
        assert!(listed.tasks.iter().any(|t| t.task_id == long.id()));
    })
    .await;
}

#[tokio::test]
async fn tasks_are_refused_where_the_revision_has_none() {
    within(async {
        let server = server();
        let client = connect_to(&server, builder(Some(ProtocolVersion::V2025_06_18))).await;
        assert!(!client.supports_tool_tasks());
        let refused = client.start_tool_task(slow(0), None).await.unwrap_err();
        assert!(refused.is_unsupported(), "{refused}");
    })
    .await;
}
