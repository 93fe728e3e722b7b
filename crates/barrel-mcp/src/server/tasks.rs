//! The 2025-11-25 core tasks on the server: a `tools/call` with `params.task` runs in the
//! background as a task, and `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`
//! read and steer it.
//!
//! - A tool takes part through its definition: `execution.taskSupport` `optional` or
//!   `required` (`forbidden`, the default, refuses task requests with -32601; `required`
//!   refuses plain calls with -32601). The server advertises `tasks` (`list`, `cancel`,
//!   `requests.tools.call`) to 2025-11-25 sessions when one of its tools takes tasks.
//! - A task belongs to its requestor (the authenticated principal, else the session) and to
//!   the sessions era; anyone else gets "unknown task" (-32602).
//! - The work runs on a task of its own with the same handler API (input requests go to the
//!   session as usual); its outcome is kept in the [`TaskStore`]: a tool error is `failed`,
//!   a JSON-RPC error `failed` with that error, anything else `completed`. `tasks/cancel` moves
//!   the task to `cancelled` before answering and stops the work; a late outcome is discarded.
//! - `tasks/result` waits until the task ends (woken by each finished task, bounded by the
//!   request's own cancellation) and answers with exactly the outcome, carrying the
//!   related-task `_meta`.
//! - While a task's work runs, its runner (this process) renews the task's lease (`lease.rs`),
//!   in both eras: should the process die, any node sharing the store fails the task once the
//!   lease has run out, on its next read. A runner that finds its task ended elsewhere (failed
//!   for a lapsed lease, or cancelled on another node) stops the work; a late outcome is
//!   discarded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use barrel_mcp_types::{CreateTaskResult, ErrorObject, TaskStatus, Tool};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::context::Scope;
use super::invoke;
use super::task_input::{TaskInput, TaskSlot};
use crate::peer::RequestContext;
pub(crate) use crate::task::serve::{announce_status, task_id};
use crate::task::{Era, TaskRecord, TaskStore, new_task_id, serve};

/// Whether a tool takes tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskSupport {
    Forbidden,
    Optional,
    Required,
}

/// A tool's task support, from its definition.
pub(crate) fn support(tool: &Tool) -> TaskSupport {
    match tool
        .execution
        .as_ref()
        .and_then(|e| e.task_support.as_deref())
    {
        Some("optional") => TaskSupport::Optional,
        Some("required") => TaskSupport::Required,
        _ => TaskSupport::Forbidden,
    }
}

mod lease;
mod runner;

pub(crate) use runner::{Watched, watch};

/// The questions one task of this process waits on (2026-07-28 `tasks/update`).
pub(crate) struct Waiting {
    /// Who the task belongs to (to read it back from the store).
    pub(crate) owner: String,
    /// The handler waiting on each question, by key.
    pub(crate) keys: HashMap<String, oneshot::Sender<Value>>,
    /// A look in the store for answers given on other nodes is under way; news that comes
    /// meanwhile sets `look_again` (one look at a time per task, none missed).
    pub(crate) looking: bool,
    pub(crate) look_again: bool,
}

