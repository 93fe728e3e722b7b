//! The allocator of barrel-mcp's binaries (the CLI and the benchmark's `http_echo`): mimalloc,
//! reached the way C programs reach it.
//!
//! Rust hands every allocation an alignment. The `mimalloc` crate passes it on to
//! `mi_malloc_aligned` always, and mimalloc (v3) serves an aligned request from a plain block
//! only when it can tell that block is aligned enough: a free block of the size class at hand
//! that happens to be aligned (sizes up to 1 KiB), or a size class that is a power of two up
//! to 4 KiB. Anything else (48 bytes when that class has no free block at hand, 5 KiB, ...)
//! goes through its over-allocating path: a larger block, and a few hundred instructions more
//! per call. In `http_echo` that was 11 of every sessionful `tools/call`'s allocations
//! (docs/ARCHITECTURE.md, "The binaries' allocator").
//!
//! [`MiMalloc`] asks for a plain block (`mi_malloc`, `mi_zalloc`, `mi_realloc`) when the
//! alignment is at most 16 bytes and at most the size, the rule Rust's own `System`
//! allocator follows with `malloc` (the constant `PLAIN_ALIGN` says why it holds). Other layouts
//! keep the aligned calls. Only binaries link this crate: the library never picks an
//! allocator.
//!
//! Two defaults differ from mimalloc's. Address space is reserved in arenas of 64 MiB
//! ([`ARENA_RESERVE_KIB`]; later arenas still double every eight) instead of 1 GiB (128 MiB
//! on 32-bit targets): an arena's bookkeeping grows with its size, and a 1 GiB arena's came
//! to 150 KiB of an idle server's 920 KiB of anonymous memory (`http_echo`; instructions per
//! request unchanged). Freed memory goes back to the system 10 ms after it was freed
//! ([`PURGE_DELAY_MS`]) instead of 1 s, so a server that goes quiet after a burst of sessions
//! does not keep their memory. On Linux, Android, the BSDs, illumos and Solaris a constructor
//! (an `.init_array` entry) sets both before the first allocation, each unless its variable
//! (`MIMALLOC_ARENA_RESERVE`, `MIMALLOC_PURGE_DELAY`) names a value other than mimalloc's
//! default (one it cannot parse counts as none). Elsewhere mimalloc's own defaults stay.
//!
//! ```
//! #[global_allocator]
//! static ALLOCATOR: barrel_mcp_alloc::MiMalloc = barrel_mcp_alloc::MiMalloc;
//!
//! let numbers: Vec<u64> = (0..100).collect();
//! assert_eq!(numbers.iter().sum::<u64>(), 4950);
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as ffi;

/// The alignment of a plain mimalloc block that is at least as large as the alignment asked
/// for, up to 16 (its `MI_MAX_ALIGN_SIZE`). A page's first block starts 16-byte aligned
/// (`MI_PAGE_MIN_START_BLOCK_ALIGN`), and the size classes are multiples of 16 above 8 bytes
/// on 64-bit targets (`mi_bin` rounds small sizes to two words, `MI_ALIGN2W`), multiples of
/// 16 above 16 bytes on 32-bit ones (`MI_ALIGN4W`), with 8- (and 4-) byte classes below: a
/// block of a class below 16 is aligned to its own size, which is at least the size asked
/// for, so `align <= size` covers it.
const PLAIN_ALIGN: usize = 16;

/// Whether a plain block of `size` bytes is aligned enough for `align`.
fn plain_is_enough(size: usize, align: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

/// The size of the address-space reservations of mimalloc's first arenas in this process,
/// in KiB, where a constructor sets it (Linux, Android, the BSDs, illumos and Solaris; see
/// [the crate](crate)). mimalloc's own default is 1 GiB on 64-bit targets.
pub const ARENA_RESERVE_KIB: std::ffi::c_long = 64 * 1024;

/// How long mimalloc waits before it gives freed memory back to the system (purges it), in
/// milliseconds, where a constructor sets it (as [`ARENA_RESERVE_KIB`]). mimalloc v3's own
/// default is 1 s, and it purges only from within a later allocation or free: a server that
/// goes quiet after a burst (1,000 sessions opened, then all deleted) kept all of their
/// memory (`http_echo`: 4.3 MiB of anonymous memory more than before them, however long it
/// waited). With 10 ms (mimalloc v2's default) and the thread of [`spawn_purger`] to purge
/// once the process is quiet (and to have the workers collect, [`on_thread_park`]), 0.2 MiB
/// stays. Purging sooner costs a system call and a refault
/// per 64 KiB range reused: 10 ms made 395 `madvise` calls in 4 s of session churn (0 ms:
/// 7,502, and 10% fewer sessions per second), sessions per second unchanged.
pub const PURGE_DELAY_MS: std::ffi::c_long = 10;

#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly",
    target_os = "illumos",
    target_os = "solaris"
))]
mod options;

mod park;
mod purger;
pub use park::on_thread_park;
pub use purger::{PURGE_EVERY, WAKE_HOLD, spawn_purger};

#[cfg(test)]
#[allow(
    dead_code,
    reason = "used by the tests of the options constructor, the purger and the park hook, which only some systems build"
)]
mod child_process;
#[cfg(all(test, target_os = "linux"))]
mod test_memory;

/// mimalloc as the global allocator. See [the crate](crate).
#[derive(Debug, Clone, Copy, Default)]
pub struct MiMalloc;

