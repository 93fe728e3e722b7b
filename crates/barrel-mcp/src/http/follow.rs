//! The streams of a shared session served from the event store (`journal.rs` stores them), so a
//! client reads them on any node: the GET stream, and a request's stream resumed on a node other
//! than the one running the request.
//!
//! - **The GET stream** is served by the node the client last opened it on. Opening it there
//!   replays what followed `Last-Event-ID` from the store (a fresh one starts with a priming
//!   event naming the newest event, so a resume later replays only what follows), marks the
//!   node as the stream's producer in the store, and tells the other nodes
//!   (`session-get`): a GET stream they served ends, and they leave registry changes to this
//!   node. From then on this node reads the store after what it sent whenever the stream grew
//!   (an append here, or `session-appended` from another node), after a bus gap, and at every
//!   keep-alive. When the node that served it before is gone, every kind of change is
//!   announced on it (changes it may have missed).
//! - **A request's stream** resumed here, produced elsewhere, is replayed from the store, then
//!   read every [`SharedSessions::follow_interval`](super::SharedSessions::follow_interval)
//!   until its last event (a stream the store does not hold yet, resumed from its priming
//!   event, is waited for while the node it names lives). When nothing came for ten intervals
//!   and its producer is no longer a live node, an error response (-32603) is stored as its
//!   last event and sent: the client gets an answer instead of a stream that never ends.
//!
//! A follower waits for a slow reader (the store keeps the events), and cuts off one that read
//! nothing for [`HttpConfig::stalled_reader_timeout`](super::HttpConfig::stalled_reader_timeout):
//! it resumes from the store. Followers end with the session.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use barrel_mcp_types::{ErrorObject, Message, RequestId, Response as RpcResponse};
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::HttpConfig;
use super::journal::{Journal, Serving};
use super::replica::unavailable_because;
use super::session::{GET_STREAM, HttpSession};
use super::shared::News;
use super::sse::{self, Attached};
use crate::store::{NodeTag, Opened, Replay, StoreError, StreamInfo, Topic};

/// What an attached reader gets: events to write first, live ones, and (for the GET stream)
/// what ends it when another GET replaces it.
pub(crate) struct Followed {
    pub(crate) initial: Vec<Bytes>,
    pub(crate) live: Option<mpsc::Receiver<Bytes>>,
    pub(crate) over: Option<CancellationToken>,
}

impl From<Attached> for Followed {
    fn from(attached: Attached) -> Self {
        Self {
            initial: attached.initial,
            live: attached.live,
            over: None,
        }
    }
}

