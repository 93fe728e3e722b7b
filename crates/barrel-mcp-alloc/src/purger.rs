//! A thread that gives the memory a burst freed back to the system once the process goes
//! quiet: mimalloc purges freed pages only from within a later allocation or free, which an
//! idle server does not make.

use std::time::Duration;

use libmimalloc_sys as ffi;

/// How often the thread [`spawn_purger`] starts looks for freed memory to give back, in the
/// binaries of this workspace: memory freed by a burst is back with the system within this
/// (and [`PURGE_DELAY_MS`](crate::PURGE_DELAY_MS)) of its end, for five wake-ups a second of
/// a few microseconds each.
pub const PURGE_EVERY: Duration = Duration::from_millis(200);

/// Starts a thread (`mimalloc-purge`) that, every `every`, lets mimalloc give back the freed
/// memory whose purge delay has passed (`mi_collect(false)`: on its own thread, that is the
/// purge of the arenas every thread allocates from). It runs until the process exits.
///
/// Call it once, early in `main`, in a long-running server; a short-lived command has no
/// use for it. Without it, memory freed when a burst ends stays resident until the next
/// allocation comes by (mimalloc's own choice, as `jemalloc` without its background thread).
///
/// # Errors
/// When the system cannot start the thread.
pub fn spawn_purger(every: Duration) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("mimalloc-purge".to_owned())
        .stack_size(64 * 1024)
        .spawn(move || {
            start_thread_heap();
            loop {
                std::thread::sleep(every);
                collect();
            }
        })?;
    Ok(())
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

#[cfg(all(test, target_os = "linux"))]
#[allow(unsafe_code)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::child_process::{is_child, run_child};

    /// The process's anonymous resident memory, in KiB (`RssAnon` in `/proc/self/status`).
    fn rss_anon_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("RssAnon:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("an RssAnon line")
    }

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

        spawn_purger(Duration::from_millis(20)).expect("the purger starts");
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
