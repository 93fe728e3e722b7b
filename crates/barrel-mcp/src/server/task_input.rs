//! A tool call on its way to becoming a task (the 2026-07-28 `io.modelcontextprotocol/tasks`
//! extension), and the questions a task's handler asks.
//!
//! - [`TaskSlot`] travels in the handler's [`Ctx`](super::Ctx). It holds the task once it
//!   exists, and, for a tool whose task starts in its handler, the way to ask the dispatcher to
//!   start it ([`TaskSlot::start`], behind `Ctx::start_task`).
//! - [`TaskInput`]: once the call is a task, a question parks the task: the question goes into
//!   the task's `inputRequests` under a key unique over the task's life, the status becomes
//!   `input_required`, and the handler waits. `tasks/update` ([`deliver`]) takes the key out
//!   (the status goes back to `working` when no question is left) and then wakes the handler
//!   with the answer. Unknown or already-answered keys are ignored.
//!
//! The waiting handlers live in this process (the record, with its questions, lives in the
//! store): an answer reaches a task only on the node that runs its work.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use barrel_mcp_types::{ErrorObject, InputRequest, TaskStatus};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::Error;
use crate::peer::Peer;
use crate::task::{Era, TaskRecord};

/// The dispatcher's answer to a start request: the task exists, or why it could not be made.
pub(crate) type StartReply = oneshot::Sender<Result<(), ErrorObject>>;

/// A call that is, or may become, a task.
pub(crate) struct TaskSlot {
    task: OnceLock<Arc<TaskInput>>,
    start: Mutex<Option<oneshot::Sender<StartReply>>>,
}

impl TaskSlot {
    /// A slot whose task the dispatcher creates before the handler runs.
    pub(crate) fn eager() -> Self {
        Self {
            task: OnceLock::new(),
            start: Mutex::new(None),
        }
    }

    /// A slot whose task starts when the handler asks, through `start`.
    pub(crate) fn deferred(start: oneshot::Sender<StartReply>) -> Self {
        Self {
            task: OnceLock::new(),
            start: Mutex::new(Some(start)),
        }
    }

    /// Records the task, once created.
    pub(crate) fn set(&self, task: Arc<TaskInput>) {
        let _ = self.task.set(task);
    }

    /// The task, once it exists.
    pub(crate) fn task(&self) -> Option<&Arc<TaskInput>> {
        self.task.get()
    }

    /// Makes the call a task now: `true` once it is one, `false` when it cannot become one (the
    /// caller then goes on as a plain request).
    pub(crate) async fn start(&self) -> crate::Result<bool> {
        if self.task.get().is_some() {
            return Ok(true);
        }
        let Some(start) = self
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Ok(false);
        };
        let (reply, answer) = oneshot::channel();
        if start.send(reply).is_err() {
            return Ok(false);
        }
        match answer.await {
            Ok(Ok(())) => Ok(true),
            Ok(Err(error)) => Err(Error::Rpc(error)),
            Err(_) => Err(Error::Cancelled),
        }
    }
}

/// The running task of a call: asks its questions through the task record.
pub(crate) struct TaskInput {
    server: Server,
    id: String,
    owner: String,
    era: Era,
    /// Questions out to the client (2025-11-25): the task is `input_required` while any is.
    outstanding: Arc<AtomicU32>,
    /// Told of each status change (`notifications/tasks/status`, 2025-11-25).
    announce: Option<Peer>,
    /// Every key asked so far: a key is unique over the task's life.
    used: Mutex<HashSet<String>>,
    next_key: AtomicU32,
}

impl TaskInput {
    pub(crate) fn new(server: Server, id: String, owner: String, era: Era) -> Self {
        Self {
            server,
            id,
            owner,
            era,
            outstanding: Arc::new(AtomicU32::new(0)),
            announce: None,
            used: Mutex::new(HashSet::new()),
            next_key: AtomicU32::new(0),
        }
    }

    /// Tells `peer` of each status change of the task (2025-11-25).
    pub(crate) fn announcing(mut self, peer: Peer) -> Self {
        self.announce = Some(peer);
        self
    }

