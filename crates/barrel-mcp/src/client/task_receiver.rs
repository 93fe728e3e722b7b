//! The client as the receiver of task-augmented requests (2025-11-25): a server may send
//! `sampling/createMessage` or `elicitation/create` with `params.task` when the client declared
//! `tasks.requests.sampling.createMessage` or `tasks.requests.elicitation.create`.
//!
//! - The request is answered at once with a `CreateTaskResult` (the task `working`); the
//!   handler runs in the background with [`HandlerContext::task_id`] set, and its answer (or
//!   JSON-RPC error) becomes the task's outcome: `completed`, or `failed` with that error.
//! - `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` are answered from one
//!   [`MemoryTaskStore`] per connection (its only requestor is the server), with
//!   [`ClientConfig::task_limits`](super::ClientConfig::task_limits) as its bounds: the cap on
//!   tasks held (finished ones count until their TTL passes), the TTL bounds, the poll
//!   interval, the largest result kept, the list page size. `tasks/list` and `tasks/cancel`
//!   are answered only when `tasks.list` and `tasks.cancel` are declared.
//! - The handler's [`HandlerContext::cancel`] fires on `tasks/cancel` (the task is `cancelled`
//!   before the answer), when the TTL passes, or when the connection ends; a handler that does
//!   not return within the connection's `handler_grace` is then aborted, and its late answer
//!   is never kept.
//! - Each finished task is announced with `notifications/tasks/status`.
//! - A request with `params.task` for a kind the client did not declare is served normally,
//!   the task ignored (as the spec requires of a receiver), as is any request in a revision
//!   without core tasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use barrel_mcp_types::method::names::{
    ELICITATION_CREATE, SAMPLING_CREATE_MESSAGE, TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT,
};
use barrel_mcp_types::{
    ClientCapabilities, CreateTaskResult, ErrorObject, Feature, InputRequest, ProtocolVersion,
    RequestId,
};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::handler::{DynHandler, HandlerContext};
use super::input;
use crate::peer::Peer;
use crate::task::{Era, MemoryTaskStore, TaskLimits, TaskRecord, TaskStore, new_task_id, serve};

/// The owner of every task in a connection's store: the connection's one requestor.
const OWNER: &str = "server";

/// The requests a client may run as tasks.
const METHODS: [&str; 2] = [SAMPLING_CREATE_MESSAGE, ELICITATION_CREATE];

/// Adds to `capabilities` the task declarations of a client that runs the server's requests
/// as tasks: `tasks.requests.sampling.createMessage` when it samples,
/// `tasks.requests.elicitation.create` when it elicits, and `tasks.list` and `tasks.cancel`.
/// What `capabilities.tasks` already holds is kept.
pub(crate) fn declare(capabilities: &mut ClientCapabilities) {
    let mut requests = Map::new();
    if capabilities.supports_sampling() {
        requests.insert("sampling".into(), json!({ "createMessage": {} }));
    }
    if capabilities.elicitation.is_some() {
        requests.insert("elicitation".into(), json!({ "create": {} }));
    }
    if requests.is_empty() {
        return;
    }
    let tasks = capabilities
        .tasks
        .get_or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(tasks) = tasks else {
        return;
    };
    tasks.entry("list").or_insert_with(|| json!({}));
    tasks.entry("cancel").or_insert_with(|| json!({}));
    let declared = tasks
        .entry("requests")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(declared) = declared {
        for (category, actions) in requests {
            declared.entry(category).or_insert(actions);
        }
    }
}

/// The `params.task` of a request, when the request asks to run as a task: the TTL it asks
/// for (`None`: the default). Removed from `params`, since the handler answers the request
/// itself.
pub(crate) fn take_task(params: &mut Value) -> Option<Option<Duration>> {
    let task = params.as_object_mut()?.remove("task")?;
    Some(
        task.get("ttl")
            .and_then(Value::as_u64)
            .map(Duration::from_millis),
    )
}

