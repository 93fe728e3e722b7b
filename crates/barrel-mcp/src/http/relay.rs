//! Changes of the registry announced on one node reach the clients of every node: a tool,
//! resource or prompt list changed (`notifications/*/list_changed`), a resource was updated
//! (`notifications/resources/updated`).
//!
//! An HTTP endpoint that shares its sessions ([`SharedSessions`]) relays what its server
//! announces ([`Server::tools_list_changed`](crate::server::Server::tools_list_changed),
//! [`Server::notify_resource_updated`](crate::server::Server::notify_resource_updated), ...)
//! on [`Topic::Registry`] (`registry-…` news), and each other node announces it to its own
//! clients: its sessions (those subscribed to the resource, for an update) and its 2026-07-28
//! `subscriptions/listen` streams. The bus is lossy: after a gap, or a change this node could
//! not queue for relaying, every list is announced changed (a client re-reads at worst; a lost
//! `resources/updated` is not recovered). Tools registered at run time stay per node: a
//! `list_changed` from another node makes clients here list this node's tools again.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::State;
use super::shared::SharedSessions;
use crate::server::{Server, ServerEvent};
use crate::store::{Bus, Topic};

const TOOLS: &str = "registry-tools";
const RESOURCES: &str = "registry-resources";
const PROMPTS: &str = "registry-prompts";
const UPDATED: &str = "registry-updated:";

/// Changes waiting to be published; past it a change is not relayed, a warning is logged, and
/// every list is announced changed once the queue moves again.
const WAITING: usize = 256;

/// The news announcing `event` to the other nodes.
pub(crate) fn encode(event: &ServerEvent) -> Bytes {
    match event {
        ServerEvent::ToolsChanged => Bytes::from_static(TOOLS.as_bytes()),
        ServerEvent::ResourcesChanged => Bytes::from_static(RESOURCES.as_bytes()),
        ServerEvent::PromptsChanged => Bytes::from_static(PROMPTS.as_bytes()),
        ServerEvent::ResourceUpdated(uri) => Bytes::from([UPDATED, uri].concat()),
    }
}

/// The change `body` announces; `None` for other news.
pub(crate) fn decode(body: &[u8]) -> Option<ServerEvent> {
    let text = std::str::from_utf8(body).ok()?;
    match text {
        TOOLS => Some(ServerEvent::ToolsChanged),
        RESOURCES => Some(ServerEvent::ResourcesChanged),
        PROMPTS => Some(ServerEvent::PromptsChanged),
        _ => text
            .strip_prefix(UPDATED)
            .map(|uri| ServerEvent::ResourceUpdated(uri.to_owned())),
    }
}

/// What a node announces after news may have been lost: every list changed.
pub(crate) fn after_gap() -> [ServerEvent; 3] {
    [
        ServerEvent::ToolsChanged,
        ServerEvent::ResourcesChanged,
        ServerEvent::PromptsChanged,
    ]
}

/// Relays the endpoint's server's changes to the other nodes from now on (once per server).
pub(crate) fn start(state: &Arc<State>, shared: &SharedSessions) {
    let (changes, waiting) = mpsc::channel(WAITING);
    if state.server.relay_to(changes) {
        let publish = publish(
            waiting,
            Arc::clone(&shared.bus),
            state.server.clone(),
            state.shutdown.clone(),
        );
        state.sessions.tasks.spawn(publish);
    }
}

/// Publishes each change, in order, until the endpoint shuts down; after `server` could not
/// queue one (the queue was full), every list is announced changed.
async fn publish(
    mut waiting: mpsc::Receiver<ServerEvent>,
    bus: Arc<dyn Bus>,
    server: Server,
    stop: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = waiting.recv() => event,
        };
        let Some(event) = event else { return };
        let lost = server.relay_lost().then(after_gap);
        for event in std::iter::once(event).chain(lost.into_iter().flatten()) {
            if let Err(error) = bus.publish(&Topic::Registry, encode(&event)).await {
                tracing::warn!(%error, "could not tell the other nodes of a registry change");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};
    use crate::server::ServerEvent;

    #[test]
    fn changes_round_trip_and_other_news_is_none() {
        for event in [
            ServerEvent::ToolsChanged,
            ServerEvent::ResourcesChanged,
            ServerEvent::PromptsChanged,
            ServerEvent::ResourceUpdated("file:///a b\nc".into()),
        ] {
            assert_eq!(decode(&encode(&event)), Some(event));
        }
        assert_eq!(decode(b"session-ended:abc"), None);
        assert_eq!(decode(b"registry-tools-and-more"), None);
    }
}