    /// The task id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// True when questions park the task for `tasks/update` (2026-07-28); false when they go
    /// to the client as requests (2025-11-25).
    pub(crate) fn parks(&self) -> bool {
        self.era == Era::Extension
    }

    /// Marks the task `input_required` while a question is out to the client (2025-11-25);
    /// dropping the guard marks it `working` again once no question is left.
    pub(crate) async fn waiting_on_client(&self) -> crate::Result<ClientWait> {
        let first = self.outstanding.fetch_add(1, Ordering::SeqCst) == 0;
        // The guard exists before anything awaits: dropped at any point, it counts down.
        let wait = ClientWait {
            server: self.server.clone(),
            id: self.id.clone(),
            owner: self.owner.clone(),
            era: self.era,
            outstanding: Arc::clone(&self.outstanding),
            announce: self.announce.clone(),
        };
        if first {
            self.set_status(TaskStatus::InputRequired).await;
        }
        Ok(wait)
    }

    async fn set_status(&self, status: TaskStatus) {
        let change = move |t: &mut TaskRecord| {
            if t.status == status {
                return Ok(());
            }
            t.set_status(status)
        };
        if let Ok(record) = self
            .server
            .inner
            .tasks
            .store
            .update(&self.id, &self.owner, self.era, &change)
            .await
        {
            super::tasks::announce_status(self.announce.as_ref(), &record).await;
        }
    }

    /// The key of the next question: `key` (refused when this task already used it), else
    /// the next free automatic one (`i0`, `i1`, ...).
    fn claim(&self, key: Option<&str>) -> crate::Result<String> {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = key {
            if !used.insert(key.to_owned()) {
                return Err(Error::Protocol(format!(
                    "the input key {key:?} was already asked in this task (keys are unique \
                     over a task's life)"
                )));
            }
            return Ok(key.to_owned());
        }
        loop {
            let key = format!("i{}", self.next_key.fetch_add(1, Ordering::Relaxed));
            if used.insert(key.clone()) {
                return Ok(key);
            }
        }
    }

    /// Sets the task's status message (what progress becomes in a task).
    pub(crate) async fn note(&self, message: String) -> crate::Result<()> {
        let note = |t: &mut TaskRecord| {
            if t.status.is_terminal() {
                return Err(crate::task::Refused::Terminal);
            }
            t.status_message = Some(message.clone());
            Ok(())
        };
        self.server
            .inner
            .tasks
            .store
            .update(&self.id, &self.owner, Era::Extension, &note)
            .await
            .map(|_| self.server.task_changed(&self.id))
            .map_err(|refusal| Error::Rpc(refusal.to_error_object()))
    }

    /// Parks the task on `request` until `tasks/update` answers it, or `cancel` fires.
    pub(crate) async fn ask(
        &self,
        key: Option<&str>,
        request: InputRequest,
        cancel: &CancellationToken,
    ) -> crate::Result<Value> {
        let key = self.claim(key)?;
        let question = serde_json::to_value(&request)?;
        let tasks = &self.server.inner.tasks;
        let (answer_to, answer) = oneshot::channel();
        tasks
            .waiting()
            .entry(self.id.clone())
            .or_default()
            .insert(key.clone(), answer_to);
        let park = |t: &mut TaskRecord| {
            t.input_requests.insert(key.clone(), question.clone());
            if t.status == TaskStatus::Working {
                t.set_status(TaskStatus::InputRequired)?;
            }
            Ok(())
        };
        // Whatever ends the wait (an answer, a cancel, or the handler dropping this future),
        // a question no one waits for leaves the task.
        let mut pending = Pending {
            input: self,
            key: Some(key.clone()),
        };
        if let Err(refusal) = tasks
            .store
            .update(&self.id, &self.owner, Era::Extension, &park)
            .await
        {
            return Err(Error::Rpc(refusal.to_error_object()));
        }
        self.server.task_changed(&self.id);
        tokio::select! {
            answered = answer => {
                // Delivered: `tasks/update` already took the question out of the record.
                pending.key = None;
                answered.map_err(|_| Error::Cancelled)
            }
            () = cancel.cancelled() => Err(Error::Cancelled),
        }
    }
}

