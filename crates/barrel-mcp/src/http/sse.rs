//! Server-sent event streams: event framing, the per-stream replay buffer, and the response
//! body that writes a stream with keep-alive comments.
//!
//! # Event ids and replay
//!
//! Each stream of a session has a number (`0` is the session's GET stream, POST streams count
//! from 1), and each event on it a sequence number; the SSE id is `stream.seq`, so ids are
//! unique across the session and a `Last-Event-ID` names exactly one stream. A stream starts with
//! a priming event (`id: s.0`, `retry:`, empty `data:`), so the client has an id to resume from
//! before the first message. Every event is kept in a replay buffer bounded in events and
//! bytes; a resume replays only the named stream, from the buffer. When the cursor is older than
//! the buffer, the replay starts with a `notifications/replay_truncated` notification naming the
//! first event still available, then goes on with what is left.
//!
//! # Slow readers
//!
//! The live reader of a stream gets events through a bounded queue. Writing never waits for a
//! reader: when the queue is full the live stream is ended (its body finishes after what is
//! queued), and the events stay in the replay buffer, so the client resumes with
//! `Last-Event-ID`. Memory per stream is therefore bounded by the queue plus the replay buffer.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use barrel_mcp_types::Message;
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The bounds of one stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) queue: usize,
    pub(crate) replay_events: usize,
    pub(crate) replay_bytes: usize,
    pub(crate) retry: Duration,
    /// Finished streams a session keeps for replay.
    pub(crate) retained_streams: usize,
    /// The bytes all of a session's replay buffers may hold together.
    pub(crate) session_replay_bytes: usize,
}

/// A stream of one session: its replay buffer and its live reader, if any.
#[derive(Debug)]
pub(crate) struct EventStream {
    id: u64,
    next_seq: u64,
    replay: VecDeque<(u64, Bytes)>,
    replay_bytes: usize,
    live: Option<mpsc::Sender<Bytes>>,
    finished: bool,
}

/// What a reader gets when it attaches to a stream: events to write first, then live ones.
#[derive(Debug)]
pub(crate) struct Attached {
    pub(crate) initial: Vec<Bytes>,
    pub(crate) live: Option<mpsc::Receiver<Bytes>>,
}

impl EventStream {
    pub(crate) fn new(id: u64) -> Self {
        Self {
            id,
            next_seq: 1,
            replay: VecDeque::new(),
            replay_bytes: 0,
            live: None,
            finished: false,
        }
    }

    /// True while a reader is attached and keeping up.
    pub(crate) fn has_live_reader(&self) -> bool {
        self.live.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// True once the stream's last event (its response) was written.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Attaches a new reader, replacing any other. `after` is the sequence number of the last
    /// event the reader saw (from `Last-Event-ID`); `None` starts the stream with its priming
    /// event. Returns `None` when `after` is in the future (a forged cursor).
    pub(crate) fn attach(&mut self, after: Option<u64>, limits: &Limits) -> Option<Attached> {
        let initial = match after {
            None => {
                // Room for the answer and what comes with it (`gather_first`).
                let mut initial = Vec::with_capacity(4);
                initial.push(self.priming(limits.retry));
                initial
            }
            Some(after) if after >= self.next_seq => return None,
            Some(after) => self.replay_after(after),
        };
        let live = if self.finished {
            self.live = None;
            None
        } else {
            let (tx, rx) = mpsc::channel(limits.queue.max(1));
            self.live = Some(tx);
            Some(rx)
        };
        Some(Attached { initial, live })
    }

    /// The events after `after`, from the replay buffer, led by a notice when some of them
    /// are no longer kept.
    fn replay_after(&self, after: u64) -> Vec<Bytes> {
        let mut events = Vec::new();
        let first = self.replay.front().map_or(self.next_seq, |(seq, _)| *seq);
        if after + 1 < first {
            events.push(truncated_notice(self.id, after, Some(first)));
        }
        events.extend(
            self.replay
                .iter()
                .filter(|(seq, _)| *seq > after)
                .map(|(_, event)| event.clone()),
        );
        events
    }

    /// The bytes the replay buffer holds.
    pub(crate) fn replay_bytes(&self) -> usize {
        self.replay_bytes
    }

    /// Drops the oldest event of the replay buffer; returns the bytes freed (0 when empty). A
    /// reader resuming from before it is told the replay is truncated.
    pub(crate) fn drop_oldest(&mut self) -> usize {
        match self.replay.pop_front() {
            Some((_, event)) => {
                self.replay_bytes -= event.len();
                event.len()
            }
            None => 0,
        }
    }

    /// Writes one message: to the replay buffer, and to the live reader when it keeps up.
    /// Returns how the replay buffer's size changed, in bytes.
    /// `data` is the message's JSON.
    pub(crate) fn push(&mut self, data: &str, limits: &Limits) -> isize {
        if self.finished {
            return 0;
        }
        let before = self.replay_bytes;
        let seq = self.next_seq;
        self.next_seq += 1;
        let event = numbered_event(self.id, seq, data);
        self.replay_bytes += event.len();
        self.replay.push_back((seq, event.clone()));
        while self.replay.len() > limits.replay_events
            || (self.replay_bytes > limits.replay_bytes && self.replay.len() > 1)
        {
            if let Some((_, old)) = self.replay.pop_front() {
                self.replay_bytes -= old.len();
            }
        }
        if let Some(live) = &self.live {
            match live.try_send(event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::debug!(stream = self.id, "slow SSE reader: live stream ended");
                    self.live = None;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => self.live = None,
            }
        }
        // Both sizes are bounded by the replay limits, far below isize::MAX.
        self.replay_bytes as isize - before as isize
    }

    /// Writes one message the event store numbered `seq` (a shared session's stream: the store
    /// is the truth, and this buffer mirrors what it holds of this node's streams).
    /// A number below the stream's (the store forgot the stream and numbered it anew) goes
    /// out without an id.
    pub(crate) fn push_numbered(&mut self, seq: u64, data: &str, limits: &Limits) -> isize {
        if self.finished {
            return 0;
        }
        if seq < self.next_seq {
            self.push_unnumbered(data);
            return 0;
        }
        self.next_seq = seq;
        self.push(data, limits)
    }

    /// Writes one message without an id, to the live reader only (a shared session's event
    /// the store could not take: seen live, never replayed).
    pub(crate) fn push_unnumbered(&mut self, data: &str) {
        if self.finished {
            return;
        }
        if let Some(live) = &self.live
            && live.try_send(unnumbered_event(data)).is_err()
        {
            self.live = None;
        }
    }

    /// Ends the stream: no more events; the live reader ends after what is queued.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
        self.live = None;
    }

