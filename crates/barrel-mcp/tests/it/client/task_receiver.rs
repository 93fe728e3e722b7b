//! The client as the receiver of 2025-11-25 task-augmented sampling and elicitation: a raw
//! server peer sends `sampling/createMessage` and `elicitation/create` with `params.task`, then
//! reads the tasks with `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`; the cap,
//! unknown ids, and the requests that are served normally (task not declared, or a revision
//! without core tasks).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use barrel_mcp::Error;
use barrel_mcp::client::{Client, ClientBuilder, ClientHandler, HandlerContext};
use barrel_mcp::peer::{
    self, BoxFuture, Handler, Peer, PeerConfig, RequestContext, RequestOptions,
};
use barrel_mcp::task::TaskLimits;
use barrel_mcp::transport::memory;
use barrel_mcp::types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorObject, JsonObject, Notification, Payload,
    ProtocolVersion, Request, Role, SamplingCapability, SamplingContent,
};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use super::builder;
use crate::support::{as_payload, within};

/// What the handler reports: "started <kind> <task id>", "cancelled <kind> <task id>".
struct Reports(mpsc::UnboundedReceiver<String>);

impl Reports {
    async fn next(&mut self) -> String {
        within(self.0.recv()).await.expect("the handler reports")
    }
}

/// Samples and elicits once a permit is released; reports its start and its cancellation.
struct Gated {
    reports: mpsc::UnboundedSender<String>,
    release: Arc<Semaphore>,
    capabilities: ClientCapabilities,
}

fn samples_and_elicits() -> ClientCapabilities {
    ClientCapabilities {
        sampling: Some(SamplingCapability::default()),
        elicitation: Some(ElicitationCapability::default()),
        ..ClientCapabilities::default()
    }
}

impl Gated {
    fn new(capabilities: ClientCapabilities) -> (Arc<Self>, Reports) {
        let (reports, rx) = mpsc::unbounded_channel();
        let handler = Self {
            reports,
            release: Arc::new(Semaphore::new(0)),
            capabilities,
        };
        (Arc::new(handler), Reports(rx))
    }

    /// Reports the start, then waits for a permit (true) or the cancellation (false).
    async fn wait(&self, kind: &str, cx: &HandlerContext) -> bool {
        let task = cx.task_id.clone().unwrap_or_else(|| "none".into());
        let _ = self.reports.send(format!("started {kind} {task}"));
        tokio::select! {
            permit = self.release.acquire() => {
                if let Ok(permit) = permit {
                    permit.forget();
                }
                true
            }
            () = cx.cancel.cancelled() => {
                let _ = self.reports.send(format!("cancelled {kind} {task}"));
                false
            }
        }
    }
}

impl ClientHandler for Gated {
    fn capabilities(&self) -> ClientCapabilities {
        self.capabilities.clone()
    }

    async fn create_message(
        &self,
        params: CreateMessageParams,
        cx: HandlerContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        if !self.wait("sampling", &cx).await {
            return Err(ErrorObject::internal("cancelled"));
        }
        if params.system_prompt.as_deref() == Some("fail") {
            return Err(ErrorObject::invalid_params("no model for that"));
        }
        // Echoes whether the handler saw a `task` (it does only when the task was ignored).
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::text(format!("saw task: {}", params.task.is_some())),
            model: "test-model".into(),
            stop_reason: None,
            meta: None,
        })
    }

    async fn elicit(
        &self,
        _: ElicitRequestParams,
        cx: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        if !self.wait("elicitation", &cx).await {
            return Err(ErrorObject::internal("cancelled"));
        }
        let mut content = JsonObject::new();
        content.insert("name".into(), json!("Ada"));
        Ok(ElicitResult::accept(content))
    }
}

/// A raw server: answers `initialize` in whatever revision the client asks for, keeps the
/// client's capabilities, and passes on every notification.
struct RawServer {
    declared: Arc<Mutex<Option<Value>>>,
    notifications: mpsc::UnboundedSender<Notification>,
}

