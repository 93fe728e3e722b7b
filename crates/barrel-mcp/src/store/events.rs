//! Where the events of resumable SSE streams live: the [`EventStore`] trait,
//! [`MemoryEventStore`] (one process, the default) and, with feature `redis`,
//! `RedisEventStore` (every node of a service).
//!
//! A Streamable HTTP session (revisions 2025-03-26 to 2025-11-25) answers each POST on a stream
//! of its own and has one GET stream, number 0, for messages that belong to no request. Every
//! event has the id `<stream>.<seq>`; a client that lost its connection sends
//! `Last-Event-ID` and gets every event after that one again. The store holds those events, so a
//! stream produced on one node can be resumed on another.
//!
//! The contract every store keeps:
//! - **durable before visible**: [`append`](EventStore::append) returns the event's sequence
//!   number only once the event is stored; only then may the client see the id;
//! - **the store numbers events**: per stream, from 1, gap-free, in the order the store applied
//!   the appends, whoever produced them (the GET stream has several producers: every node with
//!   a message for the session);
//! - **bounded**: per stream by [`EventLimits::replay_events`] and
//!   [`replay_bytes`](EventLimits::replay_bytes) (the oldest events go first; the newest is
//!   always kept), per session by [`max_streams`](EventLimits::max_streams) (a store that
//!   keeps one-event streams apart, [`EventStore::append_single`], bounds those by their
//!   [`finished_stream_ttl`](EventLimits::finished_stream_ttl) alone: each lives that long);
//! - **everything expires**: an open stream [`session_ttl`](EventLimits::session_ttl) after its
//!   last `open` or event (the node serving a GET stream keeps it alive), so the
//!   stream of a producer that died, or whose last `append` failed, does not linger or hold a
//!   place under `max_streams`; a finished one
//!   [`finished_stream_ttl`](EventLimits::finished_stream_ttl) after its last; a session's
//!   streams together `session_ttl` after the session's last write;
//! - **an outage is never "not found"**: a store that cannot answer says
//!   [`StoreError::Unavailable`]; `None` means the stream is not (or no longer) there.
//!
//! Data is stored verbatim: the text of one JSON-RPC message, without SSE framing (the framing,
//! with the id, is written when the event is sent).

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::RequestId;

use super::{NodeTag, StoreError};
use crate::peer::BoxFuture;

mod memory;
#[cfg(feature = "redis")]
mod redis_store;

pub use self::memory::MemoryEventStore;
#[cfg(feature = "redis")]
pub use self::redis_store::RedisEventStore;

/// The longest TTL a store applies; longer ones are cut to it (100 years: far beyond any
/// session, and small enough for every clock and for Redis's millisecond arithmetic).
const LONGEST_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The bounds of the event store, passed with every write. Every field has a documented
/// default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLimits {
    /// Events kept per stream for replay; older ones are dropped. Default 128.
    pub replay_events: usize,
    /// Bytes of event data kept per stream for replay; the oldest events are dropped to stay
    /// within it, but the newest event is always kept, however large. Default 1 MiB.
    pub replay_bytes: usize,
    /// How long a session's streams live after its last write (an `open` or an `append` to
    /// any of them), and an open stream after its own last `open` or event: an open stream
    /// idle that long is gone, as an expired finished one is. Default 30 minutes.
    pub session_ttl: Duration,
    /// How long a finished stream stays resumable after its last event. Default 60 s.
    pub finished_stream_ttl: Duration,
    /// Streams one session may hold at once, its GET stream included. Opening one more first
    /// forgets expired streams (open ones idle past `session_ttl` included), then the finished
    /// streams closest to expiry (never the GET stream, never an open one), a quarter of
    /// `max_streams` at once (at least one), so a busy session makes room once per quarter
    /// opened rather than at every open; when every stream left is open, the open is refused.
    /// Default 1,024.
    pub max_streams: usize,
}

