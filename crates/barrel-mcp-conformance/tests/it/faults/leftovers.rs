//! What the work leaves behind: once a client's sessions are deleted and its tasks and
//! finished streams expired (a deleted session's one-event streams are left to their TTL),
//! Redis holds nothing under the prefix but the nodes' membership (`P:node:*`,
//! `P:nodes:next`, the inboxes `P:n:*`), and each node's resident memory is within 10% of
//! what it was before the work.

use std::time::{Duration, Instant};

use barrel_mcp::client::{Client, ToolTask};

use super::harness::{SIMPLE_TEXT, Service, simple, slow, within};

/// Growth of a node's resident set over the work that still passes, in percent of what it
/// was before. What a debug node takes on at its first session and tasks is 7-8% of its
/// 23 MiB: 1.2-1.3 MiB of its binary's pages run for the first time, 0.5 MiB of heap (compiled
/// schemas, buffers, allocator caches); later sessions add a few KiB each (measured: six
/// sessions of this work in a row, +1.6 MiB after the first, +0.2 MiB over the next five).
const RSS_GROWTH_PERCENT: u64 = 10;
/// The tasks' TTL: short, yet longer than the poll interval (1 s) at which a node other
/// than the runner looks for a result.
const TASK_TTL: Duration = Duration::from_secs(3);
/// How long a finished stream stays in the store: shorter than the tasks' TTL, so both are
/// gone within the same wait.
const FINISHED_STREAM_MS: &str = "2000";

/// Calls, and tasks that finish and that are cancelled, in one session.
async fn work(client: &Client) {
    for _ in 0..100 {
        let result = client.call_tool(simple()).await.expect("a call");
        assert_eq!(result.text_content(), SIMPLE_TEXT);
    }
    for seconds in [0.0, 0.05, 30.0] {
        let ToolTask::Started(handle) = client
            .start_tool_task(slow(seconds), Some(TASK_TTL))
            .await
            .expect("a task")
        else {
            panic!("slow_compute runs as a task when asked");
        };
        if seconds > 1.0 {
            handle.cancel().await.expect("cancelled");
        } else {
            handle.result().await.expect("its result");
        }
    }
}

#[tokio::test]
async fn nothing_but_membership_is_left_after_the_sessions_and_tasks_end() {
    /// How long the keys may take to go after the DELETEs and the tasks' TTL.
    const GONE_WITHIN: Duration = Duration::from_secs(5);
    within(Duration::from_secs(40), async {
        let service = Service::start(&[("FINISHED_STREAM_MS", FINISHED_STREAM_MS)]).await;
        let rss_before: Vec<(u64, u64)> = service
            .nodes
            .iter()
            .map(|n| (n.rss_kib(), n.anonymous_kib()))
            .collect();
        for _ in 0..2 {
            let client = service.connect().await;
            work(&client).await;
            client.close();
            client.closed().await;
        }
        // Closing the transport DELETEs the session, maybe after `closed` resolved.
        let closed = Instant::now();
        let deletes = loop {
            let deletes: Vec<_> = service
                .records()
                .into_iter()
                .filter(|r| r.method == "DELETE")
                .collect();
            if deletes.len() >= 2 || closed.elapsed() > GONE_WITHIN {
                break deletes;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(deletes.len(), 2, "each client deleted its session");
        assert!(deletes.iter().all(|r| r.status < 300), "{deletes:#?}");
        let p = &service.prefix;
        let membership = |key: &String| {
            key == &format!("{p}:nodes:next")
                || key.starts_with(&format!("{p}:node:"))
                || key.starts_with(&format!("{p}:n:"))
        };
        let ended = Instant::now();
        let left = loop {
            let keys = service.redis.keys(p).await;
            let left: Vec<String> = keys.into_iter().filter(|k| !membership(k)).collect();
            if left.is_empty() || ended.elapsed() > TASK_TTL + GONE_WITHIN {
                break left;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(
            left.is_empty(),
            "left in Redis {:?} after the sessions and tasks ended: {left:?}",
            ended.elapsed()
        );
        let keys = service.redis.keys(p).await;
        assert!(keys.contains(&format!("{p}:nodes:next")), "{keys:?}");
        assert_eq!(
            keys.iter()
                .filter(|k| k.starts_with(&format!("{p}:node:")))
                .count(),
            2,
            "one membership per live node: {keys:?}"
        );
        for (node, (before, anonymous_before)) in service.nodes.iter().zip(rss_before) {
            let (after, anonymous_after) = (node.rss_kib(), node.anonymous_kib());
            eprintln!(
                "a node's RSS: {before} KiB before the work, {after} KiB after (anonymous: \
                 {anonymous_before} KiB, {anonymous_after} KiB)"
            );
            assert!(
                after <= before + before * RSS_GROWTH_PERCENT / 100,
                "a node grew from {before} KiB to {after} KiB"
            );
        }
    })
    .await;
}
