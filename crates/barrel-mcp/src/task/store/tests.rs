//! The memory store against the store contract.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use barrel_mcp_types::TaskStatus;
use serde_json::json;

use super::*;
use crate::task::new_task_id;
use crate::task::record::TaskOutcome;

fn record(owner: &str, era: Era, ttl: Duration) -> TaskRecord {
    TaskRecord::new(
        new_task_id().unwrap(),
        owner,
        era,
        Some(ttl),
        Duration::from_secs(1),
    )
}

const MINUTE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn tasks_are_seen_by_their_owner_in_their_era_only() {
    let store = MemoryTaskStore::new(TaskLimits::default());
    let task = record("alice", Era::Extension, MINUTE);
    let id = task.id.clone();
    store.create(task).await.unwrap();
    assert_eq!(
        store.get(&id, "alice", Era::Extension).await.unwrap().id,
        id
    );
    assert_eq!(
        store.get(&id, "bob", Era::Extension).await,
        Err(StoreRefusal::NotFound)
    );
    assert_eq!(
        store.get(&id, "alice", Era::Sessions).await,
        Err(StoreRefusal::NotFound)
    );
    let cancel = |t: &mut TaskRecord| t.cancel();
    assert_eq!(
        store.update(&id, "bob", Era::Extension, &cancel).await,
        Err(StoreRefusal::NotFound)
    );
    assert!(
        store
            .list("bob", Era::Extension, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn caps_refuse_and_allocate_nothing() {
    let limits = TaskLimits {
        max_per_owner: 2,
        max_tasks: 3,
        ..TaskLimits::default()
    };
    let store = MemoryTaskStore::new(limits);
    for _ in 0..2 {
        store
            .create(record("alice", Era::Sessions, MINUTE))
            .await
            .unwrap();
    }
    let refused = store.create(record("alice", Era::Sessions, MINUTE)).await;
    assert!(matches!(refused, Err(StoreRefusal::Full(ref why)) if why.contains("per requestor")));
    store
        .create(record("bob", Era::Sessions, MINUTE))
        .await
        .unwrap();
    let full = store.create(record("carol", Era::Sessions, MINUTE)).await;
    assert!(matches!(full, Err(StoreRefusal::Full(_))));
    assert_eq!(store.len(), 3);
    // Expired tasks give their places back.
    let short = TaskLimits {
        max_per_owner: 1,
        ..TaskLimits::default()
    };
    let store = MemoryTaskStore::new(short);
    store
        .create(record("dave", Era::Sessions, Duration::from_millis(1)))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .create(record("dave", Era::Sessions, MINUTE))
        .await
        .unwrap();
    assert_eq!(
        TaskLimits::default().ttl_for(Some(Duration::ZERO)),
        Duration::from_secs(1)
    );
    assert_eq!(
        StoreRefusal::NotFound.to_error_object().code,
        barrel_mcp_types::ErrorCode::INVALID_PARAMS
    );
}

#[tokio::test]
async fn a_refused_change_leaves_the_task_as_it_was() {
    let store = MemoryTaskStore::new(TaskLimits::default());
    let task = record("alice", Era::Extension, MINUTE);
    let id = task.id.clone();
    store.create(task).await.unwrap();
    let finish = |t: &mut TaskRecord| t.finish(TaskOutcome::Result(json!({"content": []})));
    let done = store
        .update(&id, "alice", Era::Extension, &finish)
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    // A change that edits the record and then is refused by it: nothing of it is kept.
    let sneaky = |t: &mut TaskRecord| {
        t.status_message = Some("changed".into());
        t.cancel()
    };
    assert_eq!(
        store.update(&id, "alice", Era::Extension, &sneaky).await,
        Err(StoreRefusal::Refused(Refused::Terminal))
    );
    let after = store.get(&id, "alice", Era::Extension).await.unwrap();
    assert_eq!(after.status, TaskStatus::Completed);
    assert_eq!(after.status_message, None);
}

#[tokio::test]
async fn lists_page_in_creation_order() {
    let store = MemoryTaskStore::new(TaskLimits::default());
    let mut ids = Vec::new();
    for _ in 0..5 {
        let task = record("alice", Era::Sessions, MINUTE);
        ids.push(task.id.clone());
        store.create(task).await.unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    let first = store.list("alice", Era::Sessions, None, 2).await.unwrap();
    assert_eq!(
        first.iter().map(|t| &t.id).collect::<Vec<_>>(),
        [&ids[0], &ids[1]]
    );
    let cursor = cursor_after(&first[1]);
    let rest = store
        .list("alice", Era::Sessions, Some(&cursor), 10)
        .await
        .unwrap();
    assert_eq!(rest.len(), 3);
    assert_eq!(rest[0].id, ids[2]);
    // The cursor holds when the task it came from is gone.
    let cancel = |t: &mut TaskRecord| t.cancel();
    store
        .update(&ids[1], "alice", Era::Sessions, &cancel)
        .await
        .unwrap();
    assert_eq!(
        store
            .list("alice", Era::Sessions, Some(&cursor), 10)
            .await
            .unwrap()
            .len(),
        3
    );
    // Identity fields never change.
    let steal = |t: &mut TaskRecord| {
        t.owner = "mallory".into();
        Ok(())
    };
    assert_eq!(
        store.update(&ids[2], "alice", Era::Sessions, &steal).await,
        Err(StoreRefusal::Refused(Refused::Invalid))
    );
    assert_eq!(
        store.list("alice", Era::Sessions, Some("nope"), 10).await,
        Err(StoreRefusal::NotFound)
    );
}

#[tokio::test]
async fn expired_tasks_are_invisible_then_purged() {
    let store = MemoryTaskStore::new(TaskLimits::default());
    let task = record("alice", Era::Sessions, Duration::from_millis(1));
    let id = task.id.clone();
    store.create(task).await.unwrap();
    store
        .create(record("alice", Era::Sessions, MINUTE))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        store.get(&id, "alice", Era::Sessions).await,
        Err(StoreRefusal::NotFound)
    );
    assert_eq!(
        store.len(),
        1,
        "the expired task was forgotten when looked up"
    );
    let far = SystemTime::now() + Duration::from_secs(120);
    assert_eq!(store.purge(far).await, 1);
    assert!(store.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_racing_finish_always_ends_in_one_terminal_state() {
    let store = Arc::new(MemoryTaskStore::new(TaskLimits {
        max_per_owner: 2_000,
        ..TaskLimits::default()
    }));
    let mut races = tokio::task::JoinSet::new();
    for _ in 0..1_000 {
        let store = Arc::clone(&store);
        races.spawn(async move {
            // A TTL no loaded machine outlasts within one race, so `get` still finds it.
            let task = record("alice", Era::Extension, Duration::from_secs(5));
            let id = task.id.clone();
            store.create(task).await.unwrap();
            let (a, b) = (Arc::clone(&store), Arc::clone(&store));
            let (cancel_id, finish_id) = (id.clone(), id.clone());
            let cancel = tokio::spawn(async move {
                let change = |t: &mut TaskRecord| t.cancel();
                a.update(&cancel_id, "alice", Era::Extension, &change)
                    .await
                    .is_ok()
            });
            let finish = tokio::spawn(async move {
                let change =
                    |t: &mut TaskRecord| t.finish(TaskOutcome::Result(json!({"content": []})));
                b.update(&finish_id, "alice", Era::Extension, &change)
                    .await
                    .is_ok()
            });
            let (cancelled, finished) = (cancel.await.unwrap(), finish.await.unwrap());
            assert!(cancelled ^ finished, "exactly one of them wins");
            let status = store
                .get(&id, "alice", Era::Extension)
                .await
                .unwrap()
                .status;
            assert_eq!(
                status,
                if cancelled {
                    TaskStatus::Cancelled
                } else {
                    TaskStatus::Completed
                }
            );
        });
    }
    while let Some(race) = races.join_next().await {
        race.unwrap();
    }
    // No record outlives its TTL.
    let later = SystemTime::now() + Duration::from_secs(6);
    assert_eq!(store.purge(later).await, 1_000);
    assert!(store.is_empty());
}
