//! Tasks in 2026-07-28: the `io.modelcontextprotocol/tasks` extension (SEP-2663).
//!
//! - Creation is server-directed: a `tools/call` to a tool that takes tasks, from a request that
//!   declares the extension in its client capabilities, is answered with the task itself
//!   (`resultType: "task"`, the task fields flat at the top), once the record is in the store
//!   (so a `tasks/get` right after resolves). A tool whose task support is `required` refuses a
//!   request without the extension with -32021 (naming the extension it needs); an `optional`
//!   one runs as a plain call. A legacy `params.task` is ignored.
//! - The task starts before the handler runs, or, for a tool registered with
//!   `ServerBuilder::task_starts_in_handler`, when its handler calls `Ctx::start_task` (after
//!   gathering input in `input_required` rounds, say); until then the call is a plain request.
//! - `tasks/get` answers the `DetailedTask` (the result, error or questions inline),
//!   `tasks/update` hands `inputResponses` to the handler's waiting questions, `tasks/cancel`
//!   cancels (an ack, also for a task already finished). Each refuses a request that did not
//!   declare the extension with -32021; an unknown task is -32602. `tasks/result` and
//!   `tasks/list` do not exist in this era (-32601).
//! - A tool error is `completed` (the result carries `isError`); only a JSON-RPC error (or a
//!   panic) is `failed`.

use std::future::Future;
use std::sync::Arc;

use barrel_mcp_types::{ErrorCode, ErrorObject, Meta, Payload, SubscriptionFilter};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::context::Scope;
use super::invoke;
use super::task_input::{self, StartReply, TaskInput, TaskSlot};
use super::tasks::{self, TaskSupport};
use crate::peer::RequestContext;
use crate::task::{EXTENSION, Era, Refused, StoreRefusal, TaskRecord, new_task_id};

/// When a call's task starts.
pub(crate) enum Start {
    /// Before the handler runs.
    Eager,
    /// When the handler asks (`Ctx::start_task`); each ask arrives here.
    Deferred(oneshot::Receiver<StartReply>),
}

/// A call that may become a task: its slot (shared with the handler's context), when it
/// starts, and the authenticated principal it will belong to (`None`: anonymous).
pub(crate) struct TaskPlan {
    pub(crate) slot: Arc<TaskSlot>,
    pub(crate) start: Start,
    pub(crate) principal: Option<String>,
}

/// Who the task `id` belongs to: the authenticated principal; for an anonymous caller, the
/// task alone (`anonymous:<id>`). Anonymous callers share no identity, so each anonymous task
/// is its own owner and the unguessable id is the only handle; together they are bounded by
/// `TaskLimits::max_anonymous` (not by the per-owner cap, which is meant for one principal).
fn owner(principal: Option<&str>, id: &str) -> String {
    match principal {
        Some(principal) => principal.to_owned(),
        None => format!("anonymous:{id}"),
    }
}

fn principal(cx: &RequestContext) -> Option<String> {
    cx.caller
        .as_ref()
        .and_then(|c| c.auth())
        .map(crate::auth::AuthInfo::principal)
}

fn declared(scope: &Scope) -> bool {
    scope.client_capabilities.supports_extension(EXTENSION)
}

/// -32021: the request needs the extension and did not declare it.
fn missing_extension(what: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("{what} needs the {EXTENSION} extension, which the request did not declare"),
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } }))
}

