//! What a node sends on to the holder of a legacy HTTP+SSE session is bounded: a holder whose
//! inbox is full makes the POST 503, a message past `max_forwarded_bytes` (or past the body
//! limit, as on the holder) is 413, and past `max_forwards_per_second` for one session 429.

use std::sync::Arc;

use barrel_mcp::store::{Bus, BusOptions, LocalHub};
use http::StatusCode;

use super::legacy::{cancelled, id_of, initialize_through, open_legacy, post, post_for};
use super::{Nodes, TestStore, eventually};
use crate::http::{body_json, initialize};
use crate::support::within;

#[tokio::test]
async fn a_post_for_a_holder_whose_inbox_is_full_is_503() {
    let hub = LocalHub::with_options(BusOptions {
        inbox_capacity: 1,
        ..BusOptions::default()
    });
    let (bus_a, bus_b) = (Arc::new(hub.join()), Arc::new(hub.join()));
    // Nothing reads A's inbox: the test takes it before A can, as if A were stuck.
    let mut inbox_a = bus_a.inbox().expect("A's inbox");
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::start(store.clone(), store, bus_a, bus_b, |_, _| {}).await;
    let (_stream, endpoint) = open_legacy(&nodes.a.client()).await;
    let on_b = nodes.b.client();

    // The first message takes the inbox's one place; the next finds it full.
    assert_eq!(
        post(&on_b, &endpoint, &initialize(1)).await,
        StatusCode::ACCEPTED
    );
    let full = post_for(&on_b, &endpoint, &initialize(2)).await;
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(full.headers().contains_key("retry-after"));
    let error = body_json(full).await;
    assert_eq!(error["error"]["code"], -32603, "{error}");

    // What waits there is the first message, for the session; once read, a place is free.
    let waiting = within(inbox_a.recv()).await.expect("a directed message");
    let body = String::from_utf8_lossy(&waiting.body);
    assert!(
        body.starts_with(&format!("session-deliver:{}\n", id_of(&endpoint))),
        "{body}"
    );
    assert!(body.contains(r#""id":1"#), "{body}");
    assert_eq!(
        post(&on_b, &endpoint, &initialize(3)).await,
        StatusCode::ACCEPTED
    );
    nodes.stop().await;
}

#[tokio::test]
async fn a_post_too_large_to_send_on_is_413() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |node, config| {
        if node == 'b' {
            config.max_body_size = 8 * 1024;
            if let Some(shared) = config.shared_sessions.as_mut() {
                shared.max_forwarded_bytes = 1024;
            }
        }
    })
    .await;
    let (mut stream, endpoint) = open_legacy(&nodes.a.client()).await;
    let (on_a, on_b) = (nodes.a.client(), nodes.b.client());
    initialize_through(&on_b, &endpoint, &mut stream).await;

    // Within B's body limit, past what B sends on: 413.
    let large = super::echo(2, &"x".repeat(2 * 1024));
    let refused = post_for(&on_b, &endpoint, &large).await;
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let error = body_json(refused).await;
    assert_eq!(error["error"]["code"], -32600, "{error}");
    // Past B's body limit: 413 too, as on the holder.
    let huge = super::echo(3, &"x".repeat(16 * 1024));
    assert_eq!(
        post(&on_b, &endpoint, &huge).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );

    // The holder takes the large message itself; a small one sent on is answered; the refused
    // ones never reached the session.
    let large = super::echo(4, &"x".repeat(2 * 1024));
    assert_eq!(post(&on_a, &endpoint, &large).await, StatusCode::ACCEPTED);
    let answer = within(stream.next_message()).await;
    assert_eq!(answer["id"], 4, "{answer}");
    assert_eq!(
        post(&on_b, &endpoint, &super::echo(5, "small")).await,
        StatusCode::ACCEPTED
    );
    let answer = within(stream.next_message()).await;
    assert_eq!(answer["id"], 5, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "small");
    nodes.stop().await;
}

#[tokio::test]
async fn posts_sent_on_are_bounded_per_session_and_second() {
    let nodes = Nodes::local(Arc::new(TestStore::default()), |node, config| {
        if let (Some(shared), 'b') = (config.shared_sessions.as_mut(), node) {
            shared.max_forwards_per_second = 2;
        }
    })
    .await;
    let (_stream, endpoint) = open_legacy(&nodes.a.client()).await;
    let on_b = nodes.b.client();

    // Twenty at once: two a second are sent on, the others are 429 (unless the twenty took
    // ten seconds).
    let mut posts = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (on_b, endpoint) = (on_b.clone(), endpoint.clone());
        posts.spawn(async move { post_for(&on_b, &endpoint, &cancelled()).await });
    }
    let mut refused = 0;
    while let Some(response) = within(posts.join_next()).await {
        let response = response.expect("the POST ran");
        match response.status() {
            StatusCode::ACCEPTED => {}
            StatusCode::TOO_MANY_REQUESTS => {
                refused += 1;
                assert_eq!(
                    response.headers().get("retry-after").map(|v| v.as_bytes()),
                    Some(&b"1"[..])
                );
                let error = body_json(response).await;
                assert_eq!(error["error"]["code"], -32600, "{error}");
            }
            other => panic!("a POST sent on got {other}"),
        }
    }
    assert!(refused > 0, "every POST was sent on");

    // A second later the session sends on again.
    eventually("a POST is sent on again", || async {
        post(&on_b, &endpoint, &cancelled()).await == StatusCode::ACCEPTED
    })
    .await;
    nodes.stop().await;
}
