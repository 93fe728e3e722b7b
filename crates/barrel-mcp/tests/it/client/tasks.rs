//! Calling tools as tasks from the client, in both wire forms: a handle's status, result and
//! cancel, the result awaited in one call, questions answered through `tasks/update`
//! (2026-07-28), the list (2025-11-25), and what is refused before anything is sent.

use std::time::Duration;

use barrel_mcp::client::{ClientHandler, HandlerContext, TaskHandle, ToolTask};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::{
    CallToolParams, ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorObject, JsonObject, ProtocolVersion, TaskStatus, Tool, ToolExecution,
};
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

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

fn takes_tasks(name: &str, support: &str) -> Tool {
    Tool {
        name: name.into(),
        execution: Some(ToolExecution {
            task_support: Some(support.into()),
        }),
        ..Tool::default()
    }
}

fn server() -> Server {
    Server::builder()
        .name("task-server", "1.0.0")
        .tool_with(
            takes_tasks("slow", "optional"),
            |_: Ctx, work: Work| async move {
                tokio::time::sleep(Duration::from_millis(work.ms)).await;
                Ok(format!("{} ms of work", work.ms))
            },
        )
        .tool_with(
            takes_tasks("asks", "required"),
            |ctx: Ctx, _: NoArgs| async move {
                let schema = JsonObject::new();
                let answer = ctx
                    .elicit(ElicitRequestParams::form("Your name?", schema))
                    .await?;
                let name = answer
                    .content
                    .and_then(|c| c.get("name").cloned())
                    .unwrap_or_default();
                Ok(format!("hello {name}"))
            },
        )
        .build()
        .expect("server")
}

/// Answers every question with the name "Ada".
struct Ada;

impl ClientHandler for Ada {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        _: ElicitRequestParams,
        _: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult::accept(content))
    }
}

fn started(task: ToolTask) -> TaskHandle {
    match task {
        ToolTask::Started(handle) => handle,
        ToolTask::Finished(result) => panic!("expected a task, got {result:?}"),
    }
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
        let handle = started(
            client
                .start_tool_task(slow(100), Some(Duration::from_secs(30)))
                .await
                .expect("started"),
        );
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

        let long = started(
            client
                .start_tool_task(slow(60_000), None)
                .await
                .expect("started"),
        );
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

#[tokio::test]
async fn extension_tasks_poll_answer_questions_and_cancel() {
    within(async {
        let server = server();
        let client = connect_to(
            &server,
            builder(Some(ProtocolVersion::V2026_07_28)).handler(Ada),
        )
        .await;
        assert!(client.supports_tool_tasks());
        // A plain call never declares the extension, so it never gets a task back.
        let plain = client.call_tool(slow(0)).await.expect("plain call");
        assert_eq!(plain.text_content(), "0 ms of work");
        let handle = started(client.start_tool_task(slow(50), None).await.expect("task"));
        assert!(handle.task().ttl.is_some() && handle.task().poll_interval.is_some());
        let mut seen = Vec::new();
        let result = handle
            .result_with(|task| seen.push(task.status))
            .await
            .expect("result");
        assert_eq!(result.text_content(), "50 ms of work");
        assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
        // The question the task asks reaches the handler; the answer goes back by tasks/update.
        let asked = client
            .call_tool_as_task(CallToolParams::new("asks"))
            .await
            .expect("answered");
        assert_eq!(asked.text_content(), "hello \"Ada\"");
        // A required tool called plainly: the server names the extension it needs.
        let refused = client
            .call_tool(CallToolParams::new("asks"))
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, barrel_mcp::Error::Rpc(e) if e.code.0 == -32021),
            "{refused}"
        );
        let long = started(
            client
                .start_tool_task(slow(60_000), None)
                .await
                .expect("task"),
        );
        assert_eq!(
            long.cancel().await.expect("cancel").status,
            TaskStatus::Cancelled
        );
        assert!(matches!(
            long.result().await,
            Err(barrel_mcp::Error::Cancelled)
        ));
        assert!(client.list_tasks(None).await.unwrap_err().is_unsupported());
    })
    .await;
}
