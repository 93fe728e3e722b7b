//! Protocol revisions and the one table that says what each revision has.
//!
//! Every difference between revisions that changes the wire is a [`Feature`] with the revision
//! that introduced it and, where it was removed, the revision that removed it. Output for a peer is
//! shaped down by asking [`ProtocolVersion::supports`]; nothing else in the workspace compares
//! version strings.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One MCP protocol revision this crate speaks, ordered from oldest to newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// `2024-11-05`: the first public revision (sessionful).
    V2024_11_05,
    /// `2025-03-26`: audio content, tool annotations, completions capability (sessionful).
    V2025_03_26,
    /// `2025-06-18`: titles, structured tool output, resource links, elicitation (sessionful).
    V2025_06_18,
    /// `2025-11-25`: icons, URL elicitation, sampling with tools, tasks (sessionful).
    V2025_11_25,
    /// `2026-07-28`: the stateless revision (`server/discover`, per-request `_meta`).
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every supported revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The newest revision.
    pub const LATEST: ProtocolVersion = Self::V2026_07_28;

    /// The newest revision that opens a session with `initialize`.
    pub const LATEST_SESSIONFUL: ProtocolVersion = Self::V2025_11_25;

    /// The revision string as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a revision string; `None` for a revision this crate does not speak.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// True for the stateless era (2026-07-28 and later): no `initialize`, per-request `_meta`.
    pub const fn is_stateless(self) -> bool {
        matches!(self, Self::V2026_07_28)
    }

    /// True when this revision has `feature` on the wire.
    pub fn supports(self, feature: Feature) -> bool {
        let (since, until) = feature.span();
        self >= since && until.is_none_or(|removed| self < removed)
    }

    /// The sessionful revisions, newest first: the order `initialize` negotiation prefers.
    pub fn sessionful_newest_first() -> impl Iterator<Item = ProtocolVersion> {
        Self::ALL.into_iter().rev().filter(|v| !v.is_stateless())
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a revision string this crate does not speak.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A wire feature that exists only in some revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// JSON-RPC batches (arrays of messages); only 2025-03-26 allowed them.
    Batching,
    /// `audio` content blocks.
    AudioContent,
    /// `Tool.annotations` (`readOnlyHint`, ...).
    ToolAnnotations,
    /// The `completions` server capability.
    CompletionsCapability,
    /// `message` on `notifications/progress`.
    ProgressMessage,
    /// `title` on tools, resources, prompts, templates and implementations.
    Titles,
    /// `Tool.outputSchema` and `CallToolResult.structuredContent`.
    StructuredContent,
    /// `resource_link` content blocks.
    ResourceLinks,
    /// `elicitation/create` in form mode.
    Elicitation,
    /// `context.arguments` on `completion/complete`.
    CompletionContext,
    /// `_meta` on content, resources, prompts, tools (general `_meta` everywhere).
    MetaEverywhere,
    /// `icons` on tools, resources, prompts and implementations; `websiteUrl` and `description`.
    Icons,
    /// URL-mode elicitation (`mode: "url"`).
    UrlElicitation,
    /// `tools` and `toolChoice` in `sampling/createMessage`.
    SamplingTools,
    /// The core tasks of 2025-11-25 (`tasks/*`, `params.task`, `Tool.execution`).
    CoreTasks,
    /// The `initialize` handshake, `ping`, `logging/setLevel`, resource subscribe requests.
    Sessions,
    /// `resultType` on every result.
    ResultType,
    /// `ttlMs` and `cacheScope` on cacheable results.
    CacheHints,
    /// `server/discover` and per-request `_meta` envelopes.
    Discover,
    /// Multi round-trip requests (`input_required`, `inputResponses`, `requestState`).
    MultiRoundTrip,
    /// `subscriptions/listen`.
    SubscriptionsListen,
    /// `lastModified` in content and resource `annotations`.
    AnnotationsLastModified,
    /// `capabilities.extensions` on both sides (2026-07-28).
    Extensions,
    /// `roots.listChanged` and `notifications/roots/list_changed` (removed in 2026-07-28).
    RootsListChanged,
    /// `elicitationId` on URL elicitation and `notifications/elicitation/complete` (2025-11-25 only).
    ElicitationId,
}

impl Feature {
    /// The revision that introduced the feature and, when removed, the one that removed it.
    const fn span(self) -> (ProtocolVersion, Option<ProtocolVersion>) {
        use ProtocolVersion::*;
        match self {
            Self::Batching => (V2025_03_26, Some(V2025_06_18)),
            Self::AudioContent
            | Self::ToolAnnotations
            | Self::CompletionsCapability
            | Self::ProgressMessage => (V2025_03_26, None),
            Self::Titles
            | Self::StructuredContent
            | Self::ResourceLinks
            | Self::Elicitation
            | Self::CompletionContext
            | Self::MetaEverywhere
            | Self::AnnotationsLastModified => (V2025_06_18, None),
            Self::Icons | Self::UrlElicitation | Self::SamplingTools => (V2025_11_25, None),
            Self::CoreTasks | Self::ElicitationId => (V2025_11_25, Some(V2026_07_28)),
            Self::Sessions | Self::RootsListChanged => (V2024_11_05, Some(V2026_07_28)),
            Self::ResultType
            | Self::CacheHints
            | Self::Discover
            | Self::MultiRoundTrip
            | Self::SubscriptionsListen
            | Self::Extensions => (V2026_07_28, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_revision_and_rejects_others() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("2024-10-07"), None);
        assert!("1900-01-01".parse::<ProtocolVersion>().is_err());
    }

    #[test]
    fn feature_table_spans() {
        use ProtocolVersion::*;
        assert!(!V2024_11_05.supports(Feature::AudioContent));
        assert!(V2025_03_26.supports(Feature::AudioContent));
        assert!(!V2025_03_26.supports(Feature::Titles));
        assert!(V2025_06_18.supports(Feature::StructuredContent));
        assert!(V2025_11_25.supports(Feature::CoreTasks));
        assert!(!V2026_07_28.supports(Feature::CoreTasks));
        assert!(!V2025_11_25.supports(Feature::ResultType));
        assert!(V2026_07_28.supports(Feature::ResultType));
        assert!(V2025_11_25.supports(Feature::Sessions));
        assert!(!V2026_07_28.supports(Feature::Sessions));
        assert!(V2025_03_26.supports(Feature::Batching));
        assert!(!V2025_06_18.supports(Feature::Batching));
    }

    #[test]
    fn negotiation_order_is_newest_sessionful_first() {
        let order: Vec<_> = ProtocolVersion::sessionful_newest_first().collect();
        assert_eq!(order.first(), Some(&ProtocolVersion::V2025_11_25));
        assert_eq!(order.last(), Some(&ProtocolVersion::V2024_11_05));
        assert_eq!(order.len(), 4);
    }
}
