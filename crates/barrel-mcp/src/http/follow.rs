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
//!   until its response. When nothing came for a second and its producer is no longer a live
//!   node, an error response (-32603) is stored as its last event and sent: the client gets an
//!   answer instead of a stream that never ends.
//!
//! A reader that falls a queue behind is cut off, as on any stream; it resumes from the store.

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

/// How long a followed request stream stays quiet before its producer's life is checked.
const QUIET: Duration = Duration::from_secs(1);

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
            request_stream(journal, number, seq, config).await
        }
        Some((_, seq)) => get_stream(session, journal, Some(seq), config).await,
        None => get_stream(session, journal, None, config).await,
    }
}

/// The events of `replay` as SSE events of stream `number`, led by a notice when some after
/// `after` are no longer held; and the sequence number of the last.
fn replayed(number: u64, after: u64, replay: &Replay) -> (Vec<Bytes>, u64) {
    let mut events = Vec::with_capacity(replay.events.len() + 1);
    if replay.missed(after) {
        events.push(sse::truncated_notice(number, after, replay.first_available));
    }
    let mut last = after;
    for (seq, data) in &replay.events {
        events.push(sse::numbered_event(number, *seq, data));
        last = *seq;
    }
    (events, last.max(after))
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
    let (initial, sent, previous) = match (replay, after) {
        (None, None) => (
            vec![sse::priming_event(GET_STREAM, 0, config.sse_retry)],
            0,
            None,
        ),
        (None, Some(seq)) => (vec![sse::truncated_notice(GET_STREAM, seq, None)], 0, None),
        (Some(replay), None) => (
            vec![sse::priming_event(
                GET_STREAM,
                replay.latest,
                config.sse_retry,
            )],
            replay.latest,
            Some(replay.info.producer),
        ),
        (Some(replay), Some(seq)) => {
            if seq > replay.latest {
                return Err(Refusal::Future);
            }
            let (events, sent) = replayed(GET_STREAM, seq, &replay);
            (events, sent, Some(replay.info.producer))
        }
    };
    let info = StreamInfo {
        producer: journal.node,
        request: None,
    };
    match events.open(sid, GET_STREAM, info, &journal.limits).await {
        Ok(Opened::Created | Opened::Existed) => {}
        Ok(Opened::Full) => {
            return Err(Refusal::Unavailable("too many streams in this session"));
        }
        Err(error) => return Err(unavailable(&error)),
    }
    let (tx, rx) = mpsc::channel(config.stream_queue.max(1));
    let over = CancellationToken::new();
    journal.serve_get(Serving {
        over: over.clone(),
        live: tx.clone(),
    });
    if previous != Some(journal.node) {
        take_over(session, journal, previous);
    }
    let follow = follow_get(
        Arc::clone(journal),
        tx,
        over.clone(),
        session.kill.clone(),
        sent,
        config.keep_alive,
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
/// (the client left, or another GET replaced this one) or the session ends.
async fn follow_get(
    journal: Arc<Journal>,
    tx: mpsc::Sender<Bytes>,
    over: CancellationToken,
    ended: CancellationToken,
    mut sent: u64,
    recheck: Duration,
) {
    let sid = journal.session.clone();
    loop {
        tokio::select! {
            biased;
            () = over.cancelled() => return,
            () = ended.cancelled() => return,
            () = tx.closed() => return,
            () = journal.grew.notified() => {}
            () = tokio::time::sleep(recheck) => {}
        }
        match journal.events.replay(&sid, GET_STREAM, sent).await {
            Ok(Some(replay)) => {
                let (events, last) = replayed(GET_STREAM, sent, &replay);
                for event in events {
                    if tx.try_send(event).is_err() {
                        tracing::debug!("slow SSE reader: live GET stream ended");
                        over.cancel();
                        return;
                    }
                }
                sent = last;
            }
            Ok(None) => {
                // Gone from the store (expired, or the session was deleted).
                over.cancel();
                return;
            }
            Err(error) => tracing::debug!(%error, "the GET stream could not be read; tried again"),
        }
    }
}

/// Resumes request stream `number` after event `after`: what the store holds, then the rest as
/// it comes.
async fn request_stream(
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
    let Some(replay) = replay else {
        return Ok(Followed {
            initial: vec![sse::truncated_notice(number, after, None)],
            live: None,
            over: None,
        });
    };
    if after > replay.latest {
        return Err(Refusal::Future);
    }
    let (initial, sent) = replayed(number, after, &replay);
    if replay.finished {
        return Ok(Followed {
            initial,
            live: None,
            over: None,
        });
    }
    let (tx, rx) = mpsc::channel(config.stream_queue.max(1));
    let follow = follow_request(Arc::clone(journal), number, sent, replay.info, tx);
    journal.spawn(follow);
    Ok(Followed {
        initial,
        live: Some(rx),
        over: None,
    })
}

/// Reads request stream `number` after `sent` every follow interval until its last event (or
/// the reader leaves); answers for a producer that is gone.
async fn follow_request(
    journal: Arc<Journal>,
    number: u64,
    mut sent: u64,
    info: StreamInfo,
    tx: mpsc::Sender<Bytes>,
) {
    let interval = journal.shared.follow_interval.max(Duration::from_millis(1));
    let mut quiet_since = Instant::now();
    loop {
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let replay = match journal.events.replay(&journal.session, number, sent).await {
            Ok(Some(replay)) => replay,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%error, "a followed stream could not be read; tried again");
                continue;
            }
        };
        let (events, last) = replayed(number, sent, &replay);
        let grew = last > sent;
        for event in events {
            if tx.try_send(event).is_err() {
                return;
            }
        }
        sent = last;
        if replay.finished && sent >= replay.latest {
            return;
        }
        if grew {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= QUIET {
            quiet_since = Instant::now();
            if matches!(journal.shared.bus.alive(info.producer).await, Ok(false)) {
                answer_for_the_gone(&journal, number, info.request.as_ref()).await;
            }
        }
    }
}

/// Stores the error response that ends request stream `number`, whose producer is gone: the
/// next read sends it.
async fn answer_for_the_gone(journal: &Journal, number: u64, request: Option<&RequestId>) {
    let Some(id) = request else {
        return;
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
