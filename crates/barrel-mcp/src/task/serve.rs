//! The receiver's answers to the 2025-11-25 task methods (`tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`), read from a [`TaskStore`] for one owner. The server (tasks of
//! `tools/call`) and the client (tasks of `sampling/createMessage` and `elicitation/create`)
//! both answer through these, so the wire form, the errors and the paging are decided once.
//!
//! Who the owner is, and stopping the work behind a cancelled task, stay with the caller.

use barrel_mcp_types::ErrorObject;
use barrel_mcp_types::meta::RELATED_TASK_KEY;
use barrel_mcp_types::method::names;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Era, TaskOutcome, TaskRecord, TaskStore, cursor_after};
use crate::peer::Peer;

/// The `taskId` of a `tasks/*` request's params; -32602 without one.
pub(crate) fn task_id(params: Option<&Value>) -> Result<String, ErrorObject> {
    params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ErrorObject::invalid_params("invalid params: taskId is required"))
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// What a task's work returned, as the store keeps it: a result larger than `max_bytes` of
/// JSON fails the task instead of being kept.
pub(crate) fn keepable(outcome: Result<Value, ErrorObject>, max_bytes: usize) -> TaskOutcome {
    match outcome {
        Ok(result) => match serde_json::to_vec(&result).map(|bytes| bytes.len()) {
            Ok(size) if size <= max_bytes => TaskOutcome::Result(result),
            Ok(size) => TaskOutcome::Error(ErrorObject::internal(format!(
                "the task's result is too large to keep ({size} bytes, at most {max_bytes})"
            ))),
            Err(e) => TaskOutcome::Error(ErrorObject::internal(e.to_string())),
        },
        Err(error) => TaskOutcome::Error(error),
    }
}

/// Sends `notifications/tasks/status` with the task as it now stands (nothing without a peer).
pub(crate) async fn announce_status(peer: Option<&Peer>, record: &TaskRecord) {
    let Some(peer) = peer else {
        return;
    };
    if let Ok(params) = serde_json::to_value(record.to_task()) {
        // A closed connection has no one to tell.
        let _ = peer
            .notify(names::NOTIFICATIONS_TASKS_STATUS, Some(params))
            .await;
    }
}

/// `tasks/get`: the task as it stands.
pub(crate) async fn get(
    store: &dyn TaskStore,
    owner: &str,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    let id = task_id(params)?;
    let record = store
        .get(&id, owner, Era::Sessions)
        .await
        .map_err(|r| r.to_error_object())?;
    encode(&record.to_task())
}

/// `tasks/result`: waits until the task ends (woken by `ended`, and at the task's poll interval
/// in case the store is shared with another process), then answers with exactly its outcome,
/// carrying the related-task `_meta`. `cancel` (the request's own) stops the wait.
pub(crate) async fn result(
    store: &dyn TaskStore,
    owner: &str,
    params: Option<&Value>,
    ended: &Notify,
    cancel: &CancellationToken,
) -> Result<Value, ErrorObject> {
    let id = task_id(params)?;
    loop {
        // Registered before the read, so an end between the two is not missed.
        let woken = ended.notified();
        let record = store
            .get(&id, owner, Era::Sessions)
            .await
            .map_err(|r| r.to_error_object())?;
        if record.status.is_terminal() {
            return match record.outcome {
                Some(TaskOutcome::Result(result)) => Ok(with_related_task(result, &id)),
                Some(TaskOutcome::Error(error)) => Err(error),
                None => Err(ErrorObject::invalid_params("the task was cancelled")),
            };
        }
        tokio::select! {
            () = woken => {}
            () = tokio::time::sleep(record.poll_interval) => {}
            () = cancel.cancelled() => {
                return Err(ErrorObject::internal("the request was cancelled"));
            }
        }
    }
}

/// `result` with `_meta["io.modelcontextprotocol/related-task"]` naming task `id`.
pub(crate) fn with_related_task(mut result: Value, id: &str) -> Value {
    if let Value::Object(object) = &mut result {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(RELATED_TASK_KEY.to_owned(), json!({ "taskId": id }));
        }
    }
    result
}

/// `tasks/list`: the owner's tasks, oldest first, `page_size` at a time; an unknown cursor is
/// -32602.
pub(crate) async fn list(
    store: &dyn TaskStore,
    owner: &str,
    params: Option<&Value>,
    page_size: usize,
) -> Result<Value, ErrorObject> {
    let page_size = page_size.max(1);
    let cursor = params.and_then(|p| p.get("cursor")).and_then(Value::as_str);
    let page = store
        .list(owner, Era::Sessions, cursor, page_size + 1)
        .await
        .map_err(|_| ErrorObject::invalid_params("invalid cursor"))?;
    let more = page.len() > page_size;
    let page = &page[..page.len().min(page_size)];
    let tasks: Vec<_> = page.iter().map(TaskRecord::to_task).collect();
    let mut answer = json!({ "tasks": tasks });
    if more && let Some(last) = page.last() {
        answer["nextCursor"] = json!(cursor_after(last));
    }
    Ok(answer)
}

/// `tasks/cancel`, in the store: the task is `cancelled` before this returns; a finished task
/// is -32602. The caller stops the work and answers with the returned record.
pub(crate) async fn cancel(
    store: &dyn TaskStore,
    owner: &str,
    params: Option<&Value>,
) -> Result<TaskRecord, ErrorObject> {
    let id = task_id(params)?;
    let cancel = |t: &mut TaskRecord| t.cancel();
    store
        .update(&id, owner, Era::Sessions, &cancel)
        .await
        .map_err(|r| r.to_error_object())
}

/// The answer to `tasks/cancel`: the task as it now stands.
pub(crate) fn cancelled(record: &TaskRecord) -> Result<Value, ErrorObject> {
    encode(&record.to_task())
}