    fn priming(&self, retry: Duration) -> Bytes {
        priming_event(self.id, 0, retry)
    }
}

// Events are written piece by piece into a buffer of their exact size (so `Bytes` takes it
// over without another allocation): each answer carries one or two, and `format!` cost more
// than the rest of building them.

/// The room a decimal `u64` can take. (Numbers are `u64`: a `u128` division is a library
/// call, and it was most of the cost of writing an event id.)
const MAX_DIGITS: usize = 20;
const MESSAGE_HEAD: &[u8] = b"event: message\ndata: ";
const EVENT_END: &[u8] = b"\n\n";

/// The digits of `n` in decimal.
fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// The length of the id line of `stream.seq`.
fn id_len(stream: u64, seq: u64) -> usize {
    "id: .\n".len() + decimal_len(stream) + decimal_len(seq)
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; MAX_DIGITS];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `n % 10` is below 10.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends the event id `stream.seq`.
fn push_id(out: &mut Vec<u8>, stream: u64, seq: u64) {
    out.extend_from_slice(b"id: ");
    push_decimal(out, stream);
    out.push(b'.');
    push_decimal(out, seq);
    out.push(b'\n');
}

/// One event of stream `stream` with sequence number `seq` carrying `data` (a message's JSON).
pub(crate) fn numbered_event(stream: u64, seq: u64, data: &str) -> Bytes {
    let mut out =
        Vec::with_capacity(id_len(stream, seq) + MESSAGE_HEAD.len() + data.len() + EVENT_END.len());
    push_id(&mut out, stream, seq);
    push_message(&mut out, data);
    Bytes::from(out)
}

/// One event without an id carrying `data`.
pub(crate) fn unnumbered_event(data: &str) -> Bytes {
    let mut out = Vec::with_capacity(MESSAGE_HEAD.len() + data.len() + EVENT_END.len());
    push_message(&mut out, data);
    Bytes::from(out)
}

/// Appends the `message` event's lines carrying `data`, and the blank line that ends it.
fn push_message(out: &mut Vec<u8>, data: &str) {
    out.extend_from_slice(MESSAGE_HEAD);
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(EVENT_END);
}

/// The priming event of stream `stream`: its id names event `seq` (0: none yet), so a client
/// resumes from there. A `retry` past `u64::MAX` milliseconds is written as that.
pub(crate) fn priming_event(stream: u64, seq: u64, retry: Duration) -> Bytes {
    const RETRY: &[u8] = b"retry: ";
    const EMPTY_DATA: &[u8] = b"\ndata: \n\n";
    let millis = u64::try_from(retry.as_millis()).unwrap_or(u64::MAX);
    let mut out = Vec::with_capacity(
        id_len(stream, seq) + RETRY.len() + decimal_len(millis) + EMPTY_DATA.len(),
    );
    push_id(&mut out, stream, seq);
    out.extend_from_slice(RETRY);
    push_decimal(&mut out, millis);
    out.extend_from_slice(EMPTY_DATA);
    Bytes::from(out)
}

