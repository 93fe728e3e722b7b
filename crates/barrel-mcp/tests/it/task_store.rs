//! One suite for every [`TaskStore`]: the contract the server relies on, run against
//! [`MemoryTaskStore`] here and against `RedisTaskStore` (feature `redis`) on a real
//! `redis-server` in `task_store/redis.rs`, with the same assertions.
//!
//! Each check gets a [`Make`]: a fresh, empty store with the limits it asks for. The checks of
//! the runner's lease are in `task_store/lease.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use barrel_mcp::peer::BoxFuture;
use barrel_mcp::task::{
    Era, MemoryTaskStore, Refused, StoreRefusal, TaskLimits, TaskOutcome, TaskRecord, TaskStore,
    cursor_after, new_task_id,
};
use barrel_mcp::types::TaskStatus;
use serde_json::json;

mod lease;
#[cfg(feature = "redis")]
mod redis;

pub(crate) use lease::{
    a_finished_task_stays_finished_after_its_lease, a_lapsed_lease_fails_the_task_once_on_get,
    a_lapsed_lease_fails_waiting_tasks_on_update_and_list, a_renewed_task_is_not_failed,
};

/// Makes a fresh, empty store with these limits.
pub(crate) type Make =
    Box<dyn Fn(TaskLimits) -> BoxFuture<'static, Arc<dyn TaskStore>> + Send + Sync>;

pub(crate) const MINUTE: Duration = Duration::from_secs(60);

/// A `working` task of `owner` in `era`, kept for `ttl`.
pub(crate) fn task(owner: &str, era: Era, ttl: Duration) -> TaskRecord {
    TaskRecord::new(
        new_task_id().expect("randomness"),
        owner,
        era,
        Some(ttl),
        Duration::from_secs(1),
    )
}

fn finish(t: &mut TaskRecord) -> Result<(), Refused> {
    t.finish(TaskOutcome::Result(json!({"content": []})))
}

/// Polls `get` until the task is gone (its TTL passed), within 5 s.
async fn until_gone(store: &dyn TaskStore, id: &str, owner: &str, era: Era) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match store.get(id, owner, era).await {
            Err(StoreRefusal::NotFound) => return,
            Ok(_) => assert!(Instant::now() < deadline, "the task outlived its TTL"),
            Err(other) => panic!("get failed: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Expands to one test per check, each on stores from `$make()`.
macro_rules! task_store_suite {
    ($make:path) => {
        task_store_suite!(@tests $make;
            create_get_update_list_purge,
            owners_and_eras_are_isolated,
            the_owner_cap_refuses_and_allocates_nothing,
            the_anonymous_cap_is_shared_by_anonymous_callers,
            the_total_cap_counts_every_owner,
            expired_tasks_give_their_places_back,
            refused_changes_leave_the_task_as_it_was,
            terminal_states_are_sticky,
            expired_tasks_are_invisible_and_purged,
            a_cursor_walks_every_task_in_creation_order,
            a_bad_cursor_is_not_found,
            a_lapsed_lease_fails_waiting_tasks_on_update_and_list,
            a_renewed_task_is_not_failed,
            a_finished_task_stays_finished_after_its_lease,
        );
        task_store_suite!(@threaded $make;
            concurrent_updates_all_apply_exactly_once,
            cancel_racing_finish_has_one_winner,
            a_lapsed_lease_fails_the_task_once_on_get,
        );
    };
    (@tests $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                $crate::support::within($crate::task_store::$check(&$make())).await;
            }
        )*
    };
    (@threaded $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                $crate::support::within($crate::task_store::$check(&$make())).await;
            }
        )*
    };
}
#[cfg(feature = "redis")]
pub(crate) use task_store_suite;

mod memory {
    use super::*;

    fn make() -> Make {
        Box::new(|limits| {
            Box::pin(async move { Arc::new(MemoryTaskStore::new(limits)) as Arc<dyn TaskStore> })
        })
    }

    task_store_suite!(make);
}

