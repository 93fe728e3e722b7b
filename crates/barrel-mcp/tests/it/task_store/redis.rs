//! `RedisTaskStore` on a real `redis-server`: the shared suite, then what only a shared store
//! has (two processes' stores on one Redis, keys that expire in Redis itself, an outage that is
//! `Unavailable` and never `NotFound`, no password in its `Debug` or errors).
//!
//! Every store gets a key prefix of its own, so the tests share one server
//! ([`shared`](crate::support::redis::shared)).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use barrel_mcp::task::{Era, RedisTaskStore, StoreRefusal, TaskLimits, TaskRecord, TaskStore};
use barrel_mcp::types::TaskStatus;

use super::{MINUTE, Make, task, task_store_suite};
use crate::support::redis::{RedisProcess, shared, unique_prefix};
use crate::support::within;

/// A store on the shared server, under a fresh prefix.
async fn store_on(url: &str, prefix: &str, limits: TaskLimits) -> RedisTaskStore {
    RedisTaskStore::connect(url, limits)
        .await
        .expect("the test server is reachable")
        .with_prefix(prefix)
}

fn make() -> Make {
    Box::new(|limits| {
        Box::pin(async move {
            let url = shared().url();
            Arc::new(store_on(&url, &unique_prefix("suite"), limits).await) as Arc<dyn TaskStore>
        })
    })
}

task_store_suite!(make);

/// The keys under `prefix` (the test server holds little, so `KEYS` is fine here).
async fn keys_under(url: &str, prefix: &str) -> Vec<String> {
    let client = ::redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let mut keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut connection)
        .await
        .unwrap();
    keys.sort();
    keys
}

#[tokio::test]
async fn two_nodes_share_one_task() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("nodes");
        let limits = TaskLimits {
            max_per_owner: 2,
            ..TaskLimits::default()
        };
        let a = store_on(&url, &prefix, limits.clone()).await;
        let b = store_on(&url, &prefix, limits).await;
        let created = task("alice", Era::Extension, MINUTE);
        let id = created.id.clone();
        a.create(created.clone()).await.unwrap();
        // Durable before `create` returned: the other node sees it at once.
        assert_eq!(b.get(&id, "alice", Era::Extension).await, Ok(created));
        let cancelled = b
            .update(&id, "alice", Era::Extension, &|t: &mut TaskRecord| {
                t.cancel()
            })
            .await
            .unwrap();
        assert_eq!(a.get(&id, "alice", Era::Extension).await, Ok(cancelled));
        // The per-owner cap holds across nodes.
        b.create(task("alice", Era::Sessions, MINUTE))
            .await
            .unwrap();
        assert!(matches!(
            a.create(task("alice", Era::Sessions, MINUTE)).await,
            Err(StoreRefusal::Full(_))
        ));
        // Another prefix is another store.
        let elsewhere = store_on(&url, &unique_prefix("nodes"), TaskLimits::default()).await;
        assert_eq!(
            elsewhere.get(&id, "alice", Era::Extension).await,
            Err(StoreRefusal::NotFound)
        );
    })
    .await;
}

/// The hash fields `fields` of task `id` under `prefix`.
async fn task_fields(url: &str, prefix: &str, id: &str, fields: &[&str]) -> Vec<Option<String>> {
    let client = ::redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    ::redis::cmd("HMGET")
        .arg(format!("{prefix}:t:{{{id}}}"))
        .arg(fields)
        .query_async(&mut connection)
        .await
        .unwrap()
}

