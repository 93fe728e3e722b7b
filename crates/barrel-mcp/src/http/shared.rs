//! Sessions shared by the nodes of one service: [`SharedSessions`] (the store and the bus an
//! endpoint keeps its sessions in), the news of sessions nodes tell each other, and the task
//! that listens for it.
//!
//! Each node keeps a local copy of the sessions it serves (the one it opened, or a replica
//! built from the store on the first request it got for a session another node opened). The
//! store is the truth; the bus only says when to look at it again:
//! - `session-ended:<id>`: the session was deleted (DELETE); every node drops its copy;
//! - `session-changed:<id>`: its stored state changed (initialized, level, subscriptions);
//!   every node holding a copy loads the record and takes its state;
//! - `session-deliver:<id>\n<message>`: a client's message for the node running its request
//!   (`forward.rs`);
//! - `session-appended:<id>`: a node appended to the session's GET stream in the event store;
//!   the node serving that stream reads it (`journal.rs`);
//! - `session-get:<tag>:<id>`: the client opened the session's GET stream on node `tag`; every
//!   other node stops serving it;
//! - a [`Delivery::Gap`] (messages may have been lost): every copy is checked against the
//!   store.
//!
//! They travel on [`Topic::Registry`], the topic of what concerns the whole service (its
//! documentation names "a session ended"), each body led by `session-`; the same task hands
//! registry changes (`registry-…`, `relay.rs`) to the server. The bus is lossy: a copy whose
//! record is gone is also noticed at its next touch of the store, and the request that notices
//! it gets 404.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::sessions::Sessions;
use super::{State, forward, relay};
use crate::server::{NodeNews, Server};
use crate::store::{
    Bus, Delivery, EventLimits, EventStore, NodeTag, SessionStore, Subscription, Topic,
};

