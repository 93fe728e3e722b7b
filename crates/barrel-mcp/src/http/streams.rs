//! A session's streams by number, in a ring kept in order. A session holds few (the ones in
//! use and at most `retained_streams` finished ones), numbers only grow (a new stream goes at
//! the back, the oldest finished one leaves from the front, both without moving the others),
//! and an idle session should hold little: a map's first node alone is larger than a few
//! entries here.

use std::collections::VecDeque;

use super::sse::EventStream;

#[derive(Debug, Default)]
pub(crate) struct Streams(VecDeque<(u64, EventStream)>);

impl Streams {
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn get_mut(&mut self, number: u64) -> Option<&mut EventStream> {
        let at = self.0.binary_search_by_key(&number, |(n, _)| *n).ok()?;
        self.0.get_mut(at).map(|(_, stream)| stream)
    }

    /// The stream `number`, made empty first when there is none.
    pub(crate) fn get_or_new(&mut self, number: u64) -> &mut EventStream {
        let at = match self.0.binary_search_by_key(&number, |(n, _)| *n) {
            Ok(at) => at,
            Err(at) => {
                self.0.insert(at, (number, EventStream::new(number)));
                at
            }
        };
        // `at` was found or filled just now.
        &mut self.0[at].1
    }

    /// Adds stream `number` (a new one: numbers only grow, so it goes at the back).
    pub(crate) fn insert(&mut self, number: u64, stream: EventStream) {
        let at = self.0.partition_point(|(n, _)| *n < number);
        self.0.insert(at, (number, stream));
    }

    pub(crate) fn remove(&mut self, number: u64) -> Option<EventStream> {
        let at = self.0.binary_search_by_key(&number, |(n, _)| *n).ok()?;
        self.0.remove(at).map(|(_, stream)| stream)
    }

    /// The streams, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &EventStream)> {
        self.0.iter().map(|(n, stream)| (*n, stream))
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut EventStream> {
        self.0.iter_mut().map(|(_, stream)| stream)
    }
}
