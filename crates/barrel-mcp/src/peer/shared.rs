//! The state one connection shares between its tasks and its [`Peer`](super::Peer) handles.

use std::collections::HashMap;
#[cfg(feature = "http-server")]
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use barrel_mcp_types::{Message, RequestId};

use crate::transport::Outgoing;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

#[cfg(feature = "http-server")]
use super::DirectWriter;
use super::handlers::Handlers;
use super::outbound::Pending;
use super::{PeerConfig, Queued};
use crate::Error;

/// The method of the cancellation notification.
pub(super) const CANCELLED: &str = "notifications/cancelled";
/// The method of the progress notification.
pub(super) const PROGRESS: &str = "notifications/progress";

pub(super) struct Shared {
    pub(super) config: PeerConfig,
    /// Where outgoing messages go, in one order.
    pub(super) outbound: Outbound,
    /// Cancelled when the connection ends; parent of every inbound request's token (for one
    /// request served without a connection, that request's token itself).
    pub(super) closed: CancellationToken,
    /// The next outbound request id.
    pub(super) next_id: AtomicI64,
    /// The last outbound request id this connection may use (see [`RequestIds`]).
    pub(super) last_id: i64,
    /// Outbound requests waiting for a response, by id (ids we allocate are integers).
    pub(super) pending: Mutex<HashMap<i64, Pending>>,
    /// Inbound requests whose handler is running, with the token `notifications/cancelled`
    /// cancels (`None` for `initialize`, which the spec says is never cancelled).
    pub(super) in_flight: Mutex<HashMap<RequestId, Option<CancellationToken>>>,
    /// The tasks running inbound request handlers; those still running when the connection
    /// task ends are aborted.
    pub(super) handlers: Handlers,
    /// Cancelled when the input has ended: no response can arrive any more.
    pub(super) input_ended: CancellationToken,
    /// Inbound requests admitted whose outcome is not yet queued.
    pub(super) active: AtomicUsize,
    /// Woken each time an inbound request's outcome is queued.
    pub(super) request_done: Notify,
    /// False for a handle of one request served without a connection: nothing reads the
    /// other side's answers, so it sends no requests.
    pub(super) reads_responses: bool,
    /// How long a send may wait for room in `outbound` before the connection is closed (the
    /// other side stopped reading); `None` waits as long as it takes (the write loop drains
    /// the queue).
    pub(super) send_limit: Option<Duration>,
}

/// The ids a connection gives its outbound requests: from `first` to `last`, each once.
#[cfg(feature = "http-server")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestIds {
    first: i64,
    last: i64,
}

#[cfg(feature = "http-server")]
impl RequestIds {
    /// Every positive id: a connection that shares nothing with other nodes.
    pub(crate) const ALL: Self = Self {
        first: 1,
        last: i64::MAX,
    };

    /// The ids carrying `node` ([`NodeTag::request_id`](crate::store::NodeTag::request_id)),
    /// so an answer that reaches another node of the service is sent on to this one; every id
    /// for a node that shares nothing ([`NodeTag::LOCAL`](crate::store::NodeTag::LOCAL)).
    /// They start at random in the first half of the node's range: a copy of a session built
    /// again on the same node (or on a node that took the tag over) does not reuse the ids of
    /// the one before, whose late answers would otherwise resolve its requests.
    pub(crate) fn of_node(node: crate::store::NodeTag) -> Self {
        use crate::store::NodeTag;
        if node == NodeTag::LOCAL {
            return Self::ALL;
        }
        let mut random = [0u8; 4];
        let offset = match getrandom::fill(&mut random) {
            Ok(()) => u32::from_le_bytes(random) % (NodeTag::MAX_REQUEST_N / 2),
            Err(_) => 0,
        };
        match (
            node.request_id(1 + offset),
            node.request_id(NodeTag::MAX_REQUEST_N),
        ) {
            (Some(first), Some(last)) => Self { first, last },
            _ => Self::ALL,
        }
    }
}

