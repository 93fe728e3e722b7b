//! The 2025-11-25 core tasks: a `tools/call` with `params.task` becomes a task the requestor
//! polls (`tasks/get`), waits on (`tasks/result`), lists and cancels; tools declare whether
//! they take tasks; other sessions and other revisions see nothing.

use std::time::Duration;

use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::{Tool, ToolExecution};
use barrel_mcp_types::ErrorCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{TestClient, connect};

#[derive(Deserialize, JsonSchema)]
struct Wait {
    /// Milliseconds to work.
    ms: u64,
}

fn with_support(name: &str, support: &str) -> Tool {
    let mut tool: Tool = serde_json::from_value(json!({
        "name": name,
        "description": format!("takes tasks: {support}"),
        "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]},
    }))
    .expect("tool");
    tool.execution = Some(ToolExecution {
        task_support: Some(support.to_owned()),
    });
    tool
}

fn server() -> Server {
    Server::builder()
        .name("tasks", "1.0.0")
        .tool_with(with_support("slow", "optional"), |_: Ctx, args: Wait| async move {
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok(format!("worked {} ms", args.ms))
        })
        .tool_with(with_support("must", "required"), |_: Ctx, _: Wait| async move {
            Ok("done".to_owned())
        })
        .tool_with(with_support("fails", "optional"), |_: Ctx, _: Wait| async move {
            Err::<String, _>(barrel_mcp::Error::tool("it went wrong"))
        })
        .tool_with(with_support("explodes", "optional"), |_: Ctx, _: Wait| async move {
            if std::hint::black_box(true) {
                panic!("the handler broke");
            }
            Ok("never".to_owned())
        })
        .tool("plain", "Takes no tasks", |_: Ctx, _: Wait| async move {
            Ok("plain".to_owned())
        })
        .build()
        .expect("server")
}

async fn session(server: &Server, version: &str) -> (TestClient, Value) {
    let client = connect(server);
    let init = client.initialize(version).await;
    (client, init)
}

async fn start(client: &TestClient, tool: &str, ms: u64) -> String {
    let created = client
        .request(
            "tools/call",
            json!({"name": tool, "arguments": {"ms": ms}, "task": {"ttl": 60_000}}),
        )
        .await
        .expect("a task");
    assert_eq!(created["task"]["status"], "working", "{created}");
    assert_eq!(created["task"]["ttl"], 60_000);
    assert!(created["task"]["pollInterval"].is_u64());
    assert!(created.get("content").is_none());
    created["task"]["taskId"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn a_task_is_created_polled_and_its_result_awaited() {
    let server = server();
    let (client, init) = session(&server, "2025-11-25").await;
    assert_eq!(
        init["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    let tools = client.request("tools/list", json!({})).await.expect("list");
    let slow = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "slow")
        .unwrap();
    assert_eq!(slow["execution"]["taskSupport"], "optional");

    let id = start(&client, "slow", 200).await;
    assert_eq!(id.len(), 32, "192 random bits");
    let polled = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(polled["status"], "working");
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("result");
    assert_eq!(result["content"][0]["text"], "worked 200 ms");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let done = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(done["status"], "completed");
    let listed = client.request("tasks/list", json!({})).await.expect("list");
    assert_eq!(listed["tasks"][0]["taskId"], id);
}

#[tokio::test]
async fn a_tool_error_is_a_failed_task_with_its_result() {
    let server = server();
    let (client, _) = session(&server, "2025-11-25").await;
    let id = start(&client, "fails", 0).await;
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("result");
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0]["text"], "it went wrong");
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "failed");
}

#[tokio::test]
async fn cancelling_stops_the_task_for_good() {
    let server = server();
    let (client, _) = session(&server, "2025-11-25").await;
    let id = start(&client, "slow", 60_000).await;
    let cancelled = client
        .request("tasks/cancel", json!({"taskId": id}))
        .await
        .expect("cancel");
    assert_eq!(cancelled["status"], "cancelled");
    let again = client
        .request("tasks/cancel", json!({"taskId": id}))
        .await
        .expect_err("a finished task");
    assert_eq!(again.code, ErrorCode::INVALID_PARAMS);
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect_err("no result");
    assert_eq!(result.code, ErrorCode::INVALID_PARAMS);
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "cancelled");
}

#[tokio::test]
async fn tools_say_whether_they_take_tasks() {
    let server = server();
    let (client, _) = session(&server, "2025-11-25").await;
    let forbidden = client
        .request(
            "tools/call",
            json!({"name": "plain", "arguments": {"ms": 0}, "task": {}}),
        )
        .await
        .expect_err("no tasks here");
    assert_eq!(forbidden.code, ErrorCode::METHOD_NOT_FOUND);
    let required = client
        .request(
            "tools/call",
            json!({"name": "must", "arguments": {"ms": 0}}),
        )
        .await
        .expect_err("a task is required");
    assert_eq!(required.code, ErrorCode::METHOD_NOT_FOUND);
    let plain = client
        .request(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 0}}),
        )
        .await
        .expect("optional: a plain call works");
    assert_eq!(plain["content"][0]["text"], "worked 0 ms");
}

