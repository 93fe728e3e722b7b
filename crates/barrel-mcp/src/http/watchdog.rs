//! Each session's watchdog: it ends a session never initialized within the init timeout, or
//! idle past the idle timeout, and keeps a shared session alive in its store while somebody
//! waits on this node's copy.

use tokio::time::Instant;

use super::durable::Touch;
use super::session::HttpSession;

/// Why a watchdog ended its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    NeverInitialized,
    Idle,
    /// Gone from the shared store.
    Gone,
}

/// Resolves when the session should be closed: never initialized within `init`, or idle for
/// `idle`: no request from the client, and nobody waiting (no reader on any of its streams, no
/// JSON answer awaited). A handler still running with nobody waiting for it (the client went
/// away) does not keep the session alive; closing the session stops it. A copy of a shared
/// session is also woken every touch interval, so that while somebody waits on it the store
/// keeps it; one gone from the store ends.
pub(super) async fn watchdog(
    session: &HttpSession,
    idle: std::time::Duration,
    init: std::time::Duration,
) -> End {
    let created = Instant::now();
    let every = session.durable.as_ref().map(|d| d.interval());
    loop {
        // Both clocks run from the start: a session that initializes is idle-checked from then
        // on, not only once the initialization deadline has passed.
        let idle_deadline = session.last_seen() + idle;
        let mut deadline = if session.is_initialized() {
            idle_deadline
        } else {
            idle_deadline.min(created + init)
        };
        if let Some(every) = every {
            deadline = deadline.min(Instant::now() + every);
        }
        tokio::time::sleep_until(deadline).await;
        let now = Instant::now();
        if !session.is_initialized() && now >= created + init {
            tracing::debug!(session = %session.id, "session never initialized; closed");
            return End::NeverInitialized;
        }
        if session.is_busy() {
            session.touch();
            if session.keep_alive().await == Touch::Gone {
                return End::Gone;
            }
        } else if now >= session.last_seen() + idle {
            tracing::debug!(session = %session.id, "session idle; closed");
            return End::Idle;
        }
    }
}
