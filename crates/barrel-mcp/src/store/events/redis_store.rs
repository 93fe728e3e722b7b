//! [`RedisEventStore`]: the events of every node's sessions in one Redis (feature `redis`), so
//! a stream produced on one node can be resumed on another.
//!
//! Keys, under the prefix `P` of the [`Redis`] (`{sid}` is a Redis Cluster hash tag: one
//! session's keys share a slot, and each script touches one slot):
//!
//! | key | type | holds | expires |
//! |---|---|---|---|
//! | `P:s:{sid}:st` | hash | per stream (field: its number in decimal): open or finished, when it is gone (Redis ms), newest seq, bytes held, producer tag, request id (JSON) | `max(session_ttl, finished_stream_ttl)` after the session's last `open` or `append` |
//! | `P:s:{sid}:e:<stream>` | stream | one entry per event held, id `0-<seq>`, field `d` = the data | open: `session_ttl` after its last `open` or event; finished: `finished_stream_ttl` after its last event |
//! | `P:s:{sid}:1:<stream>` | string | a stream of one event ([`EventStore::append_single`]): the producer tag and the request id (JSON) joined by a bar, a newline, the data | `finished_stream_ttl` after it was written |
//! | `P:s:{sid}:full` | string | present: the session is full of streams none of which can go before this key expires (so `open` refuses without reading every record) | at the earliest expiry of those streams; deleted when a stream finishes |
//!
//! Commands: `append_single` is one `SET NX PX` (a request answered with its response alone,
//! the common case: one Redis command per SSE `tools/call`); `open`, `append`, `append_first`,
//! `keep`, `finish` and `forget` are one script each (numbering, trimming and expiry, atomically;
//! `append_first` opens the stream first, in 3 round trips when the session is full of
//! streams); `replay` one atomic pipeline (the one-event form, the record, the events after
//! the cursor, the count held and Redis's clock). A one-event stream is in no table: it takes
//! no place under `max_streams`, and `forget` leaves it to expire (its session is gone, so no
//! node serves it). Trimming is exact (`XTRIM MINID`, not `~`): `first_available` is
//! then exactly what the bounds leave, and the byte bound holds (an approximate trim keeps up
//! to a whole radix node more).
//!
//! An open stream is gone `session_ttl` after its last `open` or event, as a finished one is
//! `finished_stream_ttl` after its last: the record keeps the instant, so a stream whose
//! producer died, or whose last `append` failed, neither lingers nor holds a place under
//! `max_streams`. A script that refuses writes nothing, so no failure leaves an event the
//! record does not count.
//!
//! Errors ([`classify`]): a Redis that cannot answer is [`StoreError::Unavailable`], never
//! "no such stream"; a key of the wrong type or a record this code cannot read is
//! [`StoreError::Corrupt`]. No message names the session (its id is a bearer handle).

mod scripts;
mod stored;

use std::fmt;

use redis::Value;

use self::scripts::Scripts;
use self::stored::{
    bytes, decode_events, decode_record, decode_single, encode_info, encode_single, integer,
    time_ms,
};
use super::{EventLimits, EventStore, Opened, Replay, StreamInfo};
use crate::peer::BoxFuture;
use crate::store::redis::{Redis, classify};
use crate::store::{NodeTag, StoreError};

/// The events of every node's sessions in one Redis 7 or later, shared by every node that uses
/// the same Redis and key prefix.
///
/// ```no_run
/// # async fn demo() -> Result<(), barrel_mcp::store::StoreError> {
/// use barrel_mcp::store::RedisEventStore;
/// use barrel_mcp::store::redis::{Redis, RedisOptions};
///
/// let redis = Redis::connect("redis://127.0.0.1:6379/", RedisOptions::default()).await?;
/// let events = RedisEventStore::new(redis);
/// # let _ = events;
/// # Ok(())
/// # }
/// ```
///
/// Its `Debug` shows the address and prefix, never a password.
pub struct RedisEventStore {
    redis: Redis,
    scripts: Scripts,
}

impl fmt::Debug for RedisEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisEventStore")
            .field("redis", &self.redis)
            .finish_non_exhaustive()
    }
}

impl RedisEventStore {
    /// A store on `redis`, under its prefix.
    pub fn new(redis: Redis) -> Self {
        Self {
            redis,
            scripts: Scripts::new(),
        }
    }

    /// The session's table of streams.
    fn table(&self, session: &str) -> String {
        format!("{}:s:{{{session}}}:st", self.redis.prefix())
    }

