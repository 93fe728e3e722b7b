//! How long a shared session lives where: DELETE on one node ends it on every node (its own
//! copy at once, the news sent before it answers, waiting for the bus `ended_news_wait` at
//! most), a copy whose record is gone is 404, an idle copy is dropped while the session lives
//! on, a store that fails is 503 and never 404 (and a change made meanwhile is stored once it
//! is back), another principal is 404, concurrent first requests build one replica, and the
//! store's caps count every node.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use barrel_mcp::http::{HttpConfig, PrincipalResolver};
use barrel_mcp::store::{LocalHub, SessionStore};
use http::{Method, StatusCode};
use serde_json::json;

use super::test_bus::TestBus;
use super::{Nodes, TestStore, echo, eventually, initialized, open, post_json, request};
use crate::http::{TestServer, body_json, initialize, session_id};
use crate::support::within;

#[tokio::test]
async fn delete_on_b_ends_the_session_on_a() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store.clone(), |_, _| {}).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    on_a.post(&initialized()).await;
    let id = on_a.session.clone().unwrap();
    let on_b = nodes.on_b(&on_a);
    let deleted = on_b.send(Method::DELETE, &[], None).await;
    assert_eq!(deleted.status(), StatusCode::OK);
    assert_eq!(store.load(&id).await, Ok(None));
    // A hears it on the bus and drops its copy.
    let ping = request(2, "ping", json!({}));
    eventually("A drops the deleted session", || async {
        post_json(&on_a, &ping, &[]).await.status() == StatusCode::NOT_FOUND
    })
    .await;
    assert_eq!(nodes.a.http.session_count(), 0);
    assert_eq!(
        post_json(&on_b, &ping, &[]).await.status(),
        StatusCode::NOT_FOUND
    );
    let again = on_b.send(Method::DELETE, &[], None).await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    nodes.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_answers_once_the_news_left_and_ends_its_own_copy_first() {
    let delay = Duration::from_millis(300);
    let store = Arc::new(TestStore::default());
    let hub = LocalHub::new();
    let slow = Arc::new(TestBus::join(&hub).slow(delay));
    let publishing = Arc::clone(&slow.ending);
    let (bus_a, bus_b) = (Arc::new(hub.join()), slow);
    let nodes = Nodes::start(store.clone(), store, bus_a, bus_b, |_, _| {}).await;
    let (on_a, on_b) = nodes.opened().await;
    let ping = request(2, "ping", json!({}));
    assert_eq!(post_json(&on_a, &ping, &[]).await.status(), StatusCode::OK);
    // B holds a copy too.
    assert_eq!(post_json(&on_b, &ping, &[]).await.status(), StatusCode::OK);
    let asked = tokio::time::Instant::now();
    let deleting = tokio::spawn({
        let on_b = on_b.clone();
        async move { on_b.send(Method::DELETE, &[], None).await.status() }
    });
    // While the news is on its way, B (where the DELETE is) no longer serves the session.
    within(publishing.notified()).await;
    assert_eq!(
        post_json(&on_b, &ping, &[]).await.status(),
        StatusCode::NOT_FOUND
    );
    assert!(!deleting.is_finished(), "the DELETE waits for the news");
    assert_eq!(deleting.await.expect("the DELETE"), StatusCode::OK);
    assert!(asked.elapsed() >= delay, "answered before the news left");
    // A heard it: the next request there finds the session gone.
    eventually("A drops the deleted session", || async {
        post_json(&on_a, &ping, &[]).await.status() == StatusCode::NOT_FOUND
    })
    .await;
    nodes.stop().await;
}

#[tokio::test]
async fn a_bus_that_does_not_take_the_news_delays_a_delete_by_ended_news_wait_at_most() {
    let store = Arc::new(TestStore::default());
    let hub = LocalHub::new();
    let stuck = Duration::from_secs(3600);
    let (bus_a, bus_b) = (
        Arc::new(hub.join()),
        Arc::new(TestBus::join(&hub).slow(stuck)),
    );
    let wait = Duration::from_millis(200);
    let nodes = Nodes::start(store.clone(), store.clone(), bus_a, bus_b, |_, config| {
        if let Some(shared) = config.shared_sessions.as_mut() {
            shared.ended_news_wait = wait;
        }
    })
    .await;
    let (_, on_b) = nodes.opened().await;
    let id = on_b.session.clone().expect("a session");
    let asked = tokio::time::Instant::now();
    let deleted = within(on_b.send(Method::DELETE, &[], None)).await;
    assert_eq!(deleted.status(), StatusCode::OK);
    let took = asked.elapsed();
    assert!(took >= wait && took < Duration::from_secs(1), "{took:?}");
    assert_eq!(store.load(&id).await, Ok(None));
    nodes.stop().await;
}

