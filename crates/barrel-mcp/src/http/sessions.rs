//! The table of live sessions: creation under a cap, lookup, and each session's task and
//! watchdog (idle TTL, initialization timeout).
//!
//! With shared sessions ([`SharedSessions`]) the table holds this node's copies of sessions
//! kept in a store: the ones it opened and replicas of the others'. Two requests restoring one
//! session at once get one replica (it is listed under the table's lock), a full table drops
//! its least recently used idle copy (the session lives on in the store), and a copy's timers
//! only end the copy.

use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use base64::Engine;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::HttpConfig;
use super::durable::{self, Durable};
use super::journal::{self, Journal};
use super::session::{HttpSession, Quota, SessionWriter};
use super::session_table::SessionTable;
use super::shared::SharedSessions;
use super::sse::Limits;
use super::watchdog::{End, watchdog};
use crate::server::{Server, SessionEvents, SessionStart};
use crate::store::{NodeTag, SessionRecord};
use barrel_mcp_types::InitializeParams;

/// Why a session could not be created.
#[derive(Debug)]
pub(crate) enum CreateError {
    /// [`HttpConfig::max_sessions`] are live.
    Full,
    /// The principal has [`HttpConfig::max_sessions_per_principal`] live sessions.
    PrincipalFull,
    /// The anonymous caller's address has
    /// [`HttpConfig::max_anonymous_sessions_per_address`] live sessions.
    AddressFull,
    /// The OS random source failed; no id is minted without it.
    NoRandomness,
    /// The server is shutting down.
    ShuttingDown,
}

/// Every live session, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: Mutex<SessionTable>,
    /// The sessions' tasks, so shutdown can wait for them.
    pub(crate) tasks: TaskTracker,
    /// With shared sessions: news of sessions is being listened to.
    pub(crate) listening: AtomicBool,
    /// One subscription to the news at a time, and when the last one failed.
    pub(crate) subscribing: tokio::sync::Mutex<Option<Instant>>,
    /// With shared sessions: the messages sent on for legacy sessions other nodes hold.
    pub(crate) legacy_forwards: super::legacy_nodes::Forwards,
}

