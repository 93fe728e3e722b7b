//! Redis failing under two live nodes: restarted without its data (the client initializes
//! again, once), restarted with it (the session goes on), paused (requests meanwhile are
//! answered, retried after 503 at worst, and none hangs), and its pub/sub connections cut (a
//! session ended on one node still ends on the other).

use std::time::{Duration, Instant};

use serde_json::json;

use super::harness::{SIMPLE_TEXT, Service, raw_status, simple, within};
use super::redis_server::Resp;

/// The session TTL for the restart tests: short, so that a node's copy asks the store at
/// least every 250 ms (an eighth of it), yet far longer than a restart.
const SHORT_SESSIONS: (&str, &str) = ("SESSION_IDLE_MS", "2000");

async fn three_calls(service: &Service, client: &barrel_mcp::client::Client, when: &str) {
    for _ in 0..3 {
        let result = client
            .call_tool(simple())
            .await
            .unwrap_or_else(|e| panic!("a call {when}: {e}\n{}", service.said()));
        assert_eq!(result.text_content(), SIMPLE_TEXT);
    }
}

#[tokio::test]
async fn redis_restarted_without_its_data_costs_one_new_initialize() {
    within(Duration::from_secs(40), async {
        let mut service = Service::start(&[SHORT_SESSIONS]).await;
        let client = service.connect().await;
        three_calls(&service, &client, "before the restart").await;
        service.redis.restart_empty().await;
        // Long enough for the copies to ask the store again.
        tokio::time::sleep(Duration::from_millis(600)).await;
        three_calls(&service, &client, "after the restart").await;
        let records = service.records();
        assert_eq!(
            service.initializes(),
            2,
            "initialized again once: {records:#?}"
        );
        assert!(
            records.iter().any(|r| r.status == 404),
            "the lost session was 404: {records:#?}"
        );
        // The new session is in the new Redis: the nodes recovered without a restart.
        let keys = service.redis.keys(&service.prefix).await;
        assert!(
            keys.iter()
                .any(|k| k.starts_with(&format!("{}:s:", service.prefix))),
            "the new session is stored: {keys:?}"
        );
        assert!(service.nodes.iter_mut().all(|node| node.is_running()));
    })
    .await;
}

