//! Outbound requests: two peers talking, timeouts, progress, explicit and implicit
//! cancellation, error responses and losing the connection.

use std::time::Duration;

use barrel_mcp::Error;
use barrel_mcp::peer::{PeerConfig, RequestOptions, serve};
use barrel_mcp::transport::memory;
use barrel_mcp::types::{Message, Notification, Request, RequestId, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::support::{RawMessages, assert_subset, handler, serve_lines, serve_memory, within};

#[tokio::test]
async fn two_peers_talk_over_memory() {
    let (a, b) = memory();
    let (handler_a, _events_a) = handler();
    let (handler_b, mut events_b) = handler();
    let (peer_a, task_a) = serve(a, handler_a, PeerConfig::default());
    let (peer_b, _task_b) = serve(b, handler_b, PeerConfig::default());
    let echo = peer_a.request("echo", Some(json!({"x":1})), RequestOptions::default());
    assert_eq!(within(echo).await.expect("echo"), json!({"x":1}));
    // B's handler calls back into A while A waits for B.
    let nested = peer_a.request("call_back", Some(json!({"y":2})), RequestOptions::default());
    assert_eq!(within(nested).await.expect("call_back"), json!({"y":2}));
    let missing = within(peer_a.request("no/such", None, RequestOptions::default())).await;
    let code = missing
        .as_ref()
        .err()
        .and_then(Error::as_rpc)
        .map(|e| e.code.0);
    assert_eq!(code, Some(-32601), "{missing:?}");
    within(peer_a.notify("hello", None)).await.expect("notify");
    assert_eq!(events_b.next().await, "notification hello");
    peer_a.close();
    assert!(within(task_a).await.expect("join").is_ok());
    within(peer_b.closed()).await;
    let after = within(peer_b.request("echo", None, RequestOptions::default())).await;
    assert!(matches!(after, Err(Error::Closed)), "{after:?}");
}

/// Receives the next request from the peer under test.
async fn next_request(raw: &mut RawMessages) -> Request {
    match raw.recv().await {
        Message::Request(request) => request,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Receives the next message and checks it cancels request `id`.
async fn expect_cancelled(raw: &mut RawMessages, id: &RequestId) {
    match raw.recv().await {
        Message::Notification(Notification { method, params }) => {
            assert_eq!(method, "notifications/cancelled");
            let params = params.unwrap_or_default();
            assert_eq!(params["requestId"], id.to_value(), "{params}");
        }
        other => panic!("expected notifications/cancelled, got {other:?}"),
    }
}

fn progress(token: &Value, n: u64) -> Message {
    Message::notification(
        "notifications/progress",
        Some(json!({"progressToken":token,"progress":n})),
    )
}

fn token_of(request: &Request) -> Value {
    request
        .params
        .as_ref()
        .map(|p| p["_meta"]["progressToken"].clone())
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn outbound_timeout_sends_cancelled() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let options = RequestOptions {
        timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let peer = served.peer.clone();
    let start = Instant::now();
    let call = tokio::spawn(async move { peer.request("slow", None, options).await });
    let request = next_request(&mut raw).await;
    assert!(matches!(request.id, RequestId::Number(_)), "{request:?}");
    let result = within(call).await.expect("join");
    assert!(matches!(result, Err(Error::Timeout)), "{result:?}");
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    expect_cancelled(&mut raw, &request.id).await;
    // A late response is dropped, not answered, and the connection stays up.
    raw.send(Response::result(request.id, json!({})).into())
        .await;
    let peer = served.peer.clone();
    let next = tokio::spawn(async move { peer.request("again", None, Default::default()).await });
    let again = next_request(&mut raw).await;
    raw.send(Response::result(again.id, json!("ok")).into())
        .await;
    assert_eq!(
        within(next).await.expect("join").expect("again"),
        json!("ok")
    );
}

#[tokio::test(start_paused = true)]
async fn our_own_initialize_is_never_cancelled() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let options = RequestOptions {
        timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let peer = served.peer.clone();
    let call = tokio::spawn(async move { peer.request("initialize", None, options).await });
    let request = next_request(&mut raw).await;
    assert_eq!(request.method, "initialize");
    let result = within(call).await.expect("join");
    assert!(matches!(result, Err(Error::Timeout)), "{result:?}");
    // What follows the timeout is the next request, not notifications/cancelled.
    let peer = served.peer.clone();
    let next = tokio::spawn(async move { peer.request("again", None, Default::default()).await });
    let again = next_request(&mut raw).await;
    assert_eq!(again.method, "again");
    raw.send(Response::result(again.id, json!("ok")).into())
        .await;
    assert_eq!(
        within(next).await.expect("join").expect("again"),
        json!("ok")
    );
}

#[tokio::test(start_paused = true)]
async fn progress_resets_the_timeout_up_to_max_total() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    for (progress_until_ms, expected_ms) in [(250, 450), (10_000, 500)] {
        let options = RequestOptions {
            timeout: Some(Duration::from_millis(200)),
            max_total: Some(Duration::from_millis(500)),
            reset_timeout_on_progress: true,
            ..Default::default()
        };
        let peer = served.peer.clone();
        let start = Instant::now();
        let call = tokio::spawn(async move { peer.request("slow", None, options).await });
        let request = next_request(&mut raw).await;
        let token = token_of(&request);
        assert!(token.is_i64(), "{request:?}");
        // Progress every 50 ms until `progress_until_ms`.
        let mut n = 0;
        while start.elapsed() < Duration::from_millis(progress_until_ms) && !call.is_finished() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            n += 1;
            raw.send(progress(&token, n)).await;
        }
        let result = within(call).await.expect("join");
        assert!(matches!(result, Err(Error::Timeout)), "{result:?}");
        let elapsed = start.elapsed().as_millis();
        assert!(
            (expected_ms..expected_ms + 60).contains(&elapsed),
            "{elapsed} ms"
        );
        expect_cancelled(&mut raw, &request.id).await;
    }
}

#[tokio::test]
async fn dropping_a_request_sends_cancelled() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let call = served.peer.request("slow", None, RequestOptions::default());
    let dropped = tokio::time::timeout(Duration::from_millis(50), call).await;
    assert!(dropped.is_err(), "the call should still be waiting");
    let request = next_request(&mut raw).await;
    expect_cancelled(&mut raw, &request.id).await;
}

#[tokio::test]
async fn explicit_cancel_sends_cancelled() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let cancel = CancellationToken::new();
    let options = RequestOptions {
        cancel: Some(cancel.clone()),
        ..Default::default()
    };
    let peer = served.peer.clone();
    let call = tokio::spawn(async move { peer.request("slow", None, options).await });
    let request = next_request(&mut raw).await;
    cancel.cancel();
    let result = within(call).await.expect("join");
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    expect_cancelled(&mut raw, &request.id).await;
}

