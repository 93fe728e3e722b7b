//! [`TestBus`]: a node of a [`LocalHub`] the test steers: its tag can be changed (as after a
//! Redis restart without its data), and its publications can be held back (a slow bus),
//! with a signal as a session's end starts going out.

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp::peer::BoxFuture;
use barrel_mcp::store::{Bus, Inbox, LocalBus, LocalHub, NodeTag, StoreError, Subscription, Topic};
use bytes::Bytes;
use tokio::sync::{Notify, watch};

pub(crate) struct TestBus {
    inner: LocalBus,
    /// The node's tag, `send_replace` to change it.
    pub(crate) tag: watch::Sender<NodeTag>,
    /// How long each publication waits before it reaches the hub.
    delay: Duration,
    /// Notified as the publication of a session's end (`session-ended:`) starts.
    pub(crate) ending: Arc<Notify>,
}

impl TestBus {
    /// A new node of `hub` under its own tag, publishing at once.
    pub(crate) fn join(hub: &LocalHub) -> Self {
        let inner = hub.join();
        let (tag, _) = watch::channel(inner.node());
        Self {
            inner,
            tag,
            delay: Duration::ZERO,
            ending: Arc::new(Notify::new()),
        }
    }

    /// The same node under `tag`.
    pub(crate) fn tagged(self, tag: NodeTag) -> Self {
        self.tag.send_replace(tag);
        self
    }

    /// The same node, its publications reaching the hub after `delay`.
    pub(crate) fn slow(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

impl Bus for TestBus {
    fn node(&self) -> NodeTag {
        *self.tag.borrow()
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
            if body.starts_with(b"session-ended:") {
                self.ending.notify_one();
            }
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.inner.publish(topic, body).await
        })
    }

    fn subscribe<'a>(
        &'a self,
        topic: &'a Topic,
    ) -> BoxFuture<'a, Result<Subscription, StoreError>> {
        self.inner.subscribe(topic)
    }

    fn send(&self, to: NodeTag, body: Bytes) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.inner.send(to, body)
    }

    fn inbox(&self) -> Option<Inbox> {
        self.inner.inbox()
    }

    fn alive(&self, node: NodeTag) -> BoxFuture<'_, Result<bool, StoreError>> {
        self.inner.alive(node)
    }
}
