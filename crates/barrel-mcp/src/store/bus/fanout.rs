//! One node's subscribers, by topic: the bus hands each publication of another node to the
//! queues of its topic here, and a [`Registration`] takes its queue out when its
//! [`Subscription`] is dropped.
//!
//! The Redis bus listens to a channel while its topic has a subscriber here:
//! [`Fanout::topics`] is what it should listen to, and the `emptied` hook tells it when a topic
//! lost its last subscriber.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::queue::{Queue, Subscription};
use super::{Delivery, Topic};

/// Called (without locks held) when a topic lost its last subscriber.
pub(super) type Emptied = Box<dyn Fn() + Send + Sync>;

/// The subscribers of one node.
pub(super) struct Fanout {
    state: Mutex<State>,
    capacity: usize,
    emptied: Option<Emptied>,
}

struct State {
    topics: HashMap<Topic, HashMap<u64, Arc<Queue>>>,
    next: u64,
    closed: bool,
}

impl Fanout {
    /// No subscribers yet; each queue will hold `capacity` deliveries.
    pub(super) fn new(capacity: usize, emptied: Option<Emptied>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                topics: HashMap::new(),
                next: 0,
                closed: false,
            }),
            capacity,
            emptied,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new subscriber of `topic`; `None` once closed.
    pub(super) fn register(self: &Arc<Self>, topic: &Topic) -> Option<Subscription> {
        let queue = Queue::new(self.capacity);
        let id = {
            let mut state = self.lock();
            if state.closed {
                return None;
            }
            let id = state.next;
            state.next += 1;
            state
                .topics
                .entry(topic.clone())
                .or_default()
                .insert(id, queue.clone());
            id
        };
        let registration = Registration {
            fanout: Arc::downgrade(self),
            topic: topic.clone(),
            id,
        };
        Some(Subscription::new(queue, topic.clone(), registration))
    }

    /// Hands `delivery` to every subscriber of `topic`.
    pub(super) fn deliver(&self, topic: &Topic, delivery: &Delivery) {
        for queue in self.queues(Some(topic)) {
            queue.push(delivery.clone());
        }
    }

    /// A gap for every subscriber: messages of any topic may have been lost.
    #[cfg(feature = "redis")]
    pub(super) fn gap_all(&self) {
        for queue in self.queues(None) {
            queue.push(Delivery::Gap);
        }
    }

    /// The topics that have subscribers.
    #[cfg(feature = "redis")]
    pub(super) fn topics(&self) -> Vec<Topic> {
        self.lock().topics.keys().cloned().collect()
    }

    /// Ends every subscription (each reads what it holds, then the end) and refuses new ones.
    pub(super) fn close(&self) {
        let queues = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.topics)
        };
        for queue in queues.into_values().flat_map(HashMap::into_values) {
            queue.close();
        }
    }

    /// The queues of `topic` (all with `None`), taken out of the lock.
    fn queues(&self, topic: Option<&Topic>) -> Vec<Arc<Queue>> {
        let state = self.lock();
        match topic {
            Some(topic) => state
                .topics
                .get(topic)
                .map(|queues| queues.values().cloned().collect())
                .unwrap_or_default(),
            None => state
                .topics
                .values()
                .flat_map(|q| q.values().cloned())
                .collect(),
        }
    }

    fn unregister(&self, topic: &Topic, id: u64) {
        let emptied = {
            let mut state = self.lock();
            let Some(queues) = state.topics.get_mut(topic) else {
                return;
            };
            queues.remove(&id);
            let empty = queues.is_empty();
            if empty {
                state.topics.remove(topic);
            }
            empty
        };
        if emptied && let Some(hook) = &self.emptied {
            hook();
        }
    }
}

/// A subscriber's place in its node's [`Fanout`]; dropping it takes the subscriber out.
pub(super) struct Registration {
    fanout: Weak<Fanout>,
    topic: Topic,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(fanout) = self.fanout.upgrade() {
            fanout.unregister(&self.topic, self.id);
        }
    }
}
