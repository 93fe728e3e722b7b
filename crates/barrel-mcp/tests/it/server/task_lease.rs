//! A task outlives the node that runs it only as a failure: two `Server`s ("nodes") share one
//! task store; node A runs the task's work on a Tokio runtime of its own, which the test shuts
//! down (the process dying mid-task) or starves (a stall longer than the lease), and the
//! requestor polls through node B. Each check runs on a `MemoryTaskStore` shared by both nodes
//! and, with feature `redis`, on a `RedisTaskStore`. The lease is 300 ms.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use barrel_mcp::auth::AuthInfo;
use barrel_mcp::peer::{self, PeerConfig};
use barrel_mcp::server::{Ctx, Server, ServerConfig};
use barrel_mcp::task::{MemoryTaskStore, RUNNER_STOPPED, TaskLimits, TaskStore};
use barrel_mcp::transport::{Caller, Frame, MemoryReader, MessageReader, Transport, memory};
use barrel_mcp::types::{JsonObject, Tool, ToolExecution};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use super::{Answers, TestClient};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";
const LEASE: Duration = Duration::from_millis(300);
const POLL: Duration = Duration::from_millis(100);
/// Room for scheduling on a loaded machine, on top of lease + poll interval.
const SLACK: Duration = Duration::from_millis(700);

#[derive(Deserialize, JsonSchema)]
struct Wait {
    /// Milliseconds to work.
    ms: u64,
    /// Named in [`STOPPED`] if the work is stopped before it ends.
    #[serde(default)]
    tag: String,
}

fn limits() -> TaskLimits {
    TaskLimits {
        lease: LEASE,
        poll_interval: POLL,
        ..TaskLimits::default()
    }
}

fn with_tasks(name: &str) -> Tool {
    let mut tool = Tool::new(name, JsonObject::new());
    tool.execution = Some(ToolExecution {
        task_support: Some("optional".to_owned()),
    });
    tool
}

/// The tags of the `sleep` handlers dropped before they finished (their work stopped).
static STOPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Puts its tag in [`STOPPED`] when dropped before it is disarmed (taken).
struct Stopped(Option<String>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(tag) = self.0.take() {
            STOPPED.lock().expect("stopped").push(tag);
        }
    }
}

fn stopped(tag: &str) -> bool {
    STOPPED.lock().expect("stopped").iter().any(|t| t == tag)
}

/// A node: a server with a tool that works `ms` milliseconds (`sleep`), and one that blocks
/// its thread as long (`stall`: the runtime can run nothing else meanwhile).
fn node(store: &Arc<dyn TaskStore>) -> Server {
    Server::builder()
        .name("node", "1.0.0")
        .config(ServerConfig {
            task_limits: limits(),
            ..ServerConfig::default()
        })
        .task_store(Arc::clone(store))
        .tool_with(with_tasks("sleep"), |_: Ctx, args: Wait| async move {
            let mut stopped = Stopped(Some(args.tag));
            tokio::time::sleep(Duration::from_millis(args.ms)).await;
            stopped.0 = None;
            Ok(format!("worked {} ms", args.ms))
        })
        .tool_with(with_tasks("stall"), |_: Ctx, args: Wait| async move {
            std::thread::sleep(Duration::from_millis(args.ms));
            Ok(format!("stalled {} ms", args.ms))
        })
        .build()
        .expect("server")
}

/// A runtime of its own for node A, with one worker thread.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A reader that says every message comes from the authenticated `alice`, or from no one.
struct Reader {
    inner: MemoryReader,
    alice: bool,
}

impl MessageReader for Reader {
    async fn recv(&mut self) -> Result<Option<Frame>, barrel_mcp::Error> {
        self.inner.recv().await
    }

    fn caller(&self) -> Option<Arc<Caller>> {
        self.alice.then(|| {
            Arc::new(Caller::authenticated(Some(Arc::new(AuthInfo::new(
                "alice",
            )))))
        })
    }
}

