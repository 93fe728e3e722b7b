//! [`Journal`]: the events of a shared session's streams, stored before the client sees them.
//!
//! With [`SharedSessions::events`], every message a session's copy sends on one of its streams
//! is appended to the event store first, and only then written to the stream, with the
//! sequence number the store gave it: an id the client holds names an event every node can
//! replay (durable before visible). One task per session at a time works through the queue,
//! in the order the messages were sent, while there is something in it. A message the store
//! cannot take (it is down, or the session is full of streams) goes out without an id: the live
//! reader sees it, a resume cannot replay it (and an append that timed out after Redis applied
//! it is replayed to a client that resumes). Once an append failed, or
//! [`SharedSessions::max_pending_events`] wait, what is queued goes out without ids, in order
//! and without waiting for the store, until the queue is empty: a store that hangs stalls a
//! session for one timeout, and the queue holds what arrives meanwhile. The stream of the `initialize` that opened the session is not stored
//! (its client holds no session id until that answer arrives, so never resumes it).
//!
//! Request streams are numbered with the node's tag ([`NodeTag::stream`]), from a random start
//! in the first half of the node's range, so no two copies of one session (on two nodes, or
//! one after another on one node) number a stream alike. The first event of a stream opens it
//! in the store, in the same round trip ([`EventStore::append_first`]); a stream whose first
//! event is its response is stored whole ([`EventStore::append_single`]: one `SET` on Redis),
//! unless an earlier event of it may have reached the store (an append that failed): a whole
//! stream's number must be new. A stream that ends
//! without a response (its request was cancelled, or the copy ended) is finished in the store
//! ([`EventStore::finish`]), so a node following it stops waiting. When the copy ends, its
//! streams are ended once what is queued was written.
//!
//! The GET stream (number 0) has producers on every node and is served by one: the node the
//! client last opened it on (`follow.rs`), which the store records as the stream's producer.
//! Registry changes (`list_changed`, `resources/updated`) are written to it by that node only:
//! the other copies do not hear them
//! ([`SessionEvents::hears_changes`](crate::server::SessionEvents)). A message another node
//! sends on it is appended there and announced (`session-appended`); the serving node then
//! reads the store after what it sent. A copy learns who serves the stream from the store when
//! it is built and whenever the bus says the stream moved.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use barrel_mcp_types::RequestId;
use bytes::Bytes;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::session::{GET_STREAM, HttpSession};
use super::shared::{News, SharedSessions};
use crate::store::{EventLimits, EventStore, NodeTag, StreamInfo, Topic};

/// One thing to write, in order.
enum Work {
    /// A message for stream `stream` (`last`: its response, answering `request`); `store`:
    /// appended to the store first (else sent without an id).
    Event {
        stream: u64,
        data: String,
        last: bool,
        request: Option<RequestId>,
        store: bool,
    },
    /// Stream `stream` ended without a response.
    End(u64),
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Work>,
    /// A task is working through the queue.
    writing: bool,
    /// The store failed, or too much waits for it: what is queued goes out without an id
    /// (in order, without waiting for the store) until the queue is empty.
    bypass: bool,
    /// The copy ended: its streams end once the queue is empty.
    closing: bool,
    /// Request streams opened in the store and not finished.
    opened: HashSet<u64>,
    /// Request streams whose first append failed: it may have reached the store all the same
    /// (an append that timed out after Redis applied it), so their next event opens them with
    /// `append_first`, never as a whole stream. (A refused append wrote nothing, and an event
    /// sent without waiting for the store was never tried: neither counts.)
    tried: HashSet<u64>,
}

/// How an event goes into the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Append {
    /// The stream's first and last event, on a stream never tried: the whole stream.
    Whole,
    /// The stream's first event this node stored: it opens the stream.
    First,
    /// An event of a stream open in the store (or of the GET stream).
    Next,
}

/// The GET stream as this node serves it.
pub(crate) struct Serving {
    /// Cancelled when it ends (the client left, or another GET replaced it).
    pub(crate) over: CancellationToken,
    /// Where messages that could not be stored go (live only).
    pub(crate) live: mpsc::Sender<Bytes>,
}

