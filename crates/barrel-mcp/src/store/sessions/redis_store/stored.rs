//! The stored form of a session on Redis: one hash field per fact of a [`SessionRecord`], so
//! `update` changes one field without reading the others, plus the store's own fields (the
//! format, the quota's digest, the subscription cap). The subscriptions are a set of their own.
//!
//! | field | holds |
//! |---|---|
//! | `f` | the format, `1` |
//! | `p` | the principal (absent: none) |
//! | `q` | the quota (absent: none) |
//! | `qt` | the quota's digest, which names its cap key (absent: no quota) |
//! | `l` | `1`: a legacy HTTP+SSE session |
//! | `v` | the protocol revision, as on the wire |
//! | `cc` | the client's capabilities (JSON) |
//! | `ci` | the client's implementation (JSON) |
//! | `i` | `1`: initialized |
//! | `lv` | the log level, as on the wire (absent: none) |
//! | `g` | the GET stream's owner node tag (absent: none) |
//! | `c` | the creation time, in nanoseconds since the Unix epoch |
//! | `ms` | the subscription cap |
//!
//! Nothing read back is trusted: a missing, unknown or malformed field makes the record
//! [`StoreError::Corrupt`](crate::store::StoreError::Corrupt).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use barrel_mcp_types::{LoggingLevel, ProtocolVersion};
use serde_json::Value;

use super::keys::quota_tag;
use crate::store::NodeTag;
use crate::store::sessions::SessionRecord;

/// The format written today; a hash of another format does not decode.
const FORMAT: &str = "1";

pub(super) const F_FORMAT: &str = "f";
pub(super) const F_PRINCIPAL: &str = "p";
pub(super) const F_QUOTA: &str = "q";
/// Read by the scripts `TOUCH` and `DELETE` under this name.
pub(super) const F_QUOTA_TAG: &str = "qt";
pub(super) const F_LEGACY: &str = "l";
pub(super) const F_VERSION: &str = "v";
pub(super) const F_CAPABILITIES: &str = "cc";
pub(super) const F_CLIENT_INFO: &str = "ci";
pub(super) const F_INITIALIZED: &str = "i";
pub(super) const F_LOG_LEVEL: &str = "lv";
/// Read and written by the script `UPDATE` under this name (a compare-and-set).
pub(super) const F_GET_OWNER: &str = "g";
pub(super) const F_CREATED: &str = "c";
/// Read by the script `UPDATE` under this name.
pub(super) const F_MAX_SUBSCRIPTIONS: &str = "ms";

/// The hash fields of `record`, created under a cap of `max_subscriptions`.
pub(super) fn encode(
    record: &SessionRecord,
    max_subscriptions: usize,
) -> Result<Vec<(&'static str, String)>, serde_json::Error> {
    let flag = |on: bool| if on { "1" } else { "0" }.to_owned();
    let mut fields = vec![
        (F_FORMAT, FORMAT.to_owned()),
        (F_LEGACY, flag(record.legacy)),
        (F_VERSION, record.version.as_str().to_owned()),
        (
            F_CAPABILITIES,
            serde_json::to_string(&record.client_capabilities)?,
        ),
        (F_CLIENT_INFO, serde_json::to_string(&record.client_info)?),
        (F_INITIALIZED, flag(record.initialized)),
        (F_CREATED, nanos(record.created).to_string()),
        (F_MAX_SUBSCRIPTIONS, max_subscriptions.to_string()),
    ];
    if let Some(principal) = &record.principal {
        fields.push((F_PRINCIPAL, principal.clone()));
    }
    if let Some(quota) = &record.quota {
        fields.push((F_QUOTA, quota.clone()));
        fields.push((F_QUOTA_TAG, quota_tag(quota)));
    }
    if let Some(level) = record.log_level {
        fields.push((F_LOG_LEVEL, level.as_str().to_owned()));
    }
    if let Some(owner) = record.get_owner {
        fields.push((F_GET_OWNER, owner.get().to_string()));
    }
    Ok(fields)
}