pub(crate) async fn create_get_update_list_purge(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let mut created = task("alice", Era::Extension, MINUTE);
    created.status_message = Some("queued".into());
    created
        .input_requests
        .insert("q1".into(), json!({"method": "elicitation/create"}));
    let id = created.id.clone();
    store.create(created.clone()).await.unwrap();
    // What comes back is what went in, to the nanosecond.
    assert_eq!(
        store.get(&id, "alice", Era::Extension).await.unwrap(),
        created
    );
    let ask = |t: &mut TaskRecord| t.set_status(TaskStatus::InputRequired);
    let asked = store
        .update(&id, "alice", Era::Extension, &ask)
        .await
        .unwrap();
    assert_eq!(asked.status, TaskStatus::InputRequired);
    assert_eq!(
        store.get(&id, "alice", Era::Extension).await.unwrap(),
        asked
    );
    let done = store
        .update(&id, "alice", Era::Extension, &finish)
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert!(done.input_requests.is_empty());
    assert_eq!(
        done.outcome,
        Some(TaskOutcome::Result(json!({"content": []})))
    );
    let listed = store.list("alice", Era::Extension, None, 10).await.unwrap();
    assert_eq!(listed, std::slice::from_ref(&done));
    assert!(
        store
            .list("alice", Era::Extension, None, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.purge(SystemTime::now()).await,
        0,
        "nothing expired yet"
    );
    assert_eq!(store.purge(SystemTime::now() + 2 * MINUTE).await, 1);
    assert_eq!(
        store.get(&id, "alice", Era::Extension).await,
        Err(StoreRefusal::NotFound)
    );
    assert!(
        store
            .list("alice", Era::Extension, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // A task without TTL is never purged.
    let forever = TaskRecord::new(new_task_id().unwrap(), "alice", Era::Sessions, None, MINUTE);
    store.create(forever.clone()).await.unwrap();
    assert_eq!(store.purge(SystemTime::now() + 1000 * MINUTE).await, 0);
    assert_eq!(
        store.get(&forever.id, "alice", Era::Sessions).await,
        Ok(forever)
    );
}

pub(crate) async fn owners_and_eras_are_isolated(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let mine = task("alice", Era::Extension, MINUTE);
    let id = mine.id.clone();
    store.create(mine).await.unwrap();
    for (owner, era) in [
        ("bob", Era::Extension),
        ("alice", Era::Sessions),
        ("", Era::Extension),
    ] {
        assert_eq!(
            store.get(&id, owner, era).await,
            Err(StoreRefusal::NotFound)
        );
        let cancel = |t: &mut TaskRecord| t.cancel();
        assert_eq!(
            store.update(&id, owner, era, &cancel).await,
            Err(StoreRefusal::NotFound)
        );
        assert!(store.list(owner, era, None, 10).await.unwrap().is_empty());
    }
    assert_eq!(
        store.get("no-such-task", "alice", Era::Extension).await,
        Err(StoreRefusal::NotFound)
    );
    // Bob's attempts changed nothing.
    let seen = store.get(&id, "alice", Era::Extension).await.unwrap();
    assert_eq!(seen.status, TaskStatus::Working);
}

pub(crate) async fn the_owner_cap_refuses_and_allocates_nothing(make: &Make) {
    let store = make(TaskLimits {
        max_per_owner: 2,
        ..TaskLimits::default()
    })
    .await;
    for _ in 0..2 {
        store
            .create(task("alice", Era::Sessions, MINUTE))
            .await
            .unwrap();
    }
    let refused = task("alice", Era::Sessions, MINUTE);
    let refused_id = refused.id.clone();
    let full = store.create(refused).await;
    assert!(
        matches!(full, Err(StoreRefusal::Full(ref why)) if why.contains("per requestor")),
        "{full:?}"
    );
    assert_eq!(
        store.get(&refused_id, "alice", Era::Sessions).await,
        Err(StoreRefusal::NotFound)
    );
    assert_eq!(
        store
            .list("alice", Era::Sessions, None, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    // The cap is per owner, across eras.
    let other_era = store.create(task("alice", Era::Extension, MINUTE)).await;
    assert!(matches!(other_era, Err(StoreRefusal::Full(_))));
    store
        .create(task("bob", Era::Sessions, MINUTE))
        .await
        .unwrap();
}

pub(crate) async fn the_anonymous_cap_is_shared_by_anonymous_callers(make: &Make) {
    let store = make(TaskLimits {
        max_per_owner: 1,
        max_anonymous: 3,
        ..TaskLimits::default()
    })
    .await;
    for n in 0..3 {
        let mut anonymous = task(&format!("session-{n}"), Era::Sessions, MINUTE);
        anonymous.anonymous = true;
        store.create(anonymous).await.unwrap();
    }
    let mut fourth = task("session-3", Era::Sessions, MINUTE);
    fourth.anonymous = true;
    let full = store.create(fourth).await;
    assert!(
        matches!(full, Err(StoreRefusal::Full(ref why)) if why.contains("anonymous")),
        "{full:?}"
    );
    // Principals keep their own caps.
    store
        .create(task("alice", Era::Sessions, MINUTE))
        .await
        .unwrap();
}

pub(crate) async fn the_total_cap_counts_every_owner(make: &Make) {
    let store = make(TaskLimits {
        max_tasks: 3,
        ..TaskLimits::default()
    })
    .await;
    for owner in ["alice", "bob", "carol"] {
        store
            .create(task(owner, Era::Sessions, MINUTE))
            .await
            .unwrap();
    }
    let full = store.create(task("dave", Era::Sessions, MINUTE)).await;
    assert!(matches!(full, Err(StoreRefusal::Full(_))), "{full:?}");
    assert!(
        store
            .list("dave", Era::Sessions, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn expired_tasks_give_their_places_back(make: &Make) {
    let store = make(TaskLimits {
        max_per_owner: 1,
        max_tasks: 2,
        ..TaskLimits::default()
    })
    .await;
    let short = task("dave", Era::Sessions, Duration::from_millis(200));
    let id = short.id.clone();
    store.create(short).await.unwrap();
    store
        .create(task("erin", Era::Sessions, MINUTE))
        .await
        .unwrap();
    assert!(matches!(
        store.create(task("dave", Era::Sessions, MINUTE)).await,
        Err(StoreRefusal::Full(_))
    ));
    until_gone(&*store, &id, "dave", Era::Sessions).await;
    // Both the owner's place and the total's are free again, with no purge in between.
    store
        .create(task("dave", Era::Sessions, MINUTE))
        .await
        .unwrap();
}

pub(crate) async fn refused_changes_leave_the_task_as_it_was(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let created = task("alice", Era::Extension, MINUTE);
    let id = created.id.clone();
    store.create(created.clone()).await.unwrap();
    assert_eq!(
        store
            .update(&id, "alice", Era::Extension, &|t: &mut TaskRecord| t
                .set_status(TaskStatus::Working))
            .await,
        Err(StoreRefusal::Refused(Refused::Invalid))
    );
    // A change that edits the record and then is refused: nothing of it is kept.
    let half = |t: &mut TaskRecord| {
        t.status_message = Some("changed".into());
        t.set_status(TaskStatus::Completed)
    };
    assert_eq!(
        store.update(&id, "alice", Era::Extension, &half).await,
        Err(StoreRefusal::Refused(Refused::Invalid))
    );
    // Identity fields never change.
    let steal = |t: &mut TaskRecord| {
        t.owner = "mallory".into();
        Ok(())
    };
    assert_eq!(
        store.update(&id, "alice", Era::Extension, &steal).await,
        Err(StoreRefusal::Refused(Refused::Invalid))
    );
    let backdate = |t: &mut TaskRecord| {
        t.created_at -= Duration::from_secs(1);
        Ok(())
    };
    assert_eq!(
        store.update(&id, "alice", Era::Extension, &backdate).await,
        Err(StoreRefusal::Refused(Refused::Invalid))
    );
    assert_eq!(store.get(&id, "alice", Era::Extension).await, Ok(created));
    assert!(store.get(&id, "mallory", Era::Extension).await.is_err());
}

pub(crate) async fn terminal_states_are_sticky(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let created = task("alice", Era::Sessions, MINUTE);
    let id = created.id.clone();
    store.create(created).await.unwrap();
    let cancel = |t: &mut TaskRecord| t.cancel();
    let cancelled = store
        .update(&id, "alice", Era::Sessions, &cancel)
        .await
        .unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let sneaky = |t: &mut TaskRecord| {
        t.status_message = Some("late".into());
        finish(t)
    };
    let ask = |t: &mut TaskRecord| t.set_status(TaskStatus::InputRequired);
    for change in [
        &cancel as &(dyn Fn(&mut TaskRecord) -> _ + Send + Sync),
        &sneaky,
        &finish,
        &ask,
    ] {
        assert_eq!(
            store.update(&id, "alice", Era::Sessions, change).await,
            Err(StoreRefusal::Refused(Refused::Terminal))
        );
    }
    assert_eq!(store.get(&id, "alice", Era::Sessions).await, Ok(cancelled));
}

pub(crate) async fn expired_tasks_are_invisible_and_purged(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let short = task("alice", Era::Sessions, Duration::from_millis(200));
    let short_id = short.id.clone();
    store.create(short).await.unwrap();
    let long = task("alice", Era::Sessions, MINUTE);
    store.create(long.clone()).await.unwrap();
    assert_eq!(
        store
            .list("alice", Era::Sessions, None, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    until_gone(&*store, &short_id, "alice", Era::Sessions).await;
    assert_eq!(
        store
            .update(&short_id, "alice", Era::Sessions, &|t: &mut TaskRecord| t
                .cancel())
            .await,
        Err(StoreRefusal::NotFound)
    );
    assert_eq!(
        store.list("alice", Era::Sessions, None, 10).await.unwrap(),
        std::slice::from_ref(&long)
    );
    // At most the expired one is forgotten now (a store may have dropped it on lookup); the
    // live one stays.
    assert!(store.purge(SystemTime::now()).await <= 1);
    assert_eq!(store.get(&long.id, "alice", Era::Sessions).await, Ok(long));
}

pub(crate) async fn a_cursor_walks_every_task_in_creation_order(make: &Make) {
    let store = make(TaskLimits::default()).await;
    let mut ids = Vec::new();
    for n in 0..7 {
        // One of them expires before the walk; the walk skips it.
        let ttl = if n == 3 {
            Duration::from_millis(100)
        } else {
            MINUTE
        };
        let created = task("alice", Era::Extension, ttl);
        ids.push(created.id.clone());
        store.create(created).await.unwrap();
        // Distinct creation times (a coarse clock would order equal ones by id).
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    store
        .create(task("bob", Era::Extension, MINUTE))
        .await
        .unwrap();
    until_gone(&*store, &ids[3], "alice", Era::Extension).await;
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = store
            .list("alice", Era::Extension, cursor.as_deref(), 2)
            .await
            .unwrap();
        pages += 1;
        assert!(page.len() <= 2);
        walked.extend(page.iter().map(|t| t.id.clone()));
        match page.last() {
            Some(last) if page.len() == 2 => cursor = Some(cursor_after(last)),
            _ => break,
        }
    }
    let expected: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|(n, _)| *n != 3)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(walked, expected);
    assert_eq!(pages, 4);
    // A cursor holds when the task it came from is gone.
    let first = store.list("alice", Era::Extension, None, 2).await.unwrap();
    let cursor = cursor_after(&first[1]);
    store.purge(SystemTime::now()).await;
    let cancel = |t: &mut TaskRecord| t.cancel();
    store
        .update(&ids[1], "alice", Era::Extension, &cancel)
        .await
        .unwrap();
    let rest = store
        .list("alice", Era::Extension, Some(&cursor), 10)
        .await
        .unwrap();
    assert_eq!(rest.len(), 4);
    assert_eq!(rest[0].id, ids[2]);
}

pub(crate) async fn a_bad_cursor_is_not_found(make: &Make) {
    let store = make(TaskLimits::default()).await;
    for bad in ["nope", "12x:abc", ""] {
        assert_eq!(
            store.list("alice", Era::Sessions, Some(bad), 10).await,
            Err(StoreRefusal::NotFound),
            "{bad:?}"
        );
    }
}

/// Many updaters at once, each adding one to a counter kept in the status message: every one
/// of them lands, none twice, none lost.
pub(crate) async fn concurrent_updates_all_apply_exactly_once(make: &Make) {
    const UPDATERS: usize = 50;
    let store = make(TaskLimits::default()).await;
    let created = task("alice", Era::Extension, MINUTE);
    let id = created.id.clone();
    store.create(created).await.unwrap();
    let mut updaters = tokio::task::JoinSet::new();
    for _ in 0..UPDATERS {
        let (store, id) = (Arc::clone(&store), id.clone());
        updaters.spawn(async move {
            let increment = |t: &mut TaskRecord| {
                let count: usize = t.status_message.as_deref().unwrap_or("0").parse().unwrap();
                t.status_message = Some((count + 1).to_string());
                Ok(())
            };
            store
                .update(&id, "alice", Era::Extension, &increment)
                .await
                .map(|t| t.status_message)
        });
    }
    let mut seen = Vec::new();
    while let Some(done) = updaters.join_next().await {
        let after: usize = done.unwrap().unwrap().unwrap().parse().unwrap();
        seen.push(after);
    }
    // Each updater saw its own increment: the values after are exactly 1..=50.
    seen.sort_unstable();
    assert_eq!(seen, (1..=UPDATERS).collect::<Vec<_>>());
    let last = store.get(&id, "alice", Era::Extension).await.unwrap();
    assert_eq!(last.status_message, Some(UPDATERS.to_string()));
}

/// A cancel and a completion of the same task at once: exactly one wins, and the task ends in
/// the winner's state.
pub(crate) async fn cancel_racing_finish_has_one_winner(make: &Make) {
    const RACES: usize = 100;
    let store = make(TaskLimits {
        max_per_owner: 2 * RACES,
        ..TaskLimits::default()
    })
    .await;
    let mut races = tokio::task::JoinSet::new();
    for _ in 0..RACES {
        let store = Arc::clone(&store);
        races.spawn(async move {
            let created = task("alice", Era::Extension, MINUTE);
            let id = created.id.clone();
            store.create(created).await.unwrap();
            let (a, b) = (Arc::clone(&store), Arc::clone(&store));
            let (cancel_id, finish_id) = (id.clone(), id.clone());
            let cancel = tokio::spawn(async move {
                a.update(
                    &cancel_id,
                    "alice",
                    Era::Extension,
                    &|t: &mut TaskRecord| t.cancel(),
                )
                .await
            });
            let finish = tokio::spawn(async move {
                b.update(&finish_id, "alice", Era::Extension, &finish).await
            });
            let (cancelled, finished) = (cancel.await.unwrap(), finish.await.unwrap());
            let loser = if cancelled.is_ok() {
                &finished
            } else {
                &cancelled
            };
            assert_eq!(loser, &Err(StoreRefusal::Refused(Refused::Terminal)));
            assert!(cancelled.is_ok() ^ finished.is_ok(), "exactly one wins");
            let status = store
                .get(&id, "alice", Era::Extension)
                .await
                .unwrap()
                .status;
            let expected = if cancelled.is_ok() {
                TaskStatus::Cancelled
            } else {
                TaskStatus::Completed
            };
            assert_eq!(status, expected);
        });
    }
    while let Some(race) = races.join_next().await {
        race.unwrap();
    }
}