/// The lease on Redis: a renewal is one command that leaves the record and its version alone;
/// two nodes reading a lapsed task at once write the failure once (the version moves by one);
/// a node whose lease ran out learns it on its next renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_failed_once_across_nodes() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("lease");
        let runner = store_on(&url, &prefix, TaskLimits::default()).await;
        let readers: Vec<Arc<dyn TaskStore>> = vec![
            Arc::new(store_on(&url, &prefix, TaskLimits::default()).await),
            Arc::new(store_on(&url, &prefix, TaskLimits::default()).await),
        ];
        let lease = Duration::from_millis(200);
        let created = task("alice", Era::Extension, MINUTE).with_lease(lease);
        let id = created.id.clone();
        runner.create(created).await.unwrap();
        for _ in 0..3 {
            runner.renew(&id, SystemTime::now() + lease).await.unwrap();
        }
        let fields = task_fields(&url, &prefix, &id, &["v", "l"]).await;
        assert_eq!(
            fields[0].as_deref(),
            Some("1"),
            "renewals leave the version"
        );
        assert!(
            fields[1]
                .as_deref()
                .is_some_and(|l| l.parse::<u64>().is_ok())
        );
        tokio::time::sleep(lease + Duration::from_millis(50)).await;
        let mut reads = tokio::task::JoinSet::new();
        for n in 0..20 {
            let (store, id) = (Arc::clone(&readers[n % 2]), id.clone());
            reads.spawn(async move { store.get(&id, "alice", Era::Extension).await });
        }
        let mut seen = Vec::new();
        while let Some(read) = reads.join_next().await {
            seen.push(read.unwrap().unwrap());
        }
        assert!(seen.iter().all(|t| t == &seen[0]), "one failure for all");
        assert_eq!(seen[0].status, TaskStatus::Failed);
        let fields = task_fields(&url, &prefix, &id, &["v", "l"]).await;
        assert_eq!(fields[0].as_deref(), Some("2"), "written once");
        assert_eq!(fields[1].as_deref(), Some("end"));
        assert_eq!(
            runner.renew(&id, SystemTime::now() + lease).await,
            Err(StoreRefusal::Refused(barrel_mcp::task::Refused::Terminal))
        );
    })
    .await;
}

#[tokio::test]
async fn nothing_is_left_in_redis_after_the_ttl() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("ttl");
        let store = store_on(&url, &prefix, TaskLimits::default()).await;
        let ttl = Duration::from_millis(300);
        for owner in ["alice", "bob"] {
            let mut anonymous = task(&format!("session-{owner}"), Era::Sessions, ttl);
            anonymous.anonymous = true;
            store.create(anonymous).await.unwrap();
            let created = task(owner, Era::Extension, ttl).with_lease(MINUTE);
            let id = created.id.clone();
            store.create(created).await.unwrap();
            store
                .update(&id, owner, Era::Extension, &|t: &mut TaskRecord| {
                    t.set_status(TaskStatus::InputRequired)
                })
                .await
                .unwrap();
        }
        assert!(!keys_under(&url, &prefix).await.is_empty());
        // No purge: Redis expires every key by itself.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = keys_under(&url, &prefix).await;
            if left.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "keys outlived the TTL: {left:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn purge_leaves_only_live_tasks() {
    within(async {
        let url = shared().url();
        let prefix = unique_prefix("purge");
        let limits = TaskLimits {
            max_per_owner: 1_000,
            ..TaskLimits::default()
        };
        let store = store_on(&url, &prefix, limits).await;
        let mut ids = Vec::new();
        for n in 0..600 {
            // More than one purge batch; the owners vary so several indexes fill.
            let created = task(&format!("owner-{}", n % 7), Era::Sessions, MINUTE);
            ids.push(created.id.clone());
            store.create(created).await.unwrap();
        }
        let live = task("alice", Era::Sessions, 10 * MINUTE);
        store.create(live.clone()).await.unwrap();
        assert_eq!(store.purge(SystemTime::now() + 2 * MINUTE).await, 600);
        let mut left = keys_under(&url, &prefix).await;
        left.sort();
        let expected = [
            format!("{prefix}:t:{{{}}}", live.id),
            format!("{prefix}:tasks"),
        ];
        // The live task's own key, the total index, its owner's quota and list: nothing else.
        assert_eq!(left.len(), 4, "{left:?}");
        assert!(expected.iter().all(|k| left.contains(k)), "{left:?}");
        assert_eq!(store.get(&live.id, "alice", Era::Sessions).await, Ok(live));
        assert_eq!(
            store.get(&ids[0], "owner-0", Era::Sessions).await,
            Err(StoreRefusal::NotFound)
        );
    })
    .await;
}

