//! What the process holds: resident memory and live tokio tasks.

/// The resident set size of this process in KiB (`VmRSS` of `/proc/self/status`), 0 where
/// there is no procfs.
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Tasks alive on the current tokio runtime.
pub(crate) fn live_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}