/// The notice that starts a replay whose cursor is older than what the stream kept (`first` is
/// the oldest event still available; `None` when nothing of the stream is kept any more).
pub(crate) fn truncated_notice(stream: u64, after: u64, first: Option<u64>) -> Bytes {
    let params = barrel_mcp_types::ReplayTruncatedParams {
        last_event_id: format!("{stream}.{after}"),
        first_available_event_id: first.map(|first| format!("{stream}.{first}")),
    };
    let notice = Message::notification(
        barrel_mcp_types::method::names::NOTIFICATIONS_REPLAY_TRUNCATED,
        serde_json::to_value(params).ok(),
    );
    unnumbered_event(&notice.to_json())
}

/// Parses a `Last-Event-ID` of the form `stream.seq`.
pub(crate) fn parse_event_id(text: &str) -> Option<(u64, u64)> {
    if text.len() > 41 {
        return None;
    }
    let (stream, seq) = text.split_once('.')?;
    // Exactly the form this server issues: decimal, no sign, no leading zero (found by the
    // `security_parsers` fuzz target: `007.1` named the same event as `7.1`).
    let canonical = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    if !canonical(stream) || !canonical(seq) {
        return None;
    }
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// Waits up to `wait` for the first live events of a freshly attached stream and moves them, and
/// whatever follows at once, into its initial events; notes the stream's end if it came too.
/// So a quick answer leaves with the response head and the priming event in one write.
pub(crate) async fn gather_first(attached: &mut Attached, wait: Duration) {
    let Some(live) = attached.live.as_mut() else {
        return;
    };
    if wait.is_zero() {
        return;
    }
    // An answer already in needs no timer (nor the clock read that sets one).
    let first = match live.try_recv() {
        Ok(event) => Some(event),
        Err(mpsc::error::TryRecvError::Disconnected) => None,
        Err(mpsc::error::TryRecvError::Empty) => {
            match tokio::time::timeout(wait, live.recv()).await {
                Err(_) => return,
                Ok(event) => event,
            }
        }
    };
    match first {
        None => attached.live = None,
        Some(event) => {
            attached.initial.push(event);
            loop {
                match live.try_recv() {
                    Ok(event) => attached.initial.push(event),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        attached.live = None;
                        break;
                    }
                }
            }
        }
    }
}

/// Frames one message as an SSE event without an id (2026-07-28 streams are not resumable).
pub(crate) fn plain_event(message: &Message) -> Bytes {
    unnumbered_event(&message.to_json())
}

fn never_last<T>(_: &T) -> bool {
    false
}

/// How the live part of an SSE body ends, besides its sender going away.
pub(crate) struct Ending<T> {
    /// True for the last item.
    pub(crate) last: fn(&T) -> bool,
    /// Cancelled when nothing more will come (the request is over), whoever still holds a
    /// sender.
    pub(crate) over: CancellationToken,
    /// Dropped with the body (the client went away, or the stream ended).
    pub(crate) guard: DropGuard,
}

impl<T> Ending<T> {
    /// Ends when `over` is cancelled, on no particular item.
    pub(crate) fn when(over: CancellationToken, guard: DropGuard) -> Self {
        Self {
            last: never_last::<T>,
            over,
            guard,
        }
    }
}