#[tokio::test]
async fn another_session_or_revision_sees_no_task() {
    let server = server();
    let (alice, _) = session(&server, "2025-11-25").await;
    let id = start(&alice, "slow", 60_000).await;
    let (bob, _) = session(&server, "2025-11-25").await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let hidden = bob
            .request(method, json!({"taskId": id}))
            .await
            .expect_err("not bob's");
        assert_eq!(hidden.code, ErrorCode::INVALID_PARAMS, "{method}");
    }
    let listed = bob.request("tasks/list", json!({})).await.expect("list");
    assert_eq!(listed["tasks"], json!([]));
    // An older revision has no tasks at all.
    let (old, init) = session(&server, "2025-06-18").await;
    assert!(init["capabilities"].get("tasks").is_none());
    let missing = old
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect_err("no such method");
    assert_eq!(missing.code, ErrorCode::METHOD_NOT_FOUND);
    alice
        .request("tasks/cancel", json!({"taskId": id}))
        .await
        .expect("cancel");
}

#[tokio::test]
async fn a_handler_that_panics_fails_its_task() {
    let server = server();
    let (client, _) = session(&server, "2025-11-25").await;
    let id = start(&client, "explodes", 0).await;
    let error = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect_err("the work failed");
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    assert!(
        !error.message.contains("broke"),
        "no panic text: {}",
        error.message
    );
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "failed");
}

#[tokio::test]
async fn a_task_asks_its_client_naming_itself() {
    use barrel_mcp::types::ElicitRequestParams;

    let server = Server::builder()
        .name("asking", "1.0.0")
        .tool_with(
            with_support("asks", "optional"),
            |ctx: Ctx, _: Wait| async move {
                let form = ElicitRequestParams::form("Name?", barrel_mcp::types::JsonObject::new());
                let answer = ctx.elicit(form).await?;
                let name = answer.content.and_then(|c| c.get("name").cloned());
                Ok(format!("hello {}", name.unwrap_or_default()))
            },
        )
        .build()
        .expect("server");
    let (client, _) = session(&server, "2025-11-25").await;
    let id = start(&client, "asks", 0).await;
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect("the result");
    assert_eq!(result["content"][0]["text"], "hello \"Ada\"");
    let asked = client.asked.lock().expect("asked").clone();
    let (method, params) = asked.last().expect("a question");
    assert_eq!(method, "elicitation/create");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );
    let task = client
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "completed");
    // The session hears each status change.
    let mut statuses = Vec::new();
    while statuses.last().map(String::as_str) != Some("completed") {
        let note = client.notification().await;
        if note.method == "notifications/tasks/status" {
            let params = note.params.expect("the task");
            assert_eq!(params["taskId"], json!(id));
            statuses.push(params["status"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert!(
        statuses.contains(&"input_required".to_owned()),
        "{statuses:?}"
    );
}

/// The `initialize` answer is kept per revision, but never outlives the registry it was made
/// of: a tool that takes tasks, added at run time, shows in the next session's capabilities,
/// and its removal takes them away again.
#[tokio::test]
async fn the_initialize_answer_follows_the_tools() {
    let server = Server::builder()
        .name("tasks", "1.0.0")
        .tool("plain", "Takes no tasks", |_: Ctx, _: Wait| async move {
            Ok("plain".to_owned())
        })
        .build()
        .expect("server");
    let (_first, before) = session(&server, "2025-11-25").await;
    assert!(before["capabilities"].get("tasks").is_none(), "{before}");
    let (_again, same) = session(&server, "2025-11-25").await;
    assert_eq!(
        same, before,
        "the same answer to every session on a revision"
    );
    server
        .add_tool(
            with_support("slow", "optional"),
            barrel_mcp::server::ToolHandler::raw(|_, _| async { Ok("x") }),
        )
        .expect("added");
    let (_later, after) = session(&server, "2025-11-25").await;
    assert_eq!(
        after["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({}),
        "{after}"
    );
    let (_older, older) = session(&server, "2025-06-18").await;
    assert_eq!(older["protocolVersion"], "2025-06-18");
    assert!(
        older["capabilities"].get("tasks").is_none(),
        "each revision keeps its own shape: {older}"
    );
    assert!(server.remove_tool("slow"));
    let (_last, last) = session(&server, "2025-11-25").await;
    assert_eq!(last, before, "{last}");
}
