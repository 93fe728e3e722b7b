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
//! workers have parked during one period of its own and not during the next, and wakes them;
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
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    use crate::child_process::{is_child, run_child};
    use crate::test_memory::rss_anon_kib;

    /// The workers of each runtime of the test: the purger's wake-up must reach them all.
    const WORKERS: usize = 4;
    /// Blocks one burst writes: 64 of each small size class, 16 B to 1 KiB (2 MiB in all).
    const BLOCKS: usize = 64 * 64;

    /// Writes blocks of every small size class, noting their addresses in `book` (allocated
    /// before, so its own memory is not part of the burst).
    fn burst(book: &mut Vec<usize>) {
        for size in (1..=64).map(|class| class * 16) {
            for _ in 0..64 {
                // SAFETY: a block of a non-zero size, written whole, freed once by `free`.
                let block = unsafe { libmimalloc_sys::mi_malloc(size) }.cast::<u8>();
                assert!(!block.is_null());
                // SAFETY: `block` holds `size` bytes.
                unsafe { block.write_bytes(1, size) };
                book.push(block as usize);
            }
        }
    }

    /// Frees every block `book` notes.
    fn free(book: &mut Vec<usize>) {
        for block in book.drain(..) {
            // SAFETY: each block came from `mi_malloc` in `burst` and is freed once.
            unsafe { libmimalloc_sys::mi_free(block as *mut std::ffi::c_void) };
        }
    }

    /// A burst on every worker of `runtime` at once, each freed by the worker that wrote it:
    /// the resident size while they are all written. A barrier holds each task until all
    /// have written theirs, so each runs on a worker of its own.
    fn bursts(runtime: &tokio::runtime::Runtime, books: Vec<Vec<usize>>) -> (u64, Vec<Vec<usize>>) {
        let together = Arc::new(Barrier::new(WORKERS + 1));
        let tasks: Vec<_> = books
            .into_iter()
            .map(|mut book| {
                let together = Arc::clone(&together);
                runtime.spawn(async move {
                    burst(&mut book);
                    together.wait();
                    together.wait();
                    free(&mut book);
                    book
                })
            })
            .collect();
        together.wait();
        let full = rss_anon_kib();
        together.wait();
        let books = runtime.block_on(async {
            let mut books = Vec::new();
            for task in tasks {
                books.push(task.await.expect("a burst"));
            }
            books
        });
        (full, books)
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
    fn workers_give_back_what_their_heaps_kept_once_the_runtime_is_quiet() {
        if !is_child() {
            // In a process of its own, so the other tests' blocks do not move its RSS; no
            // transparent huge pages (a 2 MiB page partly in use would stay).
            let stdout = run_child(
                "park::tests::workers_give_back_what_their_heaps_kept_once_the_runtime_is_quiet",
                &[("MIMALLOC_ALLOW_THP", "0")],
            );
            assert!(stdout.contains("given back"), "{stdout}");
            return;
        }
        // Were the tasks not spread over the workers, the barrier would never open.
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_secs(60));
            eprintln!("the bursts did not run on a worker each within 60 s");
            std::process::exit(1);
        });
        let runtime = |hook: bool| {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(WORKERS);
            if hook {
                builder.on_thread_park(super::on_thread_park);
            }
            builder.build().expect("a runtime")
        };
        let books = || {
            (0..WORKERS)
                .map(|_| Vec::with_capacity(BLOCKS))
                .collect::<Vec<_>>()
        };

        // Bursts on workers that collect when the purger asks.
        let hooked = runtime(true);
        crate::spawn_purger(Duration::from_millis(20), hooked.handle().clone())
            .expect("the purger starts");
        let hooked_books = books();
        let before = settled();
        let (full, hooked_books) = bursts(&hooked, hooked_books);
        let after = settled();

        // The same bursts on workers without the hook: their heaps keep what they emptied.
        let unhooked = runtime(false);
        let unhooked_books = books();
        let before_unhooked = settled();
        let (full_unhooked, unhooked_books) = bursts(&unhooked, unhooked_books);
        let kept = settled();
        drop((hooked_books, unhooked_books));

        let report = format!(
            "hooked: {before} -> {full} -> {after} KiB; unhooked: {before_unhooked} -> {full_unhooked} -> {kept} KiB"
        );
        println!("{report}");
        assert!(full >= before + 6 * 1024, "{report}");
        let kept_hooked = after.saturating_sub(before);
        let kept_unhooked = kept.saturating_sub(before_unhooked);
        assert!(
            kept_unhooked >= 1024,
            "the unhooked workers kept little: {report}"
        );
        // Measured: 0.2 MiB kept against 1.7 on a quiet machine; 0.6 under the load of a full
        // CI run, where a woken worker can take longer than `WAKE_HOLD` to come. Asked here:
        // that more than one worker's share (about 0.4 MiB) came back at least.
        assert!(kept_hooked + 512 < kept_unhooked, "{report}");
        println!("given back: {report}");
    }
}
