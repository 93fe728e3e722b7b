//! One connection to the server: picks the era of each message and keeps the session, if any.
//!
//! A request whose `_meta` claims a revision is served statelessly whatever came before it on
//! the connection; `initialize` opens a session; anything else before `initialize` gets an error
//! and the connection keeps serving (no first message makes the server exit).
//!
//! A transport that carries a session over many exchanges (Streamable HTTP) hears of the
//! session's life from here, through [`SessionEvents`], instead of reading the protocol itself.

use std::sync::{Arc, Mutex};

use barrel_mcp_types::{
    ErrorObject, InitializeParams, LoggingLevel, Notification, Payload, Request, RequestId,
};
use serde_json::Value;

use super::Server;
#[cfg(feature = "http-server")]
use super::announcer;
use super::context::Scope;
#[cfg(feature = "http-server")]
use super::events::ServerEvent;
use super::session::{self, Kind, Session};
use super::session_handle::SessionHandle;
use super::{dispatch, stateless};
use crate::peer::{BoxFuture, Handler, Peer, RequestContext};
#[cfg(feature = "http-server")]
use crate::store::SessionRecord;

/// What the server tells the transport of a session about that session's life.
pub(crate) trait SessionEvents: Send + Sync {
    /// The client sent `notifications/initialized`: the session is in use.
    fn initialized(&self);
    /// The `initialize` that opened the connection was refused: the session ends once the
    /// answer to request `id` is out.
    fn refused(&self, id: &RequestId);
    /// The client cancelled request `id`: it will not be answered.
    fn cancelled(&self, id: &RequestId);
    /// `logging/setLevel` set the session's level to `level`.
    fn log_level(&self, level: LoggingLevel);
    /// `resources/subscribe` added `uri` to the session's subscriptions.
    fn subscribed(&self, uri: &str);
    /// `resources/unsubscribe` took `uri` out of the session's subscriptions.
    fn unsubscribed(&self, uri: &str);
    /// True when registry changes (`list_changed`, `resources/updated`) are to be announced to
    /// the session from here now (a copy of a shared session on a node that does not serve its
    /// GET stream leaves them to the node that does). Default: always.
    fn hears_changes(&self) -> bool {
        true
    }
}

/// The server's side of one connection.
pub(crate) struct Connection {
    server: Server,
    state: Mutex<State>,
    events: Option<Arc<dyn SessionEvents>>,
    /// The name `initialize` gives the session; `None`: a random one.
    name: Option<String>,
    /// Whether results are written to JSON text (false: the transport passes messages as they
    /// are, so values are cheaper for both sides).
    results_as_text: bool,
}

enum State {
    /// No session yet. The opening `initialize`'s params, when the transport read them
    /// already (HTTP checks them before it creates a session): read once, not twice.
    Opening(Option<Box<InitializeParams>>),
    /// `initialize` answered.
    Session { session: Arc<Session> },
}

impl Connection {
    /// A connection whose transport, when it carries a session, is told of its life through
    /// `events`.
    pub(crate) fn new(server: Server, events: Option<Arc<dyn SessionEvents>>) -> Self {
        Self {
            server,
            state: Mutex::new(State::Opening(None)),
            events,
            name: None,
            results_as_text: true,
        }
    }

    /// The same connection, writing results as text or not (see
    /// [`Transport::passes_messages_as_they_are`](crate::transport::Transport::passes_messages_as_they_are)).
    pub(crate) fn with_results_as_text(mut self, results_as_text: bool) -> Self {
        self.results_as_text = results_as_text;
        self
    }

    /// The same connection, whose session `initialize` names `name` (the server's name for it:
    /// [`Server::session`] finds it by that).
    #[cfg(feature = "http-server")]
    pub(crate) fn named(mut self, name: Option<String>) -> Self {
        self.name = name;
        self
    }

    /// The same connection, to be opened by an `initialize` whose params are `read` already
    /// (the transport checked them): the server takes them as they are.
    #[cfg(feature = "http-server")]
    pub(crate) fn opened_with(self, read: Option<Box<InitializeParams>>) -> Self {
        *self.state() = State::Opening(read);
        self
    }