// SAFETY: every call forwards to mimalloc, which returns blocks of at least the size asked
// for, aligned as asked (plain blocks only where `plain_is_enough` holds: see `PLAIN_ALIGN`),
// or null when out of memory; `mi_free` and `mi_realloc` take any block mimalloc gave out,
// whichever call made it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: foreign calls with no precondition beyond a power-of-two alignment, which
        // `Layout` guarantees.
        let block: *mut u8 = unsafe {
            if plain_is_enough(layout.size(), layout.align()) {
                ffi::mi_malloc(layout.size()).cast()
            } else {
                ffi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        };
        debug_assert!(
            (block as usize).is_multiple_of(layout.align()),
            "{layout:?}"
        );
        block
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if plain_is_enough(layout.size(), layout.align()) {
                ffi::mi_zalloc(layout.size()).cast()
            } else {
                ffi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller hands back a block this allocator gave out.
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller hands back a block this allocator gave out, with its layout;
        // the new block keeps that layout's alignment.
        let block: *mut u8 = unsafe {
            if plain_is_enough(new_size, layout.align()) {
                ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        };
        debug_assert!(
            (block as usize).is_multiple_of(layout.align()),
            "{layout:?} to {new_size}"
        );
        block
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    /// Sizes around mimalloc's size classes, small and large.
    const SIZES: [usize; 16] = [
        1, 3, 7, 8, 9, 16, 24, 40, 48, 100, 1000, 1025, 5744, 70_000, 300_000, 5_000_000,
    ];
    const ALIGNS: [usize; 9] = [1, 2, 4, 8, 16, 32, 128, 4096, 65_536];

    #[test]
    fn blocks_have_the_size_and_alignment_asked_for() {
        for size in SIZES {
            for align in ALIGNS {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // Many at once, so a block is not simply the one just freed.
                let blocks: Vec<*mut u8> = (0..8)
                    .map(|_| {
                        // SAFETY: a layout of non-zero size.
                        let block = unsafe { MiMalloc.alloc(layout) };
                        assert!(!block.is_null(), "no block for {layout:?}");
                        assert_eq!(block as usize % align, 0, "misaligned for {layout:?}");
                        // SAFETY: the block holds `size` bytes.
                        unsafe { block.write_bytes(0xA5, size) };
                        block
                    })
                    .collect();
                for block in blocks {
                    // SAFETY: each block was allocated with `layout` just above.
                    unsafe { MiMalloc.dealloc(block, layout) };
                }
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero() {
        for size in SIZES {
            for align in [1, 8, 16, 128] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // Blocks of this class written and freed first, so a block that is not zeroed
                // shows it.
                let dirty: Vec<*mut u8> = (0..8)
                    .map(|_| {
                        // SAFETY: a layout of non-zero size.
                        let block = unsafe { MiMalloc.alloc(layout) };
                        assert!(!block.is_null());
                        // SAFETY: the block holds `size` bytes.
                        unsafe { block.write_bytes(0xA5, size) };
                        block
                    })
                    .collect();
                for block in dirty {
                    // SAFETY: allocated with `layout` just above.
                    unsafe { MiMalloc.dealloc(block, layout) };
                }
                // SAFETY: a layout of non-zero size.
                let block = unsafe { MiMalloc.alloc_zeroed(layout) };
                assert!(!block.is_null());
                assert_eq!(block as usize % align, 0);
                // SAFETY: the block holds `size` bytes.
                let bytes = unsafe { std::slice::from_raw_parts(block, size) };
                assert!(bytes.iter().all(|&b| b == 0), "not zeroed: {layout:?}");
                // SAFETY: allocated with `layout` just above.
                unsafe { MiMalloc.dealloc(block, layout) };
            }
        }
    }

    #[test]
    fn reallocation_keeps_the_contents_and_the_alignment() {
        // From a size below the alignment and from one above it.
        let starts = [1, 8, 16, 32, 128, 4096]
            .into_iter()
            .flat_map(|align| [(1, align), (align.max(8), align)]);
        for (size, align) in starts {
            let mut layout = Layout::from_size_align(size, align).expect("a valid layout");
            // SAFETY: a layout of non-zero size.
            let mut block = unsafe { MiMalloc.alloc(layout) };
            // SAFETY: the block holds `layout.size()` bytes.
            unsafe { block.write_bytes(7, layout.size()) };
            // Up across size classes, then down to a size smaller than the alignment.
            for new_size in [24, 200, 5000, 70_000, 64, align.max(8), 3] {
                let kept = layout.size().min(new_size);
                // SAFETY: `block` was allocated with `layout`; `new_size` is not zero.
                block = unsafe { MiMalloc.realloc(block, layout, new_size) };
                assert!(!block.is_null());
                assert_eq!(block as usize % align, 0, "misaligned after realloc");
                // SAFETY: the first `kept` bytes were written before.
                let bytes = unsafe { std::slice::from_raw_parts(block, kept) };
                assert!(bytes.iter().all(|&b| b == 7), "contents lost at {new_size}");
                layout = Layout::from_size_align(new_size, align).expect("a valid layout");
                // SAFETY: the block now holds `new_size` bytes.
                unsafe { block.write_bytes(7, new_size) };
            }
            // SAFETY: allocated (last reallocated) with `layout`.
            unsafe { MiMalloc.dealloc(block, layout) };
        }
    }

    #[test]
    fn the_plain_rule_is_the_system_allocators() {
        assert!(plain_is_enough(8, 8));
        assert!(plain_is_enough(48, 16));
        assert!(plain_is_enough(5744, 8));
        assert!(!plain_is_enough(4, 8), "an alignment above the size");
        assert!(!plain_is_enough(256, 32), "an alignment above 16");
        assert!(
            !plain_is_enough(640, 128),
            "tokio's task cells keep the aligned call"
        );
    }
}
