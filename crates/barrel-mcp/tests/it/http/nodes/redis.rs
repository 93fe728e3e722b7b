//! The A→B continuation over Redis: each node has its own `RedisSessionStore` and `RedisBus`
//! on the shared `redis-server`, under one key prefix of their own.

use std::sync::Arc;

use barrel_mcp::store::redis::{Redis, RedisOptions};
use barrel_mcp::store::{Bus, BusOptions, RedisBus, RedisSessionStore, SessionStore};
use http::{Method, StatusCode};
use serde_json::json;

use super::{Nodes, echo, eventually, initialized, open, post_json};
use crate::http::body_json;
use crate::support::redis::{shared, unique_prefix};

async fn connect(prefix: &str) -> Redis {
    let options = RedisOptions {
        prefix: prefix.to_owned(),
        ..RedisOptions::default()
    };
    Redis::connect(&shared().url(), options)
        .await
        .expect("the test server is reachable")
}

#[tokio::test]
async fn a_session_opened_on_a_continues_on_b_over_redis() {
    let prefix = unique_prefix("http-nodes");
    let store_a = Arc::new(RedisSessionStore::new(connect(&prefix).await));
    let store_b = Arc::new(RedisSessionStore::new(connect(&prefix).await));
    let start = |redis| async move {
        Arc::new(
            RedisBus::start(redis, BusOptions::default())
                .await
                .expect("the bus starts"),
        )
    };
    let bus_a = start(connect(&prefix).await).await;
    let bus_b = start(connect(&prefix).await).await;
    assert_ne!(bus_a.node(), bus_b.node());
    let nodes = Nodes::start(
        store_a.clone(),
        store_b,
        bus_a.clone(),
        bus_b.clone(),
        |_, _| {},
    )
    .await;

    let mut on_a = nodes.a.client();
    open(&mut on_a, &[]).await;
    let id = on_a.session.clone().unwrap();
    let on_b = nodes.on_b(&on_a);
    assert_eq!(
        on_b.post(&initialized()).await.status(),
        StatusCode::ACCEPTED
    );
    let answer = body_json(post_json(&on_b, &echo(2, "over redis"), &[]).await).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "over redis",
        "{answer}"
    );
    eventually("initialized is stored", || async {
        store_a
            .load(&id)
            .await
            .unwrap()
            .is_some_and(|record| record.initialized)
    })
    .await;

    // DELETE on A: B hears it over Redis pub/sub and drops its replica.
    assert_eq!(
        on_a.send(Method::DELETE, &[], None).await.status(),
        StatusCode::OK
    );
    let ping = json!({"jsonrpc":"2.0","id":3,"method":"ping"});
    eventually("B drops the deleted session", || async {
        post_json(&on_b, &ping, &[]).await.status() == StatusCode::NOT_FOUND
    })
    .await;
    assert_eq!(nodes.b.http.session_count(), 0);
    nodes.stop().await;
    bus_a.stop().await;
    bus_b.stop().await;
}