    /// A connection in a session another node opened: it starts in the state `record` holds
    /// (the negotiated revision, what the client declared, its level and subscriptions), named
    /// `name`, without replaying `initialize` through the server. [`resume`](Self::resume)
    /// then makes it live.
    #[cfg(feature = "http-server")]
    pub(crate) fn restored(
        server: Server,
        name: String,
        record: &SessionRecord,
        events: Arc<dyn SessionEvents>,
    ) -> Self {
        let session = Session::restored(name, record, Some(Arc::downgrade(&events)));
        Self {
            server,
            state: Mutex::new(State::Session {
                session: Arc::new(session),
            }),
            events: Some(events),
            name: None,
            results_as_text: true,
        }
    }

    /// Makes a restored session live on `peer`: the server finds it ([`Server::session`]) and,
    /// once the client `initialized` (here or on another node), registry changes are
    /// announced, as after `notifications/initialized`.
    #[cfg(feature = "http-server")]
    pub(crate) fn resume(&self, peer: &Peer, initialized: bool) {
        let session = match &*self.state() {
            State::Session { session, .. } => Arc::clone(session),
            State::Opening(_) => return,
        };
        self.server.register_session(SessionHandle::new(
            session,
            peer.unrelated(),
            self.server.config().client_request_timeout,
        ));
        if initialized {
            self.start_announcing();
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Answers `initialize` request `id`. Whether it opens the session is decided under the
    /// state's lock (two may come at once over HTTP): only the opening one's refusal ends a
    /// session.
    fn initialize(
        &self,
        id: &RequestId,
        params: Option<Value>,
        peer: &Peer,
    ) -> Result<Payload, ErrorObject> {
        let mut state = self.state();
        let read = match &mut *state {
            State::Opening(read) => read.take(),
            State::Session { .. } => {
                return Err(ErrorObject::invalid_request(
                    "the session is already initialized",
                ));
            }
        };
        let read = match read {
            Some(read) => Ok(*read),
            None => session::read_initialize(params.as_ref()),
        };
        let params = match read {
            Ok(params) => params,
            Err(error) => {
                drop(state);
                if let Some(events) = &self.events {
                    events.refused(id);
                }
                return Err(error);
            }
        };
        let version = session::negotiate(&params.protocol_version);
        let events = self.events.as_ref().map(Arc::downgrade);
        let session = Arc::new(Session::new(self.name.clone(), version, params, events));
        self.server.register_session(SessionHandle::new(
            Arc::clone(&session),
            peer.unrelated(),
            self.server.config().client_request_timeout,
        ));
        *state = State::Session { session };
        drop(state);
        session::initialize_answer(&self.server, version, Kind::Session)
    }

    /// Starts telling the session's client about registry changes (see `announcer.rs`).
    fn start_announcing(&self) {
        if let State::Session { session } = &*self.state() {
            session.announcer.open();
        }
    }
}

/// How a session served over many exchanges starts.
#[cfg(feature = "http-server")]
#[derive(Debug)]
pub(crate) enum SessionStart<'a> {
    /// Waiting for the `initialize` that opens it; the session is named so, or at random.
    Fresh {
        name: Option<String>,
        /// The params of the `initialize` that opens it, when the transport read them.
        initialize: Option<Box<InitializeParams>>,
    },
    /// Opened by another node: in the state of `record`, named `name` here.
    Restored {
        name: String,
        record: &'a SessionRecord,
    },
}

/// A session's connection, as its transport reaches it to bring its state up to date with a
/// store (another node changed it). Holds nothing alive.
#[cfg(feature = "http-server")]
#[derive(Clone)]
pub(crate) struct SessionSync(std::sync::Weak<Connection>);

#[cfg(feature = "http-server")]
impl SessionSync {
    pub(crate) fn new(connection: &Arc<Connection>) -> Self {
        Self(Arc::downgrade(connection))
    }