/// The tasks a connection runs for its server.
pub(crate) struct TaskReceiver {
    store: MemoryTaskStore,
    /// What the client declared: which requests run as tasks, and which methods it answers.
    capabilities: ClientCapabilities,
    /// Stops the handler of a running task.
    running: Mutex<HashMap<String, CancellationToken>>,
    /// Woken whenever a task ends.
    ended: Notify,
    /// Set once the handshake settles: whether the revision has core tasks.
    spoken: OnceLock<bool>,
    /// How long a cancelled handler may take to return before it is aborted.
    grace: Duration,
}

/// What a task's handler needs.
pub(crate) struct Work {
    pub(crate) handler: Arc<dyn DynHandler>,
    pub(crate) request: InputRequest,
    pub(crate) request_id: RequestId,
    pub(crate) apply_defaults: bool,
    /// The connection: watched for its end, and told of the task's end.
    pub(crate) peer: Peer,
}

impl TaskReceiver {
    /// The receiver of a client that declared `capabilities`, or `None` when they declare no
    /// task-augmented request.
    pub(crate) fn new(
        capabilities: &ClientCapabilities,
        limits: TaskLimits,
        grace: Duration,
    ) -> Option<Self> {
        let takes_tasks = capabilities.supports_task_requests(METHODS[0])
            || capabilities.supports_task_requests(METHODS[1]);
        takes_tasks.then(|| Self {
            store: MemoryTaskStore::new(limits),
            capabilities: capabilities.clone(),
            running: Mutex::new(HashMap::new()),
            ended: Notify::new(),
            spoken: OnceLock::new(),
            grace,
        })
    }

    /// Records the revision the handshake settled on.
    pub(crate) fn settle(&self, version: ProtocolVersion) {
        let _ = self.spoken.set(version.supports(Feature::CoreTasks));
    }

    /// True when `method` with `params.task` runs as a task here.
    pub(crate) fn takes(&self, method: &str) -> bool {
        self.active() && self.capabilities.supports_task_requests(method)
    }

    fn active(&self) -> bool {
        self.spoken.get().copied().unwrap_or(false)
    }

