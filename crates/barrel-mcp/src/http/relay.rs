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
//!
//! The same relay carries `task-answered:<id>`: a 2026-07-28 task's question was answered on
//! this node and the answer left in the task's record; the node whose handler waits on it takes
//! it (see `server/task_input.rs`; a lost message delays the answer until the handler's next
//! look in the store).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::State;
use super::shared::SharedSessions;
use crate::server::{NodeNews, Server, ServerEvent};
use crate::store::{Bus, Topic};

const TOOLS: &str = "registry-tools";
const RESOURCES: &str = "registry-resources";
const PROMPTS: &str = "registry-prompts";
const UPDATED: &str = "registry-updated:";
const TASK_ANSWERED: &str = "task-answered:";

/// Changes waiting to be published; past it a change is not relayed, a warning is logged, and
/// every list is announced changed once the queue moves again.
const WAITING: usize = 256;

/// The news announcing `news` to the other nodes.
pub(crate) fn encode(news: &NodeNews) -> Bytes {
    match news {
        NodeNews::Change(ServerEvent::ToolsChanged) => Bytes::from_static(TOOLS.as_bytes()),
        NodeNews::Change(ServerEvent::ResourcesChanged) => Bytes::from_static(RESOURCES.as_bytes()),
        NodeNews::Change(ServerEvent::PromptsChanged) => Bytes::from_static(PROMPTS.as_bytes()),
        NodeNews::Change(ServerEvent::ResourceUpdated(uri)) => Bytes::from([UPDATED, uri].concat()),
        NodeNews::TaskAnswered(id) => Bytes::from([TASK_ANSWERED, id].concat()),
    }
}

/// The news `body` carries; `None` for other news.
pub(crate) fn decode(body: &[u8]) -> Option<NodeNews> {
    let text = std::str::from_utf8(body).ok()?;
    let change = match text {
        TOOLS => ServerEvent::ToolsChanged,
        RESOURCES => ServerEvent::ResourcesChanged,
        PROMPTS => ServerEvent::PromptsChanged,
        _ => {
            if let Some(id) = text.strip_prefix(TASK_ANSWERED) {
                return Some(NodeNews::TaskAnswered(id.to_owned()));
            }
            ServerEvent::ResourceUpdated(text.strip_prefix(UPDATED)?.to_owned())
        }
    };
    Some(NodeNews::Change(change))
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
    mut waiting: mpsc::Receiver<NodeNews>,
    bus: Arc<dyn Bus>,
    server: Server,
    stop: CancellationToken,
) {
    loop {
        let news = tokio::select! {
            () = stop.cancelled() => return,
            news = waiting.recv() => news,
        };
        let Some(news) = news else { return };
        let lost = server.relay_lost().then(after_gap);
        let lost = lost.into_iter().flatten().map(NodeNews::Change);
        for news in std::iter::once(news).chain(lost) {
            if let Err(error) = bus.publish(&Topic::Registry, encode(&news)).await {
                tracing::warn!(%error, "could not tell the other nodes of a change");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::{decode, encode, publish};
    use crate::server::{NodeNews, Server, ServerEvent};
    use crate::store::{Bus, Delivery, LocalHub, Topic};

    /// The next change another node hears.
    async fn heard(subscription: &mut crate::store::Subscription) -> NodeNews {
        let delivery = tokio::time::timeout(std::time::Duration::from_secs(5), subscription.recv())
            .await
            .expect("in time")
            .expect("subscribed");
        let Delivery::Message { body, .. } = delivery else {
            panic!("a message, not {delivery:?}");
        };
        decode(&body).expect("news")
    }

    #[tokio::test]
    async fn a_change_that_could_not_be_queued_makes_every_list_announced() {
        let hub = LocalHub::new();
        let (here, there): (Arc<dyn Bus>, _) = (Arc::new(hub.join()), hub.join());
        let mut other_node = there.subscribe(&Topic::Registry).await.expect("subscribe");
        let server = Server::builder()
            .name("relay", "1.0.0")
            .build()
            .expect("server");
        let (changes, waiting) = mpsc::channel(1);
        assert!(server.relay_to(changes));
        server.tools_list_changed();
        // The queue holds one: this one is not relayed.
        server.notify_resource_updated("file:///lost");
        let stop = CancellationToken::new();
        let relaying = tokio::spawn(publish(waiting, here, server.clone(), stop.clone()));
        let change = |event| NodeNews::Change(event);
        assert_eq!(
            heard(&mut other_node).await,
            change(ServerEvent::ToolsChanged)
        );
        // Instead of the lost one: every list changed.
        for event in super::after_gap() {
            assert_eq!(heard(&mut other_node).await, change(event));
        }
        // Then changes go as they are again.
        server.notify_resource_updated("file:///kept");
        assert_eq!(
            heard(&mut other_node).await,
            change(ServerEvent::ResourceUpdated("file:///kept".into()))
        );
        stop.cancel();
        relaying.await.expect("relay stops");
    }

    #[test]
    fn changes_round_trip_and_other_news_is_none() {
        for news in [
            NodeNews::Change(ServerEvent::ToolsChanged),
            NodeNews::Change(ServerEvent::ResourcesChanged),
            NodeNews::Change(ServerEvent::PromptsChanged),
            NodeNews::Change(ServerEvent::ResourceUpdated("file:///a b\nc".into())),
            NodeNews::TaskAnswered("Zm9vYmFy-_".into()),
        ] {
            assert_eq!(decode(&encode(&news)), Some(news));
        }
        assert_eq!(decode(b"session-ended:abc"), None);
        assert_eq!(decode(b"registry-tools-and-more"), None);
    }
}
