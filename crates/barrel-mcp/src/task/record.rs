//! [`TaskRecord`]: one task, as the store keeps it, whatever wire form it is spoken in.
//!
//! The state machine (the same in both eras): a task starts `working`; `working` goes to
//! `input_required` or to a terminal state; `input_required` goes back to `working` or to a
//! terminal state; `completed`, `failed` and `cancelled` never change. Every change goes
//! through [`TaskRecord::set_status`], [`TaskRecord::finish`] or [`TaskRecord::cancel`], which
//! refuse to touch a terminal task: a late completion after a cancel is refused, not applied.
//!
//! A task being worked on carries a lease ([`TaskRecord::lease_until`]): its runner renews it
//! while the work runs. Once the lease has run out on a task that is not finished, the runner is
//! presumed gone (its process died, or it stalled past the lease), and whoever reads the task
//! next fails it ([`TaskRecord::fail_runner_lost`]): stores apply this rule on every read.
//!
//! How an outcome maps to a status depends on the era (the one thing the two wire forms
//! disagree on): a tool result with `isError: true` is `failed` in 2025-11-25 and `completed`
//! (the result carrying `isError`) in 2026-07-28; a JSON-RPC error is `failed` in both.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use barrel_mcp_types::{ErrorObject, Task, TaskStatus};
use serde_json::{Map, Value, json};

use super::time::rfc3339;

/// The protocol era a task was created in; it is never visible in the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2025-11-25 core tasks (sessions).
    Sessions,
    /// The 2026-07-28 `io.modelcontextprotocol/tasks` extension.
    Extension,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// The operation's result (a `CallToolResult` as JSON).
    Result(Value),
    /// A JSON-RPC error.
    Error(ErrorObject),
}

/// The message of the error (-32603) a task is failed with when its runner's lease ran out.
pub const RUNNER_STOPPED: &str = "the server node running this task stopped";

/// Why a change to a task was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The task already ended; it never changes again.
    Terminal,
    /// That transition does not exist (`working` to `working`, say).
    Invalid,
}

/// One task.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id (unguessable: 192 random bits).
    pub id: String,
    /// Who created it (a principal, or the session for an anonymous caller).
    pub owner: String,
    /// The era it lives in.
    pub era: Era,
    /// Where it stands.
    pub status: TaskStatus,
    /// A note on the state, for people.
    pub status_message: Option<String>,
    /// When it was created.
    pub created_at: SystemTime,
    /// When it last changed.
    pub updated_at: SystemTime,
    /// How long it is kept after creation (`None`: until the server restarts).
    pub ttl: Option<Duration>,
    /// How often a requestor should poll.
    pub poll_interval: Duration,
    /// The outcome, once terminal (`cancelled` has none).
    pub outcome: Option<TaskOutcome>,
    /// Questions waiting for the requestor (2026: `inputRequests`, by key).
    pub input_requests: BTreeMap<String, Value>,
    /// Answers to questions of `input_requests`, given (`tasks/update`) on a node that does not
    /// run the task's work: they wait here, by key, until its runner takes them. Never shown
    /// to requestors; a finished task holds none.
    pub input_answers: BTreeMap<String, Value>,
    /// Created by an anonymous caller: it is its own owner, and counts against the shared
    /// anonymous cap ([`TaskLimits::max_anonymous`](super::TaskLimits::max_anonymous)) instead
    /// of a per-owner one.
    pub anonymous: bool,
    /// Until when the task's runner is known to be alive: it renews the lease while the work
    /// runs ([`TaskStore::renew`](super::TaskStore::renew)). Once it has passed on a task that
    /// is not finished, the task is failed on its next read ([`runner_lost`](Self::runner_lost)).
    /// `None`: no lease (the task never fails for want of a runner); a finished task holds none.
    /// Stores keep it to the millisecond (rounded down), and only
    /// [`create`](super::TaskStore::create) and `renew` set it: an `update` leaves it as it was.
    pub lease_until: Option<SystemTime>,
}

impl TaskRecord {
    /// A task that starts `working` now.
    pub fn new(
        id: impl Into<String>,
        owner: impl Into<String>,
        era: Era,
        ttl: Option<Duration>,
        poll_interval: Duration,
    ) -> Self {
        let now = SystemTime::now();
        Self {
            id: id.into(),
            owner: owner.into(),
            era,
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl,
            poll_interval,
            outcome: None,
            input_requests: BTreeMap::new(),
            input_answers: BTreeMap::new(),
            anonymous: false,
            lease_until: None,
        }
    }