#[tokio::test]
async fn progress_is_routed_in_order_before_the_response() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let (progress_tx, mut progress_rx) = mpsc::channel(16);
    let options = RequestOptions {
        progress: Some(progress_tx),
        ..Default::default()
    };
    let params = Some(json!({"keep":"me","_meta":{"other":1}}));
    let peer = served.peer.clone();
    let call = tokio::spawn(async move { peer.request("work", params, options).await });
    let request = next_request(&mut raw).await;
    let params = request.params.clone().unwrap_or_default();
    assert_eq!(params["keep"], "me");
    assert_eq!(params["_meta"]["other"], 1);
    let token = token_of(&request);
    for n in 1..=3 {
        raw.send(progress(&token, n)).await;
    }
    raw.send(Response::result(request.id, json!("done")).into())
        .await;
    assert_eq!(
        within(call).await.expect("join").expect("result"),
        json!("done")
    );
    for n in 1..=3 {
        let update = progress_rx
            .try_recv()
            .expect("progress before the response");
        assert_eq!(update, json!({"progressToken":token,"progress":n}));
    }
    assert!(progress_rx.try_recv().is_err(), "no more progress");
}

#[tokio::test]
async fn a_caller_that_reads_no_progress_never_stalls_the_connection() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    // A caller that reads nothing until its call is done, with room for 4 updates.
    let (progress_tx, mut progress_rx) = mpsc::channel(4);
    let options = RequestOptions {
        progress: Some(progress_tx),
        ..Default::default()
    };
    let peer = served.peer.clone();
    let call = tokio::spawn(async move { peer.request("work", None, options).await });
    let request = next_request(&mut raw).await;
    let token = token_of(&request);
    for n in 1..=1_000 {
        raw.send(progress(&token, n)).await;
    }
    raw.send(Response::result(request.id, json!("done")).into())
        .await;
    // The read loop went on past the full channel: the response arrived.
    assert_eq!(
        within(call).await.expect("join").expect("result"),
        json!("done")
    );
    let kept: Vec<Value> = std::iter::from_fn(|| progress_rx.try_recv().ok()).collect();
    assert_eq!(kept.len(), 4, "the first four were kept, the rest dropped");
    assert_eq!(kept[0]["progress"], 1);
}

