//! One sessionful connection (2024-11-05 to 2025-11-25) carried over many HTTP requests.
//!
//! A session is one long-lived server connection without loops
//! ([`Server::open_session`](crate::server::Server::open_session)). Each POST hands its message
//! to the connection's [`Inlet`] after it passed every check, on the POST's own task (a
//! request's handler is driven from there until the POST's first answer is in, [`Driven`]).
//! What the server sends is routed at once by [`SessionWriter`], by the inbound request it
//! belongs to: to the SSE stream (or the pending JSON reply) of the POST that carried that
//! request, and everything unrelated (`list_changed`, `resources/updated`, requests not made
//! for a request) to the session's GET stream. The client's answers to server requests arrive as new POSTs
//! into the same inlet, so the peer correlates them as on any other transport.
//!
//! The session reads no protocol message: what it must know of its life (the client sent
//! `notifications/initialized`, the `initialize` that opened it was refused, a request was
//! cancelled) the server tells it through [`SessionEvents`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use barrel_mcp_types::{LoggingLevel, Message, Request, RequestId};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::durable::Durable;
use super::journal::Journal;
use super::routing::{
    Destination, Route, Routing, destination, forget_old_streams, keep_replay_budget,
};
use super::sse::{self, Attached, EventStream, Limits};
use super::streams::Streams;
use crate::peer::driven::Driven;
use crate::peer::{DirectWriter, Inlet};
use crate::server::SessionEvents;
use crate::store::SessionChange;
use crate::transport::{Caller, Outgoing};

/// The GET stream's number.
pub(crate) const GET_STREAM: u64 = 0;

/// One session.
#[derive(Debug)]
pub(crate) struct HttpSession {
    pub(crate) id: String,
    /// `id` as the `Mcp-Session-Id` of every answer (built once; `None` for an id that is not
    /// a header value, which the ids we mint always are).
    pub(crate) id_header: Option<http::HeaderValue>,
    pub(crate) principal: Option<String>,
    /// What the session counts against: its principal's share, or an anonymous caller's
    /// address's share, of the sessions.
    pub(crate) quota: Option<Quota>,
    /// A 2024-11-05 HTTP+SSE session: every message goes to its one stream (the GET stream).
    pub(crate) legacy: bool,
    /// Where POSTed messages go; taken when the session ends (the connection's handler holds
    /// the session, so keeping it would keep both alive).
    inlet: Mutex<Option<Inlet>>,
    routing: Mutex<Routing>,
    limits: Limits,
    /// Cancelled to end the session at once (DELETE, timeouts, a failed `initialize`).
    pub(crate) kill: CancellationToken,
    initialized: AtomicBool,
    last_seen: Mutex<Instant>,
    /// With shared sessions: the store behind this copy.
    pub(crate) durable: Option<Arc<Durable>>,
    /// With shared sessions and an event store: where this copy's stream events are stored.
    pub(crate) journal: Option<Arc<Journal>>,
}

/// Whose share of the sessions a session takes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Quota {
    /// An authenticated (or resolved) principal's.
    Principal(String),
    /// An anonymous caller's, by the address it connected from.
    Address(std::net::IpAddr),
}

/// How a request POST wants its answer.
#[derive(Debug)]
pub(crate) enum Reply {
    Stream(Attached),
    /// The answer's JSON text.
    Json(oneshot::Receiver<String>),
}

/// Why a message could not be handed to the session.
#[derive(Debug)]
pub(crate) enum Refused {
    /// A request with this id is still in flight in this session.
    DuplicateId,
    /// The session has ended.
    Ended,
}

impl HttpSession {
    pub(crate) fn new(
        id: String,
        principal: Option<String>,
        quota: Option<Quota>,
        legacy: bool,
        limits: Limits,
    ) -> Self {
        Self {
            id_header: http::HeaderValue::from_str(&id).ok(),
            id,
            principal,
            quota,
            legacy,
            inlet: Mutex::new(None),
            routing: Mutex::new(Routing {
                ends_after: None,
                first_stream: None,
                by_request: HashMap::new(),
                streams: Streams::default(),
                next_stream: GET_STREAM + 1,
                replay_bytes: 0,
            }),
            limits,
            kill: CancellationToken::new(),
            initialized: AtomicBool::new(false),
            last_seen: Mutex::new(Instant::now()),
            durable: None,
            journal: None,
        }
    }

