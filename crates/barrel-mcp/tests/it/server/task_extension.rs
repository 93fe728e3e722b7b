//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`): server-directed task
//! creation, the `DetailedTask` of `tasks/get`, questions answered through `tasks/update`,
//! cancellation acks, the gates (-32021, -32601, -32602), a task that starts in its handler
//! after an input round, and isolation from the 2025-11-25 era.

use std::time::Duration;

use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::{ElicitRequestParams, ErrorObject, JsonObject, Tool, ToolExecution};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{TestClient, connect, text_of};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

#[derive(Deserialize, JsonSchema)]
struct Wait {
    /// Milliseconds to work.
    #[serde(default)]
    ms: u64,
}

fn with_support(name: &str, support: &str) -> Tool {
    let mut tool = Tool::new(name, JsonObject::new()).with_description(support);
    tool.execution = Some(ToolExecution {
        task_support: Some(support.to_owned()),
    });
    tool
}

fn question(field: &str) -> ElicitRequestParams {
    let schema = json!({"type": "object", "properties": {field: {"type": "string"}}});
    let Value::Object(schema) = schema else {
        unreachable!("an object")
    };
    ElicitRequestParams::form(format!("{field}?"), schema)
}

fn field(answer: &barrel_mcp::types::ElicitResult, name: &str) -> String {
    answer
        .content
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn server() -> Server {
    Server::builder()
        .name("task-extension", "1.0.0")
        .tool_with(with_support("slow", "optional"), |ctx: Ctx, args: Wait| async move {
            ctx.progress(1.0, Some(2.0), Some("halfway")).await?;
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            Ok(format!("worked {} ms", args.ms))
        })
        .tool_with(with_support("must", "required"), |_: Ctx, _: Wait| async move {
            Ok("done".to_owned())
        })
        .tool_with(with_support("fails", "optional"), |_: Ctx, _: Wait| async move {
            Err::<String, _>(barrel_mcp::Error::tool("it went wrong"))
        })
        .tool_with(with_support("breaks", "optional"), |_: Ctx, _: Wait| async move {
            Err::<String, _>(barrel_mcp::Error::Rpc(ErrorObject::internal("broken")))
        })
        .tool_with(with_support("asks", "optional"), |ctx: Ctx, _: Wait| async move {
            let (first, second) =
                tokio::join!(ctx.elicit(question("first")), ctx.elicit(question("second")));
            let (first, second) = (first?, second?);
            Ok(format!(
                "{} {}",
                field(&first, "first"),
                field(&second, "second")
            ))
        })
        .tool_with(with_support("later", "required"), |ctx: Ctx, _: Wait| async move {
            let name = ctx.input_key("name").elicit(question("name")).await?;
            assert!(ctx.start_task().await?, "the call becomes a task");
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(format!("hello {}", field(&name, "name")))
        })
        .task_starts_in_handler("later")
        .tool("plain", "Takes no tasks", |_: Ctx, _: Wait| async move {
            Ok("plain".to_owned())
        })
        .build()
        .expect("server")
}

fn with_extension() -> Value {
    json!({ "elicitation": {}, "extensions": { EXTENSION: {} } })
}

fn without_extension() -> Value {
    json!({ "elicitation": {} })
}

async fn call(client: &TestClient, tool: &str, arguments: Value) -> Value {
    client
        .stateless(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            with_extension(),
        )
        .await
        .expect("tools/call")
}

async fn get(client: &TestClient, id: &str) -> Result<Value, ErrorObject> {
    client
        .stateless("tasks/get", json!({ "taskId": id }), with_extension())
        .await
}

/// Polls until the task is terminal (or has `status`).
async fn until(client: &TestClient, id: &str, status: &str) -> Value {
    for _ in 0..500 {
        let task = get(client, id).await.expect("tasks/get");
        let now = task["status"].as_str().unwrap_or_default().to_owned();
        if now == status || ["completed", "failed", "cancelled"].contains(&now.as_str()) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never reached {status}");
}

#[tokio::test]
async fn the_extension_is_advertised_instead_of_the_core_tasks() {
    let client = connect(&server());
    let discovered = client
        .stateless("server/discover", json!({}), json!({}))
        .await
        .expect("discover");
    assert_eq!(
        discovered["capabilities"]["extensions"][EXTENSION],
        json!({})
    );
    assert!(discovered["capabilities"].get("tasks").is_none());
    let listed = client
        .stateless("tools/list", json!({}), with_extension())
        .await
        .expect("list");
    assert!(listed["tools"][0].get("execution").is_none(), "{listed}");
}

#[tokio::test]
async fn a_task_is_created_flat_resolves_at_once_and_inlines_its_result() {
    let client = connect(&server());
    let created = call(&client, "slow", json!({"ms": 50})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("task").is_none() && created.get("content").is_none());
    assert!(created.get("ttl").is_none() && created.get("pollInterval").is_none());
    assert!(created["ttlMs"].as_u64().is_some_and(|ms| ms > 0));
    assert!(created["pollIntervalMs"].as_u64().is_some_and(|ms| ms > 0));
    assert!(created["createdAt"].as_str().is_some());
    let id = created["taskId"].as_str().expect("taskId");
    // Durable creation: the very next request finds it.
    let first = get(&client, id).await.expect("get at once");
    assert_eq!(first["taskId"], id);
    assert_eq!(first["resultType"], "complete");
    let done = until(&client, id, "completed").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["statusMessage"], "halfway",
        "progress became the status"
    );
    assert_eq!(text_of(&done["result"]), "worked 50 ms");
    assert!(
        done["result"]
            .pointer("/_meta/io.modelcontextprotocol~1related-task")
            .is_none()
    );
    assert!(done.get("error").is_none() && done.get("requestState").is_none());
}

#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let client = connect(&server());
    let created = call(&client, "fails", json!({})).await;
    let done = until(&client, created["taskId"].as_str().expect("id"), "").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
    let created = call(&client, "breaks", json!({})).await;
    let done = until(&client, created["taskId"].as_str().expect("id"), "").await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"]["code"], -32603);
    assert!(done.get("result").is_none());
}

