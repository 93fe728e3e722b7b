//! Where tasks live: the [`TaskStore`] trait, its [`TaskLimits`], and the stores
//! ([`MemoryTaskStore`], the default, in `memory.rs`; `RedisTaskStore` in `redis_store.rs`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use barrel_mcp_types::ErrorObject;

use super::record::{Era, Refused, TaskRecord};
use crate::peer::BoxFuture;

mod memory;
#[cfg(feature = "redis")]
mod redis_store;

pub use self::memory::MemoryTaskStore;
#[cfg(feature = "redis")]
pub use self::redis_store::RedisTaskStore;

/// The bounds of a task store. Every field has a documented default.
#[derive(Debug, Clone)]
pub struct TaskLimits {
    /// Tasks one owner may hold at once (finished ones count until purged). Default 64.
    pub max_per_owner: usize,
    /// Tasks anonymous callers may hold at once, all together (each anonymous task is its own
    /// owner, so this is what bounds them; the rest of `max_tasks` stays for principals).
    /// Default 1,000.
    pub max_anonymous: usize,
    /// Tasks in the store at once. Default 10,000.
    pub max_tasks: usize,
    /// The longest TTL granted; longer requests are cut to it. Default 1 hour.
    pub max_ttl: Duration,
    /// The shortest TTL granted (a task must outlive its creation answer). Default 1 s.
    pub min_ttl: Duration,
    /// The TTL of a task whose requestor asked for none. Default 5 minutes.
    pub default_ttl: Duration,
    /// The polling interval suggested to requestors. Default 1 s.
    pub poll_interval: Duration,
    /// The largest result kept, in bytes of JSON; a larger one fails its task instead.
    /// Default 4 MiB.
    pub max_result_bytes: usize,
    /// How often a server forgets the tasks whose TTL has passed. Default 30 s.
    pub purge_interval: Duration,
    /// Tasks per `tasks/list` page (at least one). Default 50.
    pub page_size: usize,
    /// How long a task's runner may go without renewing its lease before the task counts as
    /// abandoned: the server that runs a task's work renews it every third of this while the
    /// work runs, and a task not finished whose lease has run out is failed (-32603, "the server
    /// node running this task stopped") by whoever reads it next, on any node sharing the store.
    /// The lease starts when the task is created. Longer means a dead node's tasks are seen
    /// failed later; shorter means a node that stalls (a runtime starved of threads, a store
    /// unreachable) for longer than this has its tasks failed under it, and its late results
    /// discarded. Read by the server, not the store. Values under 30 ms count as 30 ms; a
    /// value too long to add to the clock (`Duration::MAX`) takes no lease at all: tasks are
    /// then never failed for want of a runner. Default 10 s.
    pub lease: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_per_owner: 64,
            max_anonymous: 1_000,
            max_tasks: 10_000,
            max_ttl: Duration::from_secs(3600),
            min_ttl: Duration::from_secs(1),
            default_ttl: Duration::from_secs(300),
            poll_interval: Duration::from_secs(1),
            max_result_bytes: 4 * 1024 * 1024,
            purge_interval: Duration::from_secs(30),
            page_size: 50,
            lease: Duration::from_secs(10),
        }
    }
}

impl TaskLimits {
    /// The TTL to grant for a request of `asked` (none: the default), within the bound.
    pub fn ttl_for(&self, asked: Option<Duration>) -> Duration {
        asked
            .unwrap_or(self.default_ttl)
            .min(self.max_ttl)
            .max(self.min_ttl.min(self.max_ttl))
    }

    /// The lease a runner takes: [`lease`](Self::lease), at least [`MIN_LEASE`].
    pub(crate) fn granted_lease(&self) -> Duration {
        self.lease.max(MIN_LEASE)
    }
}

/// The shortest lease a runner takes, whatever [`TaskLimits::lease`] says.
const MIN_LEASE: Duration = Duration::from_millis(30);

/// A change to one task: applied to the stored record, atomically.
pub type TaskChange<'a> = &'a (dyn Fn(&mut TaskRecord) -> Result<(), Refused> + Send + Sync);

/// Why a store refused.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreRefusal {
    /// No such task for this owner and era (or it expired).
    NotFound,
    /// The change was refused by the task's state machine.
    Refused(Refused),
    /// A cap was reached.
    Full(String),
    /// The store failed.
    Unavailable(String),
}

impl StoreRefusal {
    /// The JSON-RPC error a request answering with this gets: an unknown task is invalid
    /// params (-32602); a refused change too; a full store or a failure is an internal error.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::NotFound => ErrorObject::invalid_params("unknown task"),
            Self::Refused(Refused::Terminal) => ErrorObject::invalid_params("the task is finished"),
            Self::Refused(Refused::Invalid) => {
                ErrorObject::invalid_params("the task cannot change that way")
            }
            Self::Full(why) => ErrorObject::internal(why.clone()),
            Self::Unavailable(_) => ErrorObject::internal("the task store is unavailable"),
        }
    }
}