/// The event-store side of one shared session's copy.
pub(crate) struct Journal {
    pub(crate) session: String,
    pub(crate) events: Arc<dyn EventStore>,
    pub(crate) limits: EventLimits,
    pub(crate) shared: SharedSessions,
    /// The tag this copy's stream numbers carry.
    pub(crate) node: NodeTag,
    /// The number of this copy's first request stream.
    first_stream: u64,
    tasks: TaskTracker,
    copy: Weak<HttpSession>,
    queue: Mutex<Queue>,
    /// The node serving the GET stream, as this copy last learned (0: none known).
    get_server: AtomicU32,
    /// Counts the GET streams this node started serving: what the store said before the
    /// latest one started does not end it.
    serving_since: AtomicU64,
    /// Woken when the GET stream grew in the store.
    pub(crate) grew: Notify,
    /// The GET stream served here, if any.
    serving: Mutex<Option<Serving>>,
    /// Request streams of this session followed on this node from the store.
    followers: Arc<AtomicUsize>,
}

/// A place among a session's followed streams, given back when dropped.
pub(crate) struct FollowerSlot(Arc<AtomicUsize>);

impl Drop for FollowerSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

/// The number of a copy's first request stream on node `node`: its tag, and a random start
/// in the first half of its range; `None` without randomness (then no copy is made).
pub(crate) fn first_stream(node: NodeTag) -> Option<u64> {
    let mut random = [0u8; 4];
    getrandom::fill(&mut random).ok()?;
    let offset = u32::from_le_bytes(random) % (1 << 31);
    Some(node.stream(offset.max(1)))
}