/// Why a stream cannot be attached.
pub(crate) enum Refusal {
    /// The cursor names an event not sent yet.
    Future,
    /// The store cannot answer, or holds the session's most streams.
    Unavailable(&'static str),
}

impl Refusal {
    pub(crate) fn response(&self) -> Response {
        match self {
            Self::Future => {
                super::sessionful::bad_request("Last-Event-ID names an event not sent yet")
            }
            Self::Unavailable(why) => unavailable_because(why),
        }
    }
}

fn unavailable(error: &StoreError) -> Refusal {
    tracing::warn!(%error, "a stream could not be read from the event store");
    Refusal::Unavailable("event store unavailable")
}

/// Attaches a GET reader of a shared session whose streams are in the event store.
pub(crate) async fn attach(
    session: &Arc<HttpSession>,
    journal: &Arc<Journal>,
    cursor: Option<(u64, u64)>,
    config: &HttpConfig,
) -> Result<Followed, Refusal> {
    match cursor {
        Some((number, seq)) if number != GET_STREAM => {
            if let Some(held) = session.attach_held(number, seq) {
                return held.map(Followed::from).map_err(|()| Refusal::Future);
            }
            request_stream(session, journal, number, seq, config).await
        }
        Some((_, seq)) => get_stream(session, journal, Some(seq), config).await,
        None => get_stream(session, journal, None, config).await,
    }
}

/// The events of `replay` as SSE events of stream `number`, each with its sequence number, led
/// by a notice (and the sequence number just before the oldest held) when some after `after`
/// are no longer held.
fn replayed(number: u64, after: u64, replay: &Replay) -> Vec<(u64, Bytes)> {
    let mut events = Vec::with_capacity(replay.events.len() + 1);
    if replay.missed(after) {
        let notice = sse::truncated_notice(number, after, replay.first_available);
        // Told once: the next read starts at the oldest event held.
        let skipped = replay
            .first_available
            .map_or(replay.latest, |first| first.saturating_sub(1));
        events.push((skipped.max(after), notice));
    }
    for (seq, data) in &replay.events {
        events.push((*seq, sse::numbered_event(number, *seq, data)));
    }
    events
}

/// The sequence number of the last of `events`, else `after`.
fn last_of(events: &[(u64, Bytes)], after: u64) -> u64 {
    events.last().map_or(after, |(seq, _)| (*seq).max(after))
}

/// How a follower's sending went.
enum Sent {
    /// Everything went out; the last sequence number sent.
    All(u64),
    /// The reader is gone, or stalled past `stalled_reader_timeout`, or `stop` fired.
    Ended,
}

/// Sends `events` in order, waiting for room (a reader that keeps up is never cut off; one
/// that reads nothing for `stall` is: it resumes from the store).
async fn send_all(
    tx: &mpsc::Sender<Bytes>,
    events: Vec<(u64, Bytes)>,
    mut sent: u64,
    stall: Duration,
    stop: &CancellationToken,
) -> Sent {
    for (seq, event) in events {
        let permit = tokio::select! {
            () = stop.cancelled() => return Sent::Ended,
            permit = tokio::time::timeout(stall, tx.reserve()) => permit,
        };
        match permit {
            Ok(Ok(permit)) => permit.send(event),
            _ => return Sent::Ended,
        }
        sent = sent.max(seq);
    }
    Sent::All(sent)
}

/// Serves the GET stream here, from event `after` on (`None`: from now).
async fn get_stream(
    session: &Arc<HttpSession>,
    journal: &Arc<Journal>,
    after: Option<u64>,
    config: &HttpConfig,
) -> Result<Followed, Refusal> {
    let events = &journal.events;
    let sid = journal.session.as_str();
    let replay = events
        .replay(sid, GET_STREAM, after.unwrap_or(0))
        .await
        .map_err(|e| unavailable(&e))?;
    if let (Some(replay), Some(seq)) = (&replay, after)
        && seq > replay.latest
    {
        return Err(Refusal::Future);
    }
    let created = match events
        .open(sid, GET_STREAM, journal.info(None), &journal.limits)
        .await
    {
        Ok(Opened::Created) => true,
        Ok(Opened::Existed) => false,
        Ok(Opened::Full) => {
            return Err(Refusal::Unavailable("too many streams in this session"));
        }
        Err(error) => return Err(unavailable(&error)),
    };
    // A stream created just now (it was not there, or expired since it was read) starts its
    // numbering again.
    let replay = replay.filter(|_| !created);
    let previous = replay.as_ref().map(|replay| replay.info.producer);
    let (initial, sent) = match (replay, after) {
        (None, None) => (vec![sse::priming_event(GET_STREAM, 0, config.sse_retry)], 0),
        (None, Some(seq)) => (vec![sse::truncated_notice(GET_STREAM, seq, None)], 0),
        (Some(replay), None) => (
            vec![sse::priming_event(
                GET_STREAM,
                replay.latest,
                config.sse_retry,
            )],
            replay.latest,
        ),
        (Some(replay), Some(seq)) => {
            let events = replayed(GET_STREAM, seq, &replay);
            let sent = last_of(&events, seq);
            (events.into_iter().map(|(_, event)| event).collect(), sent)
        }
    };
    let (tx, rx) = mpsc::channel(config.stream_queue.max(1));
    let over = CancellationToken::new();
    journal.serve_get(Serving {
        over: over.clone(),
        live: tx.clone(),
    });
    if previous != Some(journal.node) {
        take_over(session, journal, previous);
    }
    if created && after.is_some() {
        // The client resumes a stream that is gone from the store: what was written to it
        // meanwhile is lost, so every kind of change is announced again.
        session.announce_all();
    }
    let follow = follow_get(
        Arc::clone(journal),
        tx,
        over.clone(),
        session.kill.clone(),
        sent,
        (config.keep_alive, config.stalled_reader_timeout),
    );
    journal.spawn(follow);
    Ok(Followed {
        initial,
        live: Some(rx),
        over: Some(over),
    })
}

/// Tells the other nodes this one serves the GET stream now; when the node that served it is
/// gone, announces every change on it (what that node may not have written).
fn take_over(session: &Arc<HttpSession>, journal: &Arc<Journal>, previous: Option<NodeTag>) {
    let bus = Arc::clone(&journal.shared.bus);
    let (sid, node) = (journal.session.clone(), journal.node);
    let copy = Arc::downgrade(session);
    journal.spawn(async move {
        let taken = News::GetTaken {
            session: &sid,
            node,
        };
        if let Err(error) = bus.publish(&Topic::Registry, taken.encode()).await {
            tracing::debug!(%error, "could not tell the other nodes who serves a GET stream");
        }
        let Some(previous) = previous.filter(|p| *p != NodeTag::LOCAL) else {
            return;
        };
        if matches!(bus.alive(previous).await, Ok(false))
            && let Some(copy) = copy.upgrade()
        {
            tracing::debug!(%previous, "the node that served a GET stream is gone: every change is announced");
            copy.announce_all();
        }
    });
}

/// Sends what the store holds of the GET stream after `sent` whenever it grew, until `over`
/// (the client left, or another GET replaced this one) or the session ends. At every quiet
/// keep-alive it keeps the stream alive in the store, while the store still names this node
/// its producer ([`EventStore::keep`](crate::store::EventStore::keep); else another node
/// serves it now, or it is gone: this one ends).
async fn follow_get(
    journal: Arc<Journal>,
    tx: mpsc::Sender<Bytes>,
    over: CancellationToken,
    ended: CancellationToken,
    mut sent: u64,
    (recheck, stall): (Duration, Duration),
) {
    let sid = journal.session.clone();
    loop {
        let quiet = tokio::select! {
            biased;
            () = over.cancelled() => return,
            () = ended.cancelled() => return,
            () = tx.closed() => return,
            () = journal.grew.notified() => false,
            () = tokio::time::sleep(recheck) => true,
        };
        let replay = match journal.events.replay(&sid, GET_STREAM, sent).await {
            Ok(Some(replay)) => replay,
            Ok(None) => {
                // Gone from the store (expired, or the session was deleted).
                over.cancel();
                return;
            }
            Err(error) => {
                tracing::debug!(%error, "the GET stream could not be read; tried again");
                continue;
            }
        };
        if quiet && replay.events.is_empty() {
            if replay.info.producer != journal.node {
                over.cancel();
                return;
            }
            // Kept only while this node still produces it: a node that opened it meanwhile
            // serves it now (and a stream gone from the store starts its numbering again).
            match journal
                .events
                .keep(&sid, GET_STREAM, journal.node, &journal.limits)
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    over.cancel();
                    return;
                }
                Err(error) => {
                    tracing::debug!(%error, "could not keep a GET stream alive; tried again");
                }
            }
        }
        match send_all(&tx, replayed(GET_STREAM, sent, &replay), sent, stall, &over).await {
            Sent::All(last) => sent = last,
            Sent::Ended => {
                tracing::debug!("the reader of a GET stream is gone or stalled; it ends");
                over.cancel();
                return;
            }
        }
    }
}

