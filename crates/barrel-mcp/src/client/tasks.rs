//! Tasks from the client side, in both wire forms: call a tool as a task and hold a
//! [`TaskHandle`] (status, result, answers, cancel), or just await the result; list the tasks
//! this client created (2025-11-25).
//!
//! - **2025-11-25** (a session): the request carries `params.task`; the server must advertise
//!   `tasks.requests.tools.call` and the tool must take tasks. The result is `tasks/result`,
//!   which the server answers once the task ends; a question the task asks in between reaches
//!   the client's handler as a request, like any other.
//! - **2026-07-28** (the `io.modelcontextprotocol/tasks` extension): the server must declare
//!   the extension; the task call declares it on that request only (a plain `call_tool` never
//!   does, so it never gets a task back). The server decides: it may answer at once
//!   ([`ToolTask::Finished`]). `input_required` rounds before the task exists are answered as
//!   for any call. The result is polled with `tasks/get` at the server's interval; questions
//!   the task asks (`inputRequests`) go to the client's handler and their answers back with
//!   `tasks/update`, each key once.

use std::collections::BTreeSet;
use std::time::Duration;

use barrel_mcp_types::meta::CLIENT_CAPABILITIES_KEY;
use barrel_mcp_types::{
    CallToolParams, CallToolResult, CreateTaskResult, ErrorObject, InputRequests, InputResponses,
    ListTasksResult, Meta, ResultType, Task, TaskStatus,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{CallOptions, Client, input};
use crate::task::EXTENSION;
use crate::{Error, Result};

/// The wait for a task without a TTL (the server keeps it until it restarts).
const UNBOUNDED_TASK_WAIT: Duration = Duration::from_secs(3600);

/// The bounds on a server's poll interval (a server cannot make a client spin or stall).
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(20), Duration::from_secs(30));

/// What a task call started.
///
/// Example: [`TaskHandle`].
#[derive(Debug, Clone)]
pub enum ToolTask {
    /// The server runs the call as a task.
    Started(TaskHandle),
    /// The server answered at once (a 2026-07-28 server may, for quick work).
    Finished(CallToolResult),
}

/// The wire form of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// 2025-11-25 core tasks.
    Core,
    /// The 2026-07-28 extension.
    Extension,
}

/// A task this client started: its status, its result, its cancellation (see the module docs
/// for each wire form).
///
/// # Example
///
/// ```no_run
/// use barrel_mcp::client::{Client, ToolTask};
/// use barrel_mcp::types::CallToolParams;
///
/// # async fn run(client: Client) -> barrel_mcp::Result<()> {
/// if !client.supports_tool_tasks() {
///     return Ok(());
/// }
/// match client.start_tool_task(CallToolParams::new("report"), None).await? {
///     ToolTask::Started(task) => {
///         println!("task {}: {:?}", task.id(), task.status().await?.status);
///         let result = task.result_with(|now| println!("now {:?}", now.status)).await?;
///         println!("{}", result.text_content());
///     }
///     ToolTask::Finished(result) => println!("answered at once: {}", result.text_content()),
/// }
/// // Or all in one call, as `call_tool` would.
/// let result = client.call_tool_as_task(CallToolParams::new("report")).await?;
/// # let _ = result;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TaskHandle {
    client: Client,
    task: Task,
    form: Form,
}

impl TaskHandle {
    /// The task id.
    ///
    /// Example: [`TaskHandle`].
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// The task as the server described it when it was created (in 2026-07-28, `ttlMs` and
    /// `pollIntervalMs` read into `ttl` and `poll_interval`).
    ///
    /// Example: [`TaskHandle`].
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The task as it stands now (`tasks/get`).
    ///
    /// Example: [`TaskHandle`].
    pub async fn status(&self) -> Result<Task> {
        match self.form {
            Form::Core => {
                self.client
                    .call_method("tasks/get", Some(self.id_params()), &CallOptions::new())
                    .await
            }
            Form::Extension => extension_task(&self.detailed().await?),
        }
    }

    /// Waits until the task ends and returns its result: the tool's result, the JSON-RPC error
    /// the task failed with ([`Error::Rpc`]), or [`Error::Cancelled`] for a cancelled task.
    ///
    /// Example: [`TaskHandle`].
    pub async fn result(&self) -> Result<CallToolResult> {
        self.result_with(|_| {}).await
    }

    /// [`TaskHandle::result`], calling `on_change` with the task whenever its status or status
    /// message changes (polled at the server's interval).
    ///
    /// Example: [`TaskHandle`].
    pub async fn result_with(
        &self,
        mut on_change: impl FnMut(&Task) + Send,
    ) -> Result<CallToolResult> {
        let wait = self
            .task
            .ttl
            .map_or(UNBOUNDED_TASK_WAIT, Duration::from_millis);
        match self.form {
            Form::Core => self.core_result(wait, &mut on_change).await,
            Form::Extension => tokio::time::timeout(wait, self.poll(&mut on_change))
                .await
                .unwrap_or(Err(Error::Timeout)),
        }
    }