impl Journal {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        session: String,
        events: Arc<dyn EventStore>,
        limits: EventLimits,
        shared: SharedSessions,
        node: NodeTag,
        first_stream: u64,
        tasks: TaskTracker,
        copy: Weak<HttpSession>,
    ) -> Self {
        Self {
            session,
            events,
            limits,
            shared,
            node,
            first_stream,
            tasks,
            copy,
            queue: Mutex::new(Queue::default()),
            get_server: AtomicU32::new(0),
            serving_since: AtomicU64::new(0),
            grew: Notify::new(),
            serving: Mutex::new(None),
            followers: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A place for one more followed request stream, unless
    /// [`SharedSessions::max_followed_streams`] are followed here.
    pub(crate) fn follower(&self) -> Option<FollowerSlot> {
        let max = self.shared.max_followed_streams;
        self.followers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| FollowerSlot(Arc::clone(&self.followers)))
    }

    /// The number of this copy's first request stream.
    pub(crate) fn first_stream(&self) -> u64 {
        self.first_stream
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn serving(&self) -> MutexGuard<'_, Option<Serving>> {
        self.serving.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `work` on the sessions' tasks (a shutdown waits for it).
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(work);
    }

    /// True while this node serves the session's GET stream (it hears registry changes).
    pub(crate) fn serves_get(&self) -> bool {
        self.get_server.load(Ordering::Acquire) == self.node.get()
    }

    /// True while a GET stream is served here.
    pub(crate) fn is_serving(&self) -> bool {
        self.serving()
            .as_ref()
            .is_some_and(|serving| !serving.over.is_cancelled())
    }

    /// True while messages wait to be written.
    pub(crate) fn pending(&self) -> bool {
        let queue = self.queue();
        queue.writing || !queue.pending.is_empty()
    }

    /// This node serves the GET stream now (`serving`), in place of whatever served it.
    pub(crate) fn serve_get(&self, serving: Serving) {
        self.serving_since.fetch_add(1, Ordering::AcqRel);
        self.get_server.store(self.node.get(), Ordering::Release);
        if let Some(old) = self.serving().replace(serving) {
            old.over.cancel();
        }
        // What this node appended meanwhile was announced only to the other nodes.
        self.grew.notify_one();
    }

    /// Who serves the GET stream, as the store says (its producer): learned when the copy is
    /// built, and again when the bus says the stream moved (the store orders concurrent
    /// openings; the bus's news may arrive in another order). A stream served here ends when
    /// another node serves it.
    pub(crate) fn learn_server(self: &Arc<Self>) {
        let journal = Arc::clone(self);
        let since = self.serving_since.load(Ordering::Acquire);
        self.tasks.spawn(async move {
            match journal
                .events
                .replay(&journal.session, GET_STREAM, u64::MAX)
                .await
            {
                // Read before this node started serving a GET stream: out of date.
                Ok(Some(_)) if journal.serving_since.load(Ordering::Acquire) != since => {}
                Ok(Some(replay)) => journal.set_server(replay.info.producer),
                Ok(None) => {}
                Err(error) => tracing::debug!(%error, "could not learn who serves a GET stream"),
            }
        });
    }

    /// The bus says node `node` serves the GET stream now. Taken as said unless a stream is
    /// served here: then the store decides.
    pub(crate) fn moved(self: &Arc<Self>, node: NodeTag) {
        if self.is_serving() {
            self.learn_server();
        } else {
            self.set_server(node);
        }
    }

    fn set_server(&self, node: NodeTag) {
        self.get_server.store(node.get(), Ordering::Release);
        if node != self.node
            && let Some(old) = self.serving().take()
        {
            old.over.cancel();
        }
    }

    /// Queues `data` for stream `stream` (`last`: its response, answering `request`).
    pub(crate) fn push(
        self: &Arc<Self>,
        stream: u64,
        data: String,
        last: bool,
        request: Option<RequestId>,
    ) {
        let mut queue = self.queue();
        if queue.pending.len() >= self.shared.max_pending_events && !queue.bypass {
            tracing::warn!("too many events wait for the event store; they go out without ids");
            queue.bypass = true;
        }
        let store = !queue.bypass;
        queue.pending.push_back(Work::Event {
            stream,
            data,
            last,
            request,
            store,
        });
        self.start(queue);
    }

    /// Request stream `stream` ended without a response (cancelled): finished in the store
    /// too, after what is queued for it.
    pub(crate) fn ended(self: &Arc<Self>, stream: u64) {
        let mut queue = self.queue();
        queue.pending.push_back(Work::End(stream));
        self.start(queue);
    }

    /// The copy ended: `streams` (its request streams not finished) end in the store, and
    /// every stream here once what is queued was written. False when something is queued (the
    /// streams here are ended by the task writing it); true when the caller ends them now.
    pub(crate) fn close(self: &Arc<Self>, streams: impl IntoIterator<Item = u64>) -> bool {
        let mut queue = self.queue();
        if queue.closing {
            // Closed before (the connection ended, then its task): nothing more to end.
            return queue.pending.is_empty() && !queue.writing;
        }
        queue.closing = true;
        queue.pending.extend(streams.into_iter().map(Work::End));
        if queue.pending.is_empty() && !queue.writing {
            return true;
        }
        self.start(queue);
        false
    }

    /// Starts a task to work through the queue, unless one runs.
    fn start(self: &Arc<Self>, mut queue: MutexGuard<'_, Queue>) {
        if !queue.writing {
            queue.writing = true;
            drop(queue);
            let journal = Arc::clone(self);
            let copy = self.copy.upgrade();
            self.tasks.spawn(journal.drain(copy));
        }
    }

    /// Writes what is queued, in order, until nothing is. The copy is held meanwhile, so what
    /// it sent reaches its streams even when it ended.
    async fn drain(self: Arc<Self>, copy: Option<Arc<HttpSession>>) {
        loop {
            let (next, how) = {
                let mut queue = self.queue();
                let Some(next) = queue.pending.pop_front() else {
                    queue.writing = false;
                    queue.bypass = false;
                    let closing = queue.closing;
                    drop(queue);
                    if let (true, Some(copy)) = (closing, &copy) {
                        copy.finish_streams();
                    }
                    return;
                };
                let how = match &next {
                    Work::Event { stream, last, .. }
                        if *stream != GET_STREAM && !queue.opened.contains(stream) =>
                    {
                        if *last && !queue.tried.contains(stream) {
                            Append::Whole
                        } else {
                            Append::First
                        }
                    }
                    Work::Event { .. } | Work::End(_) => Append::Next,
                };
                (next, how)
            };
            match next {
                Work::Event {
                    stream,
                    data,
                    last,
                    request,
                    store,
                } => {
                    // Once the store failed or fell behind, the rest of the queue goes out
                    // without waiting for it.
                    let store = store && !self.queue().bypass;
                    let (seq, failed) = if store {
                        match self.append(stream, &data, last, request, how).await {
                            Ok(seq) => (seq, false),
                            Err(()) => (None, true),
                        }
                    } else {
                        (None, false)
                    };
                    {
                        let mut queue = self.queue();
                        if last {
                            queue.opened.remove(&stream);
                            queue.tried.remove(&stream);
                        } else if how == Append::First {
                            if seq.is_some() {
                                queue.tried.remove(&stream);
                                queue.opened.insert(stream);
                            } else if failed {
                                queue.tried.insert(stream);
                            }
                        }
                    }
                    if last && seq.is_none() && stream != GET_STREAM {
                        // Its response is not in the store: a node following the stream
                        // would wait for it (told on the side: the store may be hanging).
                        let journal = Arc::clone(&self);
                        self.tasks
                            .spawn(async move { journal.finish(stream).await });
                    }
                    self.deliver(copy.as_deref(), stream, seq, &data, last);
                }
                Work::End(stream) => {
                    let bypass = {
                        let mut queue = self.queue();
                        queue.opened.remove(&stream);
                        queue.tried.remove(&stream);
                        queue.bypass
                    };
                    if bypass {
                        let journal = Arc::clone(&self);
                        self.tasks
                            .spawn(async move { journal.finish(stream).await });
                    } else {
                        self.finish(stream).await;
                    }
                }
            }
        }
    }

    /// Appends one message: its sequence number, `Ok(None)` when the store refused it (nothing
    /// was written), `Err` when the store failed (it may have written it all the same).
    async fn append(
        &self,
        stream: u64,
        data: &str,
        last: bool,
        request: Option<RequestId>,
        how: Append,
    ) -> Result<Option<u64>, ()> {
        let (session, limits) = (&self.session, &self.limits);
        let appended = match how {
            Append::Whole => {
                self.events
                    .append_single(session, stream, self.info(request), data, limits)
                    .await
            }
            Append::First => {
                self.events
                    .append_first(session, stream, self.info(request), data, last, limits)
                    .await
            }
            Append::Next => {
                self.events
                    .append(session, stream, data, last, limits)
                    .await
            }
        };
        appended.map_err(|error| {
            tracing::warn!(%error, "an event could not be stored; what waits goes out without ids");
            self.queue().bypass = true;
        })
    }

    /// What the store records of a stream this node produces, answering `request`.
    pub(crate) fn info(&self, request: Option<RequestId>) -> StreamInfo {
        StreamInfo {
            producer: self.node,
            request,
        }
    }

    /// Finishes request stream `stream` in the store (a failure is logged: it expires).
    pub(crate) async fn finish(&self, stream: u64) {
        let finished = self
            .events
            .finish(&self.session, stream, self.info(None), &self.limits)
            .await;
        if let Err(error) = finished {
            tracing::debug!(%error, "could not finish a stream in the store; it expires");
        }
    }

    /// Writes one message that was stored as `seq` (or could not be: `None`) to its stream.
    fn deliver(
        &self,
        copy: Option<&HttpSession>,
        stream: u64,
        seq: Option<u64>,
        data: &str,
        last: bool,
    ) {
        if stream != GET_STREAM {
            if let Some(copy) = copy {
                copy.write_stored(stream, seq, data, last);
            }
            return;
        }
        match seq {
            // The node serving the GET stream reads it from the store.
            Some(_) if self.serves_get() => self.grew.notify_one(),
            Some(_) => {
                let (bus, id) = (Arc::clone(&self.shared.bus), self.session.clone());
                self.tasks.spawn(async move {
                    let news = News::Appended(&id).encode();
                    if let Err(error) = bus.publish(&Topic::Registry, news).await {
                        tracing::debug!(%error, "could not announce an event of a GET stream");
                    }
                });
            }
            None => {
                if let Some(serving) = &*self.serving() {
                    let _ = serving.live.try_send(super::sse::unnumbered_event(data));
                }
            }
        }
    }
}