/// Resumes request stream `number` after event `after`: what the store holds, then the rest as
/// it comes. A stream not in the store yet (no event was written: the client resumes from its
/// priming event) is waited for while the node producing it lives.
async fn request_stream(
    session: &Arc<HttpSession>,
    journal: &Arc<Journal>,
    number: u64,
    after: u64,
    config: &HttpConfig,
) -> Result<Followed, Refusal> {
    let replay = journal
        .events
        .replay(&journal.session, number, after)
        .await
        .map_err(|e| unavailable(&e))?;
    let producer = NodeTag::of_stream(number).filter(|tag| *tag != NodeTag::LOCAL);
    let (initial, sent, info) = match (replay, producer) {
        // A finished stream numbered below the cursor was forgotten and ended anew (finished
        // empty): what the client missed is gone.
        (Some(replay), _) if after > replay.latest && replay.finished => {
            return Ok(Followed {
                initial: vec![sse::truncated_notice(number, after, None)],
                live: None,
                over: None,
            });
        }
        (Some(replay), _) => {
            if after > replay.latest {
                return Err(Refusal::Future);
            }
            let events = replayed(number, after, &replay);
            let sent = last_of(&events, after);
            let initial = events.into_iter().map(|(_, event)| event).collect();
            if replay.finished {
                return Ok(Followed {
                    initial,
                    live: None,
                    over: None,
                });
            }
            (initial, sent, replay.info)
        }
        (None, Some(producer))
            if after == 0 && matches!(journal.shared.bus.alive(producer).await, Ok(true)) =>
        {
            let info = StreamInfo {
                producer,
                request: None,
            };
            (Vec::new(), 0, info)
        }
        (None, _) => {
            return Ok(Followed {
                initial: vec![sse::truncated_notice(number, after, None)],
                live: None,
                over: None,
            });
        }
    };
    let Some(slot) = journal.follower() else {
        return Err(Refusal::Unavailable(
            "too many streams of this session followed on this node",
        ));
    };
    let seen = !initial.is_empty() || sent > 0;
    let (tx, rx) = mpsc::channel(config.stream_queue.max(1));
    let follow = follow_request(
        Arc::clone(journal),
        number,
        (sent, seen),
        info,
        tx,
        session.kill.clone(),
        config.stalled_reader_timeout,
    );
    let follow = async move {
        follow.await;
        drop(slot);
    };
    journal.spawn(follow);
    Ok(Followed {
        initial,
        live: Some(rx),
        over: None,
    })
}