impl Sessions {
    fn map(&self) -> MutexGuard<'_, SessionTable> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map().get(id).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map().remove(id)
    }

    /// Unlists `session`, unless another copy took its place.
    fn remove_if_same(&self, session: &Arc<HttpSession>) {
        let mut map = self.map();
        if map
            .get(&session.id)
            .is_some_and(|listed| Arc::ptr_eq(listed, session))
        {
            map.remove(&session.id);
        }
    }

    /// Ends this node's copy of the shared session `id`, if it holds one (deleted elsewhere).
    pub(crate) fn drop_copy(&self, id: &str) {
        let mut map = self.map();
        if map.get(id).is_some_and(|s| s.durable.is_some())
            && let Some(session) = map.remove(id)
        {
            drop(map);
            session.kill.cancel();
        }
    }

    /// Ends every legacy (HTTP+SSE) session.
    pub(crate) fn end_legacy(&self) {
        for session in self.map().values().filter(|s| s.legacy) {
            session.kill.cancel();
        }
    }

    /// This node's copies of shared sessions.
    pub(crate) fn copies(&self) -> Vec<Arc<HttpSession>> {
        self.map()
            .values()
            .filter(|s| s.durable.is_some())
            .cloned()
            .collect()
    }

    /// Creates a session and starts serving it; `legacy` for the 2024-11-05 HTTP+SSE transport.
    /// `initialize` holds the params of the request that opens it, when they were read.
    pub(crate) fn create(
        self: &Arc<Self>,
        server: &Server,
        config: &HttpConfig,
        principal: Option<String>,
        address: Option<std::net::IpAddr>,
        legacy: bool,
        initialize: Option<Box<InitializeParams>>,
    ) -> Result<Arc<HttpSession>, CreateError> {
        if self.tasks.is_closed() {
            return Err(CreateError::ShuttingDown);
        }
        // One draw from the OS for both names: the session id and the server's name for it.
        let mut random = [0u8; SESSION_ID_BYTES + 16];
        getrandom::fill(&mut random).map_err(|_| CreateError::NoRandomness)?;
        let (id_bytes, name_bytes) = random.split_at(SESSION_ID_BYTES);
        let id = session_id_of(id_bytes);
        let name = crate::server::hex_id(name_bytes);
        let (quota, limit, full) = match (&principal, address) {
            (Some(principal), _) => (
                Some(Quota::Principal(principal.clone())),
                config.max_sessions_per_principal,
                CreateError::PrincipalFull,
            ),
            // Every local process (and every client of a reverse proxy on this host) shares the
            // loopback address: capping it would shut them all out together.
            (None, Some(address)) if !address.is_loopback() => (
                Some(Quota::Address(address)),
                config.max_anonymous_sessions_per_address,
                CreateError::AddressFull,
            ),
            (None, _) => (None, usize::MAX, CreateError::Full),
        };
        let session = Arc::new(HttpSession::new(
            id,
            principal,
            quota,
            legacy,
            limits(config),
        ));
        // Connected before it is listed, so a shutdown that lists it can end its input.
        let start = SessionStart::Fresh {
            name: Some(name),
            initialize,
        };
        let (stop, serve) = connect(server, &session, start, NodeTag::LOCAL);
        if let Err(error) = self.admit(&session, config, limit, full) {
            // Its connection holds it (through `events`): let go of both.
            session.finish_all();
            return Err(error);
        }
        self.run(Arc::clone(&session), stop, serve, config);
        Ok(session)
    }

    /// Lists this node's copy of the shared session `record` names: the one it opened
    /// (`origin`: its `initialize` is on its way), or a replica of one opened elsewhere. A
    /// replica already listed (and not ending) is the one returned: two requests restoring a
    /// session at once share one. Only [`HttpConfig::max_sessions`] is checked here (the
    /// store checked the others); at it, the least recently used idle copy is dropped.
    pub(crate) fn copy(
        self: &Arc<Self>,
        server: &Server,
        config: &HttpConfig,
        shared: &SharedSessions,
        record: &SessionRecord,
        origin: bool,
    ) -> Result<Arc<HttpSession>, CreateError> {
        let mut map = self.map();
        if self.tasks.is_closed() {
            return Err(CreateError::ShuttingDown);
        }
        if let Some(listed) = map.get(&record.id)
            && !origin
            && !listed.legacy
            && !listed.kill.is_cancelled()
        {
            return Ok(Arc::clone(listed));
        }
        if map.len() >= config.max_sessions && !drop_idle_copy(&mut map) {
            return Err(CreateError::Full);
        }
        let node = shared.bus.node();
        // A copy with an event store numbers its streams from a random start.
        let first_stream = match &shared.events {
            Some(_) => Some(journal::first_stream(node).ok_or(CreateError::NoRandomness)?),
            None => None,
        };
        let session = Arc::new_cyclic(|weak| {
            let durable = Durable::new(
                record.id.clone(),
                shared.clone(),
                weak.clone(),
                self.tasks.clone(),
                config.session_idle_timeout,
                origin,
            );
            let journal = shared
                .events
                .as_ref()
                .zip(first_stream)
                .map(|(events, first)| {
                    Arc::new(Journal::new(
                        record.id.clone(),
                        Arc::clone(events),
                        shared.event_limits(config),
                        shared.clone(),
                        durable.node,
                        first,
                        self.tasks.clone(),
                        weak.clone(),
                    ))
                });
            HttpSession::new(
                record.id.clone(),
                record.principal.clone(),
                None,
                false,
                limits(config),
            )
            .with_durable(durable, journal, record.initialized)
        });
        let name = durable::server_name(&record.id);
        let start = if origin {
            SessionStart::Fresh {
                name: Some(name),
                initialize: None,
            }
        } else {
            SessionStart::Restored { name, record }
        };
        let node = session.durable.as_ref().map_or(node, |d| d.node);
        let (stop, serve) = connect(server, &session, start, node);
        if let Some(journal) = session.journal.as_ref().filter(|_| !origin) {
            // A replica: who serves the GET stream is in the store.
            journal.learn_server();
        }
        map.insert(Arc::clone(&session));
        drop(map);
        self.run(Arc::clone(&session), stop, serve, config);
        Ok(session)
    }

    /// Serves `session` on a task of its own until its connection ends or its watchdog fires.
    fn run(
        self: &Arc<Self>,
        session: Arc<HttpSession>,
        stop: CancellationToken,
        serve: impl Future<Output = ()> + Send + 'static,
        config: &HttpConfig,
    ) {
        let sessions = Arc::clone(self);
        let (idle, init) = (config.session_idle_timeout, config.init_timeout);
        // Pinned on the heap: pinned inside the task, the connection's future would be held
        // twice for the session's whole life (once as captured, once where it is polled).
        let serve = Box::pin(serve);
        let task = async move {
            // However the task ends (a panic in the connection included), the session's
            // streams end and its slot is given back.
            let _forget = Forget {
                sessions,
                session: Arc::clone(&session),
            };
            // Declared after `_forget`, so a task dropped mid-way drops the connection first.
            let mut serve = serve;
            let end = tokio::select! {
                () = &mut serve => None,
                end = watchdog(&session, idle, init) => {
                    stop.cancel();
                    serve.await;
                    Some(end)
                }
            };
            if end == Some(End::NeverInitialized)
                && let Some(durable) = session.durable.as_ref().filter(|d| d.origin)
            {
                // Boxed: a store's future would otherwise grow every session's task.
                Box::pin(durable.forget_unused()).await;
            }
        };
        self.tasks.spawn(task);
    }

    /// Lists `session` under the caps (`limit` sessions for its quota, refused as `full`), or
    /// refuses it; no session is listed once shutdown began.
    fn admit(
        &self,
        session: &Arc<HttpSession>,
        config: &HttpConfig,
        limit: usize,
        full: CreateError,
    ) -> Result<(), CreateError> {
        let mut map = self.map();
        // Under the lock `shutdown` takes to end every listed session's input.
        if self.tasks.is_closed() {
            return Err(CreateError::ShuttingDown);
        }
        // Copies of shared sessions make room: they live on in the store.
        if map.len() >= config.max_sessions && !drop_idle_copy(&mut map) {
            return Err(CreateError::Full);
        }
        // One principal, or one anonymous address, cannot take every slot from the others.
        if let Some(quota) = &session.quota
            && map.held_by(quota) >= limit
        {
            return Err(full);
        }
        map.insert(Arc::clone(session));
        Ok(())
    }

    /// Ends the input of every session: requests running finish and are answered, then the
    /// sessions end. No session is created afterwards.
    pub(crate) fn shutdown(&self) {
        let map = self.map();
        self.tasks.close();
        for session in map.values() {
            session.end_input();
        }
    }
}

