//! [`Journal`]: the events of a shared session's streams, stored before the client sees them.
//!
//! With [`SharedSessions::events`], every message a session's copy sends on one of its streams
//! is appended to the event store first, and only then written to the stream, with the
//! sequence number the store gave it: an id the client holds names an event every node can
//! replay (durable before visible). One task per session at a time appends, in the order the
//! messages were sent, while there is something to append. A message the store cannot take
//! (it is down, the session is full of streams, or more than
//! [`SharedSessions::max_pending_events`] wait) goes out without an id: the live reader sees
//! it, a resume cannot replay it. The stream of the `initialize` that opened the session is
//! not stored (its client holds no session id until that answer arrives, so never resumes it).
//!
//! Request streams are numbered with the node's tag ([`NodeTag::stream`]), from a random start
//! in the first half of the node's range, so no two copies of one session (on two nodes, or
//! one after another on one node) number a stream alike. The first event of a stream opens
//! it in the store, in the same round trip ([`EventStore::append_first`]).
//!
//! The GET stream (number 0) has producers on every node and is served by one: the node the
//! client last opened it on (`follow.rs`). Registry changes (`list_changed`,
//! `resources/updated`) are written to it by that node only: the other copies do not hear them
//! ([`SessionEvents::hears_changes`](crate::server::SessionEvents)). A message another node
//! sends on it is appended there and announced (`session-appended`); the serving node then
//! reads the store after what it sent.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use barrel_mcp_types::RequestId;
use bytes::Bytes;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::session::{GET_STREAM, HttpSession};
use super::shared::{News, SharedSessions};
use crate::store::{EventLimits, EventStore, NodeTag, StreamInfo};

/// One message waiting to be stored.
struct Pending {
    stream: u64,
    data: String,
    /// The stream's last event (the response that ends it).
    last: bool,
    /// The request the stream answers (opening a request stream records it).
    request: Option<RequestId>,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Pending>,
    /// A task is appending the queue.
    writing: bool,
    /// Request streams opened in the store and not finished.
    opened: HashSet<u64>,
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
    tasks: TaskTracker,
    copy: Weak<HttpSession>,
    queue: Mutex<Queue>,
    /// The node serving the GET stream, as this copy last heard (0: none known).
    get_server: AtomicU32,
    /// Woken when the GET stream grew in the store.
    pub(crate) grew: Notify,
    /// The GET stream served here, if any.
    serving: Mutex<Option<Serving>>,
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl Journal {
    pub(crate) fn new(
        session: String,
        events: Arc<dyn EventStore>,
        limits: EventLimits,
        shared: SharedSessions,
        node: NodeTag,
        tasks: TaskTracker,
        copy: Weak<HttpSession>,
    ) -> Self {
        Self {
            session,
            events,
            limits,
            shared,
            node,
            tasks,
            copy,
            queue: Mutex::new(Queue::default()),
            get_server: AtomicU32::new(0),
            grew: Notify::new(),
            serving: Mutex::new(None),
        }
    }

    /// The number of this copy's first request stream: the node's tag, and a random start in
    /// the first half of its range.
    pub(crate) fn first_stream(&self) -> u64 {
        let mut random = [0u8; 4];
        let offset = match getrandom::fill(&mut random) {
            Ok(()) => u32::from_le_bytes(random) % (1 << 31),
            Err(_) => 0,
        };
        self.node.stream(offset.max(1))
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn serving(&self) -> MutexGuard<'_, Option<Serving>> {
        self.serving.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// This node serves the GET stream now (`serving`), in place of whatever served it.
    pub(crate) fn serve_get(&self, serving: Serving) {
        self.get_server.store(self.node.get(), Ordering::Release);
        if let Some(old) = self.serving().replace(serving) {
            old.over.cancel();
        }
    }

    /// Node `node` serves the GET stream now: a stream served here ends.
    pub(crate) fn get_taken(&self, node: NodeTag) {
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
        if queue.pending.len() >= self.shared.max_pending_events {
            drop(queue);
            tracing::warn!("too many events wait for the event store; one goes out without an id");
            self.deliver(stream, None, &data, last);
            return;
        }
        queue.pending.push_back(Pending {
            stream,
            data,
            last,
            request,
        });
        if !queue.writing {
            queue.writing = true;
            drop(queue);
            let journal = Arc::clone(self);
            self.tasks.spawn(journal.drain());
        }
    }

    /// Runs `work` on the sessions' tasks (a shutdown waits for it).
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(work);
    }

    /// A request stream ended without a response (cancelled): it is no longer open here.
    pub(crate) fn ended(&self, stream: u64) {
        self.queue().opened.remove(&stream);
    }

    /// Appends what is queued, in order, until nothing is.
    async fn drain(self: Arc<Self>) {
        loop {
            let (next, first) = {
                let mut queue = self.queue();
                let Some(next) = queue.pending.pop_front() else {
                    queue.writing = false;
                    return;
                };
                let first = next.stream != GET_STREAM && !queue.opened.contains(&next.stream);
                (next, first)
            };
            let (session, limits) = (&self.session, &self.limits);
            let appended = if first {
                let info = StreamInfo {
                    producer: self.node,
                    request: next.request.clone(),
                };
                self.events
                    .append_first(session, next.stream, info, &next.data, next.last, limits)
                    .await
            } else {
                self.events
                    .append(session, next.stream, &next.data, next.last, limits)
                    .await
            };
            let seq = appended.unwrap_or_else(|error| {
                tracing::warn!(%error, "an event could not be stored; it goes out without an id");
                None
            });
            {
                let mut queue = self.queue();
                if next.last {
                    queue.opened.remove(&next.stream);
                } else if first && seq.is_some() {
                    queue.opened.insert(next.stream);
                }
            }
            self.deliver(next.stream, seq, &next.data, next.last);
        }
    }

    /// Writes one message that was stored as `seq` (or could not be: `None`) to its stream.
    fn deliver(&self, stream: u64, seq: Option<u64>, data: &str, last: bool) {
        if stream != GET_STREAM {
            if let Some(copy) = self.copy.upgrade() {
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
                    if let Err(error) = bus
                        .publish(&crate::store::Topic::Registry, News::Appended(&id).encode())
                        .await
                    {
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
