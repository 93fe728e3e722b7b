//! What the tests read of the process's memory.

/// The process's anonymous resident memory, in KiB (`RssAnon` in `/proc/self/status`).
pub(crate) fn rss_anon_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("an RssAnon line")
}