#[tokio::test]
async fn without_the_extension_calls_are_plain_and_required_tools_refuse() {
    let client = connect(&server());
    let plain = client
        .stateless(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 1}}),
            without_extension(),
        )
        .await
        .expect("plain call");
    assert_eq!(plain["resultType"], "complete");
    assert_eq!(text_of(&plain), "worked 1 ms");
    let refused = client
        .stateless(
            "tools/call",
            json!({"name": "must", "arguments": {}}),
            without_extension(),
        )
        .await
        .expect_err("needs the extension");
    assert_eq!(refused.code.0, -32021);
    assert_eq!(
        refused.data.expect("data")["requiredCapabilities"]["extensions"][EXTENSION],
        json!({})
    );
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let refused = client
            .stateless(method, json!({"taskId": "x"}), without_extension())
            .await
            .expect_err(method);
        assert_eq!(refused.code.0, -32021, "{method}");
    }
    // A legacy `params.task` on a tool that takes none is ignored.
    let legacy = client
        .stateless(
            "tools/call",
            json!({"name": "plain", "arguments": {}, "task": {"ttl": 1000}}),
            with_extension(),
        )
        .await
        .expect("legacy hint ignored");
    assert_eq!(legacy["resultType"], "complete");
    assert_eq!(text_of(&legacy), "plain");
}

#[tokio::test]
async fn removed_methods_and_unknown_tasks() {
    let client = connect(&server());
    for method in ["tasks/result", "tasks/list"] {
        let refused = client
            .stateless(method, json!({"taskId": "x"}), with_extension())
            .await
            .expect_err(method);
        assert_eq!(refused.code.0, -32601, "{method}");
    }
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let refused = client
            .stateless(method, json!({"taskId": "nope"}), with_extension())
            .await
            .expect_err(method);
        assert_eq!(refused.code.0, -32602, "{method}");
    }
}

#[tokio::test]
async fn cancel_acks_stop_the_work_and_repeat() {
    let client = connect(&server());
    let created = call(&client, "slow", json!({"ms": 60_000})).await;
    let id = created["taskId"].as_str().expect("id");
    for _ in 0..2 {
        let ack = client
            .stateless("tasks/cancel", json!({"taskId": id}), with_extension())
            .await
            .expect("cancel ack");
        assert_eq!(ack["resultType"], "complete");
        for key in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(key).is_none(), "{key} in {ack}");
        }
    }
    let task = get(&client, id).await.expect("get");
    assert_eq!(task["status"], "cancelled");
    assert!(task.get("result").is_none());
}