/// Connects a test client to `server`, served on `runtime` (none: the test's own; the client
/// always stays on the test's), as `alice` or as no one.
fn connect_on(server: &Server, runtime: Option<&Runtime>, alice: bool) -> TestClient {
    let (server_side, client_side) = memory();
    let (inner, writer) = server_side.split();
    let server = server.clone();
    let serving = async move { server.serve((Reader { inner, alice }, writer)).await };
    match runtime {
        Some(runtime) => drop(runtime.spawn(serving)),
        None => drop(tokio::spawn(serving)),
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let answers = Answers {
        notifications: tx,
        asked: Arc::clone(&asked),
    };
    let (peer, _task) = peer::serve(client_side, Arc::new(answers), PeerConfig::default());
    TestClient {
        peer,
        notifications: tokio::sync::Mutex::new(rx),
        asked,
    }
}

fn with_extension() -> Value {
    json!({ "extensions": { EXTENSION: {} } })
}

/// Starts `tool` with `arguments` as a 2026-07-28 task; its id.
async fn start(client: &TestClient, tool: &str, arguments: Value) -> String {
    let created = client
        .stateless(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            with_extension(),
        )
        .await
        .expect("tools/call");
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("an id").to_owned()
}

async fn get(client: &TestClient, id: &str) -> Value {
    client
        .stateless("tasks/get", json!({ "taskId": id }), with_extension())
        .await
        .expect("tasks/get")
}

/// Polls `tasks/get` every poll interval until the task is finished; the finished task.
async fn until_finished(client: &TestClient, id: &str) -> Value {
    loop {
        let task = get(client, id).await;
        if ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or("")) {
            return task;
        }
        assert_eq!(task["status"], "working", "{task}");
        tokio::time::sleep(POLL).await;
    }
}

fn assert_failed_for_its_runner(task: &Value) {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], -32603, "{task}");
    assert_eq!(task["error"]["message"], RUNNER_STOPPED, "{task}");
    assert_eq!(task["statusMessage"], RUNNER_STOPPED, "{task}");
}

/// Node A dies (its runtime shut down: the runner, its renewals and the work stop mid-task):
/// polling through node B shows the task `failed` with -32603 within lease + poll interval.
async fn a_task_whose_node_dies_fails_on_another_node(store: Arc<dyn TaskStore>) {
    let a_runtime = runtime();
    let (a, b) = (node(&store), node(&store));
    let (on_a, on_b) = (
        connect_on(&a, Some(&a_runtime), true),
        connect_on(&b, None, true),
    );
    let id = start(&on_a, "sleep", json!({"ms": 60_000})).await;
    // While A lives, B's reads leave its task alone.
    tokio::time::sleep(2 * LEASE).await;
    assert_eq!(get(&on_b, &id).await["status"], "working");
    a_runtime.shutdown_background();
    let died = Instant::now();
    let task = until_finished(&on_b, &id).await;
    let seen = died.elapsed();
    assert_failed_for_its_runner(&task);
    assert!(seen <= LEASE + POLL + SLACK, "seen failed after {seen:?}");
    assert_eq!(b.lost_task_leases(), 0, "B ran nothing");
}

/// The same in 2025-11-25, for one principal on both nodes: B's `tasks/result`, waiting on a
/// task whose node died, answers with the task's error.
async fn a_result_awaited_on_another_node_is_the_runner_error(store: Arc<dyn TaskStore>) {
    let a_runtime = runtime();
    let (a, b) = (node(&store), node(&store));
    let (on_a, on_b) = (
        connect_on(&a, Some(&a_runtime), true),
        connect_on(&b, None, true),
    );
    on_a.initialize("2025-11-25").await;
    on_b.initialize("2025-11-25").await;
    let created = on_a
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 60_000}, "task": {"ttl": 60_000}}),
        )
        .await
        .expect("a task");
    let id = created["task"]["taskId"]
        .as_str()
        .expect("an id")
        .to_owned();
    let polled = on_b
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("B sees alice's task");
    assert_eq!(polled["status"], "working");
    a_runtime.shutdown_background();
    let died = Instant::now();
    let error = on_b
        .request("tasks/result", json!({"taskId": id}))
        .await
        .expect_err("the runner's error");
    assert_eq!(error.code.0, -32603);
    assert_eq!(error.message, RUNNER_STOPPED);
    assert!(
        died.elapsed() <= LEASE + POLL + SLACK,
        "{:?}",
        died.elapsed()
    );
    let task = on_b
        .request("tasks/get", json!({"taskId": id}))
        .await
        .expect("get");
    assert_eq!(task["status"], "failed");
    let listed = on_b.request("tasks/list", json!({})).await.expect("list");
    assert_eq!(listed["tasks"][0]["status"], "failed");
}

/// A task working for more than three leases on a live node, polled through the other node
/// all along, completes with its result: the renewals keep it.
async fn a_long_task_on_a_live_node_completes(store: Arc<dyn TaskStore>) {
    let (a, b) = (node(&store), node(&store));
    let (on_a, on_b) = (connect_on(&a, None, true), connect_on(&b, None, true));
    let work = 4 * LEASE;
    let ms = u64::try_from(work.as_millis()).expect("small");
    let id = start(&on_a, "sleep", json!({ "ms": ms })).await;
    let task = until_finished(&on_b, &id).await;
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(
        task["result"]["content"][0]["text"],
        format!("worked {ms} ms")
    );
    assert_eq!(a.lost_task_leases(), 0);
}

