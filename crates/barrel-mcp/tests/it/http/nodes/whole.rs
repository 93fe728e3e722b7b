//! Which request streams are stored whole (`EventStore::append_single`, one `SET` on Redis): a
//! stream answered by its response alone is; a stream whose first append failed is not, even
//! when its response is the next event stored, since the failed append may have reached the
//! store (Redis applied it, the answer timed out): its response then opens it with
//! `append_first`, and the store holds one stream under that number, not two.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use barrel_mcp::store::EventStore;
use http::StatusCode;
use serde_json::json;

use super::replay::{TestEvents, call, next, nodes_on, stream_of};
use crate::http::SseReader;
use crate::support::within;

#[tokio::test]
async fn a_stream_whose_first_append_failed_is_never_stored_whole() {
    let store = Arc::new(TestEvents::default());
    store.lose_first_append.store(true, Ordering::SeqCst);
    let (nodes, _bus_a, _bus_b) = nodes_on(store.clone(), |_| {}).await;
    let (on_a, _on_b) = nodes.opened().await;

    let mut stream = SseReader::new(on_a.post(&call(2, "ask_name")).await);
    let priming = within(stream.next_event()).await.expect("priming event");
    let number = stream_of(&priming.id.expect("the priming event has an id"));
    let (ask_id, ask) = next(&mut stream).await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask_id, None, "its append failed: it goes out without an id");
    // The queue is empty by now; the answer makes the response the next event stored.
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],
        "result":{"action":"accept","content":{"name":"Ada"}}});
    assert_eq!(on_a.post(&answer).await.status(), StatusCode::ACCEPTED);
    let (result_id, result) = next(&mut stream).await;
    assert_eq!(result["result"]["content"][0]["text"], "Hello, Ada!");
    assert!(
        !store.whole.lock().unwrap().contains(&number),
        "a stream whose first append failed is not stored whole"
    );
    // The store took the request the failed append carried: the response comes after it.
    assert_eq!(result_id, Some(format!("{number}.2")));
    let replay = store
        .replay(on_a.session.as_deref().expect("a session"), number, 0)
        .await
        .unwrap()
        .expect("one stream under that number");
    assert_eq!(replay.events.len(), 2);
    assert!(replay.finished);

    // A request answered by its response alone is stored whole.
    let quick = json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"countdown","arguments":{"steps":0}}});
    let mut stream = SseReader::new(on_a.post(&quick).await);
    let priming = within(stream.next_event()).await.expect("priming event");
    let number = stream_of(&priming.id.expect("the priming event has an id"));
    let (result_id, result) = next(&mut stream).await;
    assert_eq!(result["id"], 3, "{result}");
    assert_eq!(result_id, Some(format!("{number}.1")));
    assert!(store.whole.lock().unwrap().contains(&number));
    nodes.stop().await;
}

#[tokio::test]
async fn a_refused_first_append_leaves_the_response_to_be_stored_whole() {
    // No room for a stream of several events: the store refuses the progress (writing
    // nothing), so the response, the next event, may still be stored whole.
    let store = Arc::new(TestEvents::default());
    let (nodes, _bus_a, _bus_b) = nodes_on(store.clone(), |shared| shared.max_streams = 0).await;
    let (on_a, _on_b) = nodes.opened().await;
    let countdown = json!({"jsonrpc":"2.0","id":4,"method":"tools/call",
        "params":{"name":"countdown","arguments":{"steps":1},"_meta":{"progressToken":"p"}}});
    let mut stream = SseReader::new(on_a.post(&countdown).await);
    let priming = within(stream.next_event()).await.expect("priming event");
    let number = stream_of(&priming.id.expect("the priming event has an id"));
    let (progress_id, progress) = next(&mut stream).await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress_id, None, "refused: it goes out without an id");
    let (_, result) = next(&mut stream).await;
    assert_eq!(result["id"], 4, "{result}");
    assert!(
        store.whole.lock().unwrap().contains(&number),
        "a refusal wrote nothing: the response is tried whole"
    );
    nodes.stop().await;
}
