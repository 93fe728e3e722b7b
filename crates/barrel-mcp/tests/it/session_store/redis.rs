//! `RedisSessionStore` on a real `redis-server`: the shared suite, then what only a shared
//! store has (two nodes on one Redis, keys that all expire and all go, an outage that is
//! `Unavailable` and never "no such session", foreign data that is `Corrupt`, no password in
//! its `Debug` or errors).
//!
//! Every store gets a key prefix of its own, so the tests share one server
//! ([`shared`](crate::support::redis::shared)).

use std::sync::Arc;
use std::time::{Duration, Instant};

use barrel_mcp::store::{
    Created, RedisSessionStore, SessionChange, SessionLimits, SessionStore, StoreError, Updated,
};

use super::{Make, full_record, session, session_store_suite, ttl};
use crate::support::redis::{
    RedisProcess, connect, corrupt, keys_under, plain, shared, unavailable, unique_prefix,
};
use crate::support::within;

async fn store_on(url: &str, prefix: &str) -> RedisSessionStore {
    RedisSessionStore::new(connect(url, prefix).await)
}

fn make() -> Make {
    Box::new(|| {
        Box::pin(async {
            let url = shared().url();
            Arc::new(store_on(&url, &unique_prefix("sessions")).await) as Arc<dyn SessionStore>
        })
    })
}

session_store_suite!(make);

/// Asserts that every key under `prefix` will expire (`PTTL` > 0), and returns them.
async fn all_expire(url: &str, prefix: &str) -> Vec<String> {
    let keys = keys_under(url, prefix).await;
    let mut connection = plain(url).await;
    for key in &keys {
        let pttl: i64 = ::redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(pttl > 0, "{key} has PTTL {pttl}");
    }
    keys
}

/// Waits until no key is left under `prefix` (within 5 s).
async fn until_no_keys(url: &str, prefix: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = keys_under(url, prefix).await;
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "keys outlived the TTL: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn every_key_expires_and_delete_leaves_none() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("session-keys");
        let store = store_on(&url, &prefix).await;
        let short = ttl(Duration::from_millis(300));
        // Keys of every kind: a session with a quota and subscriptions from the start, one
        // whose subscription set comes with `update`, one without quota.
        let full = full_record();
        assert_eq!(store.create(&full, &short).await, Ok(Created::Created));
        let plain = session(Some("p:bob"));
        store.create(&plain, &short).await.unwrap();
        store
            .update(&plain.id, SessionChange::Subscribe("file:///x".into()))
            .await
            .unwrap();
        store
            .update(&plain.id, SessionChange::Initialized)
            .await
            .unwrap();
        let lone = session(None);
        store.create(&lone, &short).await.unwrap();
        store
            .touch(&lone.id, Duration::from_millis(250))
            .await
            .unwrap();
        let keys = all_expire(&url, &prefix).await;
        // Two sessions with subscriptions, one without; two quotas; the total.
        assert_eq!(keys.len(), 3 + 2 + 2 + 1, "{keys:?}");
        assert!(
            keys.iter()
                .all(|k| !k.contains("alice") && !k.contains("bob")),
            "no quota is spelled out in a key name: {keys:?}"
        );
        // Delete leaves nothing of the session, and no cap entry.
        assert_eq!(store.delete(&full.id).await, Ok(true));
        let left = all_expire(&url, &prefix).await;
        // Left: the other two sessions (one with subscriptions), the total, bob's quota.
        assert_eq!(left.len(), 3 + 1 + 1, "{left:?}");
        assert!(left.iter().all(|k| !k.contains(&full.id)), "{left:?}");
        store.delete(&plain.id).await.unwrap();
        store.delete(&lone.id).await.unwrap();
        assert_eq!(keys_under(&url, &prefix).await, Vec::<String>::new());
        // Expiry leaves nothing either, with no node cleaning up.
        for quota in [Some("p:alice"), None] {
            store.create(&session(quota), &short).await.unwrap();
        }
        store.create(&full_record(), &short).await.unwrap();
        assert!(!all_expire(&url, &prefix).await.is_empty());
        until_no_keys(&url, &prefix).await;
    })
    .await;
}

