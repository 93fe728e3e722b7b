//! A 2026-07-28 task (the `io.modelcontextprotocol/tasks` extension) whose work runs on node A
//! and whose questions are answered on node B: the two servers share one task store, and the
//! answer reaches the handler waiting on A, through the news of the bus or, when that news is
//! lost, through the handler's own look in the store.

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp::http::{HttpConfig, SharedSessions};
use barrel_mcp::server::{Ctx, Server, ServerConfig};
use barrel_mcp::store::{Bus, LocalHub};
use barrel_mcp::task::{MemoryTaskStore, TaskLimits, TaskStore};
use barrel_mcp::types::{ElicitRequestParams, JsonObject, Tool, ToolExecution};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{TestStore, post_json};
use crate::http::{Client, TestServer, body_json};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A server whose tool `asks` is a task asking two questions at once; its task lease is
/// `lease` (a waiting handler looks in the store every third of it).
fn server(tasks: &Arc<dyn TaskStore>, lease: Duration) -> Server {
    let mut tool = Tool::new("asks", JsonObject::new());
    tool.execution = Some(ToolExecution {
        task_support: Some("required".to_owned()),
    });
    let mut config = ServerConfig::default();
    config.task_limits.lease = lease;
    Server::builder()
        .name("tasks-on-two-nodes", "1.0.0")
        .config(config)
        .task_store(Arc::clone(tasks))
        .tool_with(tool, |ctx: Ctx, _: JsonObject| async move {
            let (first, second) = tokio::join!(
                ctx.elicit(question("first")),
                ctx.elicit(question("second"))
            );
            let field = |answer: barrel_mcp::types::ElicitResult, name: &str| {
                answer
                    .content
                    .and_then(|c| c.get(name).and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default()
            };
            Ok(format!(
                "{} {}",
                field(first?, "first"),
                field(second?, "second")
            ))
        })
        .build()
        .expect("server")
}

fn question(field: &str) -> ElicitRequestParams {
    let schema = json!({"type": "object", "properties": {field: {"type": "string"}}});
    let Value::Object(schema) = schema else {
        unreachable!("an object")
    };
    ElicitRequestParams::form(format!("{field}?"), schema)
}

/// A 2026-07-28 request with the tasks extension; the response message.
async fn call(client: &Client, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}, "extensions": { EXTENSION: {} }
        },
    });
    // `Mcp-Name`: the tool's name, or the task id.
    let name = [&params["name"], &params["taskId"]]
        .into_iter()
        .find_map(Value::as_str)
        .map(str::to_owned);
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = &name {
        headers.push(("mcp-name", name));
    }
    let response = post_json(client, &message, &headers).await;
    assert_eq!(response.status(), http::StatusCode::OK, "{method}");
    body_json(response).await
}

/// Polls `tasks/get` on `client` until `done` holds of the task, for at most `within`.
async fn until(
    client: &Client,
    id: &str,
    within: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let task = call(client, "tasks/get", json!({"taskId": id})).await["result"].clone();
        if done(&task) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "the task never got there: {task}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn answer(text: &str) -> Value {
    json!({"action": "accept", "content": {"first": text, "second": text}})
}

/// Starts the task on A, answers both questions on B one at a time (the first along with a key
/// the task never asked), and returns the finished task as B reads it.
async fn answered_on_b(a: &Client, b: &Client, within: Duration) -> Value {
    let created = call(a, "tools/call", json!({"name": "asks", "arguments": {}})).await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let asked = until(b, &id, within, |task| {
        task["inputRequests"]
            .as_object()
            .is_some_and(|r| r.len() == 2)
    })
    .await;
    let keys: Vec<String> = asked["inputRequests"]
        .as_object()
        .expect("questions")
        .keys()
        .cloned()
        .collect();
    let responses = json!({keys[0].clone(): answer("a"), "never-asked": answer("x")});
    let ack = call(
        b,
        "tasks/update",
        json!({"taskId": id, "inputResponses": responses}),
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let half = call(b, "tasks/get", json!({"taskId": id})).await["result"].clone();
    let left: Vec<&String> = half["inputRequests"]
        .as_object()
        .expect("one question left")
        .keys()
        .collect();
    assert_eq!(left, vec![&keys[1]], "{half}");
    assert_eq!(half["status"], "input_required");
    let responses = json!({keys[1].clone(): answer("b")});
    call(
        b,
        "tasks/update",
        json!({"taskId": id, "inputResponses": responses}),
    )
    .await;
    until(b, &id, within, |task| {
        task["status"] != "input_required" && task["status"] != "working"
    })
    .await
}

fn text(task: &Value) -> String {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn answers_given_on_b_reach_the_handler_on_a_through_the_bus() {
    let tasks: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new(TaskLimits::default()));
    // A lease of a minute: the handler's own look in the store comes only after 20 s, so an
    // answer within the bound below came through the bus.
    let lease = Duration::from_secs(60);
    let hub = LocalHub::new();
    let sessions = Arc::new(TestStore::default());
    let config = |bus: Arc<dyn Bus>| HttpConfig {
        shared_sessions: Some(SharedSessions::new(sessions.clone(), bus)),
        ..HttpConfig::default()
    };
    let (bus_a, bus_b) = (Arc::new(hub.join()), Arc::new(hub.join()));
    let mut a = TestServer::start_with(server(&tasks, lease), config(bus_a)).await;
    let mut b = TestServer::start_with(server(&tasks, lease), config(bus_b)).await;
    let done = answered_on_b(&a.client(), &b.client(), Duration::from_secs(5)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done), "a b");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_answer_whose_news_is_lost_is_found_in_the_store() {
    let tasks: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new(TaskLimits::default()));
    // B shares the task store but no bus: nothing tells A, whose handler looks in the store
    // every third of its lease.
    let lease = Duration::from_millis(300);
    let sessions = Arc::new(TestStore::default());
    let on_bus = HttpConfig {
        shared_sessions: Some(SharedSessions::new(
            sessions,
            Arc::new(LocalHub::new().join()),
        )),
        ..HttpConfig::default()
    };
    let mut a = TestServer::start_with(server(&tasks, lease), on_bus).await;
    let mut b = TestServer::start_with(server(&tasks, lease), HttpConfig::default()).await;
    let done = answered_on_b(&a.client(), &b.client(), Duration::from_secs(5)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done), "a b");
    a.stop().await;
    b.stop().await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn over_redis_answers_given_on_b_reach_the_handler_on_a() {
    use barrel_mcp::store::{BusOptions, RedisBus, RedisSessionStore};
    use barrel_mcp::task::RedisTaskStore;

    use crate::support::redis::{connect, shared, unique_prefix};

    let prefix = unique_prefix("http-nodes-tasks");
    let lease = Duration::from_secs(60);
    let mut nodes = Vec::new();
    for _ in 0..2 {
        let redis = connect(&shared().url(), &prefix).await;
        let tasks: Arc<dyn TaskStore> = Arc::new(RedisTaskStore::on(&redis, TaskLimits::default()));
        let bus = RedisBus::start(redis.clone(), BusOptions::default())
            .await
            .expect("the bus starts");
        let config = HttpConfig {
            shared_sessions: Some(SharedSessions::new(
                Arc::new(RedisSessionStore::new(redis)),
                Arc::new(bus),
            )),
            ..HttpConfig::default()
        };
        nodes.push(TestServer::start_with(server(&tasks, lease), config).await);
    }
    let done = answered_on_b(
        &nodes[0].client(),
        &nodes[1].client(),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(text(&done), "a b");
    for node in &mut nodes {
        node.stop().await;
    }
}