impl RawServer {
    /// The answer, as a value.
    fn answer(
        &self,
        request: Request,
        _: RequestContext,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        let declared = Arc::clone(&self.declared);
        Box::pin(async move {
            if request.method != "initialize" {
                return Err(ErrorObject::method_not_found(&request.method));
            }
            let params = request.params.unwrap_or_default();
            *declared.lock().expect("lock") = params.get("capabilities").cloned();
            Ok(json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {},
                "serverInfo": { "name": "raw", "version": "0" }
            }))
        })
    }
}

impl Handler for RawServer {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        as_payload(self.answer(request, cx))
    }

    fn on_notification(&self, notification: Notification, _: &Peer) {
        let _ = self.notifications.send(notification);
    }
}

/// One connection: the client, the raw server's peer, what the client declared, and the
/// server's notifications.
struct Connection {
    _client: Client,
    server: Peer,
    declared: Value,
    notifications: mpsc::UnboundedReceiver<Notification>,
}

impl Connection {
    async fn open(version: ProtocolVersion, builder: ClientBuilder) -> Self {
        let (a, b) = memory();
        let declared = Arc::new(Mutex::new(None));
        let (notifications, rx) = mpsc::unbounded_channel();
        let raw = RawServer {
            declared: Arc::clone(&declared),
            notifications,
        };
        let (server, _) = peer::serve(b, Arc::new(raw), PeerConfig::default());
        let client = within(builder.pin(version).connect(a))
            .await
            .expect("the client connects");
        let declared = declared.lock().expect("lock").take().unwrap_or_default();
        Self {
            _client: client,
            server,
            declared,
            notifications: rx,
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        let options = RequestOptions::default();
        within(self.server.request(method, Some(params), options)).await
    }

    async fn ok(&self, method: &str, params: Value) -> Value {
        self.request(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method} fails: {e}"))
    }

    async fn refused(&self, method: &str, params: Value) -> ErrorObject {
        match self.request(method, params).await {
            Err(Error::Rpc(error)) => error,
            other => panic!("{method} should be refused, got {other:?}"),
        }
    }

    /// Starts a task-augmented request and returns the new task's id.
    async fn start(&self, method: &str, params: Value) -> String {
        let created = self.ok(method, params).await;
        assert_eq!(created["task"]["status"], "working", "{created}");
        created["task"]["taskId"]
            .as_str()
            .expect("a task id")
            .to_owned()
    }

    async fn status(&self, id: &str) -> Value {
        self.ok("tasks/get", json!({ "taskId": id })).await["status"].clone()
    }

    /// The next `notifications/tasks/status` for task `id`, skipping any other notification.
    async fn announced(&mut self, id: &str) -> Value {
        loop {
            let notification = within(self.notifications.recv())
                .await
                .expect("the connection stays open");
            let params = notification.params.unwrap_or_default();
            if notification.method == "notifications/tasks/status" && params["taskId"] == id {
                return params;
            }
        }
    }
}

fn sampling(prompt: &str, task: Option<Value>) -> Value {
    let mut params = json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }],
        "maxTokens": 10,
        "systemPrompt": prompt
    });
    if let Some(task) = task {
        params["task"] = task;
    }
    params
}

fn elicitation(task: Value) -> Value {
    json!({
        "message": "Your name?",
        "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } },
        "task": task
    })
}

fn task_builder(handler: Arc<Gated>) -> ClientBuilder {
    builder(None).handler(handler).task_requests(true)
}

const V2025_11_25: ProtocolVersion = ProtocolVersion::V2025_11_25;

#[tokio::test]
async fn the_opt_in_declares_task_requests_for_what_the_handler_answers() {
    let (handler, _) = Gated::new(samples_and_elicits());
    let both = Connection::open(V2025_11_25, task_builder(handler)).await;
    let tasks = &both.declared["tasks"];
    assert_eq!(tasks["requests"]["sampling"]["createMessage"], json!({}));
    assert_eq!(tasks["requests"]["elicitation"]["create"], json!({}));
    assert_eq!(tasks["list"], json!({}));
    assert_eq!(tasks["cancel"], json!({}));

    let elicits_only = ClientCapabilities {
        elicitation: Some(ElicitationCapability::default()),
        ..ClientCapabilities::default()
    };
    let (handler, _) = Gated::new(elicits_only);
    let one = Connection::open(V2025_11_25, task_builder(handler)).await;
    let requests = &one.declared["tasks"]["requests"];
    assert!(requests.get("sampling").is_none(), "{requests}");
    assert_eq!(requests["elicitation"]["create"], json!({}));

    let (handler, _) = Gated::new(samples_and_elicits());
    let off = Connection::open(V2025_11_25, builder(None).handler(handler)).await;
    assert!(off.declared.get("tasks").is_none(), "{}", off.declared);
}

