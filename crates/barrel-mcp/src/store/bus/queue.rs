//! One subscriber's queue, and the [`Subscription`] that reads it.
//!
//! The queue is bounded: when the subscriber falls `capacity` deliveries behind, what it holds
//! is replaced by one [`Delivery::Gap`] (the subscriber re-reads the truth anyway, so the
//! messages it had not read yet are of no more use), and memory never grows with a slow
//! reader. Gaps in a row count as one.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::fanout::Registration;
use super::{Delivery, Topic};

/// The deliveries waiting for one subscriber.
pub(super) struct Queue {
    state: Mutex<State>,
    /// Woken on each push and on close (one reader: a permit waits when it is not waiting).
    ready: Notify,
    capacity: usize,
}

struct State {
    items: VecDeque<Delivery>,
    closed: bool,
}

impl Queue {
    /// An empty queue holding at most `capacity` deliveries (at least 1).
    pub(super) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
            }),
            ready: Notify::new(),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `delivery`; a full queue is replaced by one gap first. Nothing after close.
    pub(super) fn push(&self, delivery: Delivery) {
        {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            let gap = matches!(delivery, Delivery::Gap);
            if gap && matches!(state.items.back(), Some(Delivery::Gap)) {
                return;
            }
            if state.items.len() >= self.capacity {
                state.items.clear();
                state.items.push_back(Delivery::Gap);
                if gap {
                    drop(state);
                    self.ready.notify_one();
                    return;
                }
            }
            state.items.push_back(delivery);
        }
        self.ready.notify_one();
    }

    /// No more deliveries: the reader gets what is queued, then the end.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    fn try_pop(&self) -> Result<Delivery, bool> {
        let mut state = self.lock();
        state.items.pop_front().ok_or(state.closed)
    }

    async fn pop(&self) -> Option<Delivery> {
        loop {
            match self.try_pop() {
                Ok(delivery) => return Some(delivery),
                Err(true) => return None,
                Err(false) => self.ready.notified().await,
            }
        }
    }

    /// How many deliveries wait (for tests of the bound).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().items.len()
    }
}

/// A subscriber of one [`Topic`] on one node: what other nodes publish there, and
/// [`Delivery::Gap`] where messages may have been lost. Dropping it unsubscribes.
pub struct Subscription {
    queue: Arc<Queue>,
    topic: Topic,
    _registration: Registration,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    pub(super) fn new(queue: Arc<Queue>, topic: Topic, registration: Registration) -> Self {
        Self {
            queue,
            topic,
            _registration: registration,
        }
    }

    /// The topic it listens to.
    pub fn topic(&self) -> &Topic {
        &self.topic
    }

    /// The next delivery, waiting for one; `None` once the bus stopped and all was read.
    pub async fn recv(&mut self) -> Option<Delivery> {
        self.queue.pop().await
    }

    /// The next delivery if one waits now.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        self.queue.try_pop().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NodeTag;

    fn message(n: u8) -> Delivery {
        Delivery::Message {
            origin: NodeTag::LOCAL,
            body: vec![n].into(),
        }
    }

    #[tokio::test]
    async fn an_overflow_becomes_one_gap_and_memory_stays_bounded() {
        let queue = Queue::new(3);
        for n in 0..3 {
            queue.push(message(n));
        }
        assert_eq!(queue.len(), 3);
        for n in 3..100 {
            queue.push(message(n));
            assert!(queue.len() <= 4);
        }
        queue.close();
        let mut got = Vec::new();
        while let Some(delivery) = queue.pop().await {
            got.push(delivery);
        }
        // The last overflow left one gap, then what came after it.
        assert_eq!(got.first(), Some(&Delivery::Gap));
        assert_eq!(got.last(), Some(&message(99)));
        assert_eq!(got.iter().filter(|d| **d == Delivery::Gap).count(), 1);
    }

    #[tokio::test]
    async fn gaps_in_a_row_are_one_and_close_ends_after_the_queue() {
        let queue = Queue::new(8);
        queue.push(message(1));
        queue.push(Delivery::Gap);
        queue.push(Delivery::Gap);
        queue.close();
        queue.push(message(2));
        assert_eq!(queue.pop().await, Some(message(1)));
        assert_eq!(queue.pop().await, Some(Delivery::Gap));
        assert_eq!(queue.pop().await, None);
    }
}