impl Default for EventLimits {
    fn default() -> Self {
        Self {
            replay_events: 128,
            replay_bytes: 1 << 20,
            session_ttl: Duration::from_secs(30 * 60),
            finished_stream_ttl: Duration::from_secs(60),
            max_streams: 1_024,
        }
    }
}

impl EventLimits {
    /// `session_ttl`, within [`LONGEST_TTL`].
    pub(crate) fn session(&self) -> Duration {
        self.session_ttl.min(LONGEST_TTL)
    }

    /// `finished_stream_ttl`, within [`LONGEST_TTL`].
    pub(crate) fn finished(&self) -> Duration {
        self.finished_stream_ttl.min(LONGEST_TTL)
    }

    /// How long a session's records live after its last write: long enough for an open stream
    /// and for a finished one.
    pub(crate) fn records(&self) -> Duration {
        self.session().max(self.finished())
    }
}

/// What a stream is: who produces it and what it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    /// The node that opened the stream (for the GET stream, the latest to open it).
    pub producer: NodeTag,
    /// The request the stream answers; `None` for the GET stream.
    pub request: Option<RequestId>,
}

/// How [`EventStore::open`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Opened {
    /// A new, empty stream.
    Created,
    /// The stream was there: its events, numbering and state are kept; an open one gets the
    /// [`StreamInfo`] just given and its expiry starts again (a finished one stays as it is).
    Existed,
    /// The session holds [`EventLimits::max_streams`] streams, all open (or the GET stream):
    /// nothing was opened.
    Full,
}

/// What [`EventStore::replay`] found on a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The events after the cursor still held, oldest first: (sequence number, data).
    pub events: Vec<(u64, Arc<str>)>,
    /// The oldest sequence number still held (`None`: nothing is held). A cursor `after` with
    /// `after + 1 < first_available` missed events ([`Replay::missed`]).
    pub first_available: Option<u64>,
    /// The sequence number of the stream's newest event (0: none yet). A cursor beyond it was
    /// never issued.
    pub latest: u64,
    /// True once the stream's last event (its response) was appended.
    pub finished: bool,
    /// Who produces the stream and what it answers.
    pub info: StreamInfo,
}

impl Replay {
    /// True when events after `after` were appended but are no longer held (dropped from the
    /// window, or expired): the client is to be told its replay is truncated.
    pub fn missed(&self, after: u64) -> bool {
        after < self.latest
            && self
                .first_available
                .is_none_or(|first| first > after.saturating_add(1))
    }
}