/// Where the sessions of a replicated service live: set
/// [`HttpConfig::shared_sessions`](super::HttpConfig::shared_sessions) on every node (every
/// node serving the same tools), and a session started on one node continues on any other.
///
/// With it:
/// - an `initialize` that opens a session stores it ([`SessionStore::create`]) before the
///   response naming it is sent; the store checks the caps across nodes: the whole service's
///   ([`max_sessions`](Self::max_sessions)), and one principal's or one anonymous address's
///   ([`HttpConfig::max_sessions_per_principal`](super::HttpConfig::max_sessions_per_principal),
///   [`HttpConfig::max_anonymous_sessions_per_address`](super::HttpConfig::max_anonymous_sessions_per_address));
/// - a request for a session this node does not hold loads it from the store and serves it
///   on a local replica, in the state the store holds, for the principal it belongs to;
/// - the session lives [`HttpConfig::session_idle_timeout`](super::HttpConfig::session_idle_timeout)
///   past its last use on any node (the store's TTL); a node's idle timer only drops its own
///   copy; DELETE deletes it everywhere;
/// - a store that cannot answer makes `initialize` and requests that need it 503 with
///   `Retry-After`, never 404.
///
/// Give every node the same configuration (the same tools, and the same idle timeout: each
/// touch sets the session's life in the store to the toucher's timeout).
///
/// A server-to-client request (sampling, elicitation, roots) may be answered on any node: its
/// id names the node that asked, and the answer (or progress) is sent on to that node's inbox
/// on the bus. A client's `notifications/cancelled` reaches every node holding the session.
/// One bus serves one endpoint (the endpoint takes the bus's inbox).
///
/// With an event store ([`events`](Self::events), which `redis` sets, feature `redis`), the
/// streams are shared too: every event of a stream is stored before the client sees its id,
/// so a stream the client resumes (`Last-Event-ID`) on another node replays what it missed
/// and follows the rest from the store; the GET stream follows the node the client last
/// opened it on. Without one, a stream replays only on the node that produced it.
#[derive(Clone)]
pub struct SharedSessions {
    /// Where sessions live.
    pub store: Arc<dyn SessionStore>,
    /// How nodes tell each other that a session ended or changed.
    pub bus: Arc<dyn Bus>,
    /// The most live sessions of the whole service, every node together (checked by the
    /// store); one more `initialize` gets 503 with `Retry-After`.
    /// [`HttpConfig::max_sessions`](super::HttpConfig::max_sessions) still bounds the copies
    /// one node holds (beyond it an idle replica is dropped, or 503). Default 10,000.
    pub max_sessions: usize,
    /// Changes of one session's state (`notifications/initialized`, `logging/setLevel`,
    /// `resources/subscribe`, `resources/unsubscribe`) waiting to be written to the store, in
    /// order; past it a change is not stored and a warning is logged (the node serving the
    /// session keeps it). Default 256.
    pub max_pending_changes: usize,
    /// The largest message from a client that is sent on to another node (an answer to that
    /// node's request to the client, or progress on it, as JSON text); a larger one is 413.
    /// Default 4 MiB, the default body cap ([`HttpConfig::max_body_size`](super::HttpConfig::max_body_size)):
    /// lower it to bound what one message puts into an inbox, keeping it above the largest
    /// answer clients send (a sampling result with an image).
    pub max_forwarded_bytes: usize,
    /// Messages one session may send on to other nodes per second, through one node (answers,
    /// progress and cancellations, and legacy POSTs sent on to the session's holder); past it 429 with `Retry-After: 1` (and SDK clients do not
    /// retry a POSTed answer: keep it above the requests a server makes of one client at
    /// once). With `max_forwarded_bytes`, bounds what one client can put into the nodes'
    /// inboxes. Default 256.
    pub max_forwards_per_second: u32,
    /// Where the events of the sessions' streams live, shared by every node (`None`: each
    /// node keeps the streams it produces, and only it replays them). Default `None`;
    /// `redis` (feature `redis`) sets a `RedisEventStore`.
    pub events: Option<Arc<dyn EventStore>>,
    /// How long a finished stream stays resumable in the event store after its last event
    /// (and so, with the rate its requests are answered at, what the one-event streams of a
    /// session hold in the store). Default 60 s.
    pub finished_stream_ttl: Duration,
    /// Streams one session may hold in the event store at once, its GET stream included
    /// ([`EventLimits::max_streams`]): those of several events; a stream answered by its
    /// response alone may be kept apart, bounded by `finished_stream_ttl`
    /// ([`EventStore::append_single`](crate::store::EventStore::append_single)). Default 1,024.
    pub max_streams: usize,
    /// How often a node reads the event store for a stream it follows but does not produce (a
    /// request's stream resumed away from the node running the request). Default 100 ms.
    pub follow_interval: Duration,
    /// Messages of one session waiting to be stored in the event store, in order; past it a
    /// message goes out without an id (its live reader sees it; a resume cannot replay it).
    /// Default 1,024.
    pub max_pending_events: usize,
    /// With an event store, how long a request's answer stream waits for its first event
    /// before its head goes out (each event takes a store round trip first), when longer than
    /// [`HttpConfig::sse_first_event_wait`](super::HttpConfig::sse_first_event_wait): a quick
    /// answer still leaves with the head in one write. Default 20 ms.
    pub first_event_wait: Duration,
    /// Request streams of one session a node follows from the event store at once (streams
    /// resumed away from the node producing them); one more resume is 503 with
    /// `Retry-After`. Default 16.
    pub max_followed_streams: usize,
    /// How long a DELETE waits for the bus to take the news that the session ended
    /// (`Bus::publish`) before it gives up on it and answers (the other nodes then find the
    /// session gone at their next touch of the store; with zero, news that needs a round trip
    /// is given up at once). Answering after the news left is what makes a request the client
    /// sends next to another node find the session gone. Default 2 s.
    pub ended_news_wait: Duration,
}