    /// The same session, as a copy of a session kept in a shared store: opened here
    /// (`durable.origin`), or a replica of one opened elsewhere, `initialized` or not yet.
    pub(super) fn with_durable(
        mut self,
        durable: Durable,
        journal: Option<Arc<Journal>>,
        initialized: bool,
    ) -> Self {
        let routing = self
            .routing
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if !durable.origin {
            // No `initialize` was answered here: no stream to forget once the client initialized.
            routing.first_stream = Some(None);
        }
        if let Some(journal) = journal {
            routing.next_stream = journal.first_stream();
            self.journal = Some(journal);
        }
        self.initialized = AtomicBool::new(initialized);
        self.durable = Some(Arc::new(durable));
        self
    }

    /// Marks the client initialized (another node heard it), without telling anyone.
    pub(super) fn mark_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    /// Connects the session to its server connection; until then (and once it has ended)
    /// every message is refused as [`Refused::Ended`].
    pub(crate) fn connect(&self, inlet: Inlet) {
        *self.inlet() = Some(inlet);
    }

    pub(super) fn inlet(&self) -> MutexGuard<'_, Option<Inlet>> {
        self.inlet.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn routing(&self) -> MutexGuard<'_, Routing> {
        self.routing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True once the client sent `notifications/initialized`.
    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    /// Records that the session was used now.
    pub(crate) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    pub(crate) fn last_seen(&self) -> Instant {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// True while somebody waits on the session: a reader attached to one of its streams, a
    /// POST waiting for its JSON answer, or (shared) a change waiting to be stored.
    pub(crate) fn is_busy(&self) -> bool {
        // A shared session's changes still on their way to the store, or its GET stream
        // served here.
        if self.durable.as_ref().is_some_and(|d| d.pending())
            || self
                .journal
                .as_ref()
                .is_some_and(|j| j.is_serving() || j.pending())
        {
            return true;
        }
        let routing = self.routing();
        routing.streams.iter().any(|(_, s)| s.has_live_reader())
            || routing
                .by_request
                .values()
                .any(|route| matches!(route, Route::Json(waiting) if !waiting.is_closed()))
    }

    /// Hands a request from `caller` to the session; its answer comes through the returned
    /// [`Reply`].
    pub(crate) async fn request(
        &self,
        request: Request,
        caller: Option<Arc<Caller>>,
        stream: bool,
    ) -> Result<(Reply, Option<Driven>), Refused> {
        let id = request.id.clone();
        let reply = {
            let mut routing = self.routing();
            if routing.by_request.contains_key(&id) {
                return Err(Refused::DuplicateId);
            }
            if stream {
                let number = routing.next_stream;
                routing.next_stream += 1;
                let mut events = EventStream::new(number);
                let attached = events
                    .attach(None, &self.limits)
                    .expect("a fresh stream takes a fresh reader");
                routing.streams.insert(number, events);
                routing.first_stream.get_or_insert(Some(number));
                routing.by_request.insert(id.clone(), Route::Stream(number));
                forget_old_streams(&mut routing, self.limits.retained_streams);
                Reply::Stream(attached)
            } else {
                let (tx, rx) = oneshot::channel();
                routing.first_stream.get_or_insert(None);
                routing.by_request.insert(id.clone(), Route::Json(tx));
                Reply::Json(rx)
            }
        };
        match self.feed(Message::Request(request), caller).await {
            Ok(work) => Ok((reply, work)),
            Err(refused) => {
                self.routing().by_request.remove(&id);
                Err(refused)
            }
        }
    }

    /// True while the answer to the client's request `id` is routed by this copy (the
    /// request reached this node and is not answered yet).
    pub(crate) fn serves(&self, id: &RequestId) -> bool {
        self.routing().by_request.contains_key(id)
    }

    /// Hands a notification or a response from `caller` to the session (on the legacy
    /// transport, a request too: its answer rides the session's one stream).
    pub(crate) async fn deliver(
        &self,
        message: Message,
        caller: Option<Arc<Caller>>,
    ) -> Result<(), Refused> {
        // A legacy request's handler goes on on a task of its own (dropping `Driven` spawns it).
        self.feed(message, caller).await.map(drop)
    }

    /// Hands `message` to the session's connection; a request's handler comes back, to be
    /// driven by the caller.
    async fn feed(
        &self,
        message: Message,
        caller: Option<Arc<Caller>>,
    ) -> Result<Option<Driven>, Refused> {
        let inlet = self.inlet().clone().ok_or(Refused::Ended)?;
        inlet
            .deliver(Ok(message), caller)
            .await
            .map_err(|_| Refused::Ended)
    }

    /// Forgets a request: its stream (or JSON reply) ends without a response.
    fn end_request(&self, id: &RequestId) {
        let mut routing = self.routing();
        if let Some(Route::Stream(number)) = routing.by_request.remove(id) {
            if let Some(stream) = routing.streams.get_mut(number) {
                stream.finish();
            }
            drop(routing);
            if let Some(journal) = &self.journal {
                journal.ended(number);
            }
        }
    }

    /// Attaches a reader to stream `number` held here, replaying what followed event `seq`;
    /// `None` when this node holds no such stream (`Some(Err(()))`: a cursor from the future).
    pub(crate) fn attach_held(&self, number: u64, seq: u64) -> Option<Result<Attached, ()>> {
        let mut routing = self.routing();
        let limits = self.limits;
        let stream = routing.streams.get_mut(number)?;
        Some(stream.attach(Some(seq), &limits).ok_or(()))
    }

    /// Writes a message the event store numbered `seq` (`None`: it could not be stored) to
    /// request stream `number`, ending the stream after it when `last`.
    pub(crate) fn write_stored(&self, number: u64, seq: Option<u64>, data: &str, last: bool) {
        let mut routing = self.routing();
        let limits = self.limits;
        let Some(stream) = routing.streams.get_mut(number) else {
            return;
        };
        let change = match seq {
            Some(seq) => stream.push_numbered(seq, data, &limits),
            None => {
                stream.push_unnumbered(data);
                0
            }
        };
        if last {
            stream.finish();
        }
        routing.replay_bytes = routing.replay_bytes.saturating_add_signed(change);
        keep_replay_budget(&mut routing, limits.session_replay_bytes);
    }

    /// The session's GET stream grew in the event store: the node serving it reads it.
    pub(crate) fn get_stream_grew(&self) {
        if let Some(journal) = &self.journal {
            journal.grew.notify_one();
        }
    }

    /// Node `node` serves the session's GET stream now.
    pub(crate) fn get_stream_taken(&self, node: crate::store::NodeTag) {
        if let Some(journal) = &self.journal {
            journal.moved(node);
        }
    }

    /// Attaches a GET reader: to the GET stream, or, with `Last-Event-ID`, to the stream it
    /// names, replaying what followed it. `Err(true)` means the GET stream already has a reader,
    /// `Err(false)` a cursor from the future.
    pub(crate) fn attach(&self, cursor: Option<(u64, u64)>) -> Result<Attached, bool> {
        let mut routing = self.routing();
        let limits = self.limits;
        match cursor {
            None => {
                let stream = routing.streams.get_or_new(GET_STREAM);
                if stream.has_live_reader() {
                    return Err(true);
                }
                stream.attach(None, &limits).ok_or(false)
            }
            Some((number, seq)) => match routing.streams.get_mut(number) {
                Some(stream) => stream.attach(Some(seq), &limits).ok_or(false),
                None => Ok(Attached {
                    initial: vec![sse::truncated_notice(number, seq, None)],
                    live: None,
                }),
            },
        }
    }

    /// Ends the input: requests already handed over finish and are answered, then the session
    /// ends (graceful shutdown).
    pub(crate) fn end_input(&self) {
        if let Some(inlet) = &*self.inlet() {
            inlet.end_input();
        }
    }

    /// Ends every stream, forgets every route and lets go of the connection. Called when the
    /// connection has ended. A shared session's streams end once what it sent was stored, and
    /// its request streams that got no response are finished in the store.
    pub(crate) fn finish_all(&self) {
        self.inlet().take();
        let mut routing = self.routing();
        routing.by_request.clear();
        let Some(journal) = &self.journal else {
            drop(routing);
            return self.finish_streams();
        };
        let first = routing.first_stream.flatten();
        let open: Vec<u64> = routing
            .streams
            .iter()
            .filter(|(number, stream)| {
                *number != GET_STREAM && Some(*number) != first && !stream.is_finished()
            })
            .map(|(number, _)| number)
            .collect();
        drop(routing);
        if journal.close(open) {
            self.finish_streams();
        }
    }

    /// Ends every stream: no more events; live readers end after what is queued.
    pub(crate) fn finish_streams(&self) {
        for stream in self.routing().streams.values_mut() {
            stream.finish();
        }
    }

    /// Routes one outgoing message (the writer half).
    fn route(&self, outgoing: Outgoing) {
        let message = outgoing.message;
        // Serialized before the lock: POSTs of the session route at the same time.
        let data = message.to_json();
        let mut routing = self.routing();
        let answers = match &message {
            Message::Response(response) => response.id.clone(),
            _ => None,
        };
        // A refused `initialize`: the session ends once its answer is on its stream.
        let last = answers.is_some() && answers == routing.ends_after;
        let destination = if self.legacy {
            // One stream carries everything, responses included.
            Destination::Stream(GET_STREAM, false)
        } else {
            destination(&mut routing, outgoing.related.as_ref(), answers.as_ref())
        };
        // A shared session's events are stored first (but for the `initialize` answer's).
        if let (Some(journal), Destination::Stream(number, finish)) = (&self.journal, &destination)
            && routing.first_stream != Some(Some(*number))
        {
            let (number, finish) = (*number, *finish);
            drop(routing);
            let request = outgoing.related.filter(|_| number != GET_STREAM);
            journal.push(number, data, finish, request);
            return;
        }
        match destination {
            Destination::Stream(number, finish) => {
                let limits = self.limits;
                let stream = if number == GET_STREAM {
                    Some(routing.streams.get_or_new(GET_STREAM))
                } else {
                    routing.streams.get_mut(number)
                };
                if let Some(stream) = stream {
                    let change = stream.push(&data, &limits);
                    if finish {
                        stream.finish();
                    }
                    routing.replay_bytes = routing.replay_bytes.saturating_add_signed(change);
                    keep_replay_budget(&mut routing, limits.session_replay_bytes);
                }
            }
            Destination::Json(reply) => {
                let _ = reply.send(data);
            }
            Destination::Nowhere(why) => tracing::debug!("{why}; dropped"),
        }
        if last {
            tracing::debug!(session = %self.id, "initialize refused; the session ends");
            routing.ends_after = None;
            self.kill.cancel();
        }
    }
}

/// The server tells the session of its life (see [`SessionEvents`]).
impl SessionEvents for HttpSession {
    /// The client has the answer to `initialize` (it says so), so that answer's stream (the
    /// stream of the session's first request) is never resumed: it is forgotten rather than
    /// kept for every idle session.
    fn initialized(&self) {
        self.initialized.store(true, Ordering::Release);
        self.store(|| SessionChange::Initialized);
        let mut routing = self.routing();
        let Some(Some(first)) = routing.first_stream else {
            return;
        };
        let done = routing
            .streams
            .get_mut(first)
            .is_some_and(|s| s.is_finished() && !s.has_live_reader());
        if done && let Some(stream) = routing.streams.remove(first) {
            routing.replay_bytes = routing.replay_bytes.saturating_sub(stream.replay_bytes());
        }
    }