#[tokio::test]
async fn questions_park_the_task_until_every_answer_arrives() {
    let client = connect(&server());
    let created = call(&client, "asks", json!({})).await;
    let id = created["taskId"].as_str().expect("id");
    let mut parked = until(&client, id, "input_required").await;
    for _ in 0..100 {
        if parked["inputRequests"].as_object().map_or(0, |m| m.len()) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        parked = get(&client, id).await.expect("get");
    }
    let keys: Vec<String> = parked["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{parked}");
    assert_eq!(
        parked["inputRequests"][&keys[0]]["method"],
        "elicitation/create"
    );
    let answer =
        |text: &str| json!({"action": "accept", "content": {"first": text, "second": text}});
    let ack = client
        .stateless(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {keys[0].clone(): answer("a"), "unknown": {}}}),
            with_extension(),
        )
        .await
        .expect("update ack");
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none());
    let half = get(&client, id).await.expect("get");
    assert_eq!(half["status"], "input_required");
    let left: Vec<&String> = half["inputRequests"]
        .as_object()
        .expect("one left")
        .keys()
        .collect();
    assert_eq!(left, vec![&keys[1]]);
    client
        .stateless(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {keys[1].clone(): answer("b")}}),
            with_extension(),
        )
        .await
        .expect("second ack");
    let done = until(&client, id, "completed").await;
    assert_eq!(done["status"], "completed");
    let text = text_of(&done["result"]);
    assert!(text == "a b" || text == "b a", "{text}");
}

#[tokio::test]
async fn a_task_can_start_in_its_handler_after_an_input_round() {
    let client = connect(&server());
    let round = call(&client, "later", json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert!(round.get("taskId").is_none());
    let state = round["requestState"].clone();
    let created = client
        .stateless(
            "tools/call",
            json!({
                "name": "later", "arguments": {},
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": state,
            }),
            with_extension(),
        )
        .await
        .expect("second round");
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let done = until(
        &client,
        created["taskId"].as_str().expect("id"),
        "completed",
    )
    .await;
    assert_eq!(text_of(&done["result"]), "hello Ada");
}

#[tokio::test]
async fn a_task_lives_only_in_its_era() {
    let server = server();
    let modern = connect(&server);
    let created = call(&modern, "slow", json!({"ms": 10})).await;
    let id = created["taskId"].as_str().expect("id");
    let old = connect(&server);
    old.initialize("2025-11-25").await;
    let unknown = old
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect_err("not in 2025-11-25");
    assert_eq!(unknown.code.0, -32602);
    let old_task = old
        .request(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 10}, "task": {"ttl": 60_000}}),
        )
        .await
        .expect("a 2025 task");
    let old_id = old_task["task"]["taskId"].as_str().expect("id");
    let unknown = get(&modern, old_id).await.expect_err("not in 2026-07-28");
    assert_eq!(unknown.code.0, -32602);
}

