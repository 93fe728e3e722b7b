//! Runtime workers give back the empty pages their own heaps keep, once the process is quiet.
//!
//! mimalloc keeps some of the pages a thread emptied in that thread's heap (the last page of a
//! size class, and up to `page_full_retain` more), to hand them out again without a trip to
//! the arenas; only that thread can give them back, from within its own allocations or a
//! `mi_collect`. A worker that goes to sleep right after a burst keeps them: about 700 KiB in
//! `http_echo` after 1,000 sessions had ended (measured by collecting on every park).
//!
//! Collecting fully on every park would cost too much (`mi_collect(true)` walks the thread's
//! pages: 30% fewer sessions a second in `http_echo`). So a worker collects only when asked:
//! the purger ([`spawn_purger`](crate::spawn_purger)) asks, by moving an epoch on, once
//! workers have parked and then stayed parked for a whole period of its own, and wakes them;
//! each worker collects once in its next park, whatever the number of parks that follow.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use libmimalloc_sys as ffi;

/// How many times a worker parked, in this process.
static PARKS: AtomicU64 = AtomicU64::new(0);
/// Moved on each time the purger asks the workers to collect their heaps.
static ASKED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The last [`ASKED`] this thread collected for.
    static COLLECTED: Cell<u64> = const { Cell::new(0) };
}

/// The hook for a tokio runtime's `on_thread_park`: the worker counts its park and, when the
/// purger has asked since it last did, collects its heap fully (`mi_collect(true)`).
///
/// ```
/// let runtime = tokio::runtime::Builder::new_multi_thread()
///     .enable_all()
///     .on_thread_park(barrel_mcp_alloc::on_thread_park)
///     .build()
///     .expect("a runtime");
/// barrel_mcp_alloc::spawn_purger(barrel_mcp_alloc::PURGE_EVERY, runtime.handle().clone())
///     .expect("the purger starts");
/// runtime.block_on(async { /* serve */ });
/// ```
pub fn on_thread_park() {
    PARKS.fetch_add(1, Ordering::Relaxed);
    let asked = ASKED.load(Ordering::Relaxed);
    if COLLECTED.get() != asked {
        COLLECTED.set(asked);
        collect_fully();
    }
}

/// How many times workers have parked so far.
pub(crate) fn parks() -> u64 {
    PARKS.load(Ordering::Relaxed)
}

/// Asks every worker to collect its heap in its next park.
pub(crate) fn ask_workers() {
    ASKED.fetch_add(1, Ordering::Relaxed);
}

/// Collects this thread's heap fully: its retained empty pages go back to the arenas.
#[allow(unsafe_code)]
fn collect_fully() {
    // SAFETY: a call with no precondition, on this thread's own heap.
    unsafe { ffi::mi_collect(true) };
}

#[cfg(all(test, target_os = "linux"))]
#[allow(unsafe_code)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::child_process::{is_child, run_child};
    use crate::test_memory::rss_anon_kib;

    /// On the calling thread, writes blocks of every small size class (16 B to 1 KiB, 8 MiB
    /// in all), then frees them all: the resident size with them.
    fn a_burst() -> u64 {
        let sizes = (1..=64).map(|class| class * 16);
        // SAFETY: blocks of a non-zero size, each written whole, then freed once.
        let blocks: Vec<(*mut u8, usize)> = sizes
            .flat_map(|size| std::iter::repeat_n(size, 256))
            .map(|size| unsafe {
                let block = libmimalloc_sys::mi_malloc(size).cast::<u8>();
                assert!(!block.is_null());
                block.write_bytes(1, size);
                (block, size)
            })
            .collect();
        let full = rss_anon_kib();
        for (block, _) in blocks {
            // SAFETY: each block came from `mi_malloc` above and is freed once.
            unsafe { libmimalloc_sys::mi_free(block.cast()) };
        }
        full
    }

    /// The resident size once it stops falling for half a second (at most 5 s).
    fn settled() -> u64 {
        let started = Instant::now();
        let mut last = rss_anon_kib();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = rss_anon_kib();
            if now >= last || started.elapsed() > Duration::from_secs(5) {
                return now;
            }
            last = now;
        }
    }

    #[test]
    fn a_worker_gives_back_what_its_heap_kept_once_the_runtime_is_quiet() {
        if !is_child() {
            // In a process of its own, so the other tests' blocks do not move its RSS; no
            // transparent huge pages (a 2 MiB page partly in use would stay).
            let stdout = run_child(
                "park::tests::a_worker_gives_back_what_its_heap_kept_once_the_runtime_is_quiet",
                &[("MIMALLOC_ALLOW_THP", "0")],
            );
            assert!(stdout.contains("given back"), "{stdout}");
            return;
        }
        let runtime = |hook: bool| {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(1);
            if hook {
                builder.on_thread_park(super::on_thread_park);
            }
            builder.build().expect("a runtime")
        };
        let hooked = runtime(true);
        crate::spawn_purger(Duration::from_millis(20), hooked.handle().clone())
            .expect("the purger starts");

        // A burst on a worker that collects when asked.
        let before = settled();
        let full = hooked
            .block_on(async { tokio::spawn(async { a_burst() }).await })
            .expect("the burst");
        let after = settled();

        // The same burst on a worker without the hook: its heap keeps what it emptied.
        let unhooked = runtime(false);
        let before_unhooked = settled();
        let full_unhooked = unhooked
            .block_on(async { tokio::spawn(async { a_burst() }).await })
            .expect("the burst");
        let kept = settled();
        let report = format!(
            "hooked: {before} -> {full} -> {after} KiB; unhooked: {before_unhooked} -> {full_unhooked} -> {kept} KiB"
        );
        println!("{report}");
        assert!(full >= before + 6 * 1024, "{report}");
        // Measured: the unhooked worker keeps about 670 KiB, the hooked one about 170 (pages
        // that still hold the runtime's own blocks).
        let kept_unhooked = kept.saturating_sub(before_unhooked);
        let kept_hooked = after.saturating_sub(before);
        assert!(
            kept_unhooked >= 384,
            "the unhooked worker kept little: {report}"
        );
        assert!(kept_hooked * 2 < kept_unhooked, "{report}");
        println!("given back: {report}");
    }
}