    /// The session's full mark (see `scripts.rs`).
    fn full_mark(&self, session: &str) -> String {
        format!("{}:s:{{{session}}}:full", self.redis.prefix())
    }

    /// `error` as a [`StoreError`] (the rule every Redis store shares: [`classify`]).
    fn fail(&self, error: &redis::RedisError) -> StoreError {
        classify(&self.redis, error)
    }

    /// The key of a one-event stream ([`EventStore::append_single`]).
    fn single(&self, session: &str, stream: u64) -> String {
        format!("{}:s:{{{session}}}:1:{stream}", self.redis.prefix())
    }

    /// What the key of each of the session's streams starts with.
    fn events_prefix(&self, session: &str) -> String {
        format!("{}:s:{{{session}}}:e:", self.redis.prefix())
    }

    async fn open_now(
        &self,
        session: &str,
        stream: u64,
        info: StreamInfo,
        limits: &EventLimits,
    ) -> Result<Opened, StoreError> {
        let prefix = self.events_prefix(session);
        let opened: i64 = self
            .scripts
            .open
            .key(self.table(session))
            .key(format!("{prefix}{stream}"))
            .key(self.full_mark(session))
            .key(self.single(session, stream))
            .arg(stream.to_string())
            .arg(encode_info(&info)?)
            .arg(limits.max_streams)
            .arg(millis(limits.session()))
            .arg(millis(limits.records()))
            .arg(prefix)
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        match opened {
            1 => Ok(Opened::Created),
            2 => Ok(Opened::Existed),
            0 => Ok(Opened::Full),
            _ => Err(StoreError::Corrupt(format!(
                "the record of stream {stream} is unreadable"
            ))),
        }
    }

    /// Appends, and with `first` (the stream's info) opens the stream first when it is not
    /// there: one script, one round trip (a session full of streams takes two more: `OPEN`,
    /// which makes room, then the append).
    async fn append_now(
        &self,
        session: &str,
        stream: u64,
        data: &str,
        last: bool,
        limits: &EventLimits,
        first: Option<StreamInfo>,
    ) -> Result<Option<u64>, StoreError> {
        let opening = match &first {
            Some(info) => encode_info(info)?,
            None => String::new(),
        };
        let prefix = self.events_prefix(session);
        let seq: i64 = self
            .scripts
            .append
            .key(self.table(session))
            .key(format!("{prefix}{stream}"))
            .key(self.full_mark(session))
            .key(self.single(session, stream))
            .arg(stream.to_string())
            .arg(data)
            .arg(if last { "1" } else { "0" })
            .arg(limits.replay_events)
            .arg(limits.replay_bytes)
            .arg(millis(limits.session()))
            .arg(millis(limits.finished()))
            .arg(millis(limits.records()))
            .arg(opening)
            .arg(limits.max_streams)
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        match seq {
            0 => Ok(None),
            seq if seq > 0 => Ok(u64::try_from(seq).ok()),
            -2 => match first {
                Some(info) => match self.open_now(session, stream, info, limits).await? {
                    Opened::Full => Ok(None),
                    Opened::Created | Opened::Existed => {
                        Box::pin(self.append_now(session, stream, data, last, limits, None)).await
                    }
                },
                None => Ok(None),
            },
            _ => Err(StoreError::Corrupt(format!(
                "the record or events of stream {stream} are unreadable"
            ))),
        }
    }

    /// A stream of one event in one command: `SET NX` with the finished TTL. Bounds that keep
    /// no event at all take the script, which applies them.
    async fn append_single_now(
        &self,
        session: &str,
        stream: u64,
        info: StreamInfo,
        data: &str,
        limits: &EventLimits,
    ) -> Result<Option<u64>, StoreError> {
        if limits.replay_events == 0 {
            return self
                .append_now(session, stream, data, true, limits, Some(info))
                .await;
        }
        let stored: Option<String> = redis::cmd("SET")
            .arg(self.single(session, stream))
            .arg(encode_single(&info, data)?)
            .arg("PX")
            .arg(millis(limits.finished()))
            .arg("NX")
            .query_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(stored.map(|_| 1))
    }

    async fn keep_now(
        &self,
        session: &str,
        stream: u64,
        producer: NodeTag,
        limits: &EventLimits,
    ) -> Result<bool, StoreError> {
        let kept: i64 = self
            .scripts
            .keep
            .key(self.table(session))
            .key(format!("{}{stream}", self.events_prefix(session)))
            .arg(stream.to_string())
            .arg(producer.get())
            .arg(millis(limits.session()))
            .arg(millis(limits.records()))
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        match kept {
            1 => Ok(true),
            0 => Ok(false),
            _ => Err(StoreError::Corrupt(format!(
                "the record of stream {stream} is unreadable"
            ))),
        }
    }

