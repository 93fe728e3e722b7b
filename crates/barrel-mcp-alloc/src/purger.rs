//! A thread that gives the memory a burst freed back to the system once the process goes
//! quiet: mimalloc purges freed pages only from within a later allocation or free, which an
//! idle server does not make, and a runtime worker's heap keeps some emptied pages until that
//! worker collects it ([`on_thread_park`](crate::on_thread_park)).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use libmimalloc_sys as ffi;

use crate::park;

/// How often the thread [`spawn_purger`] starts looks for freed memory to give back, in the
/// binaries of this workspace: memory freed by a burst is back with the system within a few
/// of these (and [`PURGE_DELAY_MS`](crate::PURGE_DELAY_MS)) of its end, for five wake-ups a
/// second of a few microseconds each.
pub const PURGE_EVERY: Duration = Duration::from_millis(200);

/// Starts a thread (`mimalloc-purge`) that runs until the process exits. Every `every`, it
/// lets mimalloc give back the freed memory whose purge delay has passed (`mi_collect(false)`:
/// on its own thread, that is the purge of the arenas every thread allocates from). And once
/// `runtime`'s workers have parked during one period and not during the next (a burst ended;
/// or, now and then, the workers got too busy to park, when a collection costs little), it
/// asks them to collect their own heaps and wakes them: each collects in its next park, if
/// its runtime was built with [`on_thread_park`](crate::on_thread_park) as its
/// `on_thread_park` hook. The wake-up is one task per worker that holds its worker for
/// [`WAKE_HOLD`]: a worker that takes one wakes another for the next (tokio wakes one sleeping
/// worker at a time, and an empty task would be done before the next worker woke).
///
/// Call it once, early in `main`, in a long-running server; a short-lived command has no
/// use for it. Only the first call in a process starts the thread: two would each take the
/// other's wake-ups for work, and wake the workers forever; later calls return `Ok` and do
/// nothing. Without it, memory freed when a burst ends stays resident until the next
/// allocation comes by (mimalloc's own choice, as `jemalloc` without its background thread).
///
/// Example: [`on_thread_park`](crate::on_thread_park).
///
/// # Errors
/// When the system cannot start the thread.
pub fn spawn_purger(every: Duration, runtime: tokio::runtime::Handle) -> std::io::Result<()> {
    if STARTED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    let started = std::thread::Builder::new()
        .name("mimalloc-purge".to_owned())
        .stack_size(64 * 1024)
        .spawn(move || {
            start_thread_heap();
            let mut watch = Watch::new(park::parks());
            loop {
                std::thread::sleep(every);
                collect();
                if watch.period_ended(park::parks()) {
                    park::ask_workers();
                    watch.woke(wake(&runtime));
                }
            }
        });
    if started.is_err() {
        STARTED.store(false, Ordering::Release);
    }
    started.map(drop)
}

/// Whether a purger thread was started in this process.
static STARTED: AtomicBool = AtomicBool::new(false);

/// How long each of the purger's wake-up tasks holds the worker that runs it: long enough for
/// the next sleeping worker to wake and take the next task, short enough to go unnoticed if
/// the workers were busy after all.
pub const WAKE_HOLD: Duration = Duration::from_micros(300);

/// Wakes `runtime`'s workers with one task each that holds its worker for [`WAKE_HOLD`]: how
/// many it spawned. (Spawning on a runtime that has shut down spawns nothing.)
fn wake(runtime: &tokio::runtime::Handle) -> u64 {
    let workers = runtime.metrics().num_workers();
    for _ in 0..workers {
        drop(runtime.spawn(async { std::thread::sleep(WAKE_HOLD) }));
    }
    workers as u64
}

/// What the purger makes of the workers' parks, one period at a time.
#[derive(Debug)]
struct Watch {
    /// The count of parks at the end of the last period.
    parks: u64,
    /// Whether workers parked since the workers were last asked to collect.
    busy: bool,
    /// Parks the last wake-up may cause, not counted as work: each woken worker runs its
    /// empty task and parks again, once or twice.
    woken: u64,
}

impl Watch {
    fn new(parks: u64) -> Self {
        Self {
            parks,
            busy: false,
            woken: 0,
        }
    }

    /// Whether to ask the workers to collect, now that a period ended with `parks` parks
    /// counted: when they parked during an earlier period and not during this one.
    fn period_ended(&mut self, parks: u64) -> bool {
        let new = parks.wrapping_sub(self.parks);
        self.parks = parks;
        if new > std::mem::take(&mut self.woken) {
            self.busy = true;
            return false;
        }
        std::mem::take(&mut self.busy)
    }