    /// Answers questions the task asked (2026-07-28 `tasks/update`, by `inputRequests` key).
    /// [`TaskHandle::result`] does this itself through the client's handler.
    ///
    /// Example: [`TaskHandle`].
    pub async fn update(&self, responses: InputResponses) -> Result<()> {
        if self.form == Form::Core {
            return Err(Error::Unsupported(
                "tasks/update does not exist in 2025-11-25 (questions arrive as requests)".into(),
            ));
        }
        let params = json!({ "taskId": self.task.task_id, "inputResponses": responses });
        let _: Value = self
            .client
            .call_method("tasks/update", Some(params), &self.options())
            .await?;
        Ok(())
    }

    /// Cancels the task (`tasks/cancel`) and returns it as it then stands.
    ///
    /// Example: [`TaskHandle`].
    pub async fn cancel(&self) -> Result<Task> {
        match self.form {
            Form::Core => {
                self.client
                    .call_method("tasks/cancel", Some(self.id_params()), &CallOptions::new())
                    .await
            }
            Form::Extension => {
                let _: Value = self
                    .client
                    .call_method("tasks/cancel", Some(self.id_params()), &self.options())
                    .await?;
                self.status().await
            }
        }
    }

    fn id_params(&self) -> Value {
        json!({ "taskId": self.task.task_id })
    }

    /// Options that declare the extension (2026-07-28).
    fn options(&self) -> CallOptions {
        CallOptions::new().meta(self.client.tasks_meta())
    }

    async fn detailed(&self) -> Result<Value> {
        self.client
            .call_method("tasks/get", Some(self.id_params()), &self.options())
            .await
    }

    /// 2025-11-25: `tasks/result`, with `tasks/get` now and then for `on_change`.
    async fn core_result(
        &self,
        wait: Duration,
        on_change: &mut (impl FnMut(&Task) + Send),
    ) -> Result<CallToolResult> {
        let options = CallOptions::new().timeout(wait).max_total(wait);
        let result = self.client.call_method::<CallToolResult>(
            "tasks/result",
            Some(self.id_params()),
            &options,
        );
        tokio::pin!(result);
        let mut last = (self.task.status, self.task.status_message.clone());
        loop {
            tokio::select! {
                result = &mut result => return result,
                () = tokio::time::sleep(poll_interval(self.task.poll_interval)) => {
                    if let Ok(now) = self.status().await {
                        let seen = (now.status, now.status_message.clone());
                        if seen != last {
                            on_change(&now);
                            last = seen;
                        }
                    }
                }
            }
        }
    }

    /// 2026-07-28: polls `tasks/get`, answering questions, until the task ends.
    async fn poll(&self, on_change: &mut (impl FnMut(&Task) + Send)) -> Result<CallToolResult> {
        let mut answered = BTreeSet::new();
        let mut last = (self.task.status, self.task.status_message.clone());
        let cancel = CancellationToken::new();
        let _stop_questions = cancel.clone().drop_guard();
        loop {
            let detailed = self.detailed().await?;
            let task = extension_task(&detailed)?;
            let seen = (task.status, task.status_message.clone());
            if seen != last {
                on_change(&task);
                last = seen;
            }
            match task.status {
                TaskStatus::Completed => {
                    let result = detailed.get("result").cloned().ok_or_else(|| {
                        Error::Protocol("a completed task without its result".into())
                    })?;
                    return super::calls::decode("tasks/get", result);
                }
                TaskStatus::Failed => {
                    let error = detailed
                        .get("error")
                        .cloned()
                        .and_then(|e| serde_json::from_value::<ErrorObject>(e).ok())
                        .unwrap_or_else(|| ErrorObject::internal("the task failed"));
                    return Err(Error::Rpc(error));
                }
                TaskStatus::Cancelled => return Err(Error::Cancelled),
                TaskStatus::InputRequired => {
                    let asked: InputRequests = detailed
                        .get("inputRequests")
                        .cloned()
                        .map(serde_json::from_value)
                        .transpose()
                        .map_err(|e| Error::Protocol(format!("invalid inputRequests: {e}")))?
                        .unwrap_or_default();
                    let new: InputRequests = asked
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if !new.is_empty() {
                        answered.extend(new.keys().cloned());
                        let answers = self.client.answer(new, &cancel).await?;
                        self.update(answers).await?;
                        continue;
                    }
                }
                TaskStatus::Working => {}
            }
            let interval = detailed
                .get("pollIntervalMs")
                .and_then(Value::as_u64)
                .or(self.task.poll_interval);
            tokio::time::sleep(poll_interval(interval)).await;
        }
    }
}

/// The server's poll interval (milliseconds), within [`POLL_BOUNDS`].
fn poll_interval(millis: Option<u64>) -> Duration {
    Duration::from_millis(millis.unwrap_or(1000)).clamp(POLL_BOUNDS.0, POLL_BOUNDS.1)
}

