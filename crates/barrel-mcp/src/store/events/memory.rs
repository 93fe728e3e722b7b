//! [`MemoryEventStore`]: the events of one process's sessions, in its memory (the default).
//!
//! One map of sessions behind a `std` mutex that is never held across an `.await` (no method
//! awaits anything). Expiry is by [`Instant`]: a stream is gone at its `until` whether it is
//! open (idle `session_ttl` since its last `open` or event) or finished; what has expired is
//! invisible at once and forgotten on the way, and a sweep at most once per [`SWEEP_EVERY`]
//! forgets the sessions nobody asks about any more.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::{EventLimits, EventStore, Opened, Replay, StreamInfo};
use crate::peer::BoxFuture;
use crate::store::{NodeTag, StoreError};

/// How often, at most, a write looks through every session for expired ones.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The events of this process's sessions, in memory: the default store, for a single process.
#[derive(Debug)]
pub struct MemoryEventStore {
    sessions: Mutex<Sessions>,
}

impl Default for MemoryEventStore {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug)]
struct Sessions {
    by_id: HashMap<String, Session>,
    next_sweep: Instant,
}

#[derive(Debug)]
struct Session {
    /// The session's streams are forgotten at this instant, unless written to before.
    until: Instant,
    streams: HashMap<u64, Stream>,
}

#[derive(Debug)]
struct Stream {
    info: StreamInfo,
    /// The newest sequence number (0: none yet).
    latest: u64,
    /// The events held, oldest first; their sequence numbers are consecutive.
    events: VecDeque<(u64, Arc<str>)>,
    /// The bytes of data `events` holds.
    bytes: usize,
    finished: bool,
    /// The stream is gone at this instant (open: `session_ttl` after its last `open` or
    /// event; finished: `finished_stream_ttl` after its last event).
    until: Instant,
}

impl Stream {
    fn new(info: StreamInfo, now: Instant, limits: &EventLimits) -> Self {
        Self {
            info,
            latest: 0,
            events: VecDeque::new(),
            bytes: 0,
            finished: false,
            until: later(now, limits.session()),
        }
    }

    /// True when the stream has expired (open and idle, or finished, past its `until`).
    fn gone(&self, now: Instant) -> bool {
        now >= self.until
    }

    /// Keeps an open stream another `session_ttl`.
    fn refresh(&mut self, now: Instant, limits: &EventLimits) {
        self.until = later(now, limits.session());
    }

    fn push(&mut self, data: &str, last: bool, now: Instant, limits: &EventLimits) -> u64 {
        self.latest += 1;
        self.bytes += data.len();
        self.events.push_back((self.latest, Arc::from(data)));
        while self.events.len() > limits.replay_events
            || (self.bytes > limits.replay_bytes && self.events.len() > 1)
        {
            match self.events.pop_front() {
                Some((_, old)) => self.bytes -= old.len(),
                None => break,
            }
        }
        if last {
            self.finished = true;
            self.until = later(now, limits.finished());
        } else {
            self.until = later(now, limits.session());
        }
        self.latest
    }

    fn replay(&self, after: u64) -> Replay {
        let start = self.events.partition_point(|(seq, _)| *seq <= after);
        Replay {
            events: self.events.range(start..).cloned().collect(),
            first_available: self.events.front().map(|(seq, _)| *seq),
            latest: self.latest,
            finished: self.finished,
            info: self.info.clone(),
        }
    }
}

impl Session {
    /// The stream `number` unless it is gone; a gone one is forgotten on the way.
    fn stream(&mut self, number: u64, now: Instant) -> Option<&mut Stream> {
        if self.streams.get(&number).is_some_and(|s| s.gone(now)) {
            self.streams.remove(&number);
        }
        self.streams.get_mut(&number)
    }

    /// Makes room for one more stream within `max`: forgets expired streams, then the
    /// finished ones closest to expiry (never the GET stream), a quarter of `max` at once (at
    /// least one), so a busy session makes room once per quarter of `max` streams opened.
    /// False when every stream left is open.
    fn make_room(&mut self, max: usize, now: Instant) -> bool {
        if self.streams.len() < max {
            return true;
        }
        self.streams.retain(|_, stream| !stream.gone(now));
        if self.streams.len() < max {
            return true;
        }
        let target = max.saturating_sub((max / 4).max(1));
        let mut finished: Vec<(Instant, u64)> = self
            .streams
            .iter()
            .filter(|(number, stream)| **number != 0 && stream.finished)
            .map(|(number, stream)| (stream.until, *number))
            .collect();
        finished.sort_unstable();
        let excess = self.streams.len().saturating_sub(target);
        for (_, number) in finished.into_iter().take(excess) {
            self.streams.remove(&number);
        }
        self.streams.len() < max
    }
}

impl Sessions {
    /// The live session `id`; an expired one is forgotten on the way.
    fn live(&mut self, id: &str, now: Instant) -> Option<&mut Session> {
        if self.by_id.get(id).is_some_and(|s| now >= s.until) {
            self.by_id.remove(id);
        }
        self.by_id.get_mut(id)
    }

    /// Forgets expired sessions and streams, at most once per [`SWEEP_EVERY`].
    fn sweep(&mut self, now: Instant) {
        if now < self.next_sweep {
            return;
        }
        self.next_sweep = later(now, SWEEP_EVERY);
        self.by_id.retain(|_, session| {
            session.streams.retain(|_, stream| !stream.gone(now));
            now < session.until
        });
    }
}