    /// The workers were woken with `tasks` empty tasks.
    fn woke(&mut self, tasks: u64) {
        self.woken = 2 * tasks;
    }
}

/// Sets up this thread's mimalloc heap: `mi_collect` does nothing on a thread that has none,
/// and this one need not have allocated through mimalloc (where it is not the global
/// allocator).
#[allow(unsafe_code)]
fn start_thread_heap() {
    // SAFETY: a call with no precondition, made once on this thread.
    unsafe { ffi::mi_thread_init() };
}

/// Collects this thread's free pages and purges what the arenas hold past its delay.
#[allow(unsafe_code)]
fn collect() {
    // SAFETY: a call with no precondition; mimalloc synchronises the arenas' purge itself.
    unsafe { ffi::mi_collect(false) };
}

#[cfg(test)]
mod watch_tests {
    use super::Watch;

    #[test]
    fn workers_are_asked_once_when_a_busy_spell_ends_and_not_by_their_own_wake_up() {
        let mut watch = Watch::new(0);
        // Quiet from the start: nothing to give back.
        assert!(!watch.period_ended(0));
        // Busy for three periods: no collection while work goes on.
        assert!(!watch.period_ended(40));
        assert!(!watch.period_ended(90));
        assert!(!watch.period_ended(91));
        // The first quiet period: ask.
        assert!(watch.period_ended(91));
        watch.woke(2);
        // The woken workers park again (up to twice each): not work, and not asked again.
        assert!(!watch.period_ended(94));
        assert!(!watch.period_ended(94));
        // More parks than a wake-up explains are work again, asked for once it stops.
        assert!(!watch.period_ended(95));
        assert!(watch.period_ended(95));
    }
}

#[cfg(all(test, target_os = "linux"))]
#[allow(unsafe_code)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::child_process::{is_child, run_child};
    use crate::test_memory::rss_anon_kib;

    /// Writes 16 MiB in 2 KiB blocks, then frees them all: the resident size with them.
    fn a_burst() -> u64 {
        // SAFETY: blocks of a non-zero size, each written whole, then freed once.
        let blocks: Vec<*mut u8> = (0..8 * 1024)
            .map(|_| unsafe {
                let block = ffi::mi_malloc(2048).cast::<u8>();
                assert!(!block.is_null());
                block.write_bytes(1, 2048);
                block
            })
            .collect();
        let full = rss_anon_kib();
        for block in blocks {
            // SAFETY: each block came from `mi_malloc` above and is freed once.
            unsafe { ffi::mi_free(block.cast()) };
        }
        full
    }

    #[test]
    fn memory_a_burst_freed_goes_back_once_the_process_is_quiet() {
        if !is_child() {
            // In a process of its own, so the other tests' blocks do not move its RSS.
            // A purge delay the burst's own frees cannot outlast on a loaded machine (so what
            // goes back is the purger's doing), and no transparent huge pages (a 2 MiB page
            // partly in use would stay).
            let stdout = run_child(
                "purger::tests::memory_a_burst_freed_goes_back_once_the_process_is_quiet",
                &[("MIMALLOC_PURGE_DELAY", "500"), ("MIMALLOC_ALLOW_THP", "0")],
            );
            assert!(stdout.contains("given back"), "{stdout}");
            return;
        }
        let before = rss_anon_kib();
        let full = a_burst();
        assert!(
            full >= before + 12 * 1024,
            "16 MiB written: {before} -> {full} KiB"
        );
        // Quiet, without the purger: mimalloc keeps what the burst freed.
        std::thread::sleep(Duration::from_millis(100));
        let kept = rss_anon_kib();
        assert!(
            kept >= before + 8 * 1024,
            "{before} -> {full} -> {kept} KiB"
        );

        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        spawn_purger(Duration::from_millis(20), runtime.handle().clone())
            .expect("the purger starts");
        let started = Instant::now();
        let mut now = rss_anon_kib();
        while now >= before + 2 * 1024 && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
            now = rss_anon_kib();
        }
        assert!(
            now < before + 2 * 1024,
            "RssAnon {before} KiB before, {full} with the burst, {kept} once quiet, {now} 5 s after the purger started"
        );
        println!(
            "given back in {:?}: {before} -> {full} -> {kept} -> {now} KiB",
            started.elapsed()
        );
    }
}
