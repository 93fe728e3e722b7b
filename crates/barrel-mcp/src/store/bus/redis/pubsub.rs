//! The listener: one dedicated pub/sub connection per node, subscribed to the channels of the
//! topics that have local subscribers, handing each message to them.
//!
//! Why a `redis::aio::PubSub` with a loop of our own rather than a RESP3 connection manager
//! with automatic resubscription: the loop never gives up reconnecting (the manager stops after
//! its retries until the next command), it resubscribes from the set of topics that have
//! subscribers *now* and notices when that fails (the manager ignores a failed
//! resubscription), it probes the connection with `PING` so a silent one is replaced too, and
//! it knows the moment listening resumed, which is when subscribers must get their
//! [`Delivery::Gap`]: a re-read after it sees everything that was lost.
//!
//! One task owns the connection and the set of channels it listens to; `subscribe` asks it to
//! catch up and waits for the confirmation, a dropped last subscriber asks it too (without
//! waiting), so subscribes and unsubscribes reach Redis in the order they were made.
//!
//! The listener pauses before every new connection, 50 ms doubling up to the Redis options'
//! `max_reconnect_delay`, back to 50 ms only once a connection survived a ping interval: a
//! connection that dies as soon as it listens costs a few attempts a second, not a busy loop.
//!
//! A server error in answer to `SUBSCRIBE` (`NOPERM` under an ACL user without the channel) is
//! not a lost connection: the subscribe that asked for that topic fails, the others listen
//! on. A topic refused when the listener resubscribes after a reconnection keeps its
//! subscribers (they got their gap) and is asked for again at every probe until Redis allows
//! it; its subscribers get a gap when it is. Error messages name the error code, never the
//! channel (it holds a session or task id).
//!
//! Messages carry the header of `header.rs`; a node drops its own instance's echo.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{PubSub, PubSubSink};
use redis::{ErrorKind, Msg, RedisError};
use tokio::sync::{mpsc, oneshot};

use super::Shared;
use super::header::decode;
use crate::store::StoreError;
use crate::store::bus::{Bytes, Delivery, Topic};

/// The first pause before reconnecting (doubling up to the Redis options' longest).
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(50);

/// A request to the listener: listen to the channels of exactly the topics that have
/// subscribers now, and say (if asked) whether it listens to `topic`.
pub(super) struct Catch {
    /// The topic a new subscriber waits for (`None`: a topic lost its last subscriber).
    pub(super) topic: Option<Topic>,
    pub(super) reply: Option<oneshot::Sender<Result<(), StoreError>>>,
}

/// Opens a pub/sub connection, within the connection timeout.
pub(super) async fn connect(shared: &Shared) -> Result<PubSub, StoreError> {
    let bound = shared.redis.options().connection_timeout;
    match tokio::time::timeout(bound, shared.redis.client().get_async_pubsub()).await {
        Ok(Ok(pubsub)) => Ok(pubsub),
        Ok(Err(error)) => Err(shared.redis.fail(&error)),
        Err(_) => Err(StoreError::Unavailable(format!(
            "the pub/sub connection was not made within {bound:?}"
        ))),
    }
}

/// How one connection's service ended.
enum Ended {
    Stopped,
    Lost,
}

/// Why a subscription command failed.
enum Failure {
    /// Redis answered with an error: the connection is fine, the channel is not allowed.
    Refused(StoreError),
    /// The connection failed or did not answer in time.
    Lost(StoreError),
}

/// The topics Redis refused in one catch-up, with why.
type Refused = HashMap<Topic, StoreError>;

/// The listener task's state.
pub(super) struct Listener {
    shared: Arc<Shared>,
    requests: mpsc::UnboundedReceiver<Catch>,
    /// The channels the connection listens to, with their topics.
    channels: HashMap<String, Topic>,
    /// The channels Redis refused whose topics still have subscribers.
    refused: HashSet<String>,
    /// The pause before the next connection attempt: doubled after each one, back to the first
    /// once a connection survived a ping interval.
    delay: Duration,
}

impl Listener {
    pub(super) fn new(shared: Arc<Shared>, requests: mpsc::UnboundedReceiver<Catch>) -> Self {
        Self {
            shared,
            requests,
            channels: HashMap::new(),
            refused: HashSet::new(),
            delay: FIRST_RECONNECT_DELAY,
        }
    }

    /// Serves `first`, then each new connection after one is lost, until the bus stops; then
    /// ends every subscription.
    pub(super) async fn run(mut self, first: PubSub) {
        let mut next = Some(first);
        let mut resumed = false;
        loop {
            let pubsub = match next.take() {
                Some(pubsub) => pubsub,
                None => match self.reconnect().await {
                    Some(pubsub) => pubsub,
                    None => break,
                },
            };
            match self.serve(pubsub, resumed).await {
                Ended::Stopped => break,
                Ended::Lost => resumed = true,
            }
        }
        self.shared.fanout.close();
        self.requests.close();
        while let Ok(request) = self.requests.try_recv() {
            refuse(request, "the bus is stopped");
        }
    }