impl Shared {
    /// The state of a connection giving its requests `ids`.
    #[cfg(feature = "http-server")]
    pub(super) fn with_ids(config: PeerConfig, outbound: Outbound, ids: RequestIds) -> Self {
        Self {
            next_id: AtomicI64::new(ids.first),
            last_id: ids.last,
            ..Self::new(config, outbound)
        }
    }

    pub(super) fn new(config: PeerConfig, outbound: Outbound) -> Self {
        let (closed, input_ended) = (CancellationToken::new(), CancellationToken::new());
        Self::with(config, outbound, closed, input_ended)
    }

    /// The state of one request served without a connection (see `peer/one_request.rs`).
    #[cfg(feature = "http-server")]
    pub(super) fn one_request(config: PeerConfig, route: super::one_request::Route) -> Self {
        let outbound = Outbound::Queue(route.outbound);
        Self {
            reads_responses: false,
            send_limit: Some(route.stalled),
            ..Self::with(config, outbound, route.closed, route.input_ended)
        }
    }

    /// A connection's state around tokens made by the caller (a struct update from [`new`]
    /// would make two tokens only to drop them).
    ///
    /// [`new`]: Self::new
    fn with(
        config: PeerConfig,
        outbound: Outbound,
        closed: CancellationToken,
        input_ended: CancellationToken,
    ) -> Self {
        Self {
            config,
            outbound,
            closed,
            next_id: AtomicI64::new(1),
            last_id: i64::MAX,
            pending: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            handlers: Handlers::default(),
            input_ended,
            active: AtomicUsize::new(0),
            request_done: Notify::new(),
            reads_responses: true,
            send_limit: None,
        }
    }

    /// True while responses to our requests can still arrive.
    pub(super) fn accepts_responses(&self) -> bool {
        self.reads_responses && !self.closed.is_cancelled() && !self.input_ended.is_cancelled()
    }

    /// The input ended: fail every pending outbound request (no answer can come) while inbound
    /// handlers may still finish and be answered.
    pub(super) fn end_input(&self) {
        self.input_ended.cancel();
        // A barrier: a request being admitted now is counted before this returns.
        drop(lock(&self.in_flight));
        let drained = lock(&self.pending).drain().count();
        if drained > 0 {
            tracing::debug!(count = drained, "input ended; pending requests fail");
        }
    }

    /// Marks one inbound request's outcome as queued.
    pub(super) fn request_finished(&self) {
        self.active.fetch_sub(1, Ordering::AcqRel);
        self.request_done.notify_waiters();
    }

    /// The input ended (the other side sends nothing more): requests already admitted get
    /// [`PeerConfig::drain_timeout`](super::PeerConfig::drain_timeout) to finish and be
    /// answered, unless the connection closes first.
    pub(super) async fn drain(&self) {
        self.end_input();
        let drained = async {
            tokio::select! {
                () = self.idle() => {}
                // Closed meanwhile: stop waiting.
                () = self.closed.cancelled() => {}
            }
        };
        if tokio::time::timeout(self.config.drain_timeout, drained)
            .await
            .is_err()
        {
            tracing::debug!("input ended; requests still running are cancelled");
        }
    }

    /// Waits until every admitted inbound request has queued its outcome.
    pub(super) async fn idle(&self) {
        loop {
            let done = self.request_done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.active.load(Ordering::Acquire) == 0 {
                return;
            }
            done.await;
        }
    }

    /// Queues a message; drops it (with a debug log) when the connection is gone.
    pub(super) async fn enqueue(&self, message: Message, related: Option<RequestId>) {
        if self.send(Outgoing { message, related }).await.is_err() {
            tracing::debug!("connection closed; outbound message dropped");
        }
    }

