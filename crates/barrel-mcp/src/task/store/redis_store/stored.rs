//! The stored form of a task on Redis: a [`TaskRecord`] as compact JSON, in a shape of its own
//! so the public record carries no serialization promise and the bytes in Redis can evolve
//! under a format number.
//!
//! Times and durations are kept to the nanosecond (seconds and nanoseconds), so a record read
//! back equals the one written: the cursor of a task and the identity check of `update` compare
//! `created_at` exactly.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use barrel_mcp_types::{ErrorObject, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::task::record::{Era, TaskOutcome, TaskRecord};

/// The format written today; a record of another format does not decode.
const FORMAT: u8 = 1;

/// A point in time or a duration: whole seconds and the nanoseconds past them.
type Nanos = (u64, u32);

#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(rename = "f")]
    format: u8,
    id: String,
    #[serde(rename = "o")]
    owner: String,
    #[serde(rename = "e")]
    era: StoredEra,
    #[serde(rename = "s")]
    status: TaskStatus,
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    #[serde(rename = "c")]
    created_at: Nanos,
    #[serde(rename = "u")]
    updated_at: Nanos,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    ttl: Option<Nanos>,
    #[serde(rename = "p")]
    poll_interval: Nanos,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    outcome: Option<StoredOutcome>,
    #[serde(rename = "i", default, skip_serializing_if = "BTreeMap::is_empty")]
    input_requests: BTreeMap<String, Value>,
    #[serde(rename = "n", default, skip_serializing_if = "BTreeMap::is_empty")]
    input_answers: BTreeMap<String, Value>,
    #[serde(rename = "a", default)]
    anonymous: bool,
}

#[derive(Serialize, Deserialize)]
enum StoredEra {
    #[serde(rename = "s")]
    Sessions,
    #[serde(rename = "x")]
    Extension,
}

#[derive(Serialize, Deserialize)]
enum StoredOutcome {
    #[serde(rename = "ok")]
    Result(Value),
    #[serde(rename = "err")]
    Error(ErrorObject),
}

fn from_duration(d: Duration) -> Nanos {
    (d.as_secs(), d.subsec_nanos())
}

fn to_duration((secs, nanos): Nanos) -> Duration {
    Duration::new(secs, nanos)
}

fn from_time(at: SystemTime) -> Nanos {
    from_duration(at.duration_since(UNIX_EPOCH).unwrap_or_default())
}

fn to_time(at: Nanos) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(to_duration(at))
}

/// `record` as the JSON kept in Redis.
pub(super) fn encode(record: &TaskRecord) -> Result<String, serde_json::Error> {
    let stored = Stored {
        format: FORMAT,
        id: record.id.clone(),
        owner: record.owner.clone(),
        era: match record.era {
            Era::Sessions => StoredEra::Sessions,
            Era::Extension => StoredEra::Extension,
        },
        status: record.status,
        status_message: record.status_message.clone(),
        created_at: from_time(record.created_at),
        updated_at: from_time(record.updated_at),
        ttl: record.ttl.map(from_duration),
        poll_interval: from_duration(record.poll_interval),
        outcome: record.outcome.clone().map(|outcome| match outcome {
            TaskOutcome::Result(result) => StoredOutcome::Result(result),
            TaskOutcome::Error(error) => StoredOutcome::Error(error),
        }),
        input_requests: record.input_requests.clone(),
        input_answers: record.input_answers.clone(),
        anonymous: record.anonymous,
    };
    serde_json::to_string(&stored)
}

/// The record kept as `json`, or `None` when it is not one this code wrote.
pub(super) fn decode(json: &str) -> Option<TaskRecord> {
    let stored: Stored = serde_json::from_str(json).ok()?;
    if stored.format != FORMAT {
        return None;
    }
    let era = match stored.era {
        StoredEra::Sessions => Era::Sessions,
        StoredEra::Extension => Era::Extension,
    };
    let mut record = TaskRecord::new(
        stored.id,
        stored.owner,
        era,
        stored.ttl.map(to_duration),
        to_duration(stored.poll_interval),
    );
    record.status = stored.status;
    record.status_message = stored.status_message;
    record.created_at = to_time(stored.created_at)?;
    record.updated_at = to_time(stored.updated_at)?;
    record.outcome = stored.outcome.map(|outcome| match outcome {
        StoredOutcome::Result(result) => TaskOutcome::Result(result),
        StoredOutcome::Error(error) => TaskOutcome::Error(error),
    });
    record.input_requests = stored.input_requests;
    record.input_answers = stored.input_answers;
    record.anonymous = stored.anonymous;
    Some(record)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_record_comes_back_equal() {
        let mut record = TaskRecord::new(
            "t1",
            "alice",
            Era::Extension,
            Some(Duration::new(60, 123)),
            Duration::from_millis(1500),
        );
        record.status_message = Some("half way".into());
        record
            .input_requests
            .insert("q".into(), json!({"method": "elicitation/create"}));
        record
            .input_answers
            .insert("r".into(), json!({"action": "accept"}));
        record.anonymous = true;
        assert_eq!(decode(&encode(&record).unwrap()), Some(record.clone()));
        record
            .finish(TaskOutcome::Error(ErrorObject::internal("boom")))
            .unwrap();
        assert_eq!(decode(&encode(&record).unwrap()), Some(record));
        assert_eq!(decode("{}"), None);
        assert_eq!(decode(r#"{"f":2}"#), None);
    }
}