impl SharedSessions {
    /// Sessions in `store`, with news on `bus`, under the default limits.
    pub fn new(store: Arc<dyn SessionStore>, bus: Arc<dyn Bus>) -> Self {
        Self {
            store,
            bus,
            max_sessions: 10_000,
            max_pending_changes: 256,
            max_forwarded_bytes: 4 * 1024 * 1024,
            max_forwards_per_second: 256,
            events: None,
            finished_stream_ttl: Duration::from_secs(60),
            max_streams: 1_024,
            follow_interval: Duration::from_millis(100),
            max_pending_events: 1_024,
            first_event_wait: Duration::from_millis(20),
            max_followed_streams: 16,
            ended_news_wait: Duration::from_secs(2),
        }
    }

    /// The same, with the sessions' streams in `events`.
    #[must_use]
    pub fn with_events(mut self, events: Arc<dyn EventStore>) -> Self {
        self.events = Some(events);
        self
    }

    /// The bounds the event store applies to a session's streams under `config`: its replay
    /// bounds and idle timeout (with the eighth a touch may lag), and this value's stream
    /// bounds.
    pub(crate) fn event_limits(&self, config: &super::HttpConfig) -> EventLimits {
        EventLimits {
            replay_events: config.replay_events,
            replay_bytes: config.replay_bytes,
            session_ttl: config.session_idle_timeout + config.session_idle_timeout / 8,
            finished_stream_ttl: self.finished_stream_ttl,
            max_streams: self.max_streams,
        }
    }
}

#[cfg(feature = "redis")]
impl SharedSessions {
    /// Sessions in Redis, under the default limits: a
    /// [`RedisSessionStore`](crate::store::RedisSessionStore), a
    /// [`RedisEventStore`](crate::store::RedisEventStore) and a
    /// [`RedisBus`](crate::store::RedisBus) (joined with `bus`) on the one connection `redis`,
    /// under its key prefix. Fails as [`RedisBus::start`](crate::store::RedisBus::start) does.
    pub async fn redis(
        redis: crate::store::redis::Redis,
        bus: crate::store::BusOptions,
    ) -> Result<Self, crate::store::StoreError> {
        let joined = crate::store::RedisBus::start(redis.clone(), bus).await?;
        let store = crate::store::RedisSessionStore::new(redis.clone());
        let events = crate::store::RedisEventStore::new(redis);
        Ok(Self::new(Arc::new(store), Arc::new(joined)).with_events(Arc::new(events)))
    }
}

impl fmt::Debug for SharedSessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSessions")
            .field("node", &self.bus.node())
            .field("max_sessions", &self.max_sessions)
            .field("max_pending_changes", &self.max_pending_changes)
            .field("max_forwarded_bytes", &self.max_forwarded_bytes)
            .field("max_forwards_per_second", &self.max_forwards_per_second)
            .field("events", &self.events.is_some())
            .field("finished_stream_ttl", &self.finished_stream_ttl)
            .field("max_streams", &self.max_streams)
            .field("follow_interval", &self.follow_interval)
            .field("max_pending_events", &self.max_pending_events)
            .field("first_event_wait", &self.first_event_wait)
            .field("max_followed_streams", &self.max_followed_streams)
            .field("ended_news_wait", &self.ended_news_wait)
            .finish_non_exhaustive()
    }
}

