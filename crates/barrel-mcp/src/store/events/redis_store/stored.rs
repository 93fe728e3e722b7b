//! What the Redis event store writes, and reading it back: a stream's record in the session's
//! table (the format is in `scripts.rs`) and the events of a stream. Nothing read from Redis is trusted: what does not parse is
//! [`StoreError::Corrupt`].

use std::sync::Arc;

use barrel_mcp_types::RequestId;
use redis::Value;

use crate::store::events::StreamInfo;
use crate::store::{NodeTag, StoreError};

/// A stream's record, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Record {
    /// True once the stream's last event was appended.
    pub(super) finished: bool,
    /// When the stream is gone (open or finished), in Redis's milliseconds.
    pub(super) until: u64,
    pub(super) latest: u64,
    pub(super) info: StreamInfo,
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("the event store's {what}"))
}

/// `<producer>|<request id JSON, or nothing for none>`: the tail of a record.
pub(super) fn encode_info(info: &StreamInfo) -> Result<String, StoreError> {
    let request = match &info.request {
        Some(id) => serde_json::to_string(id).map_err(|_| corrupt("request id did not encode"))?,
        None => String::new(),
    };
    Ok(format!("{}|{request}", info.producer.get()))
}

/// Reads a record: `<o | d><ms>|<latest>|<bytes>|<producer>|<request>`.
pub(super) fn decode_record(text: &[u8]) -> Result<Record, StoreError> {
    let bad = || corrupt("stream record is unreadable");
    let text = std::str::from_utf8(text).map_err(|_| bad())?;
    let mut parts = text.splitn(4, '|');
    let (Some(state), Some(latest), Some(_bytes), Some(info)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let (finished, until) = match (state.strip_prefix('o'), state.strip_prefix('d')) {
        (Some(ms), _) => (false, ms),
        (_, Some(ms)) => (true, ms),
        _ => return Err(bad()),
    };
    Ok(Record {
        finished,
        until: number(until).ok_or_else(bad)?,
        latest: number(latest).ok_or_else(bad)?,
        info: decode_info(info).ok_or_else(bad)?,
    })
}

/// Reads `<producer>|<request id JSON, or nothing for none>`.
fn decode_info(text: &str) -> Option<StreamInfo> {
    let (producer, request) = text.split_once('|')?;
    let producer = number(producer)
        .and_then(|n| u32::try_from(n).ok())
        .and_then(NodeTag::new)?;
    let request = match request {
        "" => None,
        json => Some(serde_json::from_str::<RequestId>(json).ok()?),
    };
    Some(StreamInfo { producer, request })
}

/// A stream of one event, kept on a key of its own: `<producer>|<request>` (no raw newline:
/// the request id is compact JSON), a newline, then the event's data.
pub(super) fn encode_single(info: &StreamInfo, data: &str) -> Result<String, StoreError> {
    let info = encode_info(info)?;
    let mut text = String::with_capacity(info.len() + 1 + data.len());
    text.push_str(&info);
    text.push('\n');
    text.push_str(data);
    Ok(text)
}

/// Reads what [`encode_single`] wrote: the stream's info and its one event's data.
pub(super) fn decode_single(text: &[u8]) -> Result<(StreamInfo, Arc<str>), StoreError> {
    let bad = || corrupt("one-event stream is unreadable");
    let text = std::str::from_utf8(text).map_err(|_| bad())?;
    let (info, data) = text.split_once('\n').ok_or_else(bad)?;
    Ok((decode_info(info).ok_or_else(bad)?, Arc::from(data)))
}

/// A decimal number as Redis and the scripts write it: digits only.
fn number(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// The bytes of a string reply.
pub(super) fn bytes(value: &Value) -> Option<&[u8]> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        Value::SimpleString(text) => Some(text.as_bytes()),
        Value::VerbatimString { text, .. } => Some(text.as_bytes()),
        _ => None,
    }
}

/// An integer reply (or a string of digits).
pub(super) fn integer(value: &Value) -> Option<u64> {
    match value {
        Value::Int(n) => u64::try_from(*n).ok(),
        other => bytes(other)
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(number),
    }
}

/// Redis's `TIME` reply, in milliseconds.
pub(super) fn time_ms(value: &Value) -> Result<u64, StoreError> {
    let bad = || corrupt("clock reading is unreadable");
    let Value::Array(parts) = value else {
        return Err(bad());
    };
    let [seconds, micros] = parts.as_slice() else {
        return Err(bad());
    };
    let seconds = integer(seconds).ok_or_else(bad)?;
    let micros = integer(micros).ok_or_else(bad)?;
    Ok(seconds.saturating_mul(1000).saturating_add(micros / 1000))
}