#[tokio::test]
async fn redis_restarted_with_its_data_keeps_the_session() {
    within(Duration::from_secs(40), async {
        let mut service = Service::start(&[SHORT_SESSIONS]).await;
        let client = service.connect().await;
        three_calls(&service, &client, "before the restart").await;
        let restart = Instant::now();
        service.redis.restart_with_data().await;
        eprintln!("Redis was back {:?} after SHUTDOWN SAVE", restart.elapsed());
        let session_key = format!("{}:s:{{{}}}", service.prefix, service.first_session());
        let keys = service.redis.keys(&service.prefix).await;
        assert!(
            keys.contains(&session_key),
            "{session_key} was reloaded: {keys:?}"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        three_calls(&service, &client, "after the restart").await;
        let records = service.records();
        assert_eq!(service.initializes(), 1, "no new initialize: {records:#?}");
        assert!(
            records.iter().all(|r| r.status != 404),
            "no session was lost: {records:#?}"
        );
    })
    .await;
}

#[tokio::test]
async fn requests_while_redis_is_paused_are_answered() {
    /// How long Redis stays stopped.
    const PAUSE: Duration = Duration::from_millis(1500);
    /// How long one call may take, pause and a 503's `Retry-After: 2` included.
    const CALL_WITHIN: Duration = Duration::from_secs(10);
    within(Duration::from_secs(40), async {
        // Copies ask the store every second, so some requests in the pause need it.
        let service = Service::start(&[("SESSION_IDLE_MS", "8000")]).await;
        let client = service.connect().await;
        three_calls(&service, &client, "before the pause").await;
        service.redis.pause();
        let paused_at = Instant::now();
        let mut calls = Vec::new();
        for i in 0..4u32 {
            let client = client.clone();
            calls.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300) * i).await;
                let sent = Instant::now();
                let result = tokio::time::timeout(CALL_WITHIN, client.call_tool(simple())).await;
                (sent.elapsed(), result)
            }));
        }
        // A client that connects during the pause: `initialize` needs the store.
        let newcomer = tokio::spawn({
            let url = format!("{}/mcp", service.proxy.url());
            async move {
                let transport = barrel_mcp::transport::http_client::HttpClientTransport::new(&url)
                    .expect("transport");
                tokio::time::timeout(
                    CALL_WITHIN,
                    barrel_mcp::client::Client::builder()
                        .pin(barrel_mcp::types::ProtocolVersion::V2025_11_25)
                        .connect_http(transport),
                )
                .await
            }
        });
        tokio::time::sleep(PAUSE.saturating_sub(paused_at.elapsed())).await;
        service.redis.resume();
        for call in calls {
            let (took, result) = call.await.expect("the call's task");
            let result = result
                .unwrap_or_else(|_| panic!("a call in the pause hung past {CALL_WITHIN:?}"))
                .unwrap_or_else(|e| panic!("a call in the pause: {e}\n{}", service.said()));
            assert_eq!(result.text_content(), SIMPLE_TEXT);
            eprintln!("a call in the pause took {took:?}");
        }
        let newcomer = newcomer
            .await
            .expect("the newcomer's task")
            .expect("the newcomer connected in time")
            .unwrap_or_else(|e| panic!("a client connecting in the pause: {e}"));
        three_calls(
            &service,
            &newcomer,
            "of a client that connected in the pause",
        )
        .await;
        three_calls(&service, &client, "after the pause").await;
        let records = service.records();
        let unavailable = records.iter().filter(|r| r.status == 503).count();
        eprintln!("{unavailable} requests were 503 in the pause");
        assert!(
            unavailable > 0,
            "the newcomer's initialize needs the store, which was paused: {records:#?}"
        );
        assert!(
            records
                .iter()
                .all(|r| r.status != 404 && r.status < 500 || r.status == 503),
            "nothing lost, nothing failed but 503: {records:#?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_delete_ends_the_session_on_the_other_node_after_pubsub_was_cut() {
    /// How long the other node may take to drop its copy.
    const DROPPED_WITHIN: Duration = Duration::from_secs(5);
    within(Duration::from_secs(40), async {
        // Sessions live 30 min and copies ask the store every 225 s: only the bus tells.
        let service = Service::start(&[]).await;
        let client = service.connect().await;
        three_calls(&service, &client, "before the cut").await;
        let session = service.first_session();
        let ping = json!({ "jsonrpc": "2.0", "id": "probe", "method": "ping" });
        let (a, b) = (service.nodes[0].port(), service.nodes[1].port());
        for port in [a, b] {
            assert_eq!(raw_status(port, "POST", &session, Some(&ping)).await, 200);
        }
        let killed = service
            .redis
            .command(&["CLIENT", "KILL", "TYPE", "pubsub"])
            .await
            .expect("CLIENT KILL answered");
        assert!(
            matches!(killed, Resp::Int(n) if n >= 2),
            "both nodes' pub/sub connections were cut: {killed:?}"
        );
        let status = raw_status(a, "DELETE", &session, None).await;
        assert!(matches!(status, 200 | 202 | 204), "DELETE: {status}");
        let deleted_at = Instant::now();
        loop {
            let status = raw_status(b, "POST", &session, Some(&ping)).await;
            if status == 404 {
                break;
            }
            assert_eq!(status, 200, "a ping before the copy is dropped");
            assert!(
                deleted_at.elapsed() < DROPPED_WITHIN,
                "the other node still serves the deleted session {:?} later\n{}",
                deleted_at.elapsed(),
                service.said()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!(
            "the other node dropped its copy {:?} after the DELETE",
            deleted_at.elapsed()
        );
        assert_eq!(raw_status(a, "POST", &session, Some(&ping)).await, 404);
        // The client meets the 404, initializes again, and goes on.
        three_calls(&service, &client, "after the DELETE").await;
        assert_eq!(service.initializes(), 2);
    })
    .await;
}
