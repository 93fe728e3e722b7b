//! Progress delivery, timeouts reset by progress (and capped), cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use barrel_mcp::Error;
use barrel_mcp::client::{CallOptions, NoHandler};
use barrel_mcp::types::{CallToolParams, JsonObject, ProtocolVersion};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{builder, connect_fake, fixture_client, modes};
use crate::support::within;

#[tokio::test]
async fn progress_reaches_the_callback_in_every_revision() {
    for mode in modes() {
        let client = fixture_client(mode, NoHandler).await;
        let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
        let log = Arc::clone(&seen);
        let mut args = JsonObject::new();
        args.insert("steps".into(), json!(3));
        let options =
            CallOptions::new().on_progress(move |p| log.lock().expect("lock").push(p.progress));
        within(client.call_tool_with(
            CallToolParams::new("countdown").with_arguments(args),
            options,
        ))
        .await
        .expect("call");
        assert_eq!(*seen.lock().expect("lock"), [1.0, 2.0, 3.0], "{mode:?}");
    }
}

/// A server whose `tools/call` reports progress every 40 ms, `ticks` times, then answers.
async fn ticking_client(ticks: u32) -> barrel_mcp::client::Client {
    connect_fake(
        builder(Some(ProtocolVersion::V2025_06_18)),
        move |req, peer| {
            Box::pin(async move {
                match req.method.as_str() {
                    "initialize" => Ok(json!({
                        "protocolVersion": "2025-06-18",
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "ticker", "version": "1" }
                    })),
                    _ => {
                        let token = req
                            .params
                            .as_ref()
                            .and_then(|p| p["_meta"].get("progressToken"))
                            .cloned();
                        for tick in 1..=ticks {
                            tokio::time::sleep(Duration::from_millis(40)).await;
                            if let Some(token) = &token {
                                let params = json!({ "progressToken": token, "progress": tick });
                                let _ = peer.notify("notifications/progress", Some(params)).await;
                            }
                        }
                        Ok(json!({ "content": [] }))
                    }
                }
            })
        },
    )
    .await
}

#[tokio::test]
async fn progress_resets_the_timeout_up_to_the_maximum() {
    let client = ticking_client(8).await;
    let short = Duration::from_millis(150);
    // 8 ticks of 40 ms = 320 ms > 150 ms, but each tick resets the timeout.
    let options = CallOptions::new().timeout(short).on_progress(|_| {});
    within(client.call_tool_with(CallToolParams::new("t"), options))
        .await
        .expect("progress kept the call alive");
    // Without the reset the same call times out.
    let options = CallOptions::new().timeout(short);
    let err = within(client.call_tool_with(CallToolParams::new("t"), options))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // And the maximum caps it however often progress comes.
    let options = CallOptions::new()
        .timeout(short)
        .max_total(Duration::from_millis(200))
        .on_progress(|_| {});
    let err = within(client.call_tool_with(CallToolParams::new("t"), options))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
}

#[tokio::test]
async fn a_call_is_cancelled_by_its_token_or_by_dropping_it() {
    for mode in [Some(ProtocolVersion::V2025_03_26), None] {
        let (server, probe) = super::fixture::server();
        let client = super::connect_to(&server, builder(mode)).await;
        let token = CancellationToken::new();
        let call = client.call_tool_with(
            CallToolParams::new("slow"),
            CallOptions::new().cancel(token.clone()),
        );
        let canceller = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            token.cancel();
        };
        let (outcome, ()) = within(async { tokio::join!(call, canceller) }).await;
        assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
        within(async {
            while !probe.saw_cancel() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
    }
}