#[tokio::test]
async fn a_copy_whose_record_is_gone_is_404_at_its_next_touch() {
    // An idle timeout of 800 ms: a copy touches the store at most every 100 ms.
    let store = Arc::new(TestStore::default());
    let short = |_, config: &mut HttpConfig| {
        config.session_idle_timeout = Duration::from_millis(800);
    };
    let nodes = Nodes::local(store.clone(), short).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    on_a.post(&initialized()).await;
    // Gone from the store with no news on the bus (a lost message).
    let id = on_a.session.clone().unwrap();
    assert_eq!(store.inner.delete(&id).await, Ok(true));
    let ping = request(2, "ping", json!({}));
    eventually("A notices at its next touch", || async {
        post_json(&on_a, &ping, &[]).await.status() == StatusCode::NOT_FOUND
    })
    .await;
    eventually("A dropped its copy", || async {
        nodes.a.http.session_count() == 0
    })
    .await;
    nodes.stop().await;
}

#[tokio::test]
async fn a_copy_idle_on_its_node_is_dropped_and_the_session_lives_on() {
    // Sessions idle out after 1 s: B's copy does while the client goes on using A, whose
    // touches keep the session in the store.
    let store = Arc::new(TestStore::default());
    let short = |_, config: &mut HttpConfig| {
        config.session_idle_timeout = Duration::from_secs(1);
    };
    let nodes = Nodes::local(store.clone(), short).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    let on_b = nodes.on_b(&on_a);
    assert_eq!(
        on_b.post(&initialized()).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(nodes.b.http.session_count(), 1);
    let ping = request(2, "ping", json!({}));
    eventually("B drops its idle copy", || async {
        assert_eq!(post_json(&on_a, &ping, &[]).await.status(), StatusCode::OK);
        nodes.b.http.session_count() == 0
    })
    .await;
    let id = on_a.session.clone().unwrap();
    assert!(store.load(&id).await.unwrap().is_some(), "no store delete");
    let answer = body_json(post_json(&on_b, &echo(3, "again"), &[]).await).await;
    assert_eq!(answer["result"]["content"][0]["text"], "again");
    nodes.stop().await;
}

#[tokio::test]
async fn a_failing_store_is_503_and_never_404() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store.clone(), |_, _| {}).await;
    let mut on_a = nodes.a.client();

    // No session is minted while the store is down.
    store.failing(true);
    let refused = on_a.post(&initialize(1)).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "2");
    assert_eq!(session_id(refused.headers()), None);
    let body = body_json(refused).await;
    assert_eq!(body["error"]["code"], -32603);
    assert_eq!(body["error"]["message"], "session store unavailable");
    assert_eq!(nodes.a.http.session_count(), 0);

    store.failing(false);
    open(&mut on_a, &[]).await;
    on_a.post(&initialized()).await;
    store.failing(true);
    // B cannot load it: 503, so the client keeps its session.
    let on_b = nodes.on_b(&on_a);
    let ping = request(2, "ping", json!({}));
    let unknown = post_json(&on_b, &ping, &[]).await;
    assert_eq!(unknown.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(unknown.headers()["retry-after"], "2");
    let get = on_b
        .send(Method::GET, &[("accept", "text/event-stream")], None)
        .await;
    assert_eq!(get.status(), StatusCode::SERVICE_UNAVAILABLE);
    let delete = on_b.send(Method::DELETE, &[], None).await;
    assert_eq!(delete.status(), StatusCode::SERVICE_UNAVAILABLE);
    // An id this server never mints is unknown without asking the store: 404 even now.
    let mut forged = nodes.b.client();
    forged.session = Some("not-an-id{with}braces".to_owned());
    let forged = post_json(&forged, &ping, &[]).await;
    assert_eq!(forged.status(), StatusCode::NOT_FOUND);
    // A holds it: served.
    assert_eq!(post_json(&on_a, &ping, &[]).await.status(), StatusCode::OK);
    store.failing(false);
    assert_eq!(post_json(&on_b, &ping, &[]).await.status(), StatusCode::OK);
    nodes.stop().await;
}