/// A 2026-07-28 `tools/call`: as a task when the tool and the request allow it (see the
/// module docs), else as a plain call.
pub(crate) async fn call(
    server: &Server,
    scope: Scope,
    params: Option<Value>,
    cx: RequestContext,
) -> Result<Payload, ErrorObject> {
    let name = params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (support, deferred) = {
        let registry = server.read_registry();
        let support = registry
            .tools
            .get(name)
            .map_or(TaskSupport::Forbidden, |e| tasks::support(&e.tool));
        (support, registry.deferred_tasks.contains(name))
    };
    let plan = match (support, declared(&scope)) {
        (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => None,
        (TaskSupport::Required, false) => {
            return Err(missing_extension(&format!("the tool {name:?}")));
        }
        (_, true) => {
            let principal = principal(&cx);
            Some(if deferred {
                let (asks, start) = oneshot::channel();
                TaskPlan {
                    slot: Arc::new(TaskSlot::deferred(asks)),
                    start: Start::Deferred(start),
                    principal,
                }
            } else {
                TaskPlan {
                    slot: Arc::new(TaskSlot::eager()),
                    start: Start::Eager,
                    principal,
                }
            })
        }
    };
    let mode = plan.map_or(invoke::AsTask::No, invoke::AsTask::MayBecome);
    invoke::call_tool_as(server, scope, params, cx, mode).await
}

/// Runs a tool call's `work` under `plan`: answers with the task once it exists, or with the
/// call's own result when it ends first (a deferred start the handler never asked for).
pub(crate) async fn run(
    server: &Server,
    plan: TaskPlan,
    work: impl Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    request_cancel: CancellationToken,
    work_cancel: CancellationToken,
) -> Result<Value, ErrorObject> {
    let TaskPlan {
        slot,
        start,
        principal,
    } = plan;
    let principal = principal.as_deref();
    match start {
        Start::Eager => {
            let created = create(server, &slot, principal).await?;
            let work = tokio::spawn(work);
            created.watch(server, work_cancel, work)
        }
        Start::Deferred(mut asks) => {
            let mut work = tokio::spawn(work);
            tokio::select! {
                joined = &mut work => joined.unwrap_or_else(|_| {
                    Err(ErrorObject::internal("the tool's handler failed"))
                }),
                Ok(reply) = &mut asks => match create(server, &slot, principal).await {
                    Ok(created) => {
                        let _ = reply.send(Ok(()));
                        if request_cancel.is_cancelled() {
                            // The caller left while the task was being made: no one will
                            // ever know its id, so it ends here.
                            let (id, owner) = (created.id.clone(), created.owner.clone());
                            let _ = created.watch(server, work_cancel, work);
                            end(server, &id, &owner).await?;
                            return Err(ErrorObject::internal("the request was cancelled"));
                        }
                        created.watch(server, work_cancel, work)
                    }
                    Err(refusal) => {
                        // The call cannot become a task: it fails as a whole.
                        let _ = reply.send(Err(refusal.clone()));
                        work.abort();
                        Err(refusal)
                    }
                },
                () = request_cancel.cancelled() => {
                    work_cancel.cancel();
                    work.abort();
                    Err(ErrorObject::internal("the request was cancelled"))
                }
            }
        }
    }
}

/// A task just created: its `CreateTaskResult`, and what watching its work needs.
struct Created {
    answer: Value,
    id: String,
    owner: String,
    ttl: Option<std::time::Duration>,
}

impl Created {
    /// Hands the task's work to [`tasks::watch`] and returns the answer to the request.
    fn watch(
        self,
        server: &Server,
        cancel: CancellationToken,
        work: tokio::task::JoinHandle<Result<Value, ErrorObject>>,
    ) -> Result<Value, ErrorObject> {
        let watched = tasks::Watched {
            id: self.id,
            owner: self.owner,
            era: Era::Extension,
            ttl: self.ttl,
            announce: None,
        };
        tasks::watch(server, watched, cancel, work);
        Ok(self.answer)
    }
}

/// Creates the task record (durably: the store has it when this returns) and hands the task to
/// the handler's slot.
async fn create(
    server: &Server,
    slot: &TaskSlot,
    principal: Option<&str>,
) -> Result<Created, ErrorObject> {
    let limits = &server.config().task_limits;
    let id = new_task_id().map_err(|e| ErrorObject::internal(e.to_string()))?;
    let owner = owner(principal, &id);
    let ttl = limits.ttl_for(None);
    let mut record = TaskRecord::new(
        id.clone(),
        owner.clone(),
        Era::Extension,
        Some(ttl),
        limits.poll_interval,
    )
    // The lease starts now: a task whose work has not started yet is not taken for abandoned.
    .with_lease(limits.granted_lease());
    record.anonymous = principal.is_none();
    let mut created = record.to_extension_task();
    server
        .inner
        .tasks
        .store
        .create(record)
        .await
        .map_err(|refusal| refusal.to_error_object())?;
    slot.set(Arc::new(TaskInput::new(
        server.clone(),
        id.clone(),
        owner.clone(),
        Era::Extension,
    )));
    created.insert("resultType".into(), json!("task"));
    Ok(Created {
        answer: Value::Object(created),
        id,
        owner,
        ttl: Some(ttl),
    })
}

/// The task a `tasks/*` request names and its owner; -32021 without the extension.
fn target(
    method: &str,
    scope: &Scope,
    params: Option<&Value>,
    cx: &RequestContext,
) -> Result<(String, String), ErrorObject> {
    if !declared(scope) {
        return Err(missing_extension(method));
    }
    let id = tasks::task_id(params)?;
    let owner = owner(principal(cx).as_deref(), &id);
    Ok((id, owner))
}

/// The task `id` of `owner`; -32602 when there is none (or it is someone else's).
async fn find(server: &Server, id: &str, owner: &str) -> Result<TaskRecord, ErrorObject> {
    server
        .inner
        .tasks
        .store
        .get(id, owner, Era::Extension)
        .await
        .map_err(|r| r.to_error_object())
}

/// `tasks/get`: the `DetailedTask`.
pub(crate) async fn get(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let (id, owner) = target("tasks/get", scope, params.as_ref(), cx)?;
    let record = find(server, &id, &owner).await?;
    Ok(Value::Object(record.to_detailed_task()))
}

/// `tasks/update`: hands the answers to the task's waiting questions; an empty ack.
pub(crate) async fn update(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let (id, owner) = target("tasks/update", scope, params.as_ref(), cx)?;
    let responses = match params.as_ref().and_then(|p| p.get("inputResponses")) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(responses)) => responses.clone(),
        Some(_) => {
            return Err(ErrorObject::invalid_params(
                "invalid params: inputResponses must be an object",
            ));
        }
    };
    // An unknown (or someone else's) task is -32602, and nothing is delivered.
    task_input::deliver(server, &id, &owner, responses).await?;
    Ok(json!({}))
}