/// What a node tells the others of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum News<'a> {
    /// The session was deleted.
    Ended(&'a str),
    /// Its stored state changed.
    Changed(&'a str),
    /// A message the client sent into the session (its JSON text) belongs to a node other
    /// than the one it reached (see `forward.rs`): published to all, or sent to one inbox.
    Deliver { session: &'a str, message: &'a str },
    /// An event was appended to the session's GET stream in the event store (by a node that
    /// does not serve it): the node serving it reads it.
    Appended(&'a str),
    /// The session's GET stream is now served by `node` (the client opened it there): every
    /// other node stops serving it.
    GetTaken { session: &'a str, node: NodeTag },
}

const ENDED: &str = "session-ended:";
const CHANGED: &str = "session-changed:";
const DELIVER: &str = "session-deliver:";
const APPENDED: &str = "session-appended:";
const GET_TAKEN: &str = "session-get:";

impl<'a> News<'a> {
    pub(crate) fn encode(self) -> Bytes {
        match self {
            Self::Ended(id) => Bytes::from([ENDED, id].concat()),
            Self::Changed(id) => Bytes::from([CHANGED, id].concat()),
            // A session id never holds a line break (see `is_session_id`).
            Self::Deliver { session, message } => {
                Bytes::from([DELIVER, session, "\n", message].concat())
            }
            Self::Appended(id) => Bytes::from([APPENDED, id].concat()),
            Self::GetTaken { session, node } => {
                Bytes::from(format!("{GET_TAKEN}{}:{session}", node.get()))
            }
        }
    }

    /// The news `body` carries; `None` for anything else (other news on the topic).
    pub(crate) fn decode(body: &'a [u8]) -> Option<Self> {
        let text = std::str::from_utf8(body).ok()?;
        if let Some(id) = text.strip_prefix(ENDED) {
            Some(Self::Ended(id))
        } else if let Some(id) = text.strip_prefix(CHANGED) {
            Some(Self::Changed(id))
        } else if let Some(id) = text.strip_prefix(APPENDED) {
            Some(Self::Appended(id))
        } else if let Some(taken) = text.strip_prefix(GET_TAKEN) {
            let (node, session) = taken.split_once(':')?;
            let node = NodeTag::new(node.parse().ok()?).filter(|n| *n != NodeTag::LOCAL)?;
            Some(Self::GetTaken { session, node })
        } else {
            let (session, message) = text.strip_prefix(DELIVER)?.split_once('\n')?;
            Some(Self::Deliver { session, message })
        }
    }

    /// Tells the other nodes; a failure is logged (they notice at their next touch).
    pub(crate) async fn publish(self, bus: &dyn Bus) {
        if let Err(error) = bus.publish(&Topic::Registry, self.encode()).await {
            tracing::warn!(%error, "could not tell the other nodes of a session");
        }
    }
}

/// How many copies a node reloads (and tasks it looks for answers of) at once after a gap.
const GAP_REFRESHES: usize = 16;

/// How long after a failed subscription a request tries again.
const RESUBSCRIBE_AFTER: Duration = Duration::from_secs(1);

/// Makes sure this endpoint listens for news of sessions (once; again after the bus ended the
/// subscription, at most once per second while it fails; never making a request wait for
/// another's attempt).
pub(crate) async fn listen(state: &Arc<State>, shared: &SharedSessions) {
    let sessions = &state.sessions;
    if sessions.listening.load(Ordering::Acquire) {
        return;
    }
    // One request subscribes at a time; the others go on without waiting (they need nothing
    // from the bus), so a bus that is down delays one request a second at most.
    let Ok(mut failed) = sessions.subscribing.try_lock() else {
        return;
    };
    if sessions.listening.load(Ordering::Acquire)
        || failed.is_some_and(|at| at.elapsed() < RESUBSCRIBE_AFTER)
    {
        return;
    }
    match shared.bus.subscribe(&Topic::Registry).await {
        Ok(subscription) => {
            *failed = None;
            sessions.listening.store(true, Ordering::Release);
            let follow = follow(
                subscription,
                Arc::clone(sessions),
                state.server.clone(),
                state.shutdown.clone(),
            );
            sessions.tasks.spawn(follow);
            relay::start(state, shared);
            // The inbox is handed out once: the first subscription takes it for good (and
            // watches the node's tag from then on).
            if let Some(inbox) = shared.bus.inbox() {
                let read = forward::read_inbox(inbox, Arc::clone(sessions), state.shutdown.clone());
                sessions.tasks.spawn(read);
                let watch = watch_tag(
                    shared.bus.node_changes(),
                    Arc::clone(sessions),
                    state.shutdown.clone(),
                );
                sessions.tasks.spawn(watch);
            }
        }
        Err(error) => {
            *failed = Some(Instant::now());
            tracing::warn!(
                %error,
                "cannot listen to the bus; sessions ended elsewhere are noticed at their next touch"
            );
        }
    }
}

/// Drops every copy of a shared session when the node takes a new tag (its old one went to
/// another node, with the answers to the ids it issued): a copy's requests to the client carry
/// the tag it was built with. Requests rebuild the copies, tagged anew.
async fn watch_tag(
    mut tags: tokio::sync::watch::Receiver<crate::store::NodeTag>,
    sessions: Arc<Sessions>,
    stop: CancellationToken,
) {
    let mut held = *tags.borrow_and_update();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = tags.changed() => if changed.is_err() { return },
        }
        let now = *tags.borrow_and_update();
        if now != held {
            tracing::warn!(old = %held, new = %now, "this node took a new tag; its session copies are rebuilt");
            for session in sessions.copies() {
                sessions.drop_copy(&session.id);
            }
            // A legacy session's record names the old tag: it ends (its client opens another).
            sessions.end_legacy();
            held = now;
        }
    }
}

/// Follows the news until the endpoint shuts down or the bus ends the subscription: of
/// sessions, of registry changes (announced to `server`'s clients) and messages sent on.
async fn follow(
    mut subscription: Subscription,
    sessions: Arc<Sessions>,
    server: Server,
    stop: CancellationToken,
) {
    loop {
        let delivery = tokio::select! {
            () = stop.cancelled() => return,
            delivery = subscription.recv() => delivery,
        };
        match delivery {
            Some(Delivery::Message { body, .. }) => match News::decode(&body) {
                Some(News::Ended(id)) => sessions.drop_copy(id),
                Some(News::Changed(id)) => {
                    if let Some(session) = sessions.get(id) {
                        session.refresh().await;
                    }
                }
                Some(News::Deliver { session, message }) => {
                    forward::receive(&sessions, session, message).await;
                }
                Some(News::Appended(id)) => {
                    if let Some(session) = sessions.get(id) {
                        session.get_stream_grew();
                    }
                }
                Some(News::GetTaken { session: id, node }) => {
                    if let Some(session) = sessions.get(id) {
                        session.get_stream_taken(node);
                    }
                }
                None => match relay::decode(&body) {
                    Some(NodeNews::Change(event)) => server.emit_here(event),
                    Some(NodeNews::TaskAnswered(id)) => server.task_answered_elsewhere(&id),
                    None => {}
                },
            },
            Some(Delivery::Gap) => {
                tracing::debug!("news may have been lost: every list is announced changed");
                for event in relay::after_gap() {
                    server.emit_here(event);
                }
                server.look_for_task_answers(GAP_REFRESHES).await;
                for session in sessions.copies() {
                    session.get_stream_grew();
                }
                let copies = futures_util::stream::iter(sessions.copies());
                copies
                    .for_each_concurrent(GAP_REFRESHES, |session| async move {
                        session.refresh().await;
                    })
                    .await;
            }
            None => {
                sessions.listening.store(false, Ordering::Release);
                tracing::warn!("the bus ended the subscription to news of sessions");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::News;

    #[test]
    fn news_round_trips_and_other_bodies_are_not_news() {
        let deliver = News::Deliver {
            session: "abc",
            message: "{\"a\":\"b\\nc\"}\n",
        };
        let taken = News::GetTaken {
            session: "a:b",
            node: crate::store::NodeTag::new(7).unwrap_or_default(),
        };
        for news in [
            News::Ended("abc-_1"),
            News::Changed("x:y"),
            deliver,
            News::Appended("s"),
            taken,
        ] {
            let body = news.encode();
            assert_eq!(News::decode(&body), Some(news));
        }
        assert_eq!(News::decode(b"tools changed"), None);
        assert_eq!(News::decode(&[0xff, 0xfe]), None);
        assert_eq!(News::decode(b"session-deliver:no line break"), None);
        assert_eq!(
            News::decode(b"session-get:0:s"),
            None,
            "tag 0 names no node"
        );
        assert_eq!(News::decode(b"session-get:x:s"), None);
    }
}