/// Where the events of resumable SSE streams live.
///
/// Object-safe: a server holds an `Arc<dyn EventStore>`. Every method is one round trip to a
/// shared store. Sessions and streams are whatever the caller names them; stream numbers carry
/// the producing node's [`NodeTag`] (`NodeTag::stream`), so they are unique across nodes.
pub trait EventStore: Send + Sync + 'static {
    /// Opens stream `stream` of `session` for appending, with `info`; opening a stream that is
    /// there keeps its events (see [`Opened`]). Refreshes the session's expiry.
    fn open<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Opened, StoreError>>;

    /// Appends one event to an open stream and returns its sequence number: the previous one
    /// plus one, from 1, assigned by the store (gap-free and in the order the store applied
    /// the appends, even with several producers). Durable before `Ok`: the sequence number may
    /// be shown to the client only after this returns.
    ///
    /// `last`: this is the stream's final event (the response); the stream is then finished
    /// and expires [`EventLimits::finished_stream_ttl`] later.
    ///
    /// `Ok(None)`: no open stream by that number (never opened, finished, expired or
    /// forgotten); nothing was stored.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>>;

    /// Appends the first event of a stream its producer has not opened yet: opens it with
    /// `info` as [`open`](Self::open) does, then appends as [`append`](Self::append) does, in
    /// one round trip where the store can (the default runs the two). `Ok(None)`: nothing
    /// was stored (the session is full of open streams, or the stream was there and is
    /// finished).
    fn append_first<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move {
            match self.open(session, stream, info, limits).await? {
                Opened::Full => Ok(None),
                Opened::Created | Opened::Existed => {
                    self.append(session, stream, data, last, limits).await
                }
            }
        })
    }

    /// Stores a whole stream of one event: a new stream (its number never used in `session`)
    /// whose first event is also its last (a request answered with no message before its
    /// response, the common case). The result is the stream [`append_first`](Self::append_first)
    /// with `last` leaves, and that is what the default does.
    ///
    /// A store may keep such a stream apart, in one write (the Redis store does: a key of its
    /// own, one `SET`): it then takes no place under [`EventLimits::max_streams`] (it is
    /// finished from the start and expires [`EventLimits::finished_stream_ttl`] later), and
    /// [`forget`](Self::forget) may leave it to expire. [`replay`](Self::replay) finds it as
    /// any other stream. `Ok(None)`: nothing was stored (the number was in use).
    fn append_single<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        self.append_first(session, stream, info, data, true, limits)
    }

    /// Keeps open stream `stream` another [`EventLimits::session_ttl`] if `producer` still
    /// produces it, atomically: `Ok(false)` when another node opened it since, or it is
    /// finished or gone, and nothing changed. The node serving a quiet GET stream keeps it
    /// alive so, never taking it back from a node that opened it meanwhile.
    fn keep<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        producer: NodeTag,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Ends stream `stream` without an event (its request was cancelled, or its producer let
    /// go of it): an open stream is finished (it expires
    /// [`EventLimits::finished_stream_ttl`] later); a stream that is not there is recorded
    /// finished and empty, with `info`, unless the session holds
    /// [`EventLimits::max_streams`] streams, so a reader waiting for its first event stops
    /// waiting; a finished one stays as it is.
    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The events of a stream after `after` (0: from the start), oldest first. `Ok(None)`: no
    /// such stream (never opened, expired or forgotten).
    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> BoxFuture<'a, Result<Option<Replay>, StoreError>>;

    /// Drops every stream of `session` (it ended); streams stored by
    /// [`append_single`](Self::append_single) may instead run out their
    /// [`EventLimits::finished_stream_ttl`].
    fn forget<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// A shared store is a store: keep an `Arc` to look into the one a server uses.
impl<T: EventStore + ?Sized> EventStore for Arc<T> {
    fn open<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Opened, StoreError>> {
        (**self).open(session, stream, info, limits)
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        (**self).append(session, stream, data, last, limits)
    }

    fn append_first<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        (**self).append_first(session, stream, info, data, last, limits)
    }

    fn append_single<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        (**self).append_single(session, stream, info, data, limits)
    }

    fn keep<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        producer: NodeTag,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).keep(session, stream, producer, limits)
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).finish(session, stream, info, limits)
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> BoxFuture<'a, Result<Option<Replay>, StoreError>> {
        (**self).replay(session, stream, after)
    }

    fn forget<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).forget(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(first: Option<u64>, latest: u64) -> Replay {
        Replay {
            events: Vec::new(),
            first_available: first,
            latest,
            finished: false,
            info: StreamInfo {
                producer: NodeTag::LOCAL,
                request: None,
            },
        }
    }

    #[test]
    fn missed_means_appended_and_no_longer_held() {
        assert!(!replay(None, 0).missed(0), "nothing was appended");
        assert!(!replay(Some(1), 5).missed(0), "everything is held");
        assert!(replay(Some(3), 5).missed(0));
        assert!(replay(Some(3), 5).missed(1));
        assert!(!replay(Some(3), 5).missed(2));
        assert!(replay(None, 5).missed(4), "the events expired");
        assert!(!replay(None, 5).missed(5), "the cursor saw the newest");
        assert!(
            !replay(None, 5).missed(9),
            "a cursor from the future missed nothing"
        );
    }
}
