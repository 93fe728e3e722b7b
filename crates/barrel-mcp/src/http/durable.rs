//! [`Durable`]: what a session kept in a shared store ([`SharedSessions`]) adds to its local
//! copy on one node: the write-through of its state changes, the amortised touch that keeps it
//! alive in the store, and the refresh from the store when another node changed it.
//!
//! - **Write-through:** each change the server reports (`SessionEvents`) is queued and written
//!   in order by one task at a time, spawned on the sessions' tracker while there is something
//!   to write; then the other nodes are told (`session-changed`). A write the store cannot take
//!   now is tried again (backing off up to 5 s) while the copy lives.
//! - **Touch:** at most once per `idle_ttl / 8` per session on this node, on a request or
//!   while someone waits on the session; `false` from the store means the session is gone
//!   everywhere (the request gets 404 and the copy is dropped).
//! - **Refresh:** the record is loaded and its state taken (the level, the subscriptions, and
//!   the client's `notifications/initialized`), unless this node's own writes are still on
//!   their way, or one was made while loading: then it is done once they landed, so the newer
//!   local change is not undone.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::session::HttpSession;
use super::shared::{News, SharedSessions};
use crate::server::SessionSync;
use crate::store::{NodeTag, SessionChange, SessionRecord, StoreError, Updated};

/// The first pause before a change the store refused is written again.
const FIRST_RETRY: Duration = Duration::from_millis(100);
/// The longest pause between two attempts to write a change.
const LAST_RETRY: Duration = Duration::from_secs(5);

/// The shared part of one session's local copy.
pub(crate) struct Durable {
    /// The session id (kept here: a change queued before the copy ended is still written).
    id: String,
    shared: SharedSessions,
    session: Weak<HttpSession>,
    tasks: TaskTracker,
    idle_ttl: Duration,
    /// This node opened the session (it answered its `initialize`).
    pub(crate) origin: bool,
    /// The node tag this copy's requests to the client carry (the node's tag when it was
    /// built).
    pub(crate) node: NodeTag,
    /// When this node last extended the session's life in the store; `None`: not yet.
    touched: Mutex<Option<Instant>>,
    writes: Mutex<Writes>,
    sync: OnceLock<SessionSync>,
    /// The second the session's messages for other nodes are counted in, and their count.
    forwards: Mutex<(Instant, u32)>,
}

#[derive(Default)]
struct Writes {
    queue: VecDeque<SessionChange>,
    /// A task is writing the queue.
    writing: bool,
    /// A refresh was put off while writing.
    stale: bool,
    /// Changes queued so far: a refresh that saw another count before its load may hold a
    /// record older than this copy's state.
    queued: u64,
}

impl fmt::Debug for Durable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Durable")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// What the store said of a session when touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touch {
    /// It lives (or the store could not say; the copy is kept).
    Alive,
    /// It is gone everywhere.
    Gone,
}