/// Node A stalls (its one thread blocked) for longer than the lease: B fails the task, and when
/// A wakes, its late result is discarded and counted; the task stays failed.
async fn a_stalled_node_loses_its_task(store: Arc<dyn TaskStore>) {
    let a_runtime = runtime();
    let (a, b) = (node(&store), node(&store));
    let (on_a, on_b) = (
        connect_on(&a, Some(&a_runtime), true),
        connect_on(&b, None, true),
    );
    let stall = 4 * LEASE;
    let ms = u64::try_from(stall.as_millis()).expect("small");
    let id = start(&on_a, "stall", json!({ "ms": ms })).await;
    let stalled = Instant::now();
    let task = until_finished(&on_b, &id).await;
    assert_failed_for_its_runner(&task);
    assert!(stalled.elapsed() < stall, "failed while A stalled");
    // A wakes, finds its task failed, and drops the result.
    let deadline = Instant::now() + stall + SLACK + LEASE;
    while a.lost_task_leases() == 0 {
        assert!(Instant::now() < deadline, "A never noticed");
        tokio::time::sleep(POLL).await;
    }
    assert_eq!(a.lost_task_leases(), 1);
    assert_failed_for_its_runner(&get(&on_b, &id).await);
    a_runtime.shutdown_background();
}

/// A task cancelled through node B while its work runs on node A: A learns it at its next
/// renewal and stops the work (within a lease), though B cannot reach A's work.
async fn a_cancel_on_another_node_stops_the_work(store: Arc<dyn TaskStore>) {
    let (a, b) = (node(&store), node(&store));
    let (on_a, on_b) = (connect_on(&a, None, true), connect_on(&b, None, true));
    let tag = barrel_mcp::task::new_task_id().expect("randomness");
    let id = start(&on_a, "sleep", json!({"ms": 60_000, "tag": tag})).await;
    let ack = on_b
        .stateless("tasks/cancel", json!({ "taskId": id }), with_extension())
        .await
        .expect("cancel");
    assert_eq!(ack["resultType"], "complete");
    let cancelled = Instant::now();
    assert_eq!(get(&on_a, &id).await["status"], "cancelled");
    while !stopped(&tag) {
        assert!(cancelled.elapsed() <= LEASE + SLACK, "A's work still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(get(&on_b, &id).await["status"], "cancelled");
    assert_eq!(a.lost_task_leases(), 0, "a cancel is no lost lease");
}

fn memory_store() -> Arc<dyn TaskStore> {
    Arc::new(MemoryTaskStore::new(limits()))
}

macro_rules! on_every_store {
    ($($check:ident),* $(,)?) => {
        mod on_memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    crate::support::within(super::$check(super::memory_store())).await;
                }
            )*
        }
        #[cfg(feature = "redis")]
        mod on_redis {
            use std::sync::Arc;

            use barrel_mcp::task::{RedisTaskStore, TaskStore};

            use crate::support::redis::{shared, unique_prefix};

            async fn redis_store() -> Arc<dyn TaskStore> {
                let store = RedisTaskStore::connect(&shared().url(), super::limits())
                    .await
                    .expect("the test server is reachable")
                    .with_prefix(unique_prefix("task-lease"));
                Arc::new(store)
            }

            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    crate::support::within(async {
                        super::$check(redis_store().await).await;
                    })
                    .await;
                }
            )*
        }
    };
}

on_every_store!(
    a_task_whose_node_dies_fails_on_another_node,
    a_result_awaited_on_another_node_is_the_runner_error,
    a_long_task_on_a_live_node_completes,
    a_stalled_node_loses_its_task,
    a_cancel_on_another_node_stops_the_work,
);

/// A plain connection (no principal) sees the same on one node: a 2026 task is anyone's who
/// holds its id, so a client of B polls A's task without any identity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_task_is_failed_for_any_holder_of_its_id() {
    crate::support::within(async {
        let store = memory_store();
        let a_runtime = runtime();
        let (a, b) = (node(&store), node(&store));
        let on_a = connect_on(&a, Some(&a_runtime), false);
        let on_b = connect_on(&b, None, false);
        let id = start(&on_a, "sleep", json!({"ms": 60_000})).await;
        a_runtime.shutdown_background();
        assert_failed_for_its_runner(&until_finished(&on_b, &id).await);
    })
    .await;
}
