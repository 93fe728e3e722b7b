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

    /// Stream `number`; the newest (the one a request's answer goes to) is found first.
    pub(crate) fn get_mut(&mut self, number: u64) -> Option<&mut EventStream> {
        let at = match self.0.back() {
            Some((last, _)) if *last == number => self.0.len() - 1,
            _ => self.0.binary_search_by_key(&number, |(n, _)| *n).ok()?,
        };
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

    /// Adds stream `number` (a new one: numbers only grow, so it goes at the back, found
    /// without reading the others: a busy session's older entries are cold in the cache).
    pub(crate) fn insert(&mut self, number: u64, stream: EventStream) {
        let at = match self.0.back() {
            Some((last, _)) if *last >= number => self.0.partition_point(|(n, _)| *n < number),
            _ => self.0.len(),
        };
        self.0.insert(at, (number, stream));
    }

    /// Removes stream `number`; the oldest (the one a session forgets) is found first.
    pub(crate) fn remove(&mut self, number: u64) -> Option<EventStream> {
        let at = match self.0.front() {
            Some((first, _)) if *first == number => 0,
            _ => self.0.binary_search_by_key(&number, |(n, _)| *n).ok()?,
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(streams: &Streams) -> Vec<u64> {
        streams.iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn streams_stay_in_order_whatever_order_they_come_in() {
        let mut streams = Streams::default();
        for number in [3, 5, 8] {
            streams.insert(number, EventStream::new(number));
        }
        // One below the last (a stream numbered elsewhere) still lands in its place.
        streams.insert(4, EventStream::new(4));
        streams.insert(1, EventStream::new(1));
        streams.get_or_new(6);
        assert_eq!(numbers(&streams), [1, 3, 4, 5, 6, 8]);
        for number in [1, 5, 8] {
            let found = streams
                .get_mut(number)
                .map(|stream| stream as *const EventStream);
            let expected = streams
                .0
                .iter()
                .find(|(n, _)| *n == number)
                .map(|(_, s)| s as *const _);
            assert_eq!(found, expected, "stream {number}");
        }
        assert!(streams.get_mut(7).is_none());
        assert!(streams.get_mut(9).is_none());
    }

    #[test]
    fn removing_takes_the_stream_asked_for_and_no_other() {
        let mut streams = Streams::default();
        for number in 1..=5 {
            streams.insert(number, EventStream::new(number));
        }
        assert!(streams.remove(1).is_some(), "the oldest");
        assert!(streams.remove(4).is_some(), "one in the middle");
        assert!(streams.remove(4).is_none(), "already gone");
        assert!(streams.remove(9).is_none(), "never there");
        assert_eq!(numbers(&streams), [2, 3, 5]);
        assert_eq!(streams.len(), 3);
    }
}
