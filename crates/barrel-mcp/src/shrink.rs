//! Maps keyed by things that come and go (sessions) give their room back as those things end.
//!
//! A `HashMap` keeps its capacity when entries leave it. After a burst of 1,000 HTTP sessions
//! the server's two maps of sessions by id kept room for all of them (about 230 KiB of empty
//! buckets, measured with heaptrack on `http_echo`), and with it the allocator pages under
//! that room, long after every session had ended. [`shrink_when_sparse`], called after each
//! removal, halves a map's room once it is less than a quarter full: the cost of a rehash is
//! paid at most once per halving, so removals stay O(1) amortized, and a map that grows again
//! after a shrink has twice its entries of room before it must grow.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// The room a map keeps however empty it gets: below it a shrink saves less than it costs.
pub(crate) const KEPT_CAPACITY: usize = 64;

/// Shrinks `map` to twice its entries (at least [`KEPT_CAPACITY`]) when it is less than a
/// quarter full and holds room for more than twice [`KEPT_CAPACITY`] (a table's buckets are a
/// power of two, so a smaller one would not get smaller).
pub(crate) fn shrink_when_sparse<K: Eq + Hash, V, S: BuildHasher>(map: &mut HashMap<K, V, S>) {
    let capacity = map.capacity();
    if capacity > 2 * KEPT_CAPACITY && map.len() < capacity / 4 {
        map.shrink_to((map.len() * 2).max(KEPT_CAPACITY));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_gives_back_its_room_as_it_empties_and_keeps_it_while_full_enough() {
        let mut map: HashMap<u32, u32> = (0..1_000).map(|i| (i, i)).collect();
        let full = map.capacity();
        assert!(full >= 1_000);
        // Half empty: the room stays (no rehash for every other removal; a removal may leave
        // a tombstone, which the capacity the map reports does not count).
        for i in 0..500 {
            map.remove(&i);
            shrink_when_sparse(&mut map);
        }
        assert!(
            map.capacity() > full * 3 / 4,
            "{} of {full}",
            map.capacity()
        );
        // Nearly empty: most of the room goes back, the entries stay.
        for i in 500..990 {
            map.remove(&i);
            shrink_when_sparse(&mut map);
        }
        assert!(map.capacity() < full / 4, "{} of {full}", map.capacity());
        assert_eq!(map.len(), 10);
        assert!((990..1_000).all(|i| map.get(&i) == Some(&i)));
        // Empty: the kept room, no less.
        for i in 990..1_000 {
            map.remove(&i);
            shrink_when_sparse(&mut map);
        }
        assert!(map.capacity() >= KEPT_CAPACITY);
        assert!(map.capacity() < 2 * KEPT_CAPACITY, "{}", map.capacity());
    }

    #[test]
    fn a_small_map_is_left_alone() {
        let mut map: HashMap<u32, u32> = HashMap::with_capacity(KEPT_CAPACITY);
        let room = map.capacity();
        map.insert(1, 1);
        shrink_when_sparse(&mut map);
        assert_eq!(map.capacity(), room);
    }
}
