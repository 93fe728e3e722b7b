//! The inbox stream as the reader sees it: the entries of an `XREAD` reply (RESP2 or RESP3),
//! the message each holds (fields `i` message id, `f` sender tag, `b` body; an entry without
//! them is foreign, skipped by the reader rather than fatal), and the stream id after another
//! (what `XTRIM MINID` gets, so the last entry read goes too).

use redis::Value;

use crate::store::NodeTag;
use crate::store::bus::{Bytes, Directed};

/// One entry of the inbox stream: its stream id, and the message if it is readable.
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) message: Option<Directed>,
}

/// The smallest stream id after `id` (`<ms>-<seq>`), if `id` is one.
pub(super) fn following(id: &str) -> Option<String> {
    let (ms, seq) = id.split_once('-')?;
    let (ms, seq) = (ms.parse::<u64>().ok()?, seq.parse::<u64>().ok()?);
    match seq.checked_add(1) {
        Some(seq) => Some(format!("{ms}-{seq}")),
        None => ms.checked_add(1).map(|ms| format!("{ms}-0")),
    }
}

/// The entries of an `XREAD` reply on one stream (RESP2 or RESP3); `None` if it has another
/// shape.
pub(super) fn parse(reply: Value) -> Option<Vec<Entry>> {
    let stream = match reply {
        Value::Nil => return Some(Vec::new()),
        Value::Array(streams) => match streams.into_iter().next()? {
            Value::Array(pair) => pair.into_iter().nth(1)?,
            _ => return None,
        },
        Value::Map(streams) => streams.into_iter().next()?.1,
        _ => return None,
    };
    let Value::Array(entries) = stream else {
        return None;
    };
    entries.into_iter().map(entry).collect()
}

/// One stream entry: `[id, [field, value, ...]]`.
fn entry(value: Value) -> Option<Entry> {
    let Value::Array(parts) = value else {
        return None;
    };
    let mut parts = parts.into_iter();
    let id = text(parts.next()?)?;
    let fields: Vec<(Value, Value)> = match parts.next()? {
        Value::Array(flat) => {
            let mut flat = flat.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (flat.next(), flat.next()) {
                pairs.push((k, v));
            }
            pairs
        }
        Value::Map(pairs) => pairs,
        _ => return None,
    };
    Some(Entry {
        id,
        message: message(fields),
    })
}

/// The message in an entry's fields: `i` (id), `f` (sender tag), `b` (body).
fn message(fields: Vec<(Value, Value)>) -> Option<Directed> {
    let (mut id, mut from, mut body) = (None, None, None);
    for (field, value) in fields {
        match text(field)?.as_str() {
            "i" => id = text(value),
            "f" => from = text(value)?.parse::<u32>().ok().and_then(NodeTag::new),
            "b" => {
                body = match value {
                    Value::BulkString(bytes) => Some(Bytes::from(bytes)),
                    _ => None,
                }
            }
            _ => {}
        }
    }
    Some(Directed {
        id: id?,
        from: from?,
        body: body?,
    })
}

fn text(value: Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
        Value::SimpleString(text) => Some(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn the_id_after_a_stream_id() {
        assert_eq!(following("5-0").as_deref(), Some("5-1"));
        assert_eq!(
            following("1700000000000-41").as_deref(),
            Some("1700000000000-42")
        );
        assert_eq!(
            following(&format!("7-{}", u64::MAX)).as_deref(),
            Some("8-0")
        );
        assert_eq!(following(&format!("{}-{}", u64::MAX, u64::MAX)), None);
        assert_eq!(following("nonsense"), None);
        assert_eq!(following("1-x"), None);
    }

    #[test]
    fn xread_replies_of_both_protocols() {
        let fields = Value::Array(vec![
            bulk("i"),
            bulk("m1"),
            bulk("f"),
            bulk("7"),
            bulk("b"),
            bulk("hi"),
        ]);
        let entries = Value::Array(vec![Value::Array(vec![bulk("1-0"), fields])]);
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("mcp:n:{7}"), entries.clone()])]);
        let resp3 = Value::Map(vec![(bulk("mcp:n:{7}"), entries)]);
        for reply in [resp2, resp3] {
            let parsed = parse(reply).unwrap();
            assert_eq!(parsed.len(), 1);
            assert_eq!(parsed[0].id, "1-0");
            let message = parsed[0].message.clone().unwrap();
            assert_eq!(message.id, "m1");
            assert_eq!(message.from, NodeTag::new(7).unwrap());
            assert_eq!(&message.body[..], b"hi");
        }
        assert_eq!(parse(Value::Nil).unwrap().len(), 0);
        assert!(parse(Value::Int(3)).is_none());
        // A foreign entry is skipped, not fatal.
        let foreign = Value::Array(vec![Value::Array(vec![
            bulk("mcp:n:{7}"),
            Value::Array(vec![Value::Array(vec![
                bulk("2-0"),
                Value::Array(vec![bulk("f"), bulk("x")]),
            ])]),
        ])]);
        let parsed = parse(foreign).unwrap();
        assert_eq!(parsed[0].id, "2-0");
        assert!(parsed[0].message.is_none());
    }
}