    async fn finish_now(
        &self,
        session: &str,
        stream: u64,
        info: StreamInfo,
        limits: &EventLimits,
    ) -> Result<(), StoreError> {
        let prefix = self.events_prefix(session);
        let done: i64 = self
            .scripts
            .finish
            .key(self.table(session))
            .key(format!("{prefix}{stream}"))
            .key(self.full_mark(session))
            .key(self.single(session, stream))
            .arg(stream.to_string())
            .arg(encode_info(&info)?)
            .arg(millis(limits.finished()))
            .arg(millis(limits.records()))
            .arg(limits.max_streams)
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        if done < 0 {
            return Err(StoreError::Corrupt(format!(
                "the record of stream {stream} is unreadable"
            )));
        }
        Ok(())
    }

    async fn replay_now(
        &self,
        session: &str,
        stream: u64,
        after: u64,
    ) -> Result<Option<Replay>, StoreError> {
        let events = format!("{}{stream}", self.events_prefix(session));
        let replies: Vec<Value> = redis::pipe()
            .atomic()
            .cmd("GET")
            .arg(self.single(session, stream))
            .cmd("HGET")
            .arg(self.table(session))
            .arg(stream.to_string())
            .cmd("XRANGE")
            .arg(&events)
            .arg(format!("(0-{after}"))
            .arg("+")
            .cmd("XLEN")
            .arg(&events)
            .cmd("TIME")
            .query_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        let [single, record, range, held, now] = replies.as_slice() else {
            return Err(StoreError::Corrupt(
                "the event store's replay answer has the wrong shape".into(),
            ));
        };
        if let Some(single) = bytes(single) {
            // A one-event stream (Redis expires it): finished, its event numbered 1.
            let (info, data) = decode_single(single)?;
            return Ok(Some(Replay {
                events: if after == 0 {
                    vec![(1, data)]
                } else {
                    Vec::new()
                },
                first_available: Some(1),
                latest: 1,
                finished: true,
                info,
            }));
        }
        let record = match record {
            Value::Nil => return Ok(None),
            other => decode_record(bytes(other).unwrap_or_default())?,
        };
        let now = time_ms(now)?;
        if now >= record.until {
            // Gone (open and idle, or finished, past its expiry): the next open forgets it.
            return Ok(None);
        }
        let held = integer(held)
            .filter(|held| *held <= record.latest)
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "stream {stream} holds more events than it numbered"
                ))
            })?;
        let events = decode_events(range, after)?;
        if events.last().is_some_and(|(seq, _)| *seq > record.latest) {
            return Err(StoreError::Corrupt(format!(
                "stream {stream} holds events it never numbered"
            )));
        }
        Ok(Some(Replay {
            events,
            // Held events are consecutive, up to the newest.
            first_available: (held > 0).then(|| record.latest - held + 1),
            latest: record.latest,
            finished: record.finished,
            info: record.info,
        }))
    }

    async fn forget_now(&self, session: &str) -> Result<(), StoreError> {
        let _: i64 = self
            .scripts
            .forget
            .key(self.table(session))
            .key(self.full_mark(session))
            .arg(self.events_prefix(session))
            .invoke_async(&mut self.redis.commands())
            .await
            .map_err(|e| self.fail(&e))?;
        Ok(())
    }
}

impl EventStore for RedisEventStore {
    fn open<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Opened, StoreError>> {
        Box::pin(self.open_now(session, stream, info, limits))
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        data: &'a str,
        last: bool,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(self.append_now(session, stream, data, last, limits, None))
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
        Box::pin(self.append_now(session, stream, data, last, limits, Some(info)))
    }

    fn append_single<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        data: &'a str,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        Box::pin(self.append_single_now(session, stream, info, data, limits))
    }

    fn keep<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        producer: NodeTag,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.keep_now(session, stream, producer, limits))
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        info: StreamInfo,
        limits: &'a EventLimits,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.finish_now(session, stream, info, limits))
    }

    fn replay<'a>(
        &'a self,
        session: &'a str,
        stream: u64,
        after: u64,
    ) -> BoxFuture<'a, Result<Option<Replay>, StoreError>> {
        Box::pin(self.replay_now(session, stream, after))
    }

    fn forget<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.forget_now(session))
    }
}

/// `ttl` in whole milliseconds, at least 1 (`PEXPIRE 0` would delete the key).
fn millis(ttl: std::time::Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}
