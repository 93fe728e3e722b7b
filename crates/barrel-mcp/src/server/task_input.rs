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
//! The waiting handlers live in the process that runs the task's work; the record, with its
//! questions, lives in the store, which several nodes of a service may share. A `tasks/update`
//! that reaches another node moves each answer from the record's questions to its
//! `input_answers` (one atomic change, so of two answers to one key only the first counts), and
//! tells the other nodes ([`Server::tell_task_answered`]); the runner's node takes the answers
//! out of the record and wakes its handlers ([`collect`]). News between nodes is lossy: a
//! waiting handler also looks in the store every third of the task lease
//! ([`TaskLimits::lease`](crate::task::TaskLimits::lease)), and every node looks for each of
//! its waiting tasks after a gap in the news, so a lost message delays an answer (by a third
//! of the lease at most; with a lease too long to count, until the next news of the task)
//! but does not drop it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use barrel_mcp_types::{ErrorObject, InputRequest, TaskStatus};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::tasks::Waiting;
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
        let (answer_to, mut answer) = oneshot::channel();
        tasks
            .waiting()
            .entry(self.id.clone())
            .or_insert_with(|| Waiting {
                owner: self.owner.clone(),
                keys: HashMap::new(),
                looking: false,
                look_again: false,
            })
            .keys
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
        // An answer given on another node, whose news was lost, is found in the store.
        let look_every = self.server.config().task_limits.granted_lease() / 3;
        loop {
            tokio::select! {
                answered = &mut answer => {
                    // Delivered: `tasks/update` already took the question out of the record.
                    pending.key = None;
                    return answered.map_err(|_| Error::Cancelled);
                }
                () = cancel.cancelled() => return Err(Error::Cancelled),
                // Off this future: a store that hangs does not hide a cancellation.
                () = tokio::time::sleep(look_every) => look_soon(&self.server, &self.id),
            }
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

/// Drops a waiting question of this process; its handler, when there is one.
fn forget(server: &Server, id: &str, key: &str) -> Option<oneshot::Sender<Value>> {
    let mut waiting = server.inner.tasks.waiting();
    let task = waiting.get_mut(id)?;
    let handler = task.keys.remove(key);
    if task.keys.is_empty() {
        waiting.remove(id);
    }
    handler
}

/// `tasks/update`: takes each answered question out of the record, in one change; wakes the
/// handlers of this process that wait on them, and leaves the other answers in the record for
/// the node that runs the task (telling it so). Keys the task does not ask (unknown, or
/// answered already) are ignored. An unknown task (or someone else's) is -32602.
pub(crate) async fn deliver(
    server: &Server,
    id: &str,
    owner: &str,
    responses: Map<String, Value>,
) -> Result<(), ErrorObject> {
    let tasks = &server.inner.tasks;
    let here: HashSet<String> = tasks.waiting().get(id).map_or_else(HashSet::new, |task| {
        responses
            .keys()
            .filter(|key| task.keys.contains_key(*key))
            .cloned()
            .collect()
    });
    // What the change did in its last run (a store may run it again on a conflict): the keys
    // of `here` it took out of the record, whose answers are handed over here, and the keys
    // whose answers it left in the record for the runner.
    let taken_here = Mutex::new(HashSet::new());
    let left = AtomicBool::new(false);
    let answered = |t: &mut TaskRecord| {
        let mut taken = taken_here.lock().unwrap_or_else(PoisonError::into_inner);
        taken.clear();
        left.store(false, Ordering::Relaxed);
        for (key, answer) in &responses {
            if t.input_requests.remove(key).is_none() {
                continue;
            }
            if here.contains(key) {
                taken.insert(key.clone());
            } else {
                t.input_answers.insert(key.clone(), answer.clone());
                left.store(true, Ordering::Relaxed);
            }
        }
        if t.input_requests.is_empty() && t.status == TaskStatus::InputRequired {
            t.set_status(TaskStatus::Working)?;
        }
        Ok(())
    };
    tasks
        .store
        .update(id, owner, Era::Extension, &answered)
        .await
        .map_err(|r| r.to_error_object())?;
    let taken_here = taken_here
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let left = left.into_inner();
    if taken_here.is_empty() && !left {
        // Nothing the task asks (no key, or none it waits on): nothing changed.
        return Ok(());
    }
    server.task_changed(id);
    if left {
        server.tell_task_answered(id);
    }
    for (key, answer) in responses {
        if taken_here.contains(&key)
            && let Some(handler) = forget(server, id, &key)
        {
            // The handler may have stopped waiting (cancelled): nothing is lost.
            let _ = handler.send(answer);
        }
    }
    Ok(())
}

/// Looks for answers to task `id` in the store soon, off the caller's path (see [`collect`]),
/// when a question of the task waits here.
pub(crate) fn look_soon(server: &Server, id: &str) {
    if server.inner.tasks.waiting().contains_key(id) {
        let (server, id) = (server.clone(), id.to_owned());
        tokio::spawn(async move { collect(&server, &id).await });
    }
}

/// Hands the answers other nodes left in task `id`'s record (see [`deliver`]) to the handlers
/// of this process waiting on them, then takes them out of the record (answers no handler
/// waits for any more are dropped with them; a failed clean-up is done again by the next
/// look). One look at a time per task: a call while one is under way makes it look once more
/// when done. One read when there is no answer.
pub(crate) async fn collect(server: &Server, id: &str) {
    let tasks = &server.inner.tasks;
    let owner = {
        let mut waiting = tasks.waiting();
        let Some(task) = waiting.get_mut(id) else {
            return;
        };
        if task.looking {
            task.look_again = true;
            return;
        }
        task.looking = true;
        task.owner.clone()
    };
    // Cleared however the look ends (this future may be dropped at an await).
    let _looking = Looking { server, id };
    loop {
        look(server, id, &owner).await;
        let again = tasks
            .waiting()
            .get_mut(id)
            .is_some_and(|task| std::mem::take(&mut task.look_again));
        if !again {
            return;
        }
    }
}

/// One look for task `id`'s answers (see [`collect`]).
async fn look(server: &Server, id: &str, owner: &str) {
    let tasks = &server.inner.tasks;
    let Ok(record) = tasks.store.get(id, owner, Era::Extension).await else {
        return;
    };
    if record.input_answers.is_empty() {
        return;
    }
    // Handed over first: a clean-up that fails (or never finishes) loses no answer.
    for (key, answer) in &record.input_answers {
        if let Some(handler) = forget(server, id, key) {
            let _ = handler.send(answer.clone());
        }
    }
    let take = |t: &mut TaskRecord| {
        for key in record.input_answers.keys() {
            t.input_answers.remove(key);
        }
        Ok(())
    };
    if let Err(refusal) = tasks.store.update(id, owner, Era::Extension, &take).await {
        // Gone or ended (the record dropped them then), or a store outage: the next look
        // drops them.
        tracing::debug!(task = %id, ?refusal, "answers to a task were not cleaned up yet");
    }
}

/// Marks the end of a look in the store (see [`collect`]).
struct Looking<'a> {
    server: &'a Server,
    id: &'a str,
}

impl Drop for Looking<'_> {
    fn drop(&mut self) {
        if let Some(task) = self.server.inner.tasks.waiting().get_mut(self.id) {
            task.looking = false;
            task.look_again = false;
        }
    }
}

/// Takes the question `key` out of a task (with an answer another node left for it); the task
/// works on when no question is left.
fn withdraw(task: &mut TaskRecord, key: &str) -> Result<(), crate::task::Refused> {
    task.input_requests.remove(key);
    task.input_answers.remove(key);
    if task.input_requests.is_empty() && task.status == TaskStatus::InputRequired {
        task.set_status(TaskStatus::Working)?;
    }
    Ok(())
}