    /// A shared session is deleted from the store too.
    fn refused(&self, id: &RequestId) {
        self.routing().ends_after = Some(id.clone());
        if let Some(durable) = &self.durable {
            durable.forget();
        }
    }

    /// The handler is cancelled by the peer; the request's stream ends here without a response.
    fn cancelled(&self, id: &RequestId) {
        self.end_request(id);
    }

    /// A copy of a shared session with an event store announces registry changes only while
    /// its node serves the GET stream: the stream is in the store, and one node writes them.
    fn hears_changes(&self) -> bool {
        self.journal
            .as_ref()
            .is_none_or(|journal| journal.serves_get())
    }

    fn log_level(&self, level: LoggingLevel) {
        self.store(|| SessionChange::LogLevel(level));
    }

    fn subscribed(&self, uri: &str) {
        self.store(|| SessionChange::Subscribe(uri.to_owned()));
    }

    fn unsubscribed(&self, uri: &str) {
        self.store(|| SessionChange::Unsubscribe(uri.to_owned()));
    }
}

/// Where a session's connection writes: routes each message to its stream, at once.
#[derive(Debug)]
pub(crate) struct SessionWriter {
    /// Weak: the session holds its connection, which holds this.
    pub(crate) session: Weak<HttpSession>,
}

impl DirectWriter for SessionWriter {
    fn write(&self, outgoing: Outgoing) {
        if let Some(session) = self.session.upgrade() {
            session.route(outgoing);
        }
    }

    fn close(&self) {
        if let Some(session) = self.session.upgrade() {
            session.finish_all();
        }
    }
}