    /// Takes the level and subscriptions of `record`, and starts announcing registry changes
    /// once `record` says the client initialized. Nothing before `initialize` was answered, or
    /// once the connection is gone.
    pub(crate) fn apply(&self, record: &SessionRecord) {
        let Some(connection) = self.0.upgrade() else {
            return;
        };
        let session = match &*connection.state() {
            State::Session { session, .. } => Arc::clone(session),
            State::Opening(_) => return,
        };
        session.follow(record);
        if record.initialized {
            connection.start_announcing();
        }
    }

    /// Announces every kind of change, and an update of every resource the session
    /// subscribes to, to its client (changes it may have missed: the node that announced them
    /// to it stopped), on a task of its own.
    pub(crate) fn announce_all(&self, peer: &Peer) {
        let Some(connection) = self.0.upgrade() else {
            return;
        };
        let session = match &*connection.state() {
            State::Session { session, .. } => Arc::clone(session),
            State::Opening(_) => return,
        };
        let peer = peer.clone();
        tokio::spawn(async move {
            let batch = ServerEvent::after_lag(session.subscribed());
            announcer::announce(&peer, &session, batch).await;
        });
    }
}

#[cfg(feature = "http-server")]
impl std::fmt::Debug for SessionSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSync(..)")
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl Handler for Connection {
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
        let params = request.params.as_ref();
        if let Some(meta) =
            stateless::request_meta(params).filter(|_| stateless::claims_version(params))
        {
            // Over stdio: the era of each message is decided here (over HTTP, by the endpoint).
            if stateless::is_removed_method(&request.method) {
                return ready(Err(ErrorObject::method_not_found(&request.method)));
            }
            return match stateless::Envelope::read(meta).and_then(stateless::Envelope::scope) {
                Ok(mut scope) => {
                    scope.results_as_text = self.results_as_text;
                    stateless::serve(&self.server, scope, request, cx)
                }
                Err(e) => ready(Err(e)),
            };
        }
        let session = match request.method.as_str() {
            "initialize" => return ready(self.initialize(&request.id, request.params, &cx.peer)),
            "server/discover" => return ready(Err(stateless::discover_without_envelope())),
            method => match &*self.state() {
                State::Session { session, .. } => Arc::clone(session),
                State::Opening(_) if method == "ping" => {
                    return ready(Ok(Payload::Value(Value::Object(serde_json::Map::new()))));
                }
                State::Opening(_) => {
                    return ready(Err(ErrorObject::invalid_request(
                        "no session: send initialize first, or name the protocol version in _meta",
                    )));
                }
            },
        };
        let mut scope = Scope::in_session(session);
        scope.results_as_text = self.results_as_text;
        crate::peer::box_in_place(|| dispatch::handle(self.server.clone(), scope, request, cx))
    }

    fn on_close(&self) {
        if let State::Session { session, .. } = &*self.state() {
            self.server.forget_session(session);
        }
    }

    fn on_refused(&self, request: &Request) {
        if request.method != "initialize" {
            return;
        }
        let opening = match &mut *self.state() {
            // The params read for the refused request are no other request's.
            State::Opening(read) => {
                *read = None;
                true
            }
            State::Session { .. } => false,
        };
        if opening && let Some(events) = &self.events {
            events.refused(&request.id);
        }
    }

    fn on_cancelled(&self, id: &RequestId) {
        if let Some(events) = &self.events {
            events.cancelled(id);
        }
    }

    fn on_notification(&self, notification: Notification, _peer: &Peer) {
        match notification.method.as_str() {
            "notifications/initialized" => {
                if let Some(events) = &self.events {
                    events.initialized();
                }
                self.start_announcing();
            }
            other => match self.server.read_registry().custom.notification(other) {
                // Each runs on a task of its own, within the server's cap on running handlers:
                // past it, the notification is dropped (a notification has no answer to fail).
                Some(handler) => match Arc::clone(&self.server.inner.running).try_acquire_owned() {
                    Ok(permit) => {
                        let work = handler(notification.params);
                        tokio::spawn(async move {
                            work.await;
                            drop(permit);
                        });
                    }
                    Err(_) => tracing::warn!(method = other, "server busy: notification dropped"),
                },
                None => tracing::debug!(method = other, "notification ignored"),
            },
        }
    }
}
