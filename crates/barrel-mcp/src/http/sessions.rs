//! The table of live sessions: creation under a cap, lookup, and each session's task and
//! watchdog (idle TTL, initialization timeout).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use base64::Engine;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::config::HttpConfig;
use super::session::{HttpSession, Quota, SessionWriter};
use super::sse::Limits;
use crate::server::{Server, SessionEvents};

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
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// The sessions' tasks, so shutdown can wait for them.
    pub(crate) tasks: TaskTracker,
}

impl Sessions {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
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

    /// Creates a session and starts serving it; `legacy` for the 2024-11-05 HTTP+SSE transport.
    pub(crate) fn create(
        self: &Arc<Self>,
        server: &Server,
        config: &HttpConfig,
        principal: Option<String>,
        address: Option<std::net::IpAddr>,
        legacy: bool,
    ) -> Result<Arc<HttpSession>, CreateError> {
        if self.tasks.is_closed() {
            return Err(CreateError::ShuttingDown);
        }
        let id = new_session_id().ok_or(CreateError::NoRandomness)?;
        let limits = Limits {
            queue: config.stream_queue,
            replay_events: config.replay_events,
            replay_bytes: config.replay_bytes,
            retry: config.sse_retry,
            retained_streams: config.retained_streams,
            session_replay_bytes: config.session_replay_bytes,
        };
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
        let session = Arc::new(HttpSession::new(id, principal, quota, legacy, limits));
        // Connected before it is listed, so a shutdown that lists it can end its input.
        let writer = Arc::new(SessionWriter {
            session: Arc::downgrade(&session),
        });
        let stop = session.kill.clone();
        let events: Arc<dyn SessionEvents> = session.clone();
        let (inlet, serve) = server.open_session(writer, stop.clone(), events);
        session.connect(inlet);
        if let Err(error) = self.admit(&session, config, limit, full) {
            // Its connection holds it (through `events`): let go of both.
            session.finish_all();
            return Err(error);
        }
        let sessions = Arc::clone(self);
        let watched = Arc::clone(&session);
        let (idle, init) = (config.session_idle_timeout, config.init_timeout);
        self.tasks.spawn(async move {
            // However the task ends (a panic in the connection included), the session's
            // streams end and its slot is given back.
            let _forget = Forget {
                sessions: Arc::clone(&sessions),
                session: Arc::clone(&watched),
            };
            tokio::pin!(serve);
            tokio::select! {
                () = &mut serve => {}
                () = watchdog(&watched, idle, init) => {
                    stop.cancel();
                    serve.await;
                }
            }
        });
        Ok(session)
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
        if map.len() >= config.max_sessions {
            return Err(CreateError::Full);
        }
        // One principal, or one anonymous address, cannot take every slot from the others.
        if let Some(quota) = &session.quota
            && map
                .values()
                .filter(|other| other.quota.as_ref() == Some(quota))
                .count()
                >= limit
        {
            return Err(full);
        }
        map.insert(session.id.clone(), Arc::clone(session));
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

/// Resolves when the session should be closed: never initialized within `init`, or idle for
/// `idle`: no request from the client, and nobody waiting (no reader on any of its streams, no
/// JSON answer awaited). A handler still running with nobody waiting for it (the client went
/// away) does not keep the session alive; closing the session stops it.
async fn watchdog(session: &HttpSession, idle: std::time::Duration, init: std::time::Duration) {
    let created = Instant::now();
    loop {
        // Both clocks run from the start: a session that initializes is idle-checked from then
        // on, not only once the initialization deadline has passed.
        let idle_deadline = session.last_seen() + idle;
        let deadline = if session.is_initialized() {
            idle_deadline
        } else {
            idle_deadline.min(created + init)
        };
        tokio::time::sleep_until(deadline).await;
        let now = Instant::now();
        if !session.is_initialized() && now >= created + init {
            tracing::debug!(session = %session.id, "session never initialized; closed");
            return;
        }
        if session.is_busy() {
            session.touch();
        } else if now >= session.last_seen() + idle {
            tracing::debug!(session = %session.id, "session idle; closed");
            return;
        }
    }
}

/// A session id: 192 bits from the OS random source, base64url (visible ASCII only).
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Ends a session's streams and forgets it, when its task ends.
struct Forget {
    sessions: Arc<Sessions>,
    session: Arc<HttpSession>,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.session.finish_all();
        self.sessions.remove(&self.session.id);
        tracing::debug!(session = %self.session.id, "session ended");
    }
}