/// A 2026-07-28 task (a `CreateTaskResult` or `DetailedTask`) as a [`Task`].
fn extension_task(value: &Value) -> Result<Task> {
    let field = |name: &str| value.get(name).cloned().unwrap_or(Value::Null);
    let mut task = Map::new();
    for (from, to) in [
        ("taskId", "taskId"),
        ("status", "status"),
        ("statusMessage", "statusMessage"),
        ("createdAt", "createdAt"),
        ("lastUpdatedAt", "lastUpdatedAt"),
        ("ttlMs", "ttl"),
        ("pollIntervalMs", "pollInterval"),
    ] {
        let value = field(from);
        if !value.is_null() {
            task.insert(to.into(), value);
        }
    }
    serde_json::from_value(Value::Object(task))
        .map_err(|e| Error::Protocol(format!("invalid task: {e}")))
}

impl Client {
    /// True when the server runs `tools/call` as tasks: 2025-11-25 `tasks.requests.tools.call`,
    /// or the 2026-07-28 tasks extension.
    ///
    /// Example: [`TaskHandle`].
    pub fn supports_tool_tasks(&self) -> bool {
        let capabilities = self.capabilities();
        if self.is_modern() {
            return capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(EXTENSION));
        }
        capabilities
            .tasks
            .as_ref()
            .and_then(|t| t.pointer("/requests/tools/call"))
            .is_some()
    }

    /// Calls a tool as a task, kept by the server for `ttl` (or its default; 2025-11-25 only:
    /// a 2026-07-28 server picks the TTL).
    ///
    /// Example: [`TaskHandle`].
    pub async fn start_tool_task(
        &self,
        params: CallToolParams,
        ttl: Option<Duration>,
    ) -> Result<ToolTask> {
        if !self.supports_tool_tasks() {
            return Err(Error::Unsupported(
                "the server does not run tools as tasks".into(),
            ));
        }
        if self.is_modern() {
            return self.start_extension_task(params).await;
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
        Ok(ToolTask::Started(TaskHandle {
            client: self.clone(),
            task: created.task,
            form: Form::Core,
        }))
    }

    /// Calls a tool as a task and waits for its result.
    ///
    /// Example: [`TaskHandle`].
    pub async fn call_tool_as_task(&self, params: CallToolParams) -> Result<CallToolResult> {
        match self.start_tool_task(params, None).await? {
            ToolTask::Started(handle) => handle.result().await,
            ToolTask::Finished(result) => Ok(result),
        }
    }

    /// A handle to the task `id` this client's principal (or, in 2025-11-25, its session)
    /// created earlier, as it stands now (`tasks/get`).
    ///
    /// Example: [`TaskHandle`].
    pub async fn task(&self, id: &str) -> Result<TaskHandle> {
        let params = json!({ "taskId": id });
        let (task, form) = if self.is_modern() {
            let options = CallOptions::new().meta(self.tasks_meta());
            let detailed: Value = self
                .call_method("tasks/get", Some(params), &options)
                .await?;
            (extension_task(&detailed)?, Form::Extension)
        } else {
            let task: Task = self
                .call_method("tasks/get", Some(params), &CallOptions::new())
                .await?;
            (task, Form::Core)
        };
        Ok(TaskHandle {
            client: self.clone(),
            task,
            form,
        })
    }

    /// The tasks this client created that the server still keeps, a page at a time
    /// (`tasks/list`, 2025-11-25: the extension has no list).
    ///
    /// Example: [`TaskHandle`].
    pub async fn list_tasks(&self, cursor: Option<String>) -> Result<ListTasksResult> {
        self.require_session("tasks/list")?;
        let params = match cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        self.call_method("tasks/list", Some(params), &CallOptions::new())
            .await
    }

    async fn start_extension_task(&self, params: CallToolParams) -> Result<ToolTask> {
        let options = CallOptions::new().meta(self.tasks_meta());
        let answer: Value = self
            .call_with_input("tools/call", &params, &options)
            .await?;
        if ResultType::of(&answer) != ResultType::Other("task".into()) {
            return super::calls::decode("tools/call", answer).map(ToolTask::Finished);
        }
        Ok(ToolTask::Started(TaskHandle {
            client: self.clone(),
            task: extension_task(&answer)?,
            form: Form::Extension,
        }))
    }

    /// `_meta` declaring this client's capabilities plus the tasks extension.
    fn tasks_meta(&self) -> Meta {
        let mut capabilities = serde_json::to_value(self.client_capabilities())
            .unwrap_or_else(|_| Value::Object(Map::new()));
        if let Value::Object(capabilities) = &mut capabilities {
            let extensions = capabilities
                .entry("extensions")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(extensions) = extensions {
                extensions.insert(EXTENSION.into(), json!({}));
            }
        }
        Meta::from_iter([(CLIENT_CAPABILITIES_KEY.to_owned(), capabilities)])
    }

    /// Answers a task's questions through the client's handler.
    async fn answer(
        &self,
        requests: InputRequests,
        cancel: &CancellationToken,
    ) -> Result<InputResponses> {
        input::answer_all(
            &self.inner.handler,
            self.client_capabilities(),
            requests,
            cancel,
            self.config().apply_elicitation_defaults,
        )
        .await
    }
}