/// The body of an SSE response: `initial` events, then live ones (framed by `frame`) until the
/// sender is gone or the `ending` says so, with a `:` comment whenever the stream was idle for
/// `keep_alive`.
pub(crate) fn body<T: Send + 'static>(
    initial: Vec<Bytes>,
    live: Option<mpsc::Receiver<T>>,
    frame: fn(T) -> Bytes,
    keep_alive: Duration,
    ending: Option<Ending<T>>,
) -> Body {
    struct State<T> {
        initial: Option<Bytes>,
        live: Option<mpsc::Receiver<T>>,
        frame: fn(T) -> Bytes,
        keep_alive: Duration,
        last: fn(&T) -> bool,
        over: Option<CancellationToken>,
        _guard: Option<DropGuard>,
    }
    let (last, over, guard) = match ending {
        Some(Ending { last, over, guard }) => (last, Some(over), Some(guard)),
        None => (never_last::<T> as fn(&T) -> bool, None, None),
    };
    // The initial events leave as one chunk: one write with the head when they are ready.
    let initial: Option<Bytes> = match initial.len() {
        0 | 1 => initial.into_iter().next(),
        _ => Some(Bytes::from(initial.concat())),
    };
    let state = State {
        initial,
        live,
        frame,
        keep_alive,
        last,
        over,
        _guard: guard,
    };
    let stream = futures_util::stream::unfold(state, |mut state| async move {
        if let Some(event) = state.initial.take() {
            return Some((Ok::<_, Infallible>(event), state));
        }
        let live = state.live.as_mut()?;
        let over = state.over.as_ref();
        let over = async {
            match over {
                Some(over) => over.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // What is queued goes out before the end is noticed.
        let next = tokio::select! {
            biased;
            item = live.recv() => {
                let item = item?;
                if (state.last)(&item) {
                    // The last event: the stream ends after it.
                    state.live = None;
                }
                (state.frame)(item)
            }
            () = over => return None,
            () = tokio::time::sleep(state.keep_alive) => Bytes::from_static(b":\n\n"),
        };
        Some((Ok(next), state))
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_written_whole_in_buffers_of_their_exact_size() {
        for (stream, seq) in [(0, 0), (9, 10), (1_234, 99_999), (u64::MAX, u64::MAX)] {
            let event = numbered_event(stream, seq, r#"{"a":1}"#);
            let expected = format!("id: {stream}.{seq}\nevent: message\ndata: {{\"a\":1}}\n\n");
            assert_eq!(event, expected.as_bytes());
            for retry in [0, 7, 1_000, u64::MAX] {
                let retry = Duration::from_millis(retry);
                let priming = priming_event(stream, seq, retry);
                let expected = format!(
                    "id: {stream}.{seq}\nretry: {}\ndata: \n\n",
                    retry.as_millis()
                );
                assert_eq!(priming, expected.as_bytes());
            }
        }
        assert_eq!(unnumbered_event("x"), &b"event: message\ndata: x\n\n"[..]);
        // Exact sizes: what the length functions say is what is written.
        for n in [0, 9, 10, 99, 100, u64::MAX / 10, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
            assert_eq!(decimal_len(n), out.len());
        }
        assert_eq!(id_len(12, 345), "id: 12.345\n".len());
        let longest = priming_event(1, 2, Duration::MAX);
        assert_eq!(
            longest,
            format!("id: 1.2\nretry: {}\ndata: \n\n", u64::MAX).as_bytes()
        );
    }

    fn limits() -> Limits {
        Limits {
            queue: 2,
            replay_events: 3,
            replay_bytes: 1 << 20,
            retry: Duration::from_millis(500),
            retained_streams: 32,
            session_replay_bytes: 8 << 20,
        }
    }

    #[tokio::test]
    async fn a_quick_answer_joins_the_priming_event() {
        let limits = limits();
        let mut stream = EventStream::new(1);
        let mut attached = stream.attach(None, &limits).expect("fresh stream");
        stream.push(&Message::notification("quick", None).to_json(), &limits);
        drop(stream);
        gather_first(&mut attached, Duration::from_millis(50)).await;
        assert_eq!(attached.initial.len(), 2, "priming event and the answer");
        assert!(attached.live.is_none(), "the stream's end was seen too");

        let mut slow = EventStream::new(2);
        let mut attached = slow.attach(None, &limits).expect("fresh stream");
        gather_first(&mut attached, Duration::from_millis(5)).await;
        assert_eq!(attached.initial.len(), 1, "only the priming event");
        assert!(attached.live.is_some(), "still open for the answer");
    }

    #[test]
    fn resume_replays_only_what_followed() {
        let mut stream = EventStream::new(7);
        let limits = limits();
        let attached = stream.attach(None, &limits).expect("fresh stream");
        assert!(String::from_utf8_lossy(&attached.initial[0]).starts_with("id: 7.0\nretry: 500"));
        for n in 0..5 {
            stream.push(
                &Message::notification(format!("n{n}"), None).to_json(),
                &limits,
            );
        }
        // The queue held two events; the reader fell behind and was cut off.
        assert!(!stream.has_live_reader());
        let resumed = stream.attach(Some(3), &limits).expect("known cursor");
        let texts: Vec<String> = resumed
            .initial
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        assert_eq!(texts.len(), 2);
        assert!(texts[0].starts_with("id: 7.4\n"));
        assert!(texts[1].starts_with("id: 7.5\n"));
        // Event 1 fell out of the window of three.
        let old = stream.attach(Some(0), &limits).expect("old cursor");
        assert!(String::from_utf8_lossy(&old.initial[0]).contains("replay_truncated"));
        assert_eq!(old.initial.len(), 4);
        assert!(stream.attach(Some(9), &limits).is_none());
    }

    #[test]
    fn event_ids_parse_strictly() {
        assert_eq!(parse_event_id("3.14"), Some((3, 14)));
        assert_eq!(parse_event_id("3"), None);
        assert_eq!(parse_event_id("-1.2"), None);
        assert_eq!(parse_event_id("1.2.3"), None);
        assert_eq!(parse_event_id(&"9".repeat(100)), None);
        assert_eq!(parse_event_id("0.0"), Some((0, 0)));
        assert_eq!(parse_event_id("007.1"), None, "only the form we issue");
        assert_eq!(parse_event_id("7.01"), None);
    }
}