/// A question being waited on; dropped before its answer came, it is withdrawn: out of this
/// process's waiting list and out of the task's `inputRequests` (the task goes back to
/// `working` when none is left).
struct Pending<'a> {
    input: &'a TaskInput,
    key: Option<String>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else {
            return;
        };
        let TaskInput {
            server, id, owner, ..
        } = self.input;
        forget(server, id, &key);
        let (server, id, owner) = (server.clone(), id.clone(), owner.clone());
        // The record is changed off this (synchronous) path; without a runtime there is no
        // task left to change.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let withdraw = |t: &mut TaskRecord| withdraw(t, &key);
                let tasks = &server.inner.tasks;
                if tasks
                    .store
                    .update(&id, &owner, Era::Extension, &withdraw)
                    .await
                    .is_ok()
                {
                    server.task_changed(&id);
                }
            });
        }
    }
}

/// A question out to the client of a 2025-11-25 task; see [`TaskInput::waiting_on_client`].
pub(crate) struct ClientWait {
    server: Server,
    id: String,
    owner: String,
    era: Era,
    outstanding: Arc<AtomicU32>,
    announce: Option<Peer>,
}

impl Drop for ClientWait {
    fn drop(&mut self) {
        if self.outstanding.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        let (server, id, owner, era) = (
            self.server.clone(),
            self.id.clone(),
            self.owner.clone(),
            self.era,
        );
        let outstanding = Arc::clone(&self.outstanding);
        let announce = self.announce.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let working = |t: &mut TaskRecord| {
                    // Another question may have gone out meanwhile.
                    if outstanding.load(Ordering::SeqCst) == 0
                        && t.status == TaskStatus::InputRequired
                    {
                        t.set_status(TaskStatus::Working)?;
                    }
                    Ok(())
                };
                if let Ok(record) = server
                    .inner
                    .tasks
                    .store
                    .update(&id, &owner, era, &working)
                    .await
                {
                    super::tasks::announce_status(announce.as_ref(), &record).await;
                }
            });
        }
    }
}

/// Drops a waiting question of this process.
fn forget(server: &Server, id: &str, key: &str) {
    let mut waiting = server.inner.tasks.waiting();
    if let Some(keys) = waiting.get_mut(id) {
        keys.remove(key);
        if keys.is_empty() {
            waiting.remove(id);
        }
    }
}

/// `tasks/update`: hands each answer whose key a handler of this process waits on to it, after
/// taking the question out of the record (so a `tasks/get` after the ack no longer shows it).
pub(crate) async fn deliver(
    server: &Server,
    id: &str,
    owner: &str,
    responses: Map<String, Value>,
) -> Result<(), ErrorObject> {
    let tasks = &server.inner.tasks;
    for (key, answer) in responses {
        let waiter = {
            let mut waiting = tasks.waiting();
            let waiter = waiting.get_mut(id).and_then(|keys| keys.remove(&key));
            if waiting.get(id).is_some_and(HashMap::is_empty) {
                waiting.remove(id);
            }
            waiter
        };
        let Some(waiter) = waiter else {
            continue;
        };
        let answered = |t: &mut TaskRecord| withdraw(t, &key);
        tasks
            .store
            .update(id, owner, Era::Extension, &answered)
            .await
            .map_err(|r| r.to_error_object())?;
        server.task_changed(id);
        // The handler may have stopped waiting (cancelled): nothing is lost.
        let _ = waiter.send(answer);
    }
    Ok(())
}

/// Takes the question `key` out of a task; the task works on when no question is left.
fn withdraw(task: &mut TaskRecord, key: &str) -> Result<(), crate::task::Refused> {
    task.input_requests.remove(key);
    if task.input_requests.is_empty() && task.status == TaskStatus::InputRequired {
        task.set_status(TaskStatus::Working)?;
    }
    Ok(())
}