/// Reads request stream `number` after `sent` every follow interval until its last event (or
/// the reader leaves, or the session ends); answers for a producer that is gone (checked after
/// ten quiet intervals). A stream not in the store yet is read less and less often (up to
/// every 2 s); one that was seen and is gone from the store ends with a truncation notice.
async fn follow_request(
    journal: Arc<Journal>,
    number: u64,
    (mut sent, mut seen): (u64, bool),
    mut info: StreamInfo,
    tx: mpsc::Sender<Bytes>,
    ended: CancellationToken,
    stall: Duration,
) {
    let interval = journal.shared.follow_interval.max(Duration::from_millis(1));
    let quiet_for = interval * 10;
    let mut quiet_since = Instant::now();
    let mut pause = interval;
    loop {
        tokio::select! {
            () = ended.cancelled() => return,
            () = tx.closed() => return,
            () = tokio::time::sleep(pause) => {}
        }
        let replay = match journal.events.replay(&journal.session, number, sent).await {
            Ok(replay) => replay,
            Err(error) => {
                tracing::debug!(%error, "a followed stream could not be read; tried again");
                continue;
            }
        };
        let Some(replay) = replay else {
            if seen {
                // It was there: gone (expired, or forgotten), with whatever was left.
                let _ = tx.try_send(sse::truncated_notice(number, sent, None));
                return;
            }
            // Not written yet: waited for while its producer lives.
            pause = (pause * 2).min(Duration::from_secs(2)).max(interval);
            if quiet_since.elapsed() >= quiet_for {
                quiet_since = Instant::now();
                if !matches!(journal.shared.bus.alive(info.producer).await, Ok(true)) {
                    return;
                }
            }
            continue;
        };
        seen = true;
        pause = interval;
        info = replay.info.clone();
        let events = replayed(number, sent, &replay);
        let grew = !events.is_empty();
        match send_all(&tx, events, sent, stall, &ended).await {
            Sent::All(last) => sent = last,
            Sent::Ended => return,
        }
        if replay.finished && sent >= replay.latest {
            return;
        }
        if grew {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= quiet_for {
            quiet_since = Instant::now();
            if matches!(journal.shared.bus.alive(info.producer).await, Ok(false)) {
                answer_for_the_gone(&journal, number, info.request.as_ref()).await;
            }
        }
    }
}

/// Stores the error response that ends request stream `number`, whose producer is gone (the
/// next read sends it); a stream whose request is unknown is finished without one.
async fn answer_for_the_gone(journal: &Journal, number: u64, request: Option<&RequestId>) {
    let Some(id) = request else {
        return journal.finish(number).await;
    };
    let error = ErrorObject::internal("the server node handling this request stopped");
    let data = Message::Response(RpcResponse::error(Some(id.clone()), error)).to_json();
    let stored = journal
        .events
        .append(&journal.session, number, &data, true, &journal.limits)
        .await;
    if let Err(error) = stored {
        tracing::debug!(%error, "could not end the stream of a request whose node stopped");
    }
}
