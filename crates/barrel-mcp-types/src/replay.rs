//! `notifications/replay_truncated`: barrel-mcp's own notice (not a spec method) that starts a
//! resumed Streamable HTTP stream whose `Last-Event-ID` is older than what the server kept, so
//! a client knows it missed events instead of believing the stream whole.

use serde::{Deserialize, Serialize};

/// Params of `notifications/replay_truncated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayTruncatedParams {
    /// The `Last-Event-ID` the client resumed from.
    pub last_event_id: String,
    /// The oldest event the server still had for that stream (`None`: nothing of it is kept).
    pub first_available_event_id: Option<String>,
}
