//! The request side of shared sessions ([`SharedSessions`]): an `initialize` that opens a
//! session stores it before the response names it, a request for a session this node does not
//! hold restores it from the store as a local replica, and DELETE deletes it everywhere.
//!
//! A store that cannot answer is 503 with `Retry-After: 2` and -32603 "session store
//! unavailable", never 404: the session may well exist, and a client that gets 404 drops it.

use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::InitializeParams;
use http::StatusCode;
use http::header::{self, HeaderValue};

use super::State;
use super::reply;
use super::session::HttpSession;
use super::sessionful::{not_found, refused};
use super::sessions::{CreateError, new_session_id};
use super::shared::{News, SharedSessions};
use crate::store::{Created, SessionLimits, SessionRecord};

/// A session a request names, as this node found it.
pub(crate) enum Found {
    /// This node holds a copy.
    Local(Arc<HttpSession>),
    /// Only the store holds it.
    Stored(Box<SessionRecord>),
}

/// Stores the session an `initialize` with `params` opens, then lists this node's copy. The
/// store checks the caps of every node (429 or 503 with `Retry-After`, as the local caps
/// answer); the record is deleted again when this node cannot list the copy.
pub(crate) async fn open(
    state: &Arc<State>,
    parts: &http::request::Parts,
    shared: &SharedSessions,
    params: InitializeParams,
) -> Result<Arc<HttpSession>, Response> {
    if state.sessions.tasks.is_closed() {
        return Err(refused(&CreateError::ShuttingDown));
    }
    let config = &state.config;
    let id = new_session_id().ok_or_else(|| refused(&CreateError::NoRandomness))?;
    let version = crate::server::negotiate(&params.protocol_version);
    let mut record = SessionRecord::new(id, version, params.capabilities, params.client_info);
    record.principal = config.principal_of(parts);
    create(state, parts, shared, &mut record).await?;
    let copy = state
        .sessions
        .copy(&state.server, config, shared, &record, true);
    copy.map_err(|error| {
        let store = Arc::clone(&shared.store);
        let id = record.id;
        state.sessions.tasks.spawn(async move {
            if let Err(error) = store.delete(&id).await {
                tracing::warn!(%error, "could not delete a session this node refused; it expires");
            }
        });
        refused(&error)
    })
}

/// Stores `record` (its principal set) under the caps of every node: the principal's, or
/// an anonymous caller's address's (loopback is not capped, as without a store), and the
/// service's. 429 or 503 with `Retry-After` when full, 503 when the store cannot answer.
pub(crate) async fn create(
    state: &Arc<State>,
    parts: &http::request::Parts,
    shared: &SharedSessions,
    record: &mut SessionRecord,
) -> Result<(), Response> {
    let config = &state.config;
    let (quota, cap, full) = match (&record.principal, super::peer_address(parts)) {
        (Some(principal), _) => (
            Some(format!("p:{principal}")),
            config.max_sessions_per_principal,
            CreateError::PrincipalFull,
        ),
        (None, Some(address)) if !address.is_loopback() => (
            Some(format!("a:{address}")),
            config.max_anonymous_sessions_per_address,
            CreateError::AddressFull,
        ),
        (None, _) => (None, shared.max_sessions, CreateError::Full),
    };
    record.quota = quota;
    let limits = SessionLimits {
        // A copy touches the store at most once per eighth of the timeout: the store keeps the
        // session that much longer, so it never expires before the timeout since its last use.
        idle_ttl: config.session_idle_timeout + config.session_idle_timeout / 8,
        max_sessions: shared.max_sessions,
        max_per_quota: cap,
        max_subscriptions: state.server.config().max_resource_subscriptions,
    };
    match shared.store.create(record, &limits).await {
        Ok(Created::Created) => Ok(()),
        Ok(Created::QuotaFull) => Err(refused(&full)),
        Ok(Created::Full) => Err(refused(&CreateError::Full)),
        // 192 random bits met a live session's: the random source cannot be trusted.
        Ok(Created::Exists) => Err(refused(&CreateError::NoRandomness)),
        Err(error) => {
            tracing::warn!(%error, "a session could not be stored; refused");
            Err(unavailable())
        }
    }
}