/// The events of an `XRANGE` reply, each after `after` and after the one before it.
pub(super) fn decode_events(value: &Value, after: u64) -> Result<Vec<(u64, Arc<str>)>, StoreError> {
    let bad = || corrupt("events are unreadable");
    let entries = match value {
        Value::Array(entries) => entries,
        Value::Nil => return Ok(Vec::new()),
        _ => return Err(bad()),
    };
    let mut events = Vec::with_capacity(entries.len());
    let mut previous = after;
    for entry in entries {
        let Value::Array(pair) = entry else {
            return Err(bad());
        };
        let [id, fields] = pair.as_slice() else {
            return Err(bad());
        };
        let seq = bytes(id)
            .and_then(|id| std::str::from_utf8(id).ok())
            .and_then(|id| id.strip_prefix("0-"))
            .and_then(number)
            .filter(|seq| *seq > previous)
            .ok_or_else(bad)?;
        let data = match fields {
            Value::Array(fields) => match fields.as_slice() {
                [name, data] if bytes(name) == Some(b"d") => bytes(data),
                _ => None,
            },
            Value::Map(fields) => match fields.as_slice() {
                [(name, data)] if bytes(name) == Some(b"d") => bytes(data),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(bad)?;
        let data = std::str::from_utf8(data).map_err(|_| bad())?;
        events.push((seq, Arc::from(data)));
        previous = seq;
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_refuse_garbage() {
        let info = StreamInfo {
            producer: NodeTag::new(7).unwrap(),
            request: Some(RequestId::from("a|b")),
        };
        let tail = encode_info(&info).unwrap();
        assert_eq!(tail, "7|\"a|b\"");
        let open = decode_record(format!("o1700000000001|5|120|{tail}").as_bytes()).unwrap();
        assert_eq!(
            open,
            Record {
                finished: false,
                until: 1_700_000_000_001,
                latest: 5,
                info
            }
        );
        let done = decode_record(b"d1700000000000|9|0|0|").unwrap();
        assert!(done.finished);
        assert_eq!(done.until, 1_700_000_000_000);
        assert_eq!(done.info.request, None);
        for garbage in [
            &b"x1|1|0|0|"[..],
            b"o|1|0|0|",
            b"o1|1|0|0",
            b"o1|-1|0|0|",
            b"o1|1|0|16777216|",
            b"o1|1|0|0|{",
            b"d|1|0|0|",
            b"od1|1|0|0|",
            b"o1|1|0|0|\xff",
        ] {
            assert!(
                matches!(decode_record(garbage), Err(StoreError::Corrupt(_))),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn single_streams_round_trip_and_refuse_garbage() {
        let info = StreamInfo {
            producer: NodeTag::new(7).unwrap(),
            request: Some(RequestId::from("a|b\nc")),
        };
        let data = "{\"x\":\"line\\none|two\"}\nraw";
        let text = encode_single(&info, data).unwrap();
        assert_eq!(
            decode_single(text.as_bytes()).unwrap(),
            (info, Arc::from(data))
        );
        let none = StreamInfo {
            producer: NodeTag::new(1).unwrap(),
            request: None,
        };
        let text = encode_single(&none, "").unwrap();
        assert_eq!(
            decode_single(text.as_bytes()).unwrap(),
            (none, Arc::from(""))
        );
        for garbage in [
            &b"7|"[..],
            b"x|\nd",
            b"16777216|\nd",
            b"7|{\nd",
            b"\xff|\nd",
            b"7\nd",
        ] {
            assert!(
                matches!(decode_single(garbage), Err(StoreError::Corrupt(_))),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn events_decode_in_order_or_not_at_all() {
        let entry = |id: &str, data: &str| {
            Value::Array(vec![
                Value::BulkString(id.as_bytes().to_vec()),
                Value::Array(vec![
                    Value::BulkString(b"d".to_vec()),
                    Value::BulkString(data.as_bytes().to_vec()),
                ]),
            ])
        };
        let good = Value::Array(vec![entry("0-3", "a"), entry("0-4", "é")]);
        let events = decode_events(&good, 2).unwrap();
        assert_eq!(events, vec![(3, Arc::from("a")), (4, Arc::from("é"))]);
        for bad in [
            Value::Array(vec![entry("0-4", "a"), entry("0-3", "b")]),
            Value::Array(vec![entry("0-2", "a")]),
            Value::Array(vec![entry("1-3", "a")]),
            Value::Int(1),
        ] {
            assert!(matches!(
                decode_events(&bad, 2),
                Err(StoreError::Corrupt(_))
            ));
        }
    }
}