impl Sessions {
    /// Ends every session now, whatever it is doing: the last step of a shutdown that ran out
    /// of time.
    pub(crate) fn kill_all(&self) {
        for session in self.map().values() {
            session.kill.cancel();
        }
    }
}

/// Drops the least recently used copy of a shared session that nobody waits on (or one that is
/// ending already), to make room; false when there is none.
fn drop_idle_copy(map: &mut SessionTable) -> bool {
    let victim = map
        .values()
        .filter(|s| s.durable.is_some() && (s.kill.is_cancelled() || !s.is_busy()))
        .min_by_key(|s| (!s.kill.is_cancelled(), s.last_seen()))
        .map(|s| s.id.clone());
    match victim.and_then(|id| map.remove(&id)) {
        Some(session) => {
            tracing::debug!(session = %session.id, "idle copy dropped to make room");
            session.kill.cancel();
            true
        }
        None => false,
    }
}

/// The limits of a session's streams.
pub(super) fn limits(config: &HttpConfig) -> Limits {
    Limits {
        queue: config.stream_queue,
        replay_events: config.replay_events,
        replay_bytes: config.replay_bytes,
        retry: config.sse_retry,
        retained_streams: config.retained_streams,
        session_replay_bytes: config.session_replay_bytes,
    }
}

/// Connects `session` to a new server connection started as `start`; returns what stops it
/// and the future that serves it.
/// Its requests to the client take ids carrying `node`.
fn connect(
    server: &Server,
    session: &Arc<HttpSession>,
    start: SessionStart<'_>,
    node: NodeTag,
) -> (CancellationToken, impl Future<Output = ()> + Send + 'static) {
    let writer = Arc::new(SessionWriter {
        session: Arc::downgrade(session),
    });
    let stop = session.kill.clone();
    let events: Arc<dyn SessionEvents> = session.clone();
    let (inlet, sync, serve) = server.open_session(writer, stop.clone(), events, start, node);
    session.connect(inlet);
    if let Some(durable) = &session.durable {
        durable.set_sync(sync);
    }
    (stop, serve)
}

/// The random bytes of a session id.
const SESSION_ID_BYTES: usize = 24;

/// A session id: 192 bits from the OS random source, base64url (visible ASCII only).
pub(crate) fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; SESSION_ID_BYTES];
    getrandom::fill(&mut bytes).ok()?;
    Some(session_id_of(&bytes))
}

/// The session id made of `random` bytes.
fn session_id_of(random: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
}

/// Ends a session's streams and forgets it, when its task ends.
struct Forget {
    sessions: Arc<Sessions>,
    session: Arc<HttpSession>,
}

impl Drop for Forget {
    fn drop(&mut self) {
        // Whatever still waits on the session (a write retried) stops now.
        self.session.kill.cancel();
        self.session.finish_all();
        self.sessions.remove_if_same(&self.session);
        tracing::debug!(session = %self.session.id, "session ended");
    }
}