#[tokio::test]
async fn pending_requests_fail_with_closed_when_the_other_side_goes_away() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let peer = served.peer.clone();
    let first =
        tokio::spawn(async move { peer.request("a", None, RequestOptions::default()).await });
    let peer = served.peer.clone();
    let second =
        tokio::spawn(async move { peer.request("b", None, RequestOptions::default()).await });
    next_request(&mut raw).await;
    next_request(&mut raw).await;
    drop(raw);
    for call in [first, second] {
        let result = within(call).await.expect("join");
        assert!(matches!(result, Err(Error::Closed)), "{result:?}");
    }
    assert!(within(served.task).await.expect("join").is_ok());
    let after = within(served.peer.request("c", None, RequestOptions::default())).await;
    assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    let notify = within(served.peer.notify("n", None)).await;
    assert!(matches!(notify, Err(Error::Closed)), "{notify:?}");
}

#[tokio::test]
async fn malformed_response_fails_the_request() {
    let (mut raw, served) = serve_lines(PeerConfig::default(), None);
    let peer = served.peer.clone();
    let call =
        tokio::spawn(async move { peer.request("x", None, RequestOptions::default()).await });
    let request = raw.recv().await;
    assert_subset(&request, &json!({"jsonrpc":"2.0","method":"x"}), "request");
    let reply = json!({"jsonrpc":"2.0","id":request["id"],"error":"oops"});
    raw.send(&reply.to_string()).await;
    let result = within(call).await.expect("join");
    assert!(matches!(result, Err(Error::Protocol(_))), "{result:?}");
}

#[tokio::test]
async fn error_response_fails_the_request_with_rpc() {
    let (mut raw, served) = serve_memory(PeerConfig::default());
    let peer = served.peer.clone();
    let call =
        tokio::spawn(async move { peer.request("x", None, RequestOptions::default()).await });
    let request = next_request(&mut raw).await;
    let error = barrel_mcp::types::ErrorObject::invalid_params("bad");
    raw.send(Response::error(Some(request.id), error.clone()).into())
        .await;
    let result = within(call).await.expect("join");
    assert_eq!(
        result.as_ref().err().and_then(Error::as_rpc),
        Some(&error),
        "{result:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_stuck_behind_a_full_queue_still_times_out_and_can_be_cancelled() {
    // The other side reads nothing: one message fits in the transport, one in the queue.
    let (a, _b) = barrel_mcp::transport::memory_with_capacity(1);
    let (handler, _events) = crate::support::handler();
    let config = PeerConfig {
        outbound_queue: 1,
        ..PeerConfig::default()
    };
    let (peer, _task) = serve(a, handler, config);
    for n in 0..3 {
        // Fill the transport, the writer's hands and the queue.
        let _ = tokio::time::timeout(
            Duration::from_millis(10),
            peer.notify("fill", Some(json!(n))),
        )
        .await;
    }
    let options = RequestOptions {
        timeout: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let start = Instant::now();
    let result = within(peer.request("stuck", None, options)).await;
    assert!(matches!(result, Err(Error::Timeout)), "{result:?}");
    assert_eq!(start.elapsed(), Duration::from_millis(200));

    let cancel = CancellationToken::new();
    let options = RequestOptions {
        cancel: Some(cancel.clone()),
        ..Default::default()
    };
    let waiting = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("stuck", None, options).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel.cancel();
    let result = within(waiting).await.expect("join");
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
}
