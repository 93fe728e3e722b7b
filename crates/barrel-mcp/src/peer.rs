//! The JSON-RPC engine shared by the server and client roles.
//!
//! [`serve`] takes a [`Transport`] and a [`Handler`] and runs the connection: it reads frames,
//! dispatches inbound requests to the handler (each on its own task), answers them, routes
//! responses and progress to the outbound requests waiting for them, and writes everything the
//! local side sends through one ordered, bounded queue. The [`Peer`] handle it returns is how
//! the local side sends requests and notifications.
//!
//! # Invariants
//!
//! - Notifications are never answered, and neither are responses.
//! - Whatever a handler sends before it returns is written before its response: requests,
//!   notifications and responses share one FIFO queue (or, on a connection without loops, are
//!   written by their sender at once, in the order sent).
//! - Every table and queue is bounded: the outbound queue ([`PeerConfig::outbound_queue`]), the
//!   inbound requests in flight ([`PeerConfig::max_inbound_in_flight`]) and every outbound wait
//!   ([`PeerConfig::max_request_timeout`]). The pending-request table holds one entry per
//!   outstanding outbound call.
//! - When the connection ends, every pending outbound request fails with [`Error::Closed`] and
//!   every inbound request in flight has its cancellation token cancelled.
//!
//! # Tasks and locks
//!
//! One task owns the transport: it runs the read loop and the write loop side by side, so a
//! slow write never holds up reading. Each inbound request runs on a task of its own, which
//! forgets itself when it ends (`handlers.rs`). An HTTP session has no loops (`inlet.rs`): each
//! POST hands its message in on its own task (a request's handler is spawned from there), and
//! what the connection sends is written by the sender at once, onto the session's streams. A request that comes without a connection (an HTTP
//! POST outside any session) is served by `one_request.rs`: one task, no loops. The tables
//! of pending outbound requests and inbound requests in flight sit behind `std` mutexes that are
//! held only for a lookup or an insert and never across an `.await`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::{ErrorObject, Notification, Payload, Request, RequestId};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::transport::Transport;

mod connection;
#[cfg(feature = "http-server")]
pub(crate) mod driven;
mod handlers;
mod inbound;
#[cfg(feature = "http-server")]
mod inlet;
#[cfg(feature = "http-server")]
pub(crate) mod one_request;
mod outbound;
mod shared;
mod unwind;

#[cfg(feature = "http-server")]
pub(crate) use inlet::{DirectWriter, Inlet, open};
#[cfg(feature = "http-server")]
pub(crate) use shared::RequestIds;
use shared::{Outbound, Shared};

/// What the outbound queue holds: boxed, so an idle connection's queue is one block of
/// pointers rather than of whole messages.
pub(crate) type Queued = Box<crate::transport::Outgoing>;

/// A boxed, sendable future: what a [`Handler`] returns for a request.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Boxes the future `make` returns in memory allocated first, which lets the optimizer build
/// it where it stays (it did for every caller, callgrind; a debug build still copies).
/// `Box::pin(future)` builds it on the stack and copies all of it, and a future's size is
/// that of its largest state (5 KB for a request's), however little its start holds.
pub(crate) fn box_in_place<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

/// Limits and defaults for one connection.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// How long an outbound request waits for its response unless [`RequestOptions::timeout`]
    /// says otherwise (default 60 s).
    pub request_timeout: Duration,
    /// The longest an outbound request ever waits, even when progress keeps resetting its
    /// timeout, unless [`RequestOptions::max_total`] says otherwise (default 10 min).
    pub max_request_timeout: Duration,
    /// How many inbound requests may run at once; one more is answered with -32603
    /// "server busy" (default 1024).
    pub max_inbound_in_flight: usize,
    /// How many outbound messages may wait to be written before senders wait (default 1024).
    pub outbound_queue: usize,
    /// When the input ends, how long requests already admitted may still run to be answered
    /// before they are cancelled (default 5 s).
    pub drain_timeout: Duration,
    /// Once the connection ends, how long what is already queued may take to be written and
    /// the transport to close (an HTTP client's DELETE included) (default 2 s).
    pub close_grace: Duration,
    /// Once the connection ends, how long handlers that were cancelled may take to return
    /// before they are aborted (default 1 s).
    pub handler_grace: Duration,
    /// Progress notifications one outbound request may have waiting for its caller (the
    /// client's progress callback); beyond it, new ones are dropped (and logged) until the
    /// caller catches up, so a chatty peer cannot grow memory through a slow callback
    /// (default 256).
    pub progress_queue: usize,
    /// The longest string request id accepted, in bytes (default 256). A longer one is
    /// answered -32600 at once (echoed, so the answer still finds its request) and never kept
    /// in the in-flight table or written to the logs.
    pub max_request_id_length: usize,
}