/// `now + ttl`, or `now` should the clock not reach that far.
fn later(now: Instant, ttl: Duration) -> Instant {
    now.checked_add(ttl).unwrap_or(now)
}

impl MemoryEventStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            sessions: Mutex::new(Sessions {
                by_id: HashMap::new(),
                next_sweep: Instant::now(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open_now(
        &self,
        session: &str,
        number: u64,
        info: StreamInfo,
        limits: &EventLimits,
    ) -> Opened {
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.sweep(now);
        let known = sessions.live(session, now).is_some();
        if !known && limits.max_streams == 0 {
            return Opened::Full;
        }
        let entry = sessions
            .by_id
            .entry(session.to_owned())
            .or_insert_with(|| Session {
                until: now,
                streams: HashMap::new(),
            });
        let opened = if let Some(stream) = entry.stream(number, now) {
            if !stream.finished {
                stream.info = info;
                stream.refresh(now, limits);
            }
            Opened::Existed
        } else if entry.make_room(limits.max_streams, now) {
            entry.streams.insert(number, Stream::new(info, now, limits));
            Opened::Created
        } else {
            return Opened::Full;
        };
        entry.until = later(now, limits.records());
        opened
    }

    fn append_now(
        &self,
        session: &str,
        number: u64,
        data: &str,
        last: bool,
        limits: &EventLimits,
    ) -> Option<u64> {
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.sweep(now);
        let entry = sessions.live(session, now)?;
        let stream = entry.stream(number, now)?;
        if stream.finished {
            return None;
        }
        let seq = stream.push(data, last, now, limits);
        entry.until = later(now, limits.records());
        Some(seq)
    }

    fn keep_now(
        &self,
        session: &str,
        number: u64,
        producer: NodeTag,
        limits: &EventLimits,
    ) -> bool {
        let now = Instant::now();
        let mut sessions = self.lock();
        let Some(entry) = sessions.live(session, now) else {
            return false;
        };
        let Some(stream) = entry.stream(number, now) else {
            return false;
        };
        if stream.finished || stream.info.producer != producer {
            return false;
        }
        stream.refresh(now, limits);
        entry.until = later(now, limits.records());
        true
    }

    fn finish_now(&self, session: &str, number: u64, info: StreamInfo, limits: &EventLimits) {
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.sweep(now);
        let known = sessions.live(session, now).is_some();
        if !known && limits.max_streams == 0 {
            return;
        }
        let entry = sessions
            .by_id
            .entry(session.to_owned())
            .or_insert_with(|| Session {
                until: now,
                streams: HashMap::new(),
            });
        if let Some(stream) = entry.stream(number, now) {
            if !stream.finished {
                stream.finished = true;
                stream.until = later(now, limits.finished());
            }
        } else if entry.streams.len() < limits.max_streams {
            let mut stream = Stream::new(info, now, limits);
            stream.finished = true;
            stream.until = later(now, limits.finished());
            entry.streams.insert(number, stream);
        } else {
            return;
        }
        entry.until = later(now, limits.records());
    }

    fn replay_now(&self, session: &str, number: u64, after: u64) -> Option<Replay> {
        let now = Instant::now();
        let mut sessions = self.lock();
        let entry = sessions.live(session, now)?;
        Some(entry.stream(number, now)?.replay(after))
    }
}

impl EventStore for MemoryEventStore {
    fn open<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Opened, StoreError>> {
        Box::pin(async move { Ok(self.open_now(session, stream, info, limits)) })
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(async move { Ok(self.append_now(session, stream, data, last, limits)) })
    }

    fn keep<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        producer: NodeTag,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let kept = self.keep_now(session, stream, producer, limits);
        Box::pin(async move { Ok(kept) })
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.finish_now(session, stream, info, limits);
            Ok(())
        })
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> BoxFuture<'a, Result<Option<Replay>, StoreError>> {
        Box::pin(async move { Ok(self.replay_now(session, stream, after)) })
    }

    fn forget<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.lock().by_id.remove(session);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NodeTag;

    fn info() -> StreamInfo {
        StreamInfo {
            producer: NodeTag::LOCAL,
            request: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_sweep_forgets_what_nobody_asks_about() {
        let store = MemoryEventStore::new();
        let limits = EventLimits {
            session_ttl: Duration::from_secs(5),
            finished_stream_ttl: Duration::from_secs(1),
            ..EventLimits::default()
        };
        for n in 0..10 {
            let _ = store.open_now(&format!("idle-{n}"), 0, info(), &limits);
        }
        let _ = store.open_now("busy", 1, info(), &limits);
        store.append_now("busy", 1, "answer", true, &limits);
        tokio::time::advance(Duration::from_secs(2)).await;
        let _ = store.open_now("busy", 2, info(), &limits);
        {
            let sessions = store.lock();
            assert_eq!(sessions.by_id.len(), 11, "nothing idle long enough yet");
            let streams = &sessions.by_id["busy"].streams;
            assert!(!streams.contains_key(&1), "the finished stream was swept");
        }
        tokio::time::advance(Duration::from_secs(4)).await;
        store.append_now("busy", 2, "still here", false, &limits);
        let sessions = store.lock();
        assert_eq!(
            sessions.by_id.len(),
            1,
            "only the session written to is left"
        );
    }
}