impl Durable {
    /// The shared part of the copy `session` of session `id`. The origin has just stored it,
    /// so its first touch is due only after the interval; a replica touches at its first
    /// request.
    pub(crate) fn new(
        id: String,
        shared: SharedSessions,
        session: Weak<HttpSession>,
        tasks: TaskTracker,
        idle_ttl: Duration,
        origin: bool,
    ) -> Self {
        Self {
            id,
            node: shared.bus.node(),
            shared,
            session,
            tasks,
            idle_ttl,
            origin,
            touched: Mutex::new(origin.then(Instant::now)),
            writes: Mutex::new(Writes::default()),
            sync: OnceLock::new(),
            forwards: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Connects it to the session's server connection.
    pub(crate) fn set_sync(&self, sync: SessionSync) {
        let _ = self.sync.set(sync);
    }

    pub(crate) fn sync(&self) -> Option<&SessionSync> {
        self.sync.get()
    }

    /// How often, at most, this node touches the session in the store.
    pub(crate) fn interval(&self) -> Duration {
        (self.idle_ttl / 8).max(Duration::from_millis(1))
    }

    fn writes(&self) -> MutexGuard<'_, Writes> {
        self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Extends the session's life in the store when this node has not done so for an
    /// interval. A store that cannot answer is logged and the session served: it is tried
    /// again an interval later.
    pub(crate) async fn keep_alive(&self) -> Touch {
        {
            let mut touched = self.touched.lock().unwrap_or_else(PoisonError::into_inner);
            if touched.is_some_and(|at| at.elapsed() < self.interval()) {
                return Touch::Alive;
            }
            *touched = Some(Instant::now());
        }
        // An interval more than the timeout: touches come at most once per interval.
        let ttl = self.idle_ttl + self.interval();
        match self.shared.store.touch(&self.id, ttl).await {
            Ok(true) => Touch::Alive,
            Ok(false) => {
                tracing::debug!(session = %self.id, "session gone from the store");
                Touch::Gone
            }
            Err(error) => {
                tracing::warn!(%error, "could not extend a session's life in the store");
                Touch::Alive
            }
        }
    }

    /// Queues `change` to be written to the store, in order.
    pub(crate) fn write(self: &Arc<Self>, change: SessionChange) {
        let mut writes = self.writes();
        if writes.queue.len() >= self.shared.max_pending_changes.max(1) {
            drop(writes);
            tracing::warn!(
                "too many changes of a session waiting for the store; one is not stored \
                 (max_pending_changes)"
            );
            return;
        }
        writes.queue.push_back(change);
        writes.queued += 1;
        if !writes.writing {
            writes.writing = true;
            drop(writes);
            self.tasks.spawn(Arc::clone(self).drain());
        }
    }

    /// Counts one message sent on to other nodes; false when the session already sent
    /// [`SharedSessions::max_forwards_per_second`] this second (through this node).
    pub(crate) fn may_forward(&self) -> bool {
        let mut forwards = self.forwards.lock().unwrap_or_else(PoisonError::into_inner);
        if forwards.0.elapsed() >= Duration::from_secs(1) {
            *forwards = (Instant::now(), 0);
        }
        if forwards.1 >= self.shared.max_forwards_per_second {
            return false;
        }
        forwards.1 += 1;
        true
    }

    /// True while changes wait to be written (the copy must not be dropped before).
    pub(crate) fn pending(&self) -> bool {
        let writes = self.writes();
        writes.writing || !writes.queue.is_empty()
    }

    /// True while this node's copy of the session is served.
    fn lives(&self) -> bool {
        self.session
            .upgrade()
            .is_some_and(|session| !session.kill.is_cancelled())
    }

    /// Writes the queue, tells the other nodes, then refreshes if that was put off. A change
    /// the store cannot take now is tried again, after [`FIRST_RETRY`] doubling up to
    /// [`LAST_RETRY`], for as long as the copy lives (the client's `initialized` must reach the
    /// other nodes once the store is back).
    async fn drain(self: Arc<Self>) {
        let mut changed = false;
        let mut pause = FIRST_RETRY;
        loop {
            let (next, stale) = {
                let mut writes = self.writes();
                match writes.queue.pop_front() {
                    Some(change) => (Some(change), false),
                    None => {
                        writes.writing = false;
                        (None, std::mem::take(&mut writes.stale))
                    }
                }
            };
            let Some(change) = next else {
                if changed {
                    News::Changed(&self.id).publish(&*self.shared.bus).await;
                }
                if stale {
                    self.refresh().await;
                }
                return;
            };
            match self.shared.store.update(&self.id, change.clone()).await {
                Ok(Updated::Applied) => {
                    changed = true;
                    pause = FIRST_RETRY;
                }
                Ok(Updated::Unknown) => {
                    tracing::debug!(session = %self.id, "session gone from the store");
                    self.writes().queue.clear();
                    self.drop_copy();
                }
                // Only a compare-and-set (the GET owner) conflicts; none is queued here.
                Ok(Updated::Conflict) => {
                    tracing::debug!("a change of a session lost a race and was not stored");
                }
                Ok(Updated::SubscriptionsFull) => tracing::warn!(
                    "a subscription is not stored: the session holds as many as the store \
                     allows"
                ),
                // An outage heals; a record the store cannot read does not.
                Err(error @ StoreError::Unavailable(_)) if self.lives() => {
                    tracing::warn!(%error, "a change of a session could not be stored; trying again");
                    self.writes().queue.push_front(change);
                    // Not past the copy's end (shutdown waits for this task).
                    if let Some(ended) = self.session.upgrade().map(|s| s.kill.clone()) {
                        tokio::select! {
                            () = tokio::time::sleep(pause) => {}
                            () = ended.cancelled() => {}
                        }
                    }
                    pause = (pause * 2).min(LAST_RETRY);
                }
                Err(error) => {
                    tracing::warn!(%error, "a change of a session could not be stored");
                }
            }
        }
    }

    /// Takes the state the store holds now, unless this node's own changes are on their way
    /// (then once they landed). A session gone from the store is dropped here too.
    pub(crate) async fn refresh(&self) {
        loop {
            let Some(seen) = self.unless_writing() else {
                return;
            };
            match self.shared.store.load(&self.id).await {
                Ok(Some(record)) => {
                    match self.unless_writing() {
                        None => return,
                        // A change was queued and written while loading: the record may
                        // predate it.
                        Some(queued) if queued != seen => continue,
                        Some(_) => {}
                    }
                    if let Some(session) = self.session.upgrade() {
                        session.apply(&record);
                    }
                }
                Ok(None) => self.drop_copy(),
                Err(error) => tracing::warn!(%error, "could not refresh a session from the store"),
            }
            return;
        }
    }

    /// The count of changes queued so far; `None` (and a refresh put off until the writes
    /// landed) while changes are being written.
    fn unless_writing(&self) -> Option<u64> {
        let mut writes = self.writes();
        if writes.writing {
            writes.stale = true;
            return None;
        }
        Some(writes.queued)
    }

    /// Ends this node's copy (the session is gone from the store).
    fn drop_copy(&self) {
        if let Some(session) = self.session.upgrade() {
            session.kill.cancel();
        }
    }

    /// The origin's copy was never initialized within the init timeout: unless the client
    /// initialized on another node, the session is deleted from the store.
    pub(crate) async fn forget_unused(&self) {
        match self.shared.store.delete_uninitialized(&self.id).await {
            Ok(true) => News::Ended(&self.id).publish(&*self.shared.bus).await,
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(%error, "could not check an uninitialized session; it expires");
            }
        }
    }

    /// Deletes the session from the store, on a task of its own (its `initialize` was
    /// refused).
    pub(crate) fn forget(self: &Arc<Self>) {
        let durable = Arc::clone(self);
        self.tasks.spawn(async move { durable.delete().await });
    }

    /// Deletes the session from the store (its `initialize` was refused, or it was never
    /// initialized) and tells the other nodes.
    pub(crate) async fn delete(&self) {
        match self.shared.store.delete(&self.id).await {
            Ok(_) => News::Ended(&self.id).publish(&*self.shared.bus).await,
            Err(error) => tracing::warn!(%error, "could not delete a session; it expires"),
        }
    }
}

impl HttpSession {
    /// Extends the session's life in the shared store when due; [`Touch::Gone`] when the store
    /// no longer has it (the copy is then dropped). Without a store, always alive.
    pub(crate) async fn keep_alive(&self) -> Touch {
        let Some(durable) = &self.durable else {
            return Touch::Alive;
        };
        let touch = durable.keep_alive().await;
        if touch == Touch::Gone {
            self.kill.cancel();
        }
        touch
    }

