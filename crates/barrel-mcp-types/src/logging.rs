//! Logging: levels, `logging/setLevel` (sessionful revisions) and `notifications/message`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::Meta;

/// Syslog severity, ordered from least to most severe.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Informational.
    #[default]
    Info,
    /// Normal but significant.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical condition.
    Critical,
    /// Action needed at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The level as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// Params of `logging/setLevel` (sessionful revisions).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SetLevelParams {
    /// The lowest level the client wants.
    pub level: LoggingLevel,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_and_wire() {
        assert!(LoggingLevel::Debug < LoggingLevel::Emergency);
        assert!(LoggingLevel::Warning > LoggingLevel::Notice);
        let v = serde_json::to_value(LoggingLevel::Critical).unwrap();
        assert_eq!(v, "critical");
        assert_eq!(LoggingLevel::Alert.as_str(), "alert");
    }
}