    /// This task with a lease of `lease` from now: it must be renewed before then, or the task
    /// fails as soon as someone reads it. A lease too long to count is no lease.
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease_until = SystemTime::now().checked_add(lease);
        self
    }

    /// True when the task is not finished and its runner's lease had run out at `now`: the
    /// runner stopped renewing it (its process died, or it stalled past the lease).
    pub fn runner_lost(&self, now: SystemTime) -> bool {
        !self.status.is_terminal() && self.lease_until.is_some_and(|until| now >= until)
    }

    /// Fails the task because its runner is gone: `failed`, with the JSON-RPC error -32603
    /// [`RUNNER_STOPPED`] as its outcome and its status message.
    pub fn fail_runner_lost(&mut self) -> Result<(), Refused> {
        self.finish(TaskOutcome::Error(ErrorObject::internal(RUNNER_STOPPED)))?;
        self.status_message = Some(RUNNER_STOPPED.to_owned());
        Ok(())
    }

    /// True once its TTL has passed at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        self.ttl
            .is_some_and(|ttl| now.duration_since(self.created_at).unwrap_or_default() >= ttl)
    }

    /// Moves to a non-terminal `next` (`working` ⇄ `input_required`).
    pub fn set_status(&mut self, next: TaskStatus) -> Result<(), Refused> {
        if self.status.is_terminal() {
            return Err(Refused::Terminal);
        }
        let allowed = matches!(
            (self.status, next),
            (TaskStatus::Working, TaskStatus::InputRequired)
                | (TaskStatus::InputRequired, TaskStatus::Working)
        );
        if !allowed {
            return Err(Refused::Invalid);
        }
        self.status = next;
        self.touch();
        Ok(())
    }

    /// Ends the task with `outcome`, mapped to a status as its era says.
    pub fn finish(&mut self, outcome: TaskOutcome) -> Result<(), Refused> {
        if self.status.is_terminal() {
            return Err(Refused::Terminal);
        }
        self.status = match (&outcome, self.era) {
            (TaskOutcome::Error(_), _) => TaskStatus::Failed,
            (TaskOutcome::Result(result), Era::Sessions)
                if result.get("isError") == Some(&Value::Bool(true)) =>
            {
                TaskStatus::Failed
            }
            (TaskOutcome::Result(_), _) => TaskStatus::Completed,
        };
        self.outcome = Some(outcome);
        self.input_requests.clear();
        self.input_answers.clear();
        self.lease_until = None;
        self.touch();
        Ok(())
    }

    /// Cancels the task (it stays cancelled whatever its work does next).
    pub fn cancel(&mut self) -> Result<(), Refused> {
        if self.status.is_terminal() {
            return Err(Refused::Terminal);
        }
        self.status = TaskStatus::Cancelled;
        self.input_requests.clear();
        self.input_answers.clear();
        self.lease_until = None;
        self.touch();
        Ok(())
    }

    fn touch(&mut self) {
        self.updated_at = SystemTime::now().max(self.updated_at);
    }

    /// The 2025-11-25 `Task`.
    pub fn to_task(&self) -> Task {
        Task {
            task_id: self.id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: rfc3339(self.created_at),
            last_updated_at: rfc3339(self.updated_at),
            ttl: self.ttl.map(millis),
            poll_interval: Some(millis(self.poll_interval)),
        }
    }

    /// The 2026-07-28 task fields (`ttlMs`, `pollIntervalMs`), as in a `CreateTaskResult`.
    pub fn to_extension_task(&self) -> Map<String, Value> {
        let mut task = Map::new();
        task.insert("taskId".into(), json!(self.id));
        task.insert("status".into(), json!(self.status));
        if let Some(message) = &self.status_message {
            task.insert("statusMessage".into(), json!(message));
        }
        task.insert("createdAt".into(), json!(rfc3339(self.created_at)));
        task.insert("lastUpdatedAt".into(), json!(rfc3339(self.updated_at)));
        task.insert("ttlMs".into(), json!(self.ttl.map(millis)));
        task.insert("pollIntervalMs".into(), json!(millis(self.poll_interval)));
        task
    }

    /// The 2026-07-28 `DetailedTask`: the task fields, plus the result when completed, the
    /// error when failed, the outstanding questions when input is required.
    pub fn to_detailed_task(&self) -> Map<String, Value> {
        let mut task = self.to_extension_task();
        match (&self.status, &self.outcome) {
            (TaskStatus::Completed, Some(TaskOutcome::Result(result))) => {
                task.insert("result".into(), result.clone());
            }
            (TaskStatus::Failed, Some(TaskOutcome::Error(error))) => {
                task.insert("error".into(), json!(error));
            }
            (TaskStatus::InputRequired, _) if !self.input_requests.is_empty() => {
                let requests: Map<String, Value> = self
                    .input_requests
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                task.insert("inputRequests".into(), Value::Object(requests));
            }
            _ => {}
        }
        task
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(era: Era) -> TaskRecord {
        TaskRecord::new(
            "t1",
            "alice",
            era,
            Some(Duration::from_secs(60)),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn the_state_machine() {
        let mut t = task(Era::Extension);
        assert_eq!(t.set_status(TaskStatus::Working), Err(Refused::Invalid));
        t.set_status(TaskStatus::InputRequired).unwrap();
        t.set_status(TaskStatus::Working).unwrap();
        assert_eq!(t.set_status(TaskStatus::Completed), Err(Refused::Invalid));
        t.cancel().unwrap();
        // Terminal states never change.
        assert_eq!(t.cancel(), Err(Refused::Terminal));
        assert_eq!(
            t.finish(TaskOutcome::Result(json!({"content": []}))),
            Err(Refused::Terminal)
        );
        assert_eq!(t.set_status(TaskStatus::Working), Err(Refused::Terminal));
        assert_eq!(t.status, TaskStatus::Cancelled);
        assert_eq!(t.outcome, None);
    }

    #[test]
    fn a_tool_error_is_failed_in_2025_and_completed_in_2026() {
        let tool_error = json!({"content": [], "isError": true});
        let mut old = task(Era::Sessions);
        old.finish(TaskOutcome::Result(tool_error.clone())).unwrap();
        assert_eq!(old.status, TaskStatus::Failed);
        let mut new = task(Era::Extension);
        new.finish(TaskOutcome::Result(tool_error)).unwrap();
        assert_eq!(new.status, TaskStatus::Completed);
        assert_eq!(new.to_detailed_task()["result"]["isError"], true);
        let mut broken = task(Era::Extension);
        broken
            .finish(TaskOutcome::Error(ErrorObject::internal("boom")))
            .unwrap();
        assert_eq!(broken.status, TaskStatus::Failed);
        let detailed = broken.to_detailed_task();
        assert_eq!(detailed["error"]["code"], -32603);
        assert!(detailed.get("result").is_none());
    }

    #[test]
    fn wire_fields_of_each_era() {
        let mut t = task(Era::Extension);
        t.input_requests
            .insert("q1".into(), json!({"method": "elicitation/create"}));
        t.set_status(TaskStatus::InputRequired).unwrap();
        let detailed = t.to_detailed_task();
        assert_eq!(detailed["ttlMs"], 60_000);
        assert_eq!(detailed["pollIntervalMs"], 1_000);
        assert!(detailed.get("ttl").is_none());
        assert_eq!(
            detailed["inputRequests"]["q1"]["method"],
            "elicitation/create"
        );
        assert!(detailed["createdAt"].as_str().unwrap().ends_with('Z'));
        let old = task(Era::Sessions).to_task();
        assert_eq!(old.ttl, Some(60_000));
        assert_eq!(old.poll_interval, Some(1_000));
        let wire = serde_json::to_value(&old).unwrap();
        assert!(wire.get("ttlMs").is_none());
    }

    #[test]
    fn a_lapsed_lease_fails_an_unfinished_task_only() {
        let now = SystemTime::now();
        let mut t = task(Era::Extension).with_lease(Duration::from_secs(10));
        assert!(!t.runner_lost(now));
        assert!(t.runner_lost(now + Duration::from_secs(11)));
        t.set_status(TaskStatus::InputRequired).unwrap();
        assert!(
            t.runner_lost(now + Duration::from_secs(11)),
            "a waiting task too"
        );
        t.fail_runner_lost().unwrap();
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.lease_until, None);
        assert!(!t.runner_lost(now + Duration::from_secs(11)));
        assert_eq!(t.fail_runner_lost(), Err(Refused::Terminal));
        let detailed = t.to_detailed_task();
        assert_eq!(detailed["error"]["code"], -32603);
        assert_eq!(detailed["error"]["message"], RUNNER_STOPPED);
        assert_eq!(detailed["statusMessage"], RUNNER_STOPPED);
        // The 2025-11-25 era fails it too (an error outcome is `failed` in both eras).
        let mut old = task(Era::Sessions).with_lease(Duration::ZERO);
        assert!(old.runner_lost(SystemTime::now()));
        old.fail_runner_lost().unwrap();
        assert_eq!(old.status, TaskStatus::Failed);
        // No lease, no failure; a lease too long to count is none.
        assert!(!task(Era::Sessions).runner_lost(now + Duration::from_secs(86_400)));
        assert_eq!(
            task(Era::Sessions).with_lease(Duration::MAX).lease_until,
            None
        );
    }

    #[test]
    fn expiry_follows_the_ttl() {
        let mut t = task(Era::Sessions);
        assert!(!t.expired(SystemTime::now()));
        assert!(t.expired(t.created_at + Duration::from_secs(60)));
        t.ttl = None;
        assert!(!t.expired(t.created_at + Duration::from_secs(86_400 * 365)));
    }
}