    /// Brings a shared session's copy up to date with the store.
    pub(crate) async fn refresh(&self) {
        if let Some(durable) = &self.durable {
            durable.refresh().await;
        }
    }

    /// Takes the state of `record` (another node changed the session).
    pub(crate) fn apply(&self, record: &SessionRecord) {
        if record.initialized {
            self.mark_initialized();
        }
        // Only a session whose connection runs here.
        let live = self.inlet().is_some();
        if live && let Some(sync) = self.durable.as_ref().and_then(|d| d.sync()) {
            sync.apply(record);
        }
    }

    /// Announces every kind of change to the client (the node that announced them before is
    /// gone).
    pub(crate) fn announce_all(&self) {
        let inlet = self.inlet().clone();
        if let (Some(inlet), Some(sync)) = (inlet, self.durable.as_ref().and_then(|d| d.sync())) {
            sync.announce_all(inlet.peer());
        }
    }

    /// Queues a change for the shared store, if there is one (made only then).
    pub(super) fn store(&self, change: impl FnOnce() -> SessionChange) {
        if let Some(durable) = &self.durable {
            durable.write(change());
        }
    }
}

/// The server's name for a shared session (`Ctx::session_id`, `Server::session`): the same on
/// every node, and not the `Mcp-Session-Id` itself (32 hex digits of its SHA-256).
pub(crate) fn server_name(id: &str) -> String {
    crate::server::hex_id(&Sha256::digest(id.as_bytes())[..16])
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_stable_hex_and_not_the_id() {
        let name = super::server_name("abc");
        assert_eq!(name, super::server_name("abc"));
        assert_ne!(name, super::server_name("abd"));
        assert_eq!(name.len(), 32);
        assert!(name.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!name.contains("abc"));
    }
}
