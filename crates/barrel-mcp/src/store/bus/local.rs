//! [`LocalBus`] and [`LocalHub`]: the bus inside one process.
//!
//! A hub is a set of in-process nodes; each [`LocalBus`] is one of them. A server alone is
//! [`LocalBus::new`]: a hub of one node, tag 0, whose publications reach nobody (it delivers
//! locally itself) and whose subscriptions only ever see gaps of their own making. Tests join
//! nodes (tags from 1) with [`LocalHub::join`] and get multi-node behaviour without Redis: publications
//! reach the other nodes' subscribers, `send` reaches another node's inbox, a dropped or
//! stopped node is no longer alive.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{mpsc, watch};

use super::fanout::Fanout;
use super::inbox::Inbox;
use super::queue::Subscription;
use super::{Bus, BusOptions, Bytes, Delivery, Directed, Topic};
use crate::peer::BoxFuture;
use crate::store::{NodeTag, StoreError};

/// In-process nodes sharing one bus. Cheap to clone: every clone is the same hub.
#[derive(Clone)]
pub struct LocalHub {
    hub: Arc<Hub>,
}

struct Hub {
    options: BusOptions,
    state: Mutex<HubState>,
}

struct HubState {
    /// The tag the next node gets (then the next free one).
    next: u32,
    nodes: HashMap<NodeTag, Arc<Node>>,
}

/// What other nodes reach of one node.
struct Node {
    tag: NodeTag,
    fanout: Arc<Fanout>,
    /// Taken when the node stops, so its inbox ends.
    inbox: Mutex<Option<mpsc::Sender<Directed>>>,
}

impl fmt::Debug for LocalHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalHub")
            .field("nodes", &self.hub.lock().nodes.len())
            .finish_non_exhaustive()
    }
}

impl Default for LocalHub {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalHub {
    /// A hub without nodes, with the default [`BusOptions`].
    pub fn new() -> Self {
        Self::with_options(BusOptions::default())
    }

    /// A hub without nodes whose queues follow `options` (its subscription and inbox
    /// capacities; the Redis fields do not apply).
    pub fn with_options(options: BusOptions) -> Self {
        Self {
            hub: Arc::new(Hub {
                options,
                state: Mutex::new(HubState {
                    next: 1,
                    nodes: HashMap::new(),
                }),
            }),
        }
    }

    /// A new node: the first gets tag 1, each next one the next tag not in use (never 0,
    /// [`NodeTag::LOCAL`], the tag of a process that shares nothing: ids carrying it name no
    /// node).
    pub fn join(&self) -> LocalBus {
        self.join_as(None)
    }

    /// A new node tagged `tag`, or the next free tag.
    fn join_as(&self, tag: Option<NodeTag>) -> LocalBus {
        let options = &self.hub.options;
        let (inbox_tx, inbox_rx) = mpsc::channel(options.inbox_capacity.max(1));
        let fanout = Fanout::new(options.subscription_capacity, None);
        let mut state = self.hub.lock();
        // Among `nodes.len() + 2` tags in a row one is free and not 0: this ends.
        let tag = match tag {
            Some(tag) => tag,
            None => loop {
                let candidate = NodeTag::new(state.next & NodeTag::MAX).unwrap_or_default();
                state.next = state.next.wrapping_add(1);
                if candidate != NodeTag::LOCAL && !state.nodes.contains_key(&candidate) {
                    break candidate;
                }
            },
        };
        let node = Arc::new(Node {
            tag,
            fanout,
            inbox: Mutex::new(Some(inbox_tx)),
        });
        state.nodes.insert(tag, node.clone());
        drop(state);
        LocalBus {
            hub: self.clone(),
            node,
            inbox: Mutex::new(Some(Inbox::new(inbox_rx))),
            tag: watch::Sender::new(tag),
            next_message: AtomicU64::new(0),
        }
    }
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One node of a [`LocalHub`]. Dropping it (or [`stop`](Self::stop)) takes it out of the hub:
/// it is no longer alive, its subscriptions and inbox end.
pub struct LocalBus {
    hub: LocalHub,
    node: Arc<Node>,
    inbox: Mutex<Option<Inbox>>,
    tag: watch::Sender<NodeTag>,
    next_message: AtomicU64,
}

impl fmt::Debug for LocalBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBus")
            .field("node", &self.node.tag)
            .finish_non_exhaustive()
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalBus {
    /// The bus of a process that shares nothing: a new hub with this one node, tag 0.
    pub fn new() -> Self {
        LocalHub::new().join_as(Some(NodeTag::LOCAL))
    }

    /// The hub it belongs to, to join more nodes.
    pub fn hub(&self) -> LocalHub {
        self.hub.clone()
    }

    /// Leaves the hub: no longer alive, subscriptions and the inbox end, and every later call
    /// fails as unavailable.
    pub fn stop(&self) {
        let mut state = self.hub.hub.lock();
        if state
            .nodes
            .get(&self.node.tag)
            .is_some_and(|node| Arc::ptr_eq(node, &self.node))
        {
            state.nodes.remove(&self.node.tag);
        }
        drop(state);
        self.node.fanout.close();
        self.node
            .inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn running(&self) -> Result<(), StoreError> {
        let state = self.hub.hub.lock();
        match state.nodes.get(&self.node.tag) {
            Some(node) if Arc::ptr_eq(node, &self.node) => Ok(()),
            _ => Err(StoreError::Unavailable("the bus is stopped".into())),
        }
    }

    /// The nodes other than this one.
    fn others(&self) -> Vec<Arc<Node>> {
        let state = self.hub.hub.lock();
        state
            .nodes
            .values()
            .filter(|node| !Arc::ptr_eq(node, &self.node))
            .cloned()
            .collect()
    }

    fn send_now(&self, to: NodeTag, body: Bytes) -> Result<bool, StoreError> {
        self.running()?;
        let target = self.hub.hub.lock().nodes.get(&to).cloned();
        let Some(inbox) = target.and_then(|node| {
            node.inbox
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }) else {
            return Ok(false);
        };
        let n = self.next_message.fetch_add(1, Ordering::Relaxed);
        let message = Directed {
            id: format!("{}.{n}", self.node.tag),
            from: self.node.tag,
            body,
        };
        match inbox.try_send(message) {
            // A node that dropped its inbox reads nothing: the message is delivered, and lost
            // with it.
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(true),
            Err(mpsc::error::TrySendError::Full(_)) => Err(StoreError::Unavailable(format!(
                "the inbox of node {to} is full"
            ))),
        }
    }
}

impl Drop for LocalBus {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Bus for LocalBus {
    fn node(&self) -> NodeTag {
        self.node.tag
    }

    fn node_changes(&self) -> watch::Receiver<NodeTag> {
        self.tag.subscribe()
    }

    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        body: Bytes,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.running()?;
            let delivery = Delivery::Message {
                origin: self.node.tag,
                body,
            };
            for node in self.others() {
                node.fanout.deliver(topic, &delivery);
            }
            Ok(())
        })
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a Topic,
    ) -> BoxFuture<'a, Result<Subscription, StoreError>> {
        Box::pin(async move {
            self.running()?;
            self.node
                .fanout
                .register(topic)
                .ok_or_else(|| StoreError::Unavailable("the bus is stopped".into()))
        })
    }

    fn send(&self, to: NodeTag, body: Bytes) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move { self.send_now(to, body) })
    }

    fn inbox(&self) -> Option<Inbox> {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn alive(&self, node: NodeTag) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.hub.hub.lock().nodes.contains_key(&node)) })
    }
}
