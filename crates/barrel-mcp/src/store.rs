//! State that must outlive one process or span nodes: the store traits of a replicated
//! service, their in-memory implementations (the default, one process) and, with feature
//! `redis`, their Redis implementations (several nodes, one service).
//!
//! The rules every store keeps:
//! - **the store is the truth; nodes cache**: any node can serve any request from what the
//!   store holds;
//! - **durable before visible**: an id or an event reaches a client only after the store
//!   committed it;
//! - **an outage is never "not found"**: a store that cannot answer says
//!   [`StoreError::Unavailable`], which a server turns into 503 with `Retry-After`, so a client
//!   never drops a live session because Redis blinked;
//! - **every key expires**: nothing a store writes outlives its session, stream or task.
//!
//! Ids a client echoes back (SSE stream numbers, server-to-client request ids) carry the
//! [`NodeTag`] of the node that issued them, so what comes back reaches that node without a
//! lookup. In a single process the tag is 0 and every id is what it always was.
//!
//! Tasks have their own store, [`task::TaskStore`](crate::task::TaskStore).

use std::fmt;

mod bus;
mod events;
#[cfg(feature = "redis")]
pub mod redis;
mod sessions;

#[cfg(feature = "redis")]
pub use self::bus::RedisBus;
pub use self::bus::{
    Bus, BusOptions, Delivery, Directed, Inbox, LocalBus, LocalHub, Subscription, Topic,
};
#[cfg(feature = "redis")]
pub use self::events::RedisEventStore;
pub use self::events::{EventLimits, EventStore, MemoryEventStore, Opened, Replay, StreamInfo};
#[cfg(feature = "redis")]
pub use self::sessions::RedisSessionStore;
pub use self::sessions::{
    Created, LONGEST_TTL, MemorySessionStore, SessionChange, SessionLimits, SessionRecord,
    SessionStore, Updated,
};

/// Why a store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached or did not answer in time. Retry later; the thing asked
    /// about may well exist. The message names no credential.
    Unavailable(String),
    /// The store holds something this version cannot read (another version of barrel-mcp, or
    /// a foreign writer under the same prefix).
    Corrupt(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable(why) => write!(f, "the store is unavailable: {why}"),
            Self::Corrupt(why) => write!(f, "the store holds an unreadable record: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// The number of one node of a service, unique among the nodes sharing a store while its data
/// lives. Ids a client echoes back carry it, so what comes back reaches the node that issued
/// the id. A single process is node [`NodeTag::LOCAL`] (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NodeTag(u32);

impl NodeTag {
    /// The tag of a process that shares nothing: ids are what they are without nodes.
    pub const LOCAL: Self = Self(0);
    /// The largest tag: tags are 24 bits, so a tagged id stays a JSON integer below 2^53.
    pub const MAX: u32 = (1 << 24) - 1;

    /// The tag `n`, if it fits in 24 bits.
    pub fn new(n: u32) -> Option<Self> {
        (n <= Self::MAX).then_some(Self(n))
    }

    /// The tag as a number.
    pub fn get(self) -> u32 {
        self.0
    }

    /// An SSE stream number carrying this tag: `(tag << 32) | n`. Tag 0 leaves `n` as it is.
    pub fn stream(self, n: u32) -> u64 {
        (u64::from(self.0) << 32) | u64::from(n)
    }

    /// The tag a stream number carries, if it is one this scheme makes (a number from a
    /// client whose high bits name no possible tag is none: it is refused, never routed to
    /// some other node).
    pub fn of_stream(stream: u64) -> Option<Self> {
        u32::try_from(stream >> 32).ok().and_then(Self::new)
    }

    /// The largest `n` of a tagged request id.
    pub const MAX_REQUEST_N: u32 = (1 << 28) - 1;

    /// A server-to-client request id carrying this tag: `tag * 2^28 + n`, if `n` is at most
    /// [`MAX_REQUEST_N`](Self::MAX_REQUEST_N) (never wrapped onto an id already used). Tag 0
    /// leaves `n` as it is, and every tagged id stays below 2^53, so clients that read JSON
    /// numbers as doubles echo it exactly.
    pub fn request_id(self, n: u32) -> Option<i64> {
        (n <= Self::MAX_REQUEST_N).then(|| (i64::from(self.0) << 28) | i64::from(n))
    }

    /// The tag a server-to-client request id carries, if it is one this scheme makes.
    pub fn of_request_id(id: i64) -> Option<Self> {
        if !(0..1 << 52).contains(&id) {
            return None;
        }
        u32::try_from(id >> 28).ok().and_then(Self::new)
    }
}

impl fmt::Display for NodeTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::NodeTag;

    #[test]
    fn tag_zero_leaves_ids_as_they_were() {
        assert_eq!(NodeTag::LOCAL.stream(7), 7);
        assert_eq!(NodeTag::LOCAL.request_id(42), Some(42));
        assert_eq!(NodeTag::of_stream(7), Some(NodeTag::LOCAL));
        assert_eq!(NodeTag::of_request_id(42), Some(NodeTag::LOCAL));
    }

    #[test]
    fn tags_round_trip_through_ids() {
        let tag = NodeTag::new(NodeTag::MAX).expect("24 bits");
        assert_eq!(NodeTag::of_stream(tag.stream(u32::MAX)), Some(tag));
        assert_eq!(NodeTag::of_stream(u64::MAX), None, "no tag has 32 bits");
        assert_eq!(
            tag.request_id(NodeTag::MAX_REQUEST_N + 1),
            None,
            "never wrapped"
        );
        let id = tag.request_id(5).expect("in range");
        assert!(id < 1 << 53, "a JSON-safe integer");
        assert_eq!(NodeTag::of_request_id(id), Some(tag));
        assert_eq!(NodeTag::new(NodeTag::MAX + 1), None);
        assert_eq!(NodeTag::of_request_id(-1), None);
        assert_eq!(NodeTag::of_request_id(1 << 53), None);
    }
}
