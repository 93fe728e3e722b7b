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
//! A message is a 12-byte header, version `2`, the origin's 24-bit tag (big endian) and its
//! 8-byte instance id, then the body. A node drops its own messages by instance id, not by
//! tag: two instances briefly holding one tag (after a failover without data, until the
//! heartbeat sorts it out) still hear each other. An unreadable message is a gap for its
//! topic.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use redis::Msg;
use redis::aio::{PubSub, PubSubSink};
use tokio::sync::{mpsc, oneshot};

use super::Shared;
use crate::store::bus::{Bytes, Delivery, Topic};
use crate::store::{NodeTag, StoreError};

/// The first pause before reconnecting (doubling up to the Redis options' longest).
const FIRST_RECONNECT_DELAY: Duration = Duration::from_millis(50);
/// The version byte of a message's header.
const VERSION: u8 = 2;
/// The length of a message's header: version, tag, instance id.
const HEADER: usize = 1 + 3 + 8;

/// A request to the listener: listen to the channels of exactly the topics that have
/// subscribers now, and say (if asked) whether it does.
pub(super) struct Catch {
    pub(super) reply: Option<oneshot::Sender<Result<(), StoreError>>>,
}

/// `body` published by instance `instance` holding tag `origin`, as it travels.
pub(super) fn encode(origin: NodeTag, instance: &[u8; 8], body: &[u8]) -> Vec<u8> {
    let tag = origin.get().to_be_bytes();
    let mut payload = Vec::with_capacity(HEADER + body.len());
    payload.push(VERSION);
    payload.extend_from_slice(&tag[1..]);
    payload.extend_from_slice(instance);
    payload.extend_from_slice(body);
    payload
}

/// A message as it arrives.
#[derive(Debug, PartialEq, Eq)]
struct Decoded<'a> {
    origin: NodeTag,
    instance: [u8; 8],
    body: &'a [u8],
}

/// The origin, instance and body of a message, if it is one this version reads.
fn decode(payload: &[u8]) -> Option<Decoded<'_>> {
    let (header, body) = payload.split_at_checked(HEADER)?;
    let (&version, rest) = header.split_first()?;
    let (tag, instance) = rest.split_at_checked(3)?;
    if version != VERSION {
        return None;
    }
    let origin = NodeTag::new(u32::from_be_bytes([0, tag[0], tag[1], tag[2]]))?;
    Some(Decoded {
        origin,
        instance: instance.try_into().ok()?,
        body,
    })
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

/// The listener task's state.
pub(super) struct Listener {
    shared: Arc<Shared>,
    requests: mpsc::UnboundedReceiver<Catch>,
    /// The channels the connection listens to, with their topics.
    channels: HashMap<String, Topic>,
}

impl Listener {
    pub(super) fn new(shared: Arc<Shared>, requests: mpsc::UnboundedReceiver<Catch>) -> Self {
        Self {
            shared,
            requests,
            channels: HashMap::new(),
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

    /// A new connection, retried with a backoff; requests meanwhile are refused. `None`: the
    /// bus stopped.
    async fn reconnect(&mut self) -> Option<PubSub> {
        let mut delay = FIRST_RECONNECT_DELAY;
        let longest = self.shared.redis.options().max_reconnect_delay;
        loop {
            tokio::select! {
                biased;
                () = self.shared.stop.cancelled() => return None,
                made = connect(&self.shared) => match made {
                    Ok(pubsub) => return Some(pubsub),
                    Err(error) => tracing::debug!(%error, "the bus could not reconnect pub/sub"),
                },
            }
            let pause = tokio::time::sleep(delay);
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    biased;
                    () = self.shared.stop.cancelled() => return None,
                    () = &mut pause => break,
                    request = self.requests.recv() => match request {
                        Some(request) => refuse(request, "the bus's pub/sub connection is down"),
                        None => return None,
                    },
                }
            }
            delay = delay
                .saturating_mul(2)
                .min(longest.max(FIRST_RECONNECT_DELAY));
        }
    }

    /// Listens on `pubsub` until it is lost or the bus stops. `resumed`: an earlier connection
    /// was lost, so once this one listens every subscriber gets a gap.
    async fn serve(&mut self, pubsub: PubSub, resumed: bool) -> Ended {
        let (mut sink, mut stream) = pubsub.split();
        self.channels.clear();
        if let Err(error) = self.catch_up(&mut sink).await {
            tracing::debug!(%error, "the bus could not resubscribe");
            return Ended::Lost;
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
                    let mut replies = vec![request.reply];
                    while let Ok(more) = self.requests.try_recv() {
                        replies.push(more.reply);
                    }
                    let caught = self.catch_up(&mut sink).await;
                    let lost = caught.is_err();
                    for reply in replies.into_iter().flatten() {
                        let _ = reply.send(caught.clone());
                    }
                    if lost {
                        return Ended::Lost;
                    }
                }
                _ = probe.tick() => {
                    if !self.answers(&mut sink).await {
                        tracing::debug!("the bus's pub/sub connection stopped answering");
                        return Ended::Lost;
                    }
                }
            }
        }
    }

    /// Subscribes to the channels of the topics that have subscribers and unsubscribes from
    /// the others, each within the response timeout.
    async fn catch_up(&mut self, sink: &mut PubSubSink) -> Result<(), StoreError> {
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
        let bound = self.shared.redis.options().response_timeout;
        if !add.is_empty() {
            self.confirm(bound, sink.subscribe(add.as_slice())).await?;
        }
        if !remove.is_empty() {
            self.confirm(bound, sink.unsubscribe(remove.as_slice()))
                .await?;
        }
        self.channels = wanted;
        Ok(())
    }

    async fn confirm(
        &self,
        bound: Duration,
        done: impl Future<Output = redis::RedisResult<()>>,
    ) -> Result<(), StoreError> {
        match tokio::time::timeout(bound, done).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(self.shared.redis.fail(&error)),
            Err(_) => Err(StoreError::Unavailable(format!(
                "Redis did not confirm a subscription within {bound:?}"
            ))),
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

fn refuse(request: Catch, why: &str) {
    if let Some(reply) = request.reply {
        let _ = reply.send(Err(StoreError::Unavailable(why.to_owned())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_their_origin_and_instance() {
        let tag = NodeTag::new(NodeTag::MAX).unwrap();
        let instance = [1, 2, 3, 4, 5, 6, 7, 8];
        let payload = encode(tag, &instance, b"hello");
        assert_eq!(payload.len(), HEADER + 5);
        assert_eq!(
            decode(&payload),
            Some(Decoded {
                origin: tag,
                instance,
                body: b"hello"
            })
        );
        let empty = encode(NodeTag::LOCAL, &[0; 8], b"");
        assert_eq!(
            decode(&empty).map(|d| (d.origin, d.body)),
            Some((NodeTag::LOCAL, &b""[..]))
        );
        // Another version, a short header, nothing: unreadable.
        let mut other = payload.clone();
        other[0] = 1;
        assert_eq!(decode(&other), None);
        assert_eq!(decode(&payload[..HEADER - 1]), None);
        assert_eq!(decode(b""), None);
    }
}
