//! A node killed (SIGKILL) while it works: a plain call it was answering fails within a
//! bound and the client goes on, in the same session, on the other node; a task it ran is
//! reported failed by the other node once the runner's lease has run out.

use std::time::{Duration, Instant};

use barrel_mcp::Error;
use barrel_mcp::client::ToolTask;
use barrel_mcp::transport::http_client::HttpClientConfig;
use barrel_mcp::types::TaskStatus;

use super::harness::{SIMPLE_TEXT, Service, simple, slow, within};

/// Waits for the proxy to log a `tools/call` after request number `after`; returns the
/// backend that has it.
async fn backend_of_call(service: &Service, after: u64) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(backend) = service
            .records()
            .iter()
            .filter(|r| r.n > after && r.rpc_method.as_deref() == Some("tools/call"))
            .find_map(|r| r.backend)
        {
            return backend;
        }
        assert!(
            Instant::now() < deadline,
            "the call never reached a node: {:#?}",
            service.records()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn last_n(service: &Service) -> u64 {
    service.records().iter().map(|r| r.n).max().unwrap_or(0)
}

#[tokio::test]
async fn a_node_killed_mid_call_fails_the_call_and_the_session_goes_on() {
    /// How soon the client resumes a broken stream (the nodes ask for 3 s).
    const RESUME_AFTER: Duration = Duration::from_millis(200);
    /// How long the call may take to fail after the kill: its stream is resumed
    /// `max_resumptions` (5) times on the other node, which cannot know it, then given up.
    const FAILED_WITHIN: Duration = Duration::from_secs(5);
    within(Duration::from_secs(40), async {
        let mut service = Service::start(&[]).await;
        let client = service
            .connect_with(HttpClientConfig {
                max_retry: RESUME_AFTER,
                ..HttpClientConfig::default()
            })
            .await;
        client.call_tool(simple()).await.expect("a first call");
        let before = last_n(&service);
        let call = tokio::spawn({
            let client = client.clone();
            async move { client.call_tool(slow(5.0)).await }
        });
        // The answer is an SSE stream whose head the node sends at once: the proxy logs it.
        let x = backend_of_call(&service, before).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let killed_at = Instant::now();
        service.nodes[x].kill();
        let outcome = tokio::time::timeout(FAILED_WITHIN, call)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the call did not end within {FAILED_WITHIN:?} of the kill: {:#?}",
                    service.records()
                )
            })
            .expect("the call's task");
        let failed_after = killed_at.elapsed();
        assert!(
            outcome.is_err(),
            "a call whose node died cannot have its answer: {outcome:?}"
        );
        eprintln!("the call failed {failed_after:?} after the kill: {outcome:?}");
        let after = last_n(&service);
        for _ in 0..4 {
            let result = client
                .call_tool(simple())
                .await
                .unwrap_or_else(|e| panic!("a call after the kill: {e}\n{}", service.said()));
            assert_eq!(result.text_content(), SIMPLE_TEXT);
        }
        let records = service.records();
        let later: Vec<_> = records
            .iter()
            .filter(|r| r.n > after && r.rpc_method.as_deref() == Some("tools/call"))
            .collect();
        assert_eq!(later.len(), 4, "{records:#?}");
        assert!(
            later
                .iter()
                .all(|r| r.backend == Some(1 - x) && r.status == 200),
            "served by the surviving node: {records:#?}"
        );
        assert_eq!(
            service.initializes(),
            1,
            "the session lives in Redis, no new initialize: {records:#?}"
        );
        assert!(service.nodes[1 - x].is_running());
    })
    .await;
}

#[tokio::test]
async fn a_node_killed_mid_task_leaves_it_failed_on_the_other_node() {
    /// The runner's lease the nodes take: short, yet long enough that a node slowed down by
    /// 2 busy cores does not look dead.
    const LEASE: Duration = Duration::from_millis(500);
    /// What a reader may take beyond the lease to see the task failed.
    const MARGIN: Duration = Duration::from_secs(3);
    within(Duration::from_secs(40), async {
        let mut service = Service::start(&[("TASK_LEASE_MS", "500")]).await;
        let client = service.connect().await;
        assert!(client.supports_tool_tasks());
        let before = last_n(&service);
        let handle = match client
            .start_tool_task(slow(30.0), Some(Duration::from_secs(60)))
            .await
            .expect("the task starts")
        {
            ToolTask::Started(handle) => handle,
            ToolTask::Finished(result) => panic!("expected a task, got {result:?}"),
        };
        let x = backend_of_call(&service, before).await;
        // Renewed every third of the lease while the node lives.
        tokio::time::sleep(LEASE * 2).await;
        assert_eq!(
            handle.status().await.expect("status").status,
            TaskStatus::Working,
            "the lease holds while its runner lives"
        );
        let at_kill = last_n(&service);
        let killed_at = Instant::now();
        service.nodes[x].kill();
        let task = loop {
            let task = handle
                .status()
                .await
                .unwrap_or_else(|e| panic!("tasks/get after the kill: {e}\n{}", service.said()));
            if task.status != TaskStatus::Working {
                break task;
            }
            assert!(
                killed_at.elapsed() < LEASE + MARGIN,
                "still working {:?} after its node died",
                killed_at.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let seen_after = killed_at.elapsed();
        eprintln!("the task was failed {seen_after:?} after its node died");
        assert_eq!(task.status, TaskStatus::Failed, "{task:?}");
        // The lease last renewed (every third of it) at most a third before the kill.
        assert!(
            seen_after >= LEASE * 2 / 3 - Duration::from_millis(20),
            "failed before its lease ran out"
        );
        match handle.result().await {
            Err(Error::Rpc(error)) => {
                assert_eq!(error.code.0, -32603, "{error:?}");
                assert!(error.message.contains("stopped"), "{error:?}");
            }
            other => panic!("the task's result names the lost node: {other:?}"),
        }
        let records = service.records();
        assert!(
            records
                .iter()
                .filter(|r| r.rpc_method.as_deref() == Some("tasks/get"))
                .filter(|r| r.n > at_kill)
                .all(|r| r.backend == Some(1 - x)),
            "polled on the other node: {records:#?}"
        );
    })
    .await;
}