#[tokio::test]
async fn another_principal_gets_404_on_b() {
    let store = Arc::new(TestStore::default());
    let by_header = |_, config: &mut HttpConfig| {
        config.principal = Some(PrincipalResolver::new(|parts| {
            parts
                .headers
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        }));
    };
    let nodes = Nodes::local(store.clone(), by_header).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[("x-user", "alice")]).await;
    let id = on_a.session.clone().unwrap();
    let record = store.load(&id).await.unwrap().unwrap();
    assert_eq!(record.principal.as_deref(), Some("alice"));
    assert_eq!(record.quota.as_deref(), Some("p:alice"));
    let on_b = nodes.on_b(&on_a);
    let ping = request(2, "ping", json!({}));
    for intruder in [&[("x-user", "bob")][..], &[]] {
        let response = post_json(&on_b, &ping, intruder).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let delete = on_b.send(Method::DELETE, intruder, None).await;
        assert_eq!(delete.status(), StatusCode::NOT_FOUND);
    }
    assert_eq!(
        nodes.b.http.session_count(),
        0,
        "no replica for an intruder"
    );
    let alice = post_json(&on_b, &ping, &[("x-user", "alice")]).await;
    assert_eq!(alice.status(), StatusCode::OK);
    assert!(store.load(&id).await.unwrap().is_some());
    nodes.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_on_b_build_one_replica() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store.clone(), |_, _| {}).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    on_a.post(&initialized()).await;
    let on_b = nodes.on_b(&on_a);
    // Every request is loading when the first load returns.
    store.load_delay.store(300, Ordering::SeqCst);
    let before = store.touches.load(Ordering::SeqCst);
    let mut requests = tokio::task::JoinSet::new();
    for n in 0..20 {
        let on_b = on_b.clone();
        requests.spawn(async move {
            let response = post_json(&on_b, &echo(n, "many"), &[]).await;
            assert_eq!(response.status(), StatusCode::OK);
            body_json(response).await
        });
    }
    while let Some(answer) = requests.join_next().await {
        assert_eq!(answer.unwrap()["result"]["content"][0]["text"], "many");
    }
    assert_eq!(nodes.b.http.session_count(), 1);
    assert_eq!(nodes.b_server.live_sessions().len(), 1);
    // Each replica touches the store on its first request, and then not before an eighth of
    // the idle timeout: one touch, one replica.
    assert_eq!(store.touches.load(Ordering::SeqCst) - before, 1);
    nodes.stop().await;
}

#[tokio::test]
async fn store_caps_count_every_node() {
    let store = Arc::new(TestStore::default());
    let tweak = |_, config: &mut HttpConfig| {
        if let Some(shared) = &mut config.shared_sessions {
            shared.max_sessions = 2;
        }
    };
    let nodes = Nodes::local(store, tweak).await;
    let (mut on_a, mut on_b) = (nodes.a.client(), nodes.b.client());
    open(&mut on_a, &[]).await;
    open(&mut on_b, &[]).await;
    let full = nodes.a.client().post(&initialize(1)).await;
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(full.headers().contains_key("retry-after"));
    // The refused initialize stored nothing; a DELETE frees a place.
    assert_eq!(
        on_b.send(Method::DELETE, &[], None).await.status(),
        StatusCode::OK
    );
    let mut again = nodes.a.client();
    open(&mut again, &[]).await;
    nodes.stop().await;
}

#[tokio::test]
async fn without_shared_sessions_nothing_is_asked_of_a_store() {
    // The plain configuration keeps today's behaviour: a session lives on its node only.
    let a = TestServer::start(HttpConfig::default()).await;
    let b = TestServer::start(HttpConfig::default()).await;
    let mut on_a = a.client();
    on_a.initialize().await;
    let mut on_b = b.client();
    on_b.session.clone_from(&on_a.session);
    let ping = request(2, "ping", json!({}));
    assert_eq!(
        post_json(&on_b, &ping, &[]).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(post_json(&on_a, &ping, &[]).await.status(), StatusCode::OK);
    assert!(HttpConfig::default().shared_sessions.is_none());
}

#[tokio::test]
async fn a_change_made_while_the_store_is_down_is_stored_once_it_is_back() {
    let store = Arc::new(TestStore::default());
    let nodes = Nodes::local(store.clone(), |_, _| {}).await;
    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    let id = on_a.session.clone().expect("session");
    // A holds the session: the client's `initialized` is taken while the store is down.
    store.failing(true);
    assert_eq!(
        on_a.post(&initialized()).await.status(),
        StatusCode::ACCEPTED
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.failing(false);
    // Written once the store answers again, so B serves the session as initialized.
    eventually("initialized is stored after the outage", || async {
        store
            .inner
            .load(&id)
            .await
            .unwrap()
            .is_some_and(|record| record.initialized)
    })
    .await;
    let on_b = nodes.on_b(&on_a);
    let answer = body_json(post_json(&on_b, &echo(2, "after the outage"), &[]).await).await;
    assert_eq!(answer["result"]["content"][0]["text"], "after the outage");
    nodes.stop().await;
}