#[tokio::test]
async fn redis_down_is_unavailable_not_not_found() {
    within(async {
        let mut redis = RedisProcess::start(&[]);
        let store = store_on(&redis.url(), &unique_prefix("down"), TaskLimits::default()).await;
        let created = task("alice", Era::Extension, MINUTE);
        let id = created.id.clone();
        store.create(created).await.unwrap();
        redis.kill();
        assert!(!redis.answers_ping());
        let started = Instant::now();
        let unavailable =
            |r: &Result<_, StoreRefusal>| matches!(r, Err(StoreRefusal::Unavailable(_)));
        let got = store.get(&id, "alice", Era::Extension).await;
        assert!(unavailable(&got), "{got:?}");
        let updated = store
            .update(&id, "alice", Era::Extension, &|t: &mut TaskRecord| {
                t.cancel()
            })
            .await;
        assert!(unavailable(&updated), "{updated:?}");
        let listed = store.list("alice", Era::Extension, None, 10).await;
        assert!(
            matches!(listed, Err(StoreRefusal::Unavailable(_))),
            "{listed:?}"
        );
        let created = store.create(task("alice", Era::Extension, MINUTE)).await;
        assert!(
            matches!(created, Err(StoreRefusal::Unavailable(_))),
            "{created:?}"
        );
        assert_eq!(store.purge(SystemTime::now()).await, 0);
        // It fails fast: each request during an outage is answered (in about 0.5 s), not
        // held.
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "took {:?}",
            started.elapsed()
        );
        // A fresh connection is refused as unavailable too.
        let refused = RedisTaskStore::connect(&redis.url(), TaskLimits::default()).await;
        assert!(
            matches!(refused, Err(StoreRefusal::Unavailable(_))),
            "{refused:?}"
        );
        // Redis comes back (empty): the same store serves again, no restart of ours needed.
        redis.restart();
        let deadline = Instant::now() + Duration::from_secs(5);
        let again = task("alice", Era::Extension, MINUTE);
        loop {
            match store.create(again.clone()).await {
                Ok(()) => break,
                Err(StoreRefusal::Unavailable(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => panic!("no recovery: {other:?}"),
            }
        }
        assert_eq!(
            store.get(&again.id, "alice", Era::Extension).await,
            Ok(again)
        );
        // The data went with the old server: the first task is unknown now, as it should be.
        assert_eq!(
            store.get(&id, "alice", Era::Extension).await,
            Err(StoreRefusal::NotFound)
        );
    })
    .await;
}

#[tokio::test]
async fn no_password_in_debug_or_errors() {
    within(async {
        let redis = RedisProcess::start(&["--requirepass", "hunter2-secret"]);
        let url = format!("redis://:hunter2-secret@127.0.0.1:{}/", redis.port());
        let store = store_on(&url, &unique_prefix("secret"), TaskLimits::default()).await;
        let created = task("alice", Era::Extension, MINUTE);
        store.create(created.clone()).await.unwrap();
        let debug = format!("{store:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(
            debug.contains(&format!("127.0.0.1:{}", redis.port())),
            "{debug}"
        );
        // A wrong password, an unreachable server, a broken URL: none is quoted back.
        let wrong = format!("redis://:hunter3-secret@127.0.0.1:{}/", redis.port());
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            drop(listener);
            format!("redis://:hunter4-secret@127.0.0.1:{port}/")
        };
        for url in [wrong, closed, "redis://:hunter5-secret@[::1/".to_owned()] {
            match RedisTaskStore::connect(&url, TaskLimits::default()).await {
                Err(StoreRefusal::Unavailable(why)) => assert!(!why.contains("hunter"), "{why}"),
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
}