    pub(super) async fn notify(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<(), Error> {
        if self.closed.is_cancelled() {
            return Err(Error::Closed);
        }
        let message = Message::notification(method, params);
        self.send(Outgoing { message, related }).await
    }

    /// Puts one message on the outbound queue, within `send_limit` when there is one.
    pub(super) async fn send(&self, outgoing: Outgoing) -> Result<(), Error> {
        let outgoing = Box::new(outgoing);
        let Some(limit) = self.send_limit else {
            return self.outbound.send(outgoing).await;
        };
        if self.closed.is_cancelled() {
            return Err(Error::Closed);
        }
        match tokio::time::timeout(limit, self.outbound.send(outgoing)).await {
            Ok(sent) => sent,
            Err(_) => {
                tracing::debug!("the other side stopped reading; the request is dropped");
                self.shutdown();
                Err(Error::Closed)
            }
        }
    }

    /// Marks the connection ended and fails every pending outbound request. Idempotent.
    pub(super) fn shutdown(&self) {
        self.closed.cancel();
        // A barrier: a request being admitted now has its token (cancelled) before this returns.
        drop(lock(&self.in_flight));
        // Requests register under this lock only while `closed` is not cancelled, so none can
        // slip in after this drain. Dropping their reply senders makes them return `Closed`.
        let drained: Vec<Pending> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        if !drained.is_empty() {
            tracing::debug!(
                count = drained.len(),
                "connection ended; pending requests fail"
            );
        }
    }
}

/// Where a connection's outgoing messages go.
#[derive(Clone)]
pub(super) enum Outbound {
    /// The write loop's queue; a sender waits for room.
    Queue(mpsc::Sender<Queued>),
    /// Written by the sender itself, at once: a transport whose writes never wait (an HTTP
    /// session puts each message on a stream's buffer).
    #[cfg(feature = "http-server")]
    Direct(Arc<dyn DirectWriter>),
}

impl Outbound {
    /// Hands one message on, waiting for room in a queue; `Closed` once nothing takes it.
    pub(super) async fn send(&self, message: Queued) -> Result<(), Error> {
        match self {
            Self::Queue(queue) => queue.send(message).await.map_err(|_| Error::Closed),
            #[cfg(feature = "http-server")]
            Self::Direct(writer) => {
                writer.write(*message);
                Ok(())
            }
        }
    }

    /// Hands one message on without waiting: a full queue gives it back (a closed one drops it).
    pub(super) fn try_send(&self, message: Queued) -> Result<(), Queued> {
        match self {
            Self::Queue(queue) => match queue.try_send(message) {
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
                Err(mpsc::error::TrySendError::Full(message)) => Err(message),
            },
            #[cfg(feature = "http-server")]
            Self::Direct(writer) => {
                writer.write(*message);
                Ok(())
            }
        }
    }
}

/// Locks a table. A panic while it was held cannot leave it inconsistent (every critical
/// section is a single map operation), so poisoning is ignored.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `notifications/cancelled` for one of our requests.
pub(super) fn cancelled_notification(id: i64, reason: &str) -> Message {
    Message::notification(
        CANCELLED,
        Some(json!({ "requestId": id, "reason": reason })),
    )
}

#[cfg(all(test, feature = "http-server"))]
mod tests {
    use super::RequestIds;
    use crate::store::NodeTag;

    #[test]
    fn a_nodes_ids_carry_its_tag_and_start_at_random() {
        let tag = NodeTag::new(9).unwrap_or_default();
        let starts: Vec<i64> = (0..8).map(|_| RequestIds::of_node(tag).first).collect();
        for &first in &starts {
            assert_eq!(NodeTag::of_request_id(first), Some(tag));
            let ids = RequestIds::of_node(tag);
            assert_eq!(NodeTag::of_request_id(ids.last), Some(tag));
            assert!(ids.last - first > i64::from(NodeTag::MAX_REQUEST_N / 2) - 2);
        }
        let mut distinct = starts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 1, "eight copies all started at {starts:?}");
        assert_eq!(RequestIds::of_node(NodeTag::LOCAL), RequestIds::ALL);
    }
}