/// `tasks/cancel`: cancels the task and stops its work; an empty ack, also when the task had
/// already finished.
pub(crate) async fn cancel(
    server: &Server,
    scope: &Scope,
    params: Option<Value>,
    cx: &RequestContext,
) -> Result<Value, ErrorObject> {
    let (id, owner) = target("tasks/cancel", scope, params.as_ref(), cx)?;
    end(server, &id, &owner).await?;
    Ok(json!({}))
}

/// Cancels the task `id` of `owner` (nothing to do when it already ended) and stops its work.
async fn end(server: &Server, id: &str, owner: &str) -> Result<(), ErrorObject> {
    let cancel = |t: &mut TaskRecord| t.cancel();
    match server
        .inner
        .tasks
        .store
        .update(id, owner, Era::Extension, &cancel)
        .await
    {
        Ok(_) => server.task_changed(id),
        Err(StoreRefusal::Refused(Refused::Terminal)) => {}
        Err(refusal) => return Err(refusal.to_error_object()),
    }
    server.inner.tasks.stop(id);
    Ok(())
}

/// The task ids of a listen filter the caller may watch: -32021 without the extension; ids
/// of tasks it cannot see (someone else's, unknown, expired) are left out of the
/// acknowledgement.
pub(crate) async fn watchable(
    server: &Server,
    scope: &Scope,
    cx: &RequestContext,
    filter: &SubscriptionFilter,
) -> Result<Option<Vec<String>>, ErrorObject> {
    let Some(asked) = filter.task_ids.as_ref().filter(|ids| !ids.is_empty()) else {
        return Ok(None);
    };
    if !declared(scope) {
        return Err(missing_extension("a listen for taskIds"));
    }
    let limit = server.config().max_resource_subscriptions;
    if asked.len() > limit {
        return Err(ErrorObject::invalid_params(format!(
            "too many task ids in one filter ({}, limit {limit})",
            asked.len()
        )));
    }
    let principal = principal(cx);
    let mut visible = Vec::new();
    for id in asked {
        if find(server, id, &owner(principal.as_deref(), id))
            .await
            .is_ok()
        {
            visible.push(id.clone());
        }
    }
    Ok(Some(visible))
}

/// The `notifications/tasks` params for a change of task `id` (the `DetailedTask` and the
/// subscription's `_meta`), or `None` when the filter does not watch it or it is gone.
pub(crate) async fn notification(
    server: &Server,
    cx: &RequestContext,
    filter: &SubscriptionFilter,
    id: &str,
    tag: &Meta,
) -> Option<Value> {
    if !filter
        .task_ids
        .as_ref()
        .is_some_and(|ids| ids.iter().any(|i| i == id))
    {
        return None;
    }
    let owner = owner(principal(cx).as_deref(), id);
    let mut task = find(server, id, &owner).await.ok()?.to_detailed_task();
    task.insert("_meta".into(), Value::Object(tag.clone()));
    Some(Value::Object(task))
}