#[tokio::test]
async fn oversized_results_fail_and_expired_tasks_are_purged() {
    use std::sync::Arc;

    use barrel_mcp::server::ServerConfig;
    use barrel_mcp::task::{MemoryTaskStore, TaskLimits};

    let limits = TaskLimits {
        max_result_bytes: 64,
        default_ttl: Duration::from_millis(300),
        min_ttl: Duration::from_millis(100),
        purge_interval: Duration::from_millis(20),
        ..TaskLimits::default()
    };
    let store = Arc::new(MemoryTaskStore::new(limits.clone()));
    let server = Server::builder()
        .name("limits", "1.0.0")
        .config(ServerConfig {
            task_limits: limits,
            ..ServerConfig::default()
        })
        .task_store(Arc::clone(&store))
        .tool_with(
            with_support("big", "optional"),
            |_: Ctx, _: Wait| async move { Ok("x".repeat(1_000)) },
        )
        .tool_with(
            with_support("small", "optional"),
            |_: Ctx, _: Wait| async move { Ok("ok".to_owned()) },
        )
        .build()
        .expect("server");
    let client = connect(&server);
    let big = call(&client, "big", json!({})).await;
    let done = until(&client, big["taskId"].as_str().expect("id"), "").await;
    assert_eq!(done["status"], "failed");
    assert!(
        done["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("too large")),
        "{done}"
    );
    let small = call(&client, "small", json!({})).await;
    until(&client, small["taskId"].as_str().expect("id"), "").await;
    assert_eq!(store.len(), 2);
    // Past the TTL, the periodic purge forgets both without anyone asking for them.
    for _ in 0..200 {
        if store.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(store.is_empty(), "{} tasks left", store.len());
}

#[tokio::test]
async fn anonymous_callers_do_not_share_one_per_owner_cap() {
    let client = connect(&server());
    let per_owner = barrel_mcp::task::TaskLimits::default().max_per_owner;
    for _ in 0..per_owner + 8 {
        let created = call(&client, "slow", json!({"ms": 0})).await;
        assert_eq!(created["resultType"], "task", "{created}");
    }
}

#[tokio::test]
async fn a_question_given_up_leaves_the_task_and_keys_are_never_reused() {
    let server = Server::builder()
        .name("withdraw", "1.0.0")
        .tool_with(
            with_support("patient", "optional"),
            |ctx: Ctx, _: Wait| async move {
                // Asks, gives up after a while, and works on without the answer.
                let waited = tokio::time::timeout(
                    Duration::from_millis(150),
                    ctx.input_key("k").elicit(question("k")),
                )
                .await;
                assert!(waited.is_err(), "no one answered");
                let again = ctx.input_key("k").elicit(question("k")).await;
                let refused = again.is_err_and(|e| e.to_string().contains("already asked"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(format!("refused again: {refused}"))
            },
        )
        .build()
        .expect("server");
    let client = connect(&server);
    let created = call(&client, "patient", json!({})).await;
    let id = created["taskId"].as_str().expect("id");
    let parked = until(&client, id, "input_required").await;
    assert!(parked["inputRequests"].get("k").is_some(), "{parked}");
    // Given up: the question is withdrawn and the task works on.
    let mut now = parked;
    for _ in 0..100 {
        if now["status"] != "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        now = get(&client, id).await.expect("get");
    }
    assert_eq!(now["status"], "working", "{now}");
    assert!(now.get("inputRequests").is_none());
    let done = until(&client, id, "completed").await;
    assert_eq!(text_of(&done["result"]), "refused again: true");
}

#[tokio::test]
async fn a_task_past_its_ttl_stops_working() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use barrel_mcp::server::ServerConfig;
    use barrel_mcp::task::TaskLimits;

    let finished = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let server = Server::builder()
        .name("ttl", "1.0.0")
        .config(ServerConfig {
            task_limits: TaskLimits {
                default_ttl: Duration::from_millis(150),
                min_ttl: Duration::from_millis(100),
                ..TaskLimits::default()
            },
            ..ServerConfig::default()
        })
        .tool_with(
            with_support("endless", "optional"),
            move |_: Ctx, _: Wait| {
                let flag = Arc::clone(&flag);
                async move {
                    tokio::time::sleep(Duration::from_millis(600)).await;
                    flag.store(true, Ordering::SeqCst);
                    Ok("too late".to_owned())
                }
            },
        )
        .build()
        .expect("server");
    let client = connect(&server);
    let created = call(&client, "endless", json!({})).await;
    let id = created["taskId"].as_str().expect("id").to_owned();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        !finished.load(Ordering::SeqCst),
        "the work was stopped at the TTL"
    );
    assert_eq!(get(&client, &id).await.expect_err("expired").code.0, -32602);
}

#[tokio::test]
async fn a_listen_stream_brings_each_change_of_the_watched_tasks() {
    use barrel_mcp::peer::RequestOptions;
    use tokio_util::sync::CancellationToken;

    let client = connect(&server());
    let created = call(&client, "asks", json!({})).await;
    let id = created["taskId"].as_str().expect("id").to_owned();
    let cancel = CancellationToken::new();
    let options = RequestOptions {
        cancel: Some(cancel.clone()),
        timeout: Some(Duration::from_secs(30)),
        ..RequestOptions::default()
    };
    let filter = json!({ "notifications": { "taskIds": [id, "someone-elses"] } });
    let params = super::envelope(filter, with_extension());
    let peer = client.peer.clone();
    let listening = tokio::spawn(async move {
        peer.request("subscriptions/listen", Some(params), options)
            .await
    });
    let ack = client.notification().await;
    assert_eq!(ack.method, "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack.params.expect("params")["notifications"]["taskIds"],
        json!([id]),
        "only the tasks the caller can see"
    );
    // The questions arrive as a change; answering them ends the task, another change.
    let mut questions = Vec::new();
    let done = loop {
        let note = client.notification().await;
        assert_eq!(note.method, "notifications/tasks");
        let task = note.params.expect("a task");
        assert_eq!(task["taskId"], json!(id));
        assert!(task["_meta"]["io.modelcontextprotocol/subscriptionId"].is_i64());
        if task["status"] == "completed" {
            break task;
        }
        let asked: Vec<String> = task["inputRequests"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in asked {
            if questions.contains(&key) {
                continue;
            }
            questions.push(key.clone());
            let answer = json!({"action": "accept", "content": {"first": "a", "second": "b"}});
            client
                .stateless(
                    "tasks/update",
                    json!({"taskId": id, "inputResponses": {key: answer}}),
                    with_extension(),
                )
                .await
                .expect("update");
        }
    };
    assert_eq!(questions.len(), 2);
    assert_eq!(text_of(&done["result"]), "a b");
    cancel.cancel();
    let _ = listening.await;
    // Without the extension, a listen for task ids is refused.
    let refused = client
        .stateless(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": ["x"] } }),
            without_extension(),
        )
        .await
        .expect_err("needs the extension");
    assert_eq!(refused.code.0, -32021);
}