/// The tasks of a server: the store, and the running work of this process.
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    /// Stops the running work of a task.
    running: Mutex<HashMap<String, CancellationToken>>,
    /// Woken whenever a task ends.
    ended: tokio::sync::Notify,
    /// The questions of this process's tasks waiting on `tasks/update`, by task.
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Set once the periodic purge of expired tasks runs.
    purging: std::sync::OnceLock<()>,
    /// Tasks of this process failed elsewhere because their lease ran out while their work
    /// still ran here (a stall longer than the lease): their work was stopped, or its outcome
    /// discarded.
    lost_leases: std::sync::atomic::AtomicU64,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn TaskStore>) -> Self {
        Self {
            store,
            running: Mutex::new(HashMap::new()),
            ended: tokio::sync::Notify::new(),
            waiting: Mutex::new(HashMap::new()),
            purging: std::sync::OnceLock::new(),
            lost_leases: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Starts forgetting expired tasks every `every`, once per server (on its first task, so
    /// a server without tasks runs nothing). The purge stops when the store is dropped.
    pub(crate) fn purge_every(&self, every: Duration) {
        self.purging.get_or_init(|| {
            let store = Arc::downgrade(&self.store);
            let every = every.max(Duration::from_millis(10));
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticks.tick().await;
                loop {
                    ticks.tick().await;
                    let Some(store) = store.upgrade() else {
                        return;
                    };
                    let purged = store.purge(std::time::SystemTime::now()).await;
                    if purged > 0 {
                        tracing::debug!(purged, "expired tasks forgotten");
                    }
                }
            });
        });
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the work of task `id` if it runs here, and forgets its waiting questions.
    pub(crate) fn stop(&self, id: &str) {
        if let Some(token) = self.running().remove(id) {
            token.cancel();
        }
        self.waiting().remove(id);
        self.ended.notify_waiters();
    }
}

impl Server {
    /// How many tasks whose work ran in this server were failed elsewhere because their lease
    /// ran out while the work still ran (the server stalled for longer than
    /// [`TaskLimits::lease`](crate::task::TaskLimits::lease)): their work was stopped, or its
    /// outcome discarded. Each is also logged as a warning. Zero on a healthy server.
    ///
    /// ```
    /// use barrel_mcp::server::Server;
    ///
    /// let server = Server::builder().name("demo", "1.0.0").build()?;
    /// // For a health probe: above zero, this server stalled past its task lease.
    /// assert_eq!(server.lost_task_leases(), 0);
    /// # Ok::<(), barrel_mcp::Error>(())
    /// ```
    pub fn lost_task_leases(&self) -> u64 {
        self.inner
            .tasks
            .lost_leases
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Who a 2025-11-25 task belongs to: the authenticated principal, else the session.
fn owner(scope: &Scope, cx: &RequestContext) -> String {
    if let Some(info) = cx.caller.as_ref().and_then(|c| c.auth()) {
        return info.principal();
    }
    match &scope.session {
        Some(session) => format!("session:{}", session.id),
        None => "anonymous".into(),
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// `tools/call` with `params.task`: the task is created (durably) and its work started; the
/// answer is the `CreateTaskResult`.
pub(crate) async fn call_as_task(
    server: &Server,
    scope: Scope,
    mut raw: Value,
    cx: RequestContext,
) -> Result<Value, ErrorObject> {
    let name = raw.get("name").and_then(Value::as_str).unwrap_or_default();
    let tool = server
        .read_registry()
        .tools
        .get(name)
        .map(|e| e.tool.clone());
    let tool = tool.ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {name}")))?;
    if support(&tool) == TaskSupport::Forbidden {
        return Err(ErrorObject::method_not_found(
            "tools/call as a task (this tool does not take tasks)",
        ));
    }
    let asked = raw
        .pointer("/task/ttl")
        .and_then(Value::as_u64)
        .map(Duration::from_millis);
    if let Value::Object(params) = &mut raw {
        params.remove("task");
    }
    let tasks = &server.inner.tasks;
    let limits = &server.config().task_limits;
    let id = new_task_id().map_err(|e| ErrorObject::internal(e.to_string()))?;
    let record = TaskRecord::new(
        id.clone(),
        owner(&scope, &cx),
        Era::Sessions,
        Some(limits.ttl_for(asked)),
        limits.poll_interval,
    )
    // The lease starts now: a task whose work has not started yet is not taken for abandoned.
    .with_lease(limits.granted_lease());
    let owner = record.owner.clone();
    let ttl = record.ttl;
    let created = record.to_task();
    tasks
        .store
        .create(record)
        .await
        .map_err(|refusal| refusal.to_error_object())?;
    let cancel = CancellationToken::new();
    // The work outlives the request that made it: what it sends (questions, progress, log
    // messages) goes to the session, not to that request's finished stream.
    let work_cx = RequestContext {
        id: cx.id.clone(),
        cancel: cancel.clone(),
        peer: cx.peer.unrelated(),
        caller: cx.caller.clone(),
    };
    let runner = server.clone();
    let slot = Arc::new(TaskSlot::eager());
    let announce = cx.peer.unrelated();
    slot.set(Arc::new(
        TaskInput::new(server.clone(), id.clone(), owner.clone(), Era::Sessions)
            .announcing(announce.clone()),
    ));
    // The work on a task of its own: a panic in the handler fails the task (instead of leaving
    // it working).
    let work = tokio::spawn(async move {
        let mode = invoke::AsTask::Running(slot);
        invoke::call_tool_as(&runner, scope, Some(raw), work_cx, mode)
            .await
            .and_then(super::dispatch::into_value)
    });
    let watched = Watched {
        id,
        owner,
        era: Era::Sessions,
        ttl,
        announce: Some(announce),
    };
    watch(server, watched, cancel, work);
    encode(&CreateTaskResult {
        task: created,
        meta: None,
    })
}

/// `tasks/get`: the task as it stands.
pub(crate) async fn get(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let store = &*server.inner.tasks.store;
    serve::get(store, &owner(scope, cx), params.as_ref()).await
}

/// `tasks/result`: waits until the task ends, then answers with exactly its outcome.
pub(crate) async fn result(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let tasks = &server.inner.tasks;
    let owner = owner(scope, cx);
    serve::result(
        &*tasks.store,
        &owner,
        params.as_ref(),
        &tasks.ended,
        &cx.cancel,
    )
    .await
}

/// `tasks/list`: the requestor's tasks, oldest first, a page at a time.
pub(crate) async fn list(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let store = &*server.inner.tasks.store;
    let page_size = server.config().task_limits.page_size;
    serve::list(store, &owner(scope, cx), params.as_ref(), page_size).await
}

/// `tasks/cancel`: the task is `cancelled` before the answer, and its work stops; a finished
/// task is -32602.
pub(crate) async fn cancel(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let tasks = &server.inner.tasks;
    let record = serve::cancel(&*tasks.store, &owner(scope, cx), params.as_ref()).await?;
    tasks.stop(&record.id);
    debug_assert_eq!(record.status, TaskStatus::Cancelled);
    serve::cancelled(&record)
}
