//! Cancel versus finish across nodes, 1,000 times: each call's `notifications/cancelled` goes
//! through the proxy on a POST of its own, so it mostly reaches the other node than the call,
//! at every point of the call's life. Every call ends with its result or as
//! cancelled, nothing hangs, and the service answers afterwards.

use std::time::{Duration, Instant};

use barrel_mcp::Error;
use barrel_mcp::client::{CallOptions, Client};
use barrel_mcp::types::CallToolResult;

use super::harness::{SIMPLE_TEXT, Service, simple, slow, within};

/// Races, one after the other: the 1,000. Sequential on purpose: a call's
/// cancellation is then the request right after it (the proxy's log pairs them), and
/// concurrent cancelled calls slow each other down (each drops its HTTP exchange, so new
/// connections) until no call is ever answered before its cancellation. About 5 s on 2
/// busy cores of a debug build.
const RACES: usize = 1_000;
/// How long one call, cancelled or not, may take to end.
const CALL_WITHIN: Duration = Duration::from_secs(5);

/// How one call ended.
#[derive(Debug, Default)]
struct Tally {
    answered: usize,
    cancelled: usize,
}

/// Call `i`: a quick tool or a 3 ms one, cancelled after a delay that moves with `i` from
/// nothing to twice `scale`, so that the cancellation lands before the call is sent, while it
/// runs, and after it was answered. True when the call was answered.
async fn race(client: &Client, i: usize, scale: Duration, tally: &mut Tally) -> bool {
    let (params, text) = if i.is_multiple_of(2) {
        (simple(), SIMPLE_TEXT.to_owned())
    } else {
        (slow(0.003), "computed  in 0.003 s".to_owned())
    };
    let options = CallOptions::new().cancel(Default::default());
    let token = options.cancel.clone().expect("a cancellation token");
    let call = client.call_tool_with(params, options);
    let delay = scale * u32::try_from((i / 2 * 7) % 16).unwrap_or(0) / 8;
    let cancel = async {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        token.cancel();
        std::future::pending::<()>().await
    };
    let outcome: barrel_mcp::Result<CallToolResult> = tokio::time::timeout(CALL_WITHIN, async {
        tokio::select! {
            outcome = call => outcome,
            () = cancel => unreachable!("pending"),
        }
    })
    .await
    .unwrap_or_else(|_| panic!("call {i} did not end within {CALL_WITHIN:?}"));
    match outcome {
        Ok(result) => {
            assert_eq!(result.text_content(), text, "call {i}");
            tally.answered += 1;
            true
        }
        Err(Error::Cancelled) => {
            tally.cancelled += 1;
            false
        }
        Err(other) => panic!("call {i} ended with neither its result nor cancelled: {other}"),
    }
}

#[tokio::test]
async fn cancel_versus_finish_across_nodes_always_ends() {
    within(Duration::from_secs(50), async {
        let service = Service::start(&[]).await;
        let client = service.connect().await;
        // What a quick call takes.
        let mut times = Vec::new();
        for _ in 0..10 {
            let start = Instant::now();
            client.call_tool(simple()).await.expect("a call");
            times.push(start.elapsed());
        }
        times.sort();
        let typical = times[times.len() / 2];
        // Where answer and cancellation meet moves with the load (a cancelled call drops its
        // HTTP exchange, so the next one opens connections): the scale of the delays follows
        // it, shorter after an answer, longer after a cancellation.
        let mut scale = typical;
        let before = service.records().iter().map(|r| r.n).max().unwrap_or(0);
        let started = Instant::now();
        let mut total = Tally::default();
        for i in 0..RACES {
            scale = if race(&client, i, scale, &mut total).await {
                scale * 9 / 10
            } else {
                scale * 11 / 10
            }
            .clamp(Duration::from_micros(100), Duration::from_millis(100));
        }
        eprintln!(
            "{RACES} races in {:?} (a quick call: {typical:?}, the scale at the end: {scale:?}): \
             {total:?}",
            started.elapsed()
        );
        assert_eq!(total.answered + total.cancelled, RACES);
        assert!(
            total.cancelled > RACES / 10 && total.answered > RACES / 10,
            "both sides won races: {total:?}"
        );
        // The service still answers, on both nodes.
        for _ in 0..4 {
            let result = client
                .call_tool(simple())
                .await
                .expect("a call after the races");
            assert_eq!(result.text_content(), SIMPLE_TEXT);
        }
        let records = service.records();
        let cancels: Vec<_> = records
            .iter()
            .filter(|r| r.rpc_method.as_deref() == Some("notifications/cancelled"))
            .collect();
        assert!(
            cancels.iter().all(|r| r.status == 202),
            "every cancellation was taken: {cancels:#?}"
        );
        // A cancellation mostly follows its call in the log (`n` + 1), which the alternation
        // sends to the other node; not always: a call cancelled before its POST left is never
        // sent, and the two POSTs, sent from tasks of their own, may arrive swapped.
        let crossed = cancels
            .iter()
            .filter(|cancel| {
                records
                    .iter()
                    .filter(|r| r.n > before && r.n < cancel.n)
                    .rfind(|r| r.rpc_method.as_deref() == Some("tools/call"))
                    .is_some_and(|call| call.backend != cancel.backend)
            })
            .count();
        eprintln!(
            "{} cancellations were sent, {crossed} of them to the other node than their call",
            cancels.len()
        );
        assert!(
            crossed * 2 >= cancels.len(),
            "the alternation sends most cancellations across: {crossed} of {}",
            cancels.len()
        );
        assert!(
            records.iter().all(|r| r.status < 500),
            "no request failed: {:#?}",
            records
                .iter()
                .filter(|r| r.status >= 500)
                .collect::<Vec<_>>()
        );
        assert_eq!(service.initializes(), 1);
    })
    .await;
}