    /// A new connection, each attempt after a pause that grows; requests meanwhile are
    /// refused. `None`: the bus stopped.
    async fn reconnect(&mut self) -> Option<PubSub> {
        let longest = self
            .shared
            .redis
            .options()
            .max_reconnect_delay
            .max(FIRST_RECONNECT_DELAY);
        loop {
            if !self.pause(self.delay).await {
                return None;
            }
            self.delay = self.delay.saturating_mul(2).min(longest);
            tokio::select! {
                biased;
                () = self.shared.stop.cancelled() => return None,
                made = connect(&self.shared) => match made {
                    Ok(pubsub) => return Some(pubsub),
                    Err(error) => tracing::debug!(%error, "the bus could not reconnect pub/sub"),
                },
            }
        }
    }

    /// Waits `delay`, refusing requests meanwhile; false when the bus stopped first.
    async fn pause(&mut self, delay: Duration) -> bool {
        let pause = tokio::time::sleep(delay);
        tokio::pin!(pause);
        loop {
            tokio::select! {
                biased;
                () = self.shared.stop.cancelled() => return false,
                () = &mut pause => return true,
                request = self.requests.recv() => match request {
                    Some(request) => refuse(request, "the bus's pub/sub connection is down"),
                    None => return false,
                },
            }
        }
    }

    /// Listens on `pubsub` until it is lost or the bus stops. `resumed`: an earlier connection
    /// was lost, so once this one listens every subscriber gets a gap.
    async fn serve(&mut self, pubsub: PubSub, resumed: bool) -> Ended {
        let (mut sink, mut stream) = pubsub.split();
        self.channels.clear();
        self.refused.clear();
        match self.catch_up(&mut sink).await {
            Ok(refused) if !refused.is_empty() => tracing::warn!(
                refused = refused.len(),
                "Redis refused to listen to some bus topics; their subscribers hear nothing \
                 until it allows them (asked again at every probe)"
            ),
            Ok(_) => {}
            Err(error) => {
                tracing::debug!(%error, "the bus could not resubscribe");
                return Ended::Lost;
            }
        }
        if resumed {
            tracing::debug!("the bus listens again: a gap for every subscriber");
            self.shared.fanout.gap_all();
        }
        // Validated at start to be at least 1 ms; `interval` panics on zero.
        let period = self
            .shared
            .options
            .ping_interval
            .max(Duration::from_millis(1));
        let mut probe = tokio::time::interval(period);
        probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        probe.tick().await;
        loop {
            // Not biased: a busy channel must not starve subscribe requests or the probe.
            tokio::select! {
                () = self.shared.stop.cancelled() => return Ended::Stopped,
                message = stream.next() => match message {
                    Some(message) => self.dispatch(&message),
                    None => {
                        tracing::debug!("the bus's pub/sub connection was lost");
                        return Ended::Lost;
                    }
                },
                request = self.requests.recv() => {
                    let Some(request) = request else { return Ended::Stopped };
                    let mut requests = vec![request];
                    while let Ok(more) = self.requests.try_recv() {
                        requests.push(more);
                    }
                    if !self.answer(&mut sink, requests).await {
                        return Ended::Lost;
                    }
                }
                _ = probe.tick() => {
                    if !self.answers(&mut sink).await {
                        tracing::debug!("the bus's pub/sub connection stopped answering");
                        return Ended::Lost;
                    }
                    // This connection survived a ping interval: the next loss starts over.
                    self.delay = FIRST_RECONNECT_DELAY;
                    if !self.refused.is_empty()
                        && let Err(error) = self.catch_up(&mut sink).await
                    {
                        tracing::debug!(%error, "the bus could not resubscribe");
                        return Ended::Lost;
                    }
                }
            }
        }
    }

    /// Catches up for `requests` and answers each; false when the connection is lost.
    async fn answer(&mut self, sink: &mut PubSubSink, requests: Vec<Catch>) -> bool {
        match self.catch_up(sink).await {
            Ok(refused) => {
                for request in requests {
                    let outcome = match request.topic.and_then(|t| refused.get(&t)) {
                        Some(why) => Err(why.clone()),
                        None => Ok(()),
                    };
                    if let Some(reply) = request.reply {
                        let _ = reply.send(outcome);
                    }
                }
                true
            }
            Err(error) => {
                for reply in requests.into_iter().filter_map(|r| r.reply) {
                    let _ = reply.send(Err(error.clone()));
                }
                false
            }
        }
    }