impl Default for PeerConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            max_request_timeout: Duration::from_secs(600),
            max_inbound_in_flight: 1024,
            outbound_queue: 1024,
            drain_timeout: Duration::from_secs(5),
            progress_queue: 256,
            close_grace: Duration::from_secs(2),
            handler_grace: Duration::from_secs(1),
            max_request_id_length: 256,
        }
    }
}

/// Inbound dispatch, implemented by the server (and the client) role.
pub trait Handler: Send + Sync + 'static {
    /// Handles a request. Called in arrival order on the connection's read loop (over an
    /// HTTP session, on the task of the POST that carried it, so calls for one session may
    /// run at once), so it must not block; the peer runs the future it returns and sends its
    /// outcome as the response: a [`Payload`], a value (`Payload::from(value)`) or JSON text
    /// written already ([`Payload::text_of`]), sent as it is.
    ///
    /// A future that panics is answered with -32603 and a generic message. When
    /// [`RequestContext::cancel`] fires (the other side cancelled, or the connection ended) the
    /// outcome is dropped unanswered.
    fn on_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> BoxFuture<'static, Result<Payload, ErrorObject>>;

    /// Handles a notification. Called in arrival order on the read loop (over an HTTP
    /// session, on its POST's task), so it must not block
    /// (spawn a task to await anything). `notifications/cancelled`, and `notifications/progress`
    /// for the local side's own requests, are handled by the peer and never reach this method.
    fn on_notification(&self, notification: Notification, peer: &Peer);

    /// Called when the peer answers `request` with an error itself, before any handler saw
    /// it (an over-long id, a duplicate id, too many requests in flight). Called on the read
    /// loop, so it must not block.
    fn on_refused(&self, request: &Request) {
        let _ = request;
    }

    /// Called when the other side cancels inbound request `id` (`notifications/cancelled` for
    /// a request in flight): its handler's token has fired and its outcome will not be sent.
    /// Called on the read loop, so it must not block.
    fn on_cancelled(&self, id: &RequestId) {
        let _ = id;
    }

    /// Called once when the connection has ended.
    fn on_close(&self) {}
}

/// What a handler gets with each inbound request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The request's id.
    pub id: RequestId,
    /// Cancelled when the other side cancels the request or the connection ends.
    pub cancel: CancellationToken,
    /// The connection, to send notifications and requests of its own.
    pub peer: Peer,
    /// Who sent the request, when the transport knows
    /// ([`MessageReader::caller`](crate::transport::MessageReader::caller)).
    pub caller: Option<Arc<crate::transport::Caller>>,
}

/// How to send one outbound request; `Default` uses the connection's settings.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// How long to wait for the response; `None` uses [`PeerConfig::request_timeout`].
    pub timeout: Option<Duration>,
    /// The longest wait however often progress resets the timeout; `None` uses
    /// [`PeerConfig::max_request_timeout`].
    pub max_total: Option<Duration>,
    /// Restart the timeout whenever progress arrives for this request.
    pub reset_timeout_on_progress: bool,
    /// Receives the params of each `notifications/progress` for this request, in order, all
    /// before the request returns. Setting it (or `reset_timeout_on_progress`) adds a fresh
    /// `_meta.progressToken` to the params, which then must be an object or absent.
    ///
    /// The channel is bounded by whoever makes it: the peer never waits for room (its read loop
    /// must not stall), so a notification that finds the channel full is dropped and logged.
    pub progress: Option<mpsc::Sender<Value>>,
    /// Cancelling this token cancels the request: the peer sends `notifications/cancelled` and
    /// the call returns [`Error::Cancelled`].
    pub cancel: Option<CancellationToken>,
}