/// Where tasks live.
///
/// No task state lives outside a store: the server creates, reads and changes tasks only
/// through this trait, so a shared store (`RedisTaskStore`, feature `redis`) serves every
/// node. The contract:
/// - `create` makes the task durable before it returns (a `CreateTaskResult` is never sent
///   before `tasks/get` would find the task), and refuses past the owner's cap, allocating
///   nothing;
/// - `get` and `update` see a task only for its owner and era (anyone else: not found), and
///   never an expired one;
/// - `update` applies a change atomically, and not at all when the change is refused (a store
///   may call it again on a conflict, so it must depend only on the record it is given); it
///   never changes the lease, and a task it finishes holds none;
/// - every field of a record is kept as written, [`TaskRecord::input_answers`] included: the
///   answers one node takes for a task another node runs wait there;
/// - `get`, `update` and `list` first fail a task whose runner's lease has run out
///   ([`TaskRecord::runner_lost`]) with [`TaskRecord::fail_runner_lost`], atomically: of many
///   readers at once exactly one makes the change, a renewal that got there first keeps the
///   task alive, a finished task is never touched, and every reader sees the task failed;
/// - `renew` extends a lease without changing anything else of the task;
/// - `purge` forgets the tasks whose TTL has passed.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task, durably, unless a cap forbids it.
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreRefusal>>;

    /// The task `id`, if it belongs to `owner` in `era` and has not expired.
    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>>;

    /// Applies `change` to the task `id` of `owner` in `era`, and returns it as changed.
    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>>;

    /// The tasks of `owner` in `era`, oldest first, `limit` at a time after the task `after`.
    fn list<'a>(
        &'a self,
        owner: &'a str,
        era: Era,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<TaskRecord>, StoreRefusal>>;

    /// Forgets the tasks expired at `now`; returns how many.
    fn purge(&self, now: SystemTime) -> BoxFuture<'_, usize>;

    /// Extends the lease of task `id` to `until` (kept to the millisecond; a renewal never
    /// shortens a lease): its runner is alive. This is the runner's call, not a requestor's, so
    /// it names no owner. A lease that has run out is taken up again as long as no reader
    /// failed the task meanwhile.
    ///
    /// Refuses with `Refused(Terminal)` when the task has ended: finished, cancelled (perhaps
    /// on another node), or failed because its lease had run out; its runner then stops the
    /// work, and its outcome is discarded. `Refused(Invalid)` when the task holds no lease,
    /// `NotFound` when it is gone (its TTL passed), `Unavailable` when the store failed (the
    /// runner tries again).
    fn renew<'a>(
        &'a self,
        id: &'a str,
        until: SystemTime,
    ) -> BoxFuture<'a, Result<(), StoreRefusal>>;
}

/// A shared store is a store: keep an `Arc` to look into the one a server uses.
impl<T: TaskStore + ?Sized> TaskStore for Arc<T> {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreRefusal>> {
        (**self).create(record)
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>> {
        (**self).get(id, owner, era)
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        era: Era,
        change: TaskChange<'a>,
    ) -> BoxFuture<'a, Result<TaskRecord, StoreRefusal>> {
        (**self).update(id, owner, era, change)
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        era: Era,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<TaskRecord>, StoreRefusal>> {
        (**self).list(owner, era, after, limit)
    }

    fn purge(&self, now: SystemTime) -> BoxFuture<'_, usize> {
        (**self).purge(now)
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        until: SystemTime,
    ) -> BoxFuture<'a, Result<(), StoreRefusal>> {
        (**self).renew(id, until)
    }
}

/// True when `next` is still the task `record` is: whose, which and when a task is never
/// changes.
fn same_identity(record: &TaskRecord, next: &TaskRecord) -> bool {
    next.id == record.id
        && next.owner == record.owner
        && next.era == record.era
        && next.created_at == record.created_at
}

/// `next`, the task as a change left it, with the lease of `record` (as stored before the
/// change): a change never sets a lease, and a finished task holds none.
fn keep_lease(record: &TaskRecord, next: &mut TaskRecord) {
    next.lease_until = if next.status.is_terminal() {
        None
    } else {
        record.lease_until
    };
}

/// `at`, rounded down to the millisecond (what stores keep of a lease).
fn floor_millis(at: SystemTime) -> SystemTime {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let millis = u64::try_from(since.as_millis()).unwrap_or(u64::MAX);
    std::time::UNIX_EPOCH
        .checked_add(Duration::from_millis(millis))
        .unwrap_or(at)
}

/// Where a record sorts in a list: creation time, then id.
fn sort_key(record: &TaskRecord) -> (u128, String) {
    let nanos = record
        .created_at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (nanos, record.id.clone())
}

/// The cursor of the page after `record` (it holds no more than where `record` sorts, so it
/// stays valid when `record` itself expires).
pub fn cursor_after(record: &TaskRecord) -> String {
    let (nanos, id) = sort_key(record);
    format!("{nanos}:{id}")
}

fn parse_cursor(cursor: &str) -> Option<(u128, String)> {
    let (nanos, id) = cursor.split_once(':')?;
    Some((nanos.parse().ok()?, id.to_owned()))
}

#[cfg(test)]
mod tests;