/// The record of session `id` kept as `fields` and `subscriptions`, or why it is not one this
/// code wrote.
pub(super) fn decode(
    id: &str,
    mut fields: HashMap<String, String>,
    subscriptions: Vec<String>,
) -> Result<SessionRecord, String> {
    let mut take = |name: &str| fields.remove(name);
    let mut need = |name: &str| take(name).ok_or_else(|| format!("field {name} is missing"));
    let format = need(F_FORMAT)?;
    if format != FORMAT {
        return Err(format!("format {format:?} is not {FORMAT}"));
    }
    let version = need(F_VERSION)?;
    let version = ProtocolVersion::parse(&version)
        .ok_or_else(|| format!("unknown protocol revision {version:?}"))?;
    let client_capabilities = serde_json::from_str(&need(F_CAPABILITIES)?)
        .map_err(|e| format!("client capabilities: {e}"))?;
    let client_info =
        serde_json::from_str(&need(F_CLIENT_INFO)?).map_err(|e| format!("client info: {e}"))?;
    let legacy = flag(F_LEGACY, &need(F_LEGACY)?)?;
    let initialized = flag(F_INITIALIZED, &need(F_INITIALIZED)?)?;
    let created = need(F_CREATED)?;
    let created = created
        .parse::<u128>()
        .ok()
        .and_then(time)
        .ok_or_else(|| format!("creation time {created:?}"))?;
    let log_level = take(F_LOG_LEVEL)
        .map(|level| {
            serde_json::from_value::<LoggingLevel>(Value::String(level.clone()))
                .map_err(|_| format!("unknown log level {level:?}"))
        })
        .transpose()?;
    let get_owner = take(F_GET_OWNER)
        .map(|tag| {
            tag.parse::<u32>()
                .ok()
                .and_then(NodeTag::new)
                .ok_or_else(|| format!("node tag {tag:?}"))
        })
        .transpose()?;
    let principal = take(F_PRINCIPAL);
    let quota = take(F_QUOTA);
    Ok(SessionRecord {
        id: id.to_owned(),
        principal,
        quota,
        legacy,
        version,
        client_capabilities,
        client_info,
        initialized,
        log_level,
        subscriptions: subscriptions.into_iter().collect::<BTreeSet<_>>(),
        get_owner,
        created,
    })
}

fn flag(name: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" => Ok(true),
        "0" => Ok(false),
        other => Err(format!("field {name} is {other:?}, not 0 or 1")),
    }
}

/// `at` in nanoseconds since the epoch (0 before it).
fn nanos(at: SystemTime) -> u128 {
    at.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos()
}

fn time(nanos: u128) -> Option<SystemTime> {
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let subsec = u32::try_from(nanos % 1_000_000_000).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(secs, subsec))
}

#[cfg(test)]
mod tests {
    use barrel_mcp_types::{ClientCapabilities, Implementation};

    use super::*;

    fn fields(record: &SessionRecord) -> HashMap<String, String> {
        encode(record, 7)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    #[test]
    fn a_record_comes_back_equal() {
        let mut record = SessionRecord::new(
            "s1",
            ProtocolVersion::V2025_06_18,
            ClientCapabilities::default(),
            Implementation::new("client", "1.0").with_title("A client"),
        );
        let plain = fields(&record);
        assert_eq!(
            plain.get(F_MAX_SUBSCRIPTIONS).map(String::as_str),
            Some("7")
        );
        assert_eq!(decode("s1", plain, Vec::new()), Ok(record.clone()));
        record.principal = Some("alice".into());
        record.quota = Some("p:alice".into());
        record.legacy = true;
        record.initialized = true;
        record.log_level = Some(LoggingLevel::Warning);
        record.get_owner = NodeTag::new(42);
        record.subscriptions.insert("file:///a".into());
        record.created = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let full = fields(&record);
        assert_eq!(full.get(F_QUOTA_TAG), Some(&quota_tag("p:alice")));
        assert_eq!(
            decode("s1", full, vec!["file:///a".into()]),
            Ok(record.clone())
        );
    }

    #[test]
    fn foreign_hashes_are_refused() {
        let record = SessionRecord::new(
            "s1",
            ProtocolVersion::V2025_11_25,
            ClientCapabilities::default(),
            Implementation::new("client", "1.0"),
        );
        let good = fields(&record);
        for (field, value) in [
            (F_FORMAT, "2"),
            (F_VERSION, "1999-01-01"),
            (F_CAPABILITIES, "{"),
            (F_CLIENT_INFO, "[]"),
            (F_LEGACY, "yes"),
            (F_CREATED, "-1"),
            (F_LOG_LEVEL, "loud"),
            (F_GET_OWNER, "16777216"),
        ] {
            let mut bad = good.clone();
            bad.insert(field.to_owned(), value.to_owned());
            assert!(decode("s1", bad, Vec::new()).is_err(), "{field}={value}");
        }
        for field in [F_FORMAT, F_VERSION, F_CREATED, F_INITIALIZED] {
            let mut bad = good.clone();
            bad.remove(field);
            assert!(decode("s1", bad, Vec::new()).is_err(), "without {field}");
        }
    }
}