    /// True when this receiver answers `method` (a `tasks/*` method): the revision has core
    /// tasks, and the client declared it (`tasks/get` and `tasks/result` come with any
    /// task-augmented request).
    pub(crate) fn answers(&self, method: &str) -> bool {
        self.active()
            && match method {
                TASKS_GET | TASKS_RESULT => true,
                TASKS_LIST => self.capabilities.supports_tasks_list(),
                TASKS_CANCEL => self.capabilities.supports_tasks_cancel(),
                _ => false,
            }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates a task for `work` (refused past the cap), starts the handler on a task of its
    /// own, and answers with the `CreateTaskResult`.
    pub(crate) async fn start(
        self: &Arc<Self>,
        work: Work,
        asked_ttl: Option<Duration>,
    ) -> Result<Value, ErrorObject> {
        let limits = self.store.limits();
        let id = new_task_id().map_err(|e| ErrorObject::internal(e.to_string()))?;
        let ttl = limits.ttl_for(asked_ttl);
        let record = TaskRecord::new(
            id.clone(),
            OWNER,
            Era::Sessions,
            Some(ttl),
            limits.poll_interval,
        );
        let created = record.to_task();
        self.store
            .create(record)
            .await
            .map_err(|refusal| refusal.to_error_object())?;
        let cancel = CancellationToken::new();
        self.running().insert(id.clone(), cancel.clone());
        let Work {
            handler,
            request,
            request_id,
            apply_defaults,
            peer,
        } = work;
        let cx = HandlerContext {
            cancel: cancel.clone(),
            request_id: Some(request_id),
            input_key: None,
            task_id: Some(id.clone()),
        };
        // The handler on a task of its own: a panic fails the task instead of leaving it
        // working.
        let answering =
            tokio::spawn(async move { input::answer(&handler, request, cx, apply_defaults).await });
        tokio::spawn(Arc::clone(self).keep(id, ttl, cancel, answering, peer));
        serde_json::to_value(CreateTaskResult {
            task: created,
            meta: None,
        })
        .map_err(|e| ErrorObject::internal(e.to_string()))
    }

    /// Keeps the outcome of task `id`'s handler, or stops the handler when the task is
    /// cancelled, its TTL passes or the connection ends.
    async fn keep(
        self: Arc<Self>,
        id: String,
        ttl: Duration,
        cancel: CancellationToken,
        mut answering: tokio::task::JoinHandle<Result<Value, ErrorObject>>,
        peer: Peer,
    ) {
        let outcome = tokio::select! {
            joined = &mut answering => Some(joined.unwrap_or_else(|_| {
                Err(ErrorObject::internal("the task's handler failed"))
            })),
            () = cancel.cancelled() => None,
            () = tokio::time::sleep(ttl) => None,
            () = peer.closed() => None,
        };
        self.running().remove(&id);
        match outcome {
            Some(outcome) => {
                let outcome = serve::keepable(outcome, self.store.limits().max_result_bytes);
                let finish = move |t: &mut TaskRecord| t.finish(outcome.clone());
                match self.store.update(&id, OWNER, Era::Sessions, &finish).await {
                    Ok(record) => serve::announce_status(Some(&peer), &record).await,
                    Err(refusal) => {
                        tracing::debug!(task = %id, ?refusal, "a task's outcome was not kept");
                    }
                }
            }
            None => {
                cancel.cancel();
                if tokio::time::timeout(self.grace, &mut answering)
                    .await
                    .is_err()
                {
                    answering.abort();
                }
            }
        }
        self.ended.notify_waiters();
    }

    /// Answers `tasks/get`, `tasks/result`, `tasks/list` or `tasks/cancel` (see
    /// [`TaskReceiver::answers`]).
    pub(crate) async fn answer(
        &self,
        method: &str,
        params: Option<&Value>,
        request_cancel: &CancellationToken,
    ) -> Result<Value, ErrorObject> {
        match method {
            TASKS_GET => serve::get(&self.store, OWNER, params).await,
            TASKS_RESULT => {
                serve::result(&self.store, OWNER, params, &self.ended, request_cancel).await
            }
            TASKS_LIST => {
                let page_size = self.store.limits().page_size;
                serve::list(&self.store, OWNER, params, page_size).await
            }
            TASKS_CANCEL => {
                let record = serve::cancel(&self.store, OWNER, params).await?;
                if let Some(handler) = self.running().remove(&record.id) {
                    handler.cancel();
                }
                // A `tasks/result` waiting on it answers now.
                self.ended.notify_waiters();
                serve::cancelled(&record)
            }
            other => Err(ErrorObject::method_not_found(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use barrel_mcp_types::SamplingCapability;

    use super::*;

    #[test]
    fn declaring_keeps_what_is_there_and_adds_only_what_is_answered() {
        let mut samples = ClientCapabilities {
            sampling: Some(SamplingCapability::default()),
            tasks: Some(json!({ "list": { "custom": true } })),
            ..ClientCapabilities::default()
        };
        declare(&mut samples);
        assert_eq!(
            samples.tasks,
            Some(json!({
                "list": { "custom": true },
                "cancel": {},
                "requests": { "sampling": { "createMessage": {} } }
            }))
        );
        assert!(samples.supports_task_requests(SAMPLING_CREATE_MESSAGE));
        assert!(!samples.supports_task_requests(ELICITATION_CREATE));

        let mut roots_only = ClientCapabilities::default();
        declare(&mut roots_only);
        assert_eq!(roots_only.tasks, None);
    }

    #[test]
    fn the_task_is_taken_out_of_the_params() {
        let mut params = json!({ "maxTokens": 1, "task": { "ttl": 1500 } });
        assert_eq!(
            take_task(&mut params),
            Some(Some(Duration::from_millis(1500)))
        );
        assert_eq!(params, json!({ "maxTokens": 1 }));
        let mut no_ttl = json!({ "task": {} });
        assert_eq!(take_task(&mut no_ttl), Some(None));
        let mut plain = json!({ "maxTokens": 1 });
        assert_eq!(take_task(&mut plain), None);
    }
}