/// The session `id` for the request's principal: this node's copy, else the store's record.
/// 404 when it is unknown, a legacy session or another principal's; 503 when the store cannot
/// say.
pub(crate) async fn find(
    state: &Arc<State>,
    parts: &http::request::Parts,
    shared: &SharedSessions,
    id: &str,
) -> Result<Found, Response> {
    let principal = state.config.principal_of(parts);
    // A copy that is ending is no answer: the session may live on in the store. Nor is one
    // whose requests to the client carry a tag this node no longer holds (it took a new one):
    // it is dropped and the session restored anew.
    if let Some(session) = state.sessions.get(id).filter(|s| !s.kill.is_cancelled()) {
        if session.legacy || session.principal != principal {
            return Err(not_found());
        }
        if session
            .durable
            .as_ref()
            .is_none_or(|d| d.node == shared.bus.node())
        {
            return Ok(Found::Local(session));
        }
        state.sessions.drop_copy(id);
    }
    // Only an id of the shape this server mints can be in the store: anything else is unknown
    // without a store round trip (and no peer's text reaches a key name).
    if !is_session_id(id) {
        return Err(not_found());
    }
    match shared.store.load(id).await {
        Ok(Some(record)) if !record.legacy && record.principal == principal => {
            Ok(Found::Stored(Box::new(record)))
        }
        Ok(_) => Err(not_found()),
        Err(error) => {
            tracing::warn!(%error, "a session could not be loaded");
            Err(unavailable())
        }
    }
}

/// This node's replica of the session `record` (one per node, however many requests build it
/// at once).
pub(crate) fn restore(
    state: &Arc<State>,
    shared: &SharedSessions,
    record: &SessionRecord,
) -> Result<Arc<HttpSession>, Response> {
    state
        .sessions
        .copy(&state.server, &state.config, shared, record, false)
        .map_err(|error| refused(&error))
}

/// DELETE of the session `id`: deleted from the store, this node's copy ended, every node
/// sent the news (before the answer, for `ended_news_wait` at most).
pub(crate) async fn delete(
    state: &Arc<State>,
    parts: &http::request::Parts,
    shared: &SharedSessions,
    id: &str,
) -> Response {
    let local = match find(state, parts, shared, id).await {
        Ok(Found::Local(session)) => Some(session),
        Ok(Found::Stored(_)) => None,
        Err(response) => return response,
    };
    let existed = match shared.store.delete(id).await {
        Ok(existed) => existed,
        Err(error) => {
            tracing::warn!(%error, "a session could not be deleted");
            return unavailable();
        }
    };
    // This node's copy ends now: a request here while the news goes out is 404.
    state.sessions.drop_copy(id);
    // The news leaves before the client hears the answer, so a request it sends next to
    // another node finds that node's copy dropped unless that node's listener lags behind
    // the client. On tasks of their own, so a client that goes away meanwhile does not stop
    // them; the news is waited for `ended_news_wait` at most, then given up (the other
    // nodes find the session gone at their next touch of the store).
    if let Some(events) = shared.events.clone() {
        let forgotten = id.to_owned();
        state.sessions.tasks.spawn(async move {
            if let Err(error) = events.forget(&forgotten).await {
                tracing::debug!(%error, "could not forget a deleted session's streams; they expire");
            }
        });
    }
    let (bus, ended, wait) = (
        Arc::clone(&shared.bus),
        id.to_owned(),
        shared.ended_news_wait,
    );
    let told = state.sessions.tasks.spawn(async move {
        let publish = News::Ended(&ended).publish(&*bus);
        if tokio::time::timeout(wait, publish).await.is_err() {
            tracing::warn!("the bus did not take a session's end within ended_news_wait; given up");
        }
    });
    // An error here is the task's panic (logged by the runtime) or the runtime shutting down.
    let _ = told.await;
    // Again: a request may have built a copy meanwhile, and this node does not hear its own
    // news.
    state.sessions.drop_copy(id);
    if existed || local.is_some() {
        reply::empty(StatusCode::OK)
    } else {
        not_found()
    }
}

/// True for the shape of the ids [`new_session_id`] mints: 32 characters of base64url.
pub(crate) fn is_session_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// 503 with `Retry-After: 2`: the store cannot answer now.
pub(crate) fn unavailable() -> Response {
    unavailable_because("session store unavailable")
}

/// 503 with `Retry-After: 2` and -32603 `why`: something shared cannot answer now.
pub(crate) fn unavailable_because(why: &str) -> Response {
    let mut response = reply::error(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        reply::rpc_error(-32603, why),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    response
}
