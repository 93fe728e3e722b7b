//! Changes to the registry that connected clients are told about, and the news a node tells
//! the other nodes of its service.

/// A change that sessions and listen streams announce to their clients as a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerEvent {
    /// The tool list changed.
    ToolsChanged,
    /// The resource or template list changed.
    ResourcesChanged,
    /// The prompt list changed.
    PromptsChanged,
    /// The resource at this URI changed.
    ResourceUpdated(String),
}

impl ServerEvent {
    /// The notification method announcing this change.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Self::ToolsChanged => "notifications/tools/list_changed",
            Self::ResourcesChanged => "notifications/resources/list_changed",
            Self::PromptsChanged => "notifications/prompts/list_changed",
            Self::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }
}

impl ServerEvent {
    /// What a subscriber that fell behind is told instead of the events it missed: every kind
    /// of change, so nothing it watches is left unannounced (a client re-reads at worst).
    pub(crate) fn after_lag(subscribed: impl IntoIterator<Item = String>) -> Vec<ServerEvent> {
        let mut events = vec![
            Self::ToolsChanged,
            Self::ResourcesChanged,
            Self::PromptsChanged,
        ];
        events.extend(subscribed.into_iter().map(Self::ResourceUpdated));
        events
    }
}

/// How many events a slow listen stream (2026-07-28) may fall behind before it skips to the
/// newest. (A session keeps each pending change once instead: `announcer.rs`.)
pub(crate) const EVENT_BUFFER: usize = 256;

/// What this node tells the other nodes of its service (through the relay of an HTTP endpoint
/// that shares its sessions, `http/relay.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NodeNews {
    /// A change of the registry: each node announces it to its own clients.
    Change(ServerEvent),
    /// A question of task `id` (2026-07-28) was answered here and the answer stored with the
    /// task: the node that runs the task's work takes it.
    TaskAnswered(String),
}