#[tokio::test]
async fn two_nodes_share_sessions_and_caps() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("session-nodes");
        let a = store_on(&url, &prefix).await;
        let b = store_on(&url, &prefix).await;
        let limits = SessionLimits {
            max_per_quota: 1,
            ..SessionLimits::default()
        };
        let record = full_record();
        assert_eq!(a.create(&record, &limits).await, Ok(Created::Created));
        // Durable before `create` returned: the other node sees it at once.
        assert_eq!(b.load(&record.id).await, Ok(Some(record.clone())));
        assert_eq!(b.create(&record, &limits).await, Ok(Created::Exists));
        let mut other = session(record.quota.as_deref());
        assert_eq!(b.create(&other, &limits).await, Ok(Created::QuotaFull));
        assert_eq!(
            b.update(&record.id, SessionChange::Initialized).await,
            Ok(Updated::Applied)
        );
        assert!(a.load(&record.id).await.unwrap().unwrap().initialized);
        assert_eq!(b.delete(&record.id).await, Ok(true));
        assert_eq!(a.create(&other, &limits).await, Ok(Created::Created));
        // Another prefix is another store.
        let elsewhere = store_on(&url, &unique_prefix("session-nodes")).await;
        assert_eq!(elsewhere.load(&other.id).await, Ok(None));
        other.quota = None;
        assert_eq!(
            elsewhere.create(&other, &limits).await,
            Ok(Created::Created)
        );
    })
    .await;
}

#[tokio::test]
async fn foreign_data_is_corrupt_not_absent() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("session-corrupt");
        let store = store_on(&url, &prefix).await;
        let mut connection = plain(&url).await;
        // A hash of another format, and a key of another type, under the store's names.
        let _: () = ::redis::cmd("HSET")
            .arg(format!("{prefix}:s:{{foreign}}"))
            .arg("f")
            .arg("9")
            .query_async(&mut connection)
            .await
            .unwrap();
        let _: () = ::redis::cmd("SET")
            .arg(format!("{prefix}:s:{{string}}"))
            .arg("x")
            .query_async(&mut connection)
            .await
            .unwrap();
        let loaded = store.load("foreign").await;
        assert!(corrupt(&loaded), "{loaded:?}");
        let subscribed = store
            .update("foreign", SessionChange::Subscribe("a".into()))
            .await;
        assert!(corrupt(&subscribed), "{subscribed:?}");
        let loaded = store.load("string").await;
        assert!(corrupt(&loaded), "{loaded:?}");
        let updated = store.update("string", SessionChange::Initialized).await;
        assert!(corrupt(&updated), "{updated:?}");
        let touched = store.touch("string", Duration::from_secs(1)).await;
        assert!(corrupt(&touched), "{touched:?}");
    })
    .await;
}

#[tokio::test]
async fn redis_down_is_unavailable_never_absent() {
    within(async {
        let mut redis = RedisProcess::start(&[]);
        let store = store_on(&redis.url(), &unique_prefix("session-down")).await;
        let record = session(Some("p:alice"));
        let limits = SessionLimits::default();
        store.create(&record, &limits).await.unwrap();
        redis.kill();
        assert!(!redis.answers_ping());
        let started = Instant::now();
        let loaded = store.load(&record.id).await;
        assert!(unavailable(&loaded), "{loaded:?}");
        let updated = store.update(&record.id, SessionChange::Initialized).await;
        assert!(unavailable(&updated), "{updated:?}");
        let touched = store.touch(&record.id, Duration::from_secs(60)).await;
        assert!(unavailable(&touched), "{touched:?}");
        let deleted = store.delete(&record.id).await;
        assert!(unavailable(&deleted), "{deleted:?}");
        let created = store.create(&session(None), &limits).await;
        assert!(unavailable(&created), "{created:?}");
        // It fails fast: each call during an outage is answered, not held.
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "took {:?}",
            started.elapsed()
        );
        // Redis comes back (empty): the same store serves again.
        redis.restart();
        let deadline = Instant::now() + Duration::from_secs(5);
        let again = session(None);
        loop {
            match store.create(&again, &limits).await {
                Ok(created) => {
                    assert_eq!(created, Created::Created);
                    break;
                }
                Err(StoreError::Unavailable(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => panic!("no recovery: {other:?}"),
            }
        }
        assert_eq!(store.load(&again.id).await, Ok(Some(again)));
        // The data went with the old server: the first session is unknown now.
        assert_eq!(store.load(&record.id).await, Ok(None));
    })
    .await;
}

#[tokio::test]
async fn no_password_in_debug_or_errors() {
    within(async {
        let mut redis = RedisProcess::start(&["--requirepass", "hunter2-secret"]);
        let url = format!("redis://:hunter2-secret@127.0.0.1:{}/", redis.port());
        let store = store_on(&url, &unique_prefix("session-secret")).await;
        let record = session(None);
        store
            .create(&record, &SessionLimits::default())
            .await
            .unwrap();
        let debug = format!("{store:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(
            debug.contains(&format!("127.0.0.1:{}", redis.port())),
            "{debug}"
        );
        redis.kill();
        match store.load(&record.id).await {
            Err(StoreError::Unavailable(why)) => assert!(!why.contains("hunter2"), "{why}"),
            other => panic!("{other:?}"),
        }
    })
    .await;
}