#[tokio::test]
async fn sampling_as_a_task_works_then_completes_with_the_related_task() {
    let (handler, mut reports) = Gated::new(samples_and_elicits());
    let mut c = Connection::open(V2025_11_25, task_builder(Arc::clone(&handler))).await;
    let created = c
        .ok(
            "sampling/createMessage",
            sampling("hello", Some(json!({ "ttl": 60_000 }))),
        )
        .await;
    let task = &created["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert!(task["pollInterval"].as_u64().is_some(), "{created}");
    assert!(task["createdAt"].as_str().is_some_and(|t| t.ends_with('Z')));
    let id = task["taskId"].as_str().expect("a task id").to_owned();
    assert_eq!(reports.next().await, format!("started sampling {id}"));
    assert_eq!(c.status(&id).await, "working");

    // tasks/result waits for the end: it cannot answer while the task works.
    let server = c.server.clone();
    let waiting = tokio::spawn({
        let id = id.clone();
        async move {
            let params = Some(json!({ "taskId": id }));
            server
                .request("tasks/result", params, RequestOptions::default())
                .await
        }
    });
    assert_eq!(c.status(&id).await, "working");
    assert!(!waiting.is_finished());

    handler.release.add_permits(1);
    let announced = c.announced(&id).await;
    assert_eq!(announced["status"], "completed");
    assert_eq!(c.status(&id).await, "completed");
    let result = within(waiting)
        .await
        .expect("the request task runs")
        .expect("tasks/result answers");
    assert_eq!(result["model"], "test-model");
    // The handler answered the request itself: it never saw the task.
    assert_eq!(result["content"]["text"], "saw task: false");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    // Read again, the same outcome.
    let again = c.ok("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(again, result);
}

#[tokio::test]
async fn elicitation_as_a_task_returns_the_answer() {
    let (handler, mut reports) = Gated::new(samples_and_elicits());
    let c = Connection::open(V2025_11_25, task_builder(Arc::clone(&handler))).await;
    let id = c
        .start("elicitation/create", elicitation(json!({ "ttl": 30_000 })))
        .await;
    assert_eq!(reports.next().await, format!("started elicitation {id}"));
    handler.release.add_permits(1);
    let result = c.ok("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(result["action"], "accept");
    assert_eq!(result["content"]["name"], "Ada");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    assert_eq!(c.status(&id).await, "completed");
}

#[tokio::test]
async fn a_handler_error_fails_the_task_and_is_its_result() {
    let (handler, _) = Gated::new(samples_and_elicits());
    let mut c = Connection::open(V2025_11_25, task_builder(Arc::clone(&handler))).await;
    let id = c
        .start("sampling/createMessage", sampling("fail", Some(json!({}))))
        .await;
    handler.release.add_permits(1);
    assert_eq!(c.announced(&id).await["status"], "failed");
    let error = c.refused("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(error.code.0, -32602);
    assert_eq!(error.message, "no model for that");
    // A task asked for without a TTL gets the default one.
    let task = c.ok("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(task["ttl"], 300_000);
}

#[tokio::test]
async fn cancelling_a_running_task_stops_its_handler_once() {
    let (handler, mut reports) = Gated::new(samples_and_elicits());
    let c = Connection::open(V2025_11_25, task_builder(handler)).await;
    let id = c
        .start("sampling/createMessage", sampling("hello", Some(json!({}))))
        .await;
    assert_eq!(reports.next().await, format!("started sampling {id}"));
    let server = c.server.clone();
    let waiting = tokio::spawn({
        let id = id.clone();
        async move {
            let params = Some(json!({ "taskId": id }));
            server
                .request("tasks/result", params, RequestOptions::default())
                .await
        }
    });

    let cancelled = c.ok("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(cancelled["taskId"], id);
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(reports.next().await, format!("cancelled sampling {id}"));
    assert_eq!(c.status(&id).await, "cancelled");
    // The waiting tasks/result ends too, with the outcome of a cancelled task.
    match within(waiting).await.expect("the request task runs") {
        Err(Error::Rpc(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("tasks/result of a cancelled task: {other:?}"),
    }

    let twice = c.refused("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(twice.code.0, -32602);
    assert_eq!(c.status(&id).await, "cancelled");
}

#[tokio::test]
async fn a_finished_task_cannot_be_cancelled() {
    let (handler, _) = Gated::new(samples_and_elicits());
    let mut c = Connection::open(V2025_11_25, task_builder(Arc::clone(&handler))).await;
    let id = c.start("elicitation/create", elicitation(json!({}))).await;
    handler.release.add_permits(1);
    assert_eq!(c.announced(&id).await["status"], "completed");
    let refused = c.refused("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(refused.code.0, -32602);
    assert_eq!(c.status(&id).await, "completed");
}

#[tokio::test]
async fn tasks_list_pages_through_this_connections_tasks_only() {
    let limits = TaskLimits {
        max_per_owner: 10,
        max_tasks: 10,
        page_size: 2,
        ..TaskLimits::default()
    };
    let (handler, _) = Gated::new(samples_and_elicits());
    let c = Connection::open(
        V2025_11_25,
        task_builder(Arc::clone(&handler)).task_limits(limits),
    )
    .await;
    let mut started = BTreeSet::new();
    started.insert(
        c.start("sampling/createMessage", sampling("a", Some(json!({}))))
            .await,
    );
    started.insert(c.start("elicitation/create", elicitation(json!({}))).await);
    started.insert(
        c.start("sampling/createMessage", sampling("b", Some(json!({}))))
            .await,
    );

    let first = c.ok("tasks/list", json!({})).await;
    let page = first["tasks"].as_array().expect("tasks");
    assert_eq!(page.len(), 2, "{first}");
    let cursor = first["nextCursor"].as_str().expect("a next page");
    let second = c.ok("tasks/list", json!({ "cursor": cursor })).await;
    let last = second["tasks"].as_array().expect("tasks");
    assert_eq!(last.len(), 1, "{second}");
    assert!(second.get("nextCursor").is_none(), "{second}");
    let listed: BTreeSet<String> = page
        .iter()
        .chain(last)
        .filter_map(|t| t["taskId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(listed, started);
    let bad = c
        .refused("tasks/list", json!({ "cursor": "nonsense" }))
        .await;
    assert_eq!(bad.code.0, -32602);

    // Another connection of the same builder sees none of them.
    let (other_handler, _) = Gated::new(samples_and_elicits());
    let other = Connection::open(V2025_11_25, task_builder(other_handler)).await;
    let empty = other.ok("tasks/list", json!({})).await;
    assert_eq!(empty["tasks"], json!([]));
    for id in &started {
        let unknown = other.refused("tasks/get", json!({ "taskId": id })).await;
        assert_eq!(unknown.code.0, -32602);
    }
}

#[tokio::test]
async fn unknown_task_ids_are_invalid_params() {
    let (handler, _) = Gated::new(samples_and_elicits());
    let c = Connection::open(V2025_11_25, task_builder(handler)).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let unknown = c.refused(method, json!({ "taskId": "no-such-task" })).await;
        assert_eq!(unknown.code.0, -32602, "{method}");
        let missing = c.refused(method, json!({})).await;
        assert_eq!(missing.code.0, -32602, "{method}");
    }
}

#[tokio::test]
async fn the_cap_refuses_one_task_too_many() {
    let (handler, mut reports) = Gated::new(samples_and_elicits());
    let c = Connection::open(V2025_11_25, task_builder(Arc::clone(&handler)).max_tasks(2)).await;
    let first = c
        .start("sampling/createMessage", sampling("a", Some(json!({}))))
        .await;
    c.start("elicitation/create", elicitation(json!({}))).await;
    let refused = c
        .refused("sampling/createMessage", sampling("c", Some(json!({}))))
        .await;
    assert_eq!(refused.code.0, -32603);
    assert!(
        refused.message.contains("too many tasks") && refused.message.contains("at most 2"),
        "{}",
        refused.message
    );
    // Refused before anything ran: only the two tasks' handlers started.
    let started = [reports.next().await, reports.next().await];
    assert!(started.iter().any(|r| r.ends_with(&first)), "{started:?}");
    assert!(reports.0.try_recv().is_err());
    // A request without a task is not a task: still served.
    handler.release.add_permits(3);
    let plain = c
        .ok("sampling/createMessage", sampling("plain", None))
        .await;
    assert_eq!(plain["model"], "test-model");
}

#[tokio::test]
async fn a_task_the_client_did_not_declare_is_served_normally() {
    // Task requests off: the task is ignored, the request answered directly.
    let (handler, _) = Gated::new(samples_and_elicits());
    handler.release.add_permits(1);
    let off = Connection::open(V2025_11_25, builder(None).handler(handler)).await;
    let answered = off
        .ok(
            "sampling/createMessage",
            sampling("hello", Some(json!({ "ttl": 1000 }))),
        )
        .await;
    assert_eq!(answered["model"], "test-model");
    assert_eq!(answered["content"]["text"], "saw task: true");
    assert!(answered.get("task").is_none(), "{answered}");
    let no_tasks = off.refused("tasks/list", json!({})).await;
    assert_eq!(no_tasks.code.0, -32601);
    let no_get = off.refused("tasks/get", json!({ "taskId": "x" })).await;
    assert_eq!(no_get.code.0, -32601);

    // Declared by hand for elicitation only: sampling with a task is served normally.
    let mut capabilities = samples_and_elicits();
    capabilities.tasks = Some(json!({ "requests": { "elicitation": { "create": {} } } }));
    let (handler, _) = Gated::new(capabilities);
    handler.release.add_permits(1);
    let c = Connection::open(V2025_11_25, builder(None).handler(Arc::clone(&handler))).await;
    let answered = c
        .ok("sampling/createMessage", sampling("hello", Some(json!({}))))
        .await;
    assert_eq!(answered["model"], "test-model");
    c.start("elicitation/create", elicitation(json!({}))).await;
    // No `tasks.list` or `tasks.cancel` declared: neither is answered.
    assert_eq!(c.refused("tasks/list", json!({})).await.code.0, -32601);
    let cancel = c.refused("tasks/cancel", json!({ "taskId": "x" })).await;
    assert_eq!(cancel.code.0, -32601);
}

#[tokio::test]
async fn a_revision_without_core_tasks_serves_the_request_normally() {
    let (handler, _) = Gated::new(samples_and_elicits());
    handler.release.add_permits(1);
    let c = Connection::open(ProtocolVersion::V2025_06_18, task_builder(handler)).await;
    let answered = c
        .ok("sampling/createMessage", sampling("hello", Some(json!({}))))
        .await;
    assert_eq!(answered["model"], "test-model");
    assert_eq!(c.refused("tasks/list", json!({})).await.code.0, -32601);
}

#[tokio::test]
async fn a_task_past_its_ttl_is_forgotten_and_its_handler_stopped() {
    let limits = TaskLimits {
        min_ttl: std::time::Duration::from_millis(1),
        ..TaskLimits::default()
    };
    let (handler, mut reports) = Gated::new(samples_and_elicits());
    let c = Connection::open(V2025_11_25, task_builder(handler).task_limits(limits)).await;
    let created = c
        .ok(
            "sampling/createMessage",
            sampling("hello", Some(json!({ "ttl": 50 }))),
        )
        .await;
    assert_eq!(created["task"]["ttl"], 50);
    let id = created["task"]["taskId"].as_str().expect("a task id");
    assert_eq!(reports.next().await, format!("started sampling {id}"));
    assert_eq!(reports.next().await, format!("cancelled sampling {id}"));
    // Gone once its TTL has passed (the store reads the wall clock: look until it agrees).
    within(async {
        loop {
            match c.request("tasks/get", json!({ "taskId": id })).await {
                Err(Error::Rpc(error)) => break assert_eq!(error.code.0, -32602),
                Ok(task) => assert_eq!(task["status"], "working"),
                Err(other) => panic!("tasks/get: {other}"),
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(c.ok("tasks/list", json!({})).await["tasks"], json!([]));
}