/// A cheap, cloneable handle to one connection.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
    /// The inbound request this handle serves, if it was handed to a handler.
    related: Option<RequestId>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// Sends a request and waits for its result.
    ///
    /// An error response returns [`Error::Rpc`]; no response in time returns
    /// [`Error::Timeout`]; cancelling [`RequestOptions::cancel`] returns [`Error::Cancelled`];
    /// a connection that ends first returns [`Error::Closed`]. After a timeout or a cancel the
    /// peer sends `notifications/cancelled` for the request.
    ///
    /// Cancel safety: dropping the future before it completes also sends
    /// `notifications/cancelled` (once the request was written) and forgets the request.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value, Error> {
        let result = self.request_result(method, params, options).await?;
        read_result(result)
    }

    /// [`Peer::request`], with the result as it came: a value off the wire, or the text an
    /// in-process peer wrote (read straight into a typed result with [`Payload::decode`]).
    pub(crate) async fn request_result(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Payload, Error> {
        outbound::request(&self.shared, self.related.clone(), method, params, options).await
    }

    /// Queues a notification behind everything sent before it, and resolves once it is queued
    /// (not yet written). Returns [`Error::Closed`] when the connection has ended.
    ///
    /// Cancel safety: dropping the future before it completes means the notification is not
    /// sent.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        self.shared
            .notify(method, params, self.related.clone())
            .await
    }

    /// The inbound request this handle was handed for, if any. What it sends belongs to that
    /// request (see [`Outgoing`](crate::transport::Outgoing)).
    pub fn related(&self) -> Option<&RequestId> {
        self.related.as_ref()
    }

    /// A handle whose messages belong to the inbound request `id`.
    pub fn related_to(&self, id: RequestId) -> Peer {
        Peer {
            shared: Arc::clone(&self.shared),
            related: Some(id),
        }
    }

    /// A handle whose messages belong to no inbound request.
    pub(crate) fn unrelated(&self) -> Peer {
        Peer {
            shared: Arc::clone(&self.shared),
            related: None,
        }
    }

    /// The connection's limits.
    pub(crate) fn config(&self) -> &PeerConfig {
        &self.shared.config
    }

    /// True once the connection has ended (or is ending).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// Resolves when the connection ends. By then every pending request has failed with
    /// [`Error::Closed`]. Cancel-safe.
    pub async fn closed(&self) {
        self.shared.closed.cancelled().await;
    }

    /// Resolves once the input has ended: the other side sends nothing more, and requests
    /// already running are being drained. Long-lived requests (`subscriptions/listen`) end
    /// gracefully then, instead of being cancelled when the drain times out. Cancel-safe.
    pub(crate) async fn input_ended(&self) {
        self.shared.input_ended.cancelled().await;
    }

    /// Ends the connection: pending requests fail with [`Error::Closed`], inbound requests in
    /// flight are cancelled, messages already queued get a short grace period to be written,
    /// and the transport is closed.
    pub fn close(&self) {
        self.shared.shutdown();
    }
}

/// Runs a connection over `transport`, dispatching inbound messages to `handler`.
///
/// Spawns the task that owns the transport and returns a [`Peer`] handle with its
/// [`JoinHandle`]. The task ends when the input ends, [`Peer::close`] is called, or the
/// transport fails (then it returns the error); [`Handler::on_close`] runs just before.
/// Must be called within a Tokio runtime.
pub fn serve<T: Transport>(
    transport: T,
    handler: Arc<dyn Handler>,
    config: PeerConfig,
) -> (Peer, JoinHandle<Result<(), Error>>) {
    let (peer, run) = connect(transport, handler, config);
    (peer, tokio::spawn(run))
}

/// [`serve`] without the task: the caller drives the connection's future itself, to its end
/// (an HTTP session's task does, which saves a task per session). Dropping the future before
/// it ends leaves the handlers running to their cancellation, unsupervised.
pub(crate) fn connect<T: Transport>(
    transport: T,
    handler: Arc<dyn Handler>,
    config: PeerConfig,
) -> (
    Peer,
    impl Future<Output = Result<(), Error>> + Send + 'static,
) {
    let (outbound_tx, outbound_rx) = mpsc::channel(config.outbound_queue.max(1));
    let peer = Peer {
        shared: Arc::new(Shared::new(config, Outbound::Queue(outbound_tx))),
        related: None,
    };
    let (reader, writer) = transport.split();
    let run = connection::run(reader, writer, outbound_rx, handler, peer.clone());
    (peer, run)
}

/// A result as a value. Text only comes from this process (an in-memory pair), written by
/// serde_json: it fails to read back only past serde_json's nesting limit.
pub(crate) fn read_result(result: Payload) -> Result<Value, Error> {
    result
        .into_value()
        .map_err(|e| Error::Protocol(format!("the result could not be read: {e}")))
}