    /// Subscribes to the channels of the topics that have subscribers and unsubscribes from
    /// the others, each command within the response timeout. A batch Redis refuses is asked
    /// for channel by channel, to tell which topics it refuses (returned); a topic it refused
    /// before and allows now gets a gap (messages went by unheard). `Err`: the connection is
    /// lost.
    async fn catch_up(&mut self, sink: &mut PubSubSink) -> Result<Refused, StoreError> {
        let wanted: HashMap<String, Topic> = self
            .shared
            .fanout
            .topics()
            .into_iter()
            .map(|topic| (self.shared.keys.channel(&topic), topic))
            .collect();
        let add: Vec<String> = wanted
            .keys()
            .filter(|c| !self.channels.contains_key(*c))
            .cloned()
            .collect();
        let remove: Vec<String> = self
            .channels
            .keys()
            .filter(|c| !wanted.contains_key(*c))
            .cloned()
            .collect();
        if !remove.is_empty() {
            match self.confirm(sink.unsubscribe(remove.as_slice())).await {
                Ok(()) => {}
                Err(Failure::Refused(error) | Failure::Lost(error)) => return Err(error),
            }
            for channel in &remove {
                self.channels.remove(channel);
            }
        }
        let mut refused: HashMap<String, StoreError> = HashMap::new();
        if !add.is_empty() {
            match self.confirm(sink.subscribe(add.as_slice())).await {
                Ok(()) => {}
                Err(Failure::Lost(error)) => return Err(error),
                Err(Failure::Refused(_)) => {
                    for channel in &add {
                        match self.confirm(sink.subscribe(channel.as_str())).await {
                            Ok(()) => {}
                            Err(Failure::Refused(why)) => {
                                refused.insert(channel.clone(), why);
                            }
                            Err(Failure::Lost(error)) => return Err(error),
                        }
                    }
                }
            }
        }
        self.refused.retain(|channel| wanted.contains_key(channel));
        let mut outcome = Refused::new();
        for channel in add {
            let Some(topic) = wanted.get(&channel) else {
                continue;
            };
            match refused.remove(&channel) {
                Some(why) => {
                    outcome.insert(topic.clone(), why);
                    self.refused.insert(channel);
                }
                None => {
                    if self.refused.remove(&channel) {
                        self.shared.fanout.deliver(topic, &Delivery::Gap);
                    }
                    self.channels.insert(channel, topic.clone());
                }
            }
        }
        Ok(outcome)
    }

    /// Waits for Redis to confirm a subscription command, within the response timeout.
    async fn confirm(
        &self,
        done: impl Future<Output = redis::RedisResult<()>>,
    ) -> Result<(), Failure> {
        let bound = self.shared.redis.options().response_timeout;
        match tokio::time::timeout(bound, done).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) if refusal(&error) => {
                Err(Failure::Refused(StoreError::Unavailable(format!(
                    "Redis refused the subscription ({})",
                    error.code().unwrap_or("an error reply")
                ))))
            }
            Ok(Err(error)) => Err(Failure::Lost(self.shared.redis.fail(&error))),
            Err(_) => Err(Failure::Lost(StoreError::Unavailable(format!(
                "Redis did not confirm a subscription within {bound:?}"
            )))),
        }
    }

    /// Whether the connection answers `PING` within the response timeout.
    async fn answers(&self, sink: &mut PubSubSink) -> bool {
        let bound = self.shared.redis.options().response_timeout;
        matches!(
            tokio::time::timeout(bound, sink.ping::<redis::Value>()).await,
            Ok(Ok(_))
        )
    }

    fn dispatch(&self, message: &Msg) {
        let Some(topic) = self.channels.get(message.get_channel_name()) else {
            return;
        };
        match decode(message.get_payload_bytes()) {
            None => {
                tracing::warn!(?topic, "an unreadable bus message, taken as a gap");
                self.shared.fanout.deliver(topic, &Delivery::Gap);
            }
            // This instance's own echo (another instance on the same tag is heard).
            Some(decoded) if decoded.instance == self.shared.instance_id => {}
            Some(decoded) => self.shared.fanout.deliver(
                topic,
                &Delivery::Message {
                    origin: decoded.origin,
                    body: Bytes::copy_from_slice(decoded.body),
                },
            ),
        }
    }
}

/// Whether `error` is Redis answering with an error (the connection serves on).
fn refusal(error: &RedisError) -> bool {
    matches!(error.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
        && !error.is_unrecoverable_error()
}

fn refuse(request: Catch, why: &str) {
    if let Some(reply) = request.reply {
        let _ = reply.send(Err(StoreError::Unavailable(why.to_owned())));
    }
}
