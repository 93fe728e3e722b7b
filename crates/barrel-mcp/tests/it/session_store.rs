//! One suite for every [`SessionStore`]: the contract the HTTP layer relies on, run against
//! [`MemorySessionStore`] here and against `RedisSessionStore` (feature `redis`) on a real
//! `redis-server` in `session_store/redis.rs`, with the same assertions.
//!
//! Each check gets a [`Make`]: a fresh, empty store (limits go with each call).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, UNIX_EPOCH};

use barrel_mcp::peer::BoxFuture;
use barrel_mcp::store::{
    Created, MemorySessionStore, NodeTag, SessionChange, SessionLimits, SessionRecord,
    SessionStore, Updated,
};
use barrel_mcp::types::{
    ClientCapabilities, Implementation, LoggingLevel, ProtocolVersion, RootsCapability,
};
use serde_json::json;

mod get_owner;
#[cfg(feature = "redis")]
mod redis;

pub(crate) use self::get_owner::{
    concurrent_takeovers_of_the_get_stream_have_one_winner,
    the_get_owner_changes_only_from_the_expected_one,
};

/// Makes a fresh, empty store.
pub(crate) type Make = Box<dyn Fn() -> BoxFuture<'static, Arc<dyn SessionStore>> + Send + Sync>;

/// A session id no other check uses.
pub(crate) fn sid() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("sess-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A fresh session with a new id, counted against `quota`.
pub(crate) fn session(quota: Option<&str>) -> SessionRecord {
    let mut record = SessionRecord::new(
        sid(),
        ProtocolVersion::V2025_11_25,
        ClientCapabilities::default(),
        Implementation::new("test-client", "1.0"),
    );
    record.quota = quota.map(str::to_owned);
    record
}

/// Limits with an idle TTL of `ttl` and the default caps.
pub(crate) fn ttl(ttl: Duration) -> SessionLimits {
    SessionLimits {
        idle_ttl: ttl,
        ..SessionLimits::default()
    }
}

/// Polls `load` until the session is gone (its TTL passed), within 5 s.
pub(crate) async fn until_gone(store: &dyn SessionStore, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.load(id).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the session outlived its TTL");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Expands to one test per check, each on a store from `$make()`.
macro_rules! session_store_suite {
    ($make:path) => {
        session_store_suite!(@tests $make;
            every_field_round_trips,
            a_duplicate_id_exists_and_changes_nothing,
            the_quota_cap_refuses_and_delete_frees_a_share,
            the_total_cap_counts_every_session,
            expiry_frees_the_shares,
            each_change_applies_and_unknown_ids_are_unknown,
            the_subscription_cap_refuses_new_uris,
            touch_extends_life,
            an_expired_session_is_absent,
            the_get_owner_changes_only_from_the_expected_one,
            delete_uninitialized_spares_an_initialized_session,
        );
        session_store_suite!(@threaded $make;
            concurrent_creates_never_exceed_a_cap,
            concurrent_takeovers_of_the_get_stream_have_one_winner,
        );
    };
    (@tests $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                $crate::support::within($crate::session_store::$check(&$make())).await;
            }
        )*
    };
    (@threaded $make:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                $crate::support::within($crate::session_store::$check(&$make())).await;
            }
        )*
    };
}
#[cfg(feature = "redis")]
pub(crate) use session_store_suite;

mod memory {
    use super::*;

    fn make() -> Make {
        Box::new(|| {
            Box::pin(async { Arc::new(MemorySessionStore::new()) as Arc<dyn SessionStore> })
        })
    }

    session_store_suite!(make);
}

/// A record with every field set away from its default.
pub(crate) fn full_record() -> SessionRecord {
    let capabilities = ClientCapabilities {
        roots: Some(RootsCapability {
            list_changed: Some(true),
        }),
        experimental: json!({"x": {"deep": [1, "two"]}}).as_object().cloned(),
        ..ClientCapabilities::default()
    };
    let mut record = SessionRecord::new(
        sid(),
        ProtocolVersion::V2024_11_05,
        capabilities,
        Implementation::new("client", "2.1")
            .with_title("A client: \"quoted\" ✓")
            .with_website_url("https://example.com/"),
    );
    record.principal = Some("alice@example.com".into());
    record.quota = Some("p:alice@example.com".into());
    record.legacy = true;
    record.initialized = true;
    record.log_level = Some(LoggingLevel::Critical);
    record.subscriptions = BTreeSet::from(["file:///a".to_owned(), "db://b?x=1 y".to_owned()]);
    record.get_owner = NodeTag::new(NodeTag::MAX);
    record.created = UNIX_EPOCH + Duration::new(1_763_000_000, 987_654_321);
    record
}

pub(crate) async fn every_field_round_trips(make: &Make) {
    let store = make().await;
    let full = full_record();
    let limits = SessionLimits::default();
    assert_eq!(store.create(&full, &limits).await, Ok(Created::Created));
    assert_eq!(store.load(&full.id).await, Ok(Some(full.clone())));
    // The defaults come back as defaults (no principal, quota, level, owner, subscription).
    let plain = session(None);
    assert_eq!(store.create(&plain, &limits).await, Ok(Created::Created));
    assert_eq!(store.load(&plain.id).await, Ok(Some(plain.clone())));
    // Every revision a session can have.
    for version in ProtocolVersion::ALL {
        let mut record = session(None);
        record.version = version;
        store.create(&record, &limits).await.unwrap();
        assert_eq!(
            store.load(&record.id).await.unwrap().unwrap().version,
            version
        );
    }
    assert_eq!(store.load("no-such-session").await, Ok(None));
    // Delete forgets it.
    assert_eq!(store.delete(&full.id).await, Ok(true));
    assert_eq!(store.load(&full.id).await, Ok(None));
    assert_eq!(store.delete(&full.id).await, Ok(false));
    assert_eq!(store.load(&plain.id).await, Ok(Some(plain)));
}

pub(crate) async fn a_duplicate_id_exists_and_changes_nothing(make: &Make) {
    let store = make().await;
    let limits = SessionLimits {
        max_per_quota: 1,
        ..SessionLimits::default()
    };
    let first = session(Some("p:alice"));
    assert_eq!(store.create(&first, &limits).await, Ok(Created::Created));
    let mut second = full_record();
    second.id = first.id.clone();
    assert_eq!(store.create(&second, &limits).await, Ok(Created::Exists));
    assert_eq!(store.load(&first.id).await, Ok(Some(first.clone())));
    // Exists comes before the caps: the quota is full, but the answer is about the id.
    let again = first.clone();
    assert_eq!(store.create(&again, &limits).await, Ok(Created::Exists));
}

pub(crate) async fn the_quota_cap_refuses_and_delete_frees_a_share(make: &Make) {
    let store = make().await;
    let limits = SessionLimits {
        max_per_quota: 2,
        ..SessionLimits::default()
    };
    let mut alice = Vec::new();
    for _ in 0..2 {
        let record = session(Some("p:alice"));
        assert_eq!(store.create(&record, &limits).await, Ok(Created::Created));
        alice.push(record);
    }
    let refused = session(Some("p:alice"));
    assert_eq!(
        store.create(&refused, &limits).await,
        Ok(Created::QuotaFull)
    );
    assert_eq!(
        store.load(&refused.id).await,
        Ok(None),
        "nothing was written"
    );
    // Other quotas, and sessions without one, keep their own room.
    for quota in [Some("p:bob"), Some("a:192.0.2.7"), None, None, None] {
        assert_eq!(
            store.create(&session(quota), &limits).await,
            Ok(Created::Created)
        );
    }
    // Deleting frees a share at once.
    assert_eq!(store.delete(&alice[0].id).await, Ok(true));
    assert_eq!(store.create(&refused, &limits).await, Ok(Created::Created));
    assert_eq!(
        store.create(&session(Some("p:alice")), &limits).await,
        Ok(Created::QuotaFull)
    );
}

pub(crate) async fn delete_uninitialized_spares_an_initialized_session(make: &Make) {
    let store = make().await;
    let limits = SessionLimits {
        max_per_quota: 1,
        ..SessionLimits::default()
    };
    let never = session(Some("p:carol"));
    assert_eq!(store.create(&never, &limits).await, Ok(Created::Created));
    assert_eq!(store.delete_uninitialized(&never.id).await, Ok(true));
    assert_eq!(store.load(&never.id).await, Ok(None));
    assert_eq!(
        store.delete_uninitialized(&never.id).await,
        Ok(false),
        "gone already"
    );
    // Its share of the cap is free; a session initialized meanwhile is kept, whole.
    let used = session(Some("p:carol"));
    assert_eq!(store.create(&used, &limits).await, Ok(Created::Created));
    assert_eq!(
        store.update(&used.id, SessionChange::Initialized).await,
        Ok(Updated::Applied)
    );
    assert_eq!(store.delete_uninitialized(&used.id).await, Ok(false));
    let kept = store.load(&used.id).await.unwrap().expect("still there");
    assert!(kept.initialized);
    assert_eq!(
        store.create(&session(Some("p:carol")), &limits).await,
        Ok(Created::QuotaFull),
        "it keeps its share"
    );
    assert_eq!(store.delete(&used.id).await, Ok(true));
}

pub(crate) async fn the_total_cap_counts_every_session(make: &Make) {
    let store = make().await;
    let limits = SessionLimits {
        max_sessions: 3,
        ..SessionLimits::default()
    };
    let mut held = Vec::new();
    for quota in [Some("p:alice"), Some("p:bob"), None] {
        let record = session(quota);
        assert_eq!(store.create(&record, &limits).await, Ok(Created::Created));
        held.push(record);
    }
    for quota in [Some("p:carol"), None] {
        let refused = session(quota);
        assert_eq!(store.create(&refused, &limits).await, Ok(Created::Full));
        assert_eq!(store.load(&refused.id).await, Ok(None));
    }
    // A full quota is named before a full store.
    let tight = SessionLimits {
        max_per_quota: 1,
        ..limits.clone()
    };
    assert_eq!(
        store.create(&session(Some("p:alice")), &tight).await,
        Ok(Created::QuotaFull)
    );
    assert_eq!(store.delete(&held[2].id).await, Ok(true));
    assert_eq!(
        store.create(&session(Some("p:carol")), &limits).await,
        Ok(Created::Created)
    );
    assert_eq!(
        store.create(&session(None), &limits).await,
        Ok(Created::Full)
    );
}

pub(crate) async fn expiry_frees_the_shares(make: &Make) {
    let store = make().await;
    let caps = SessionLimits {
        max_sessions: 2,
        max_per_quota: 1,
        ..SessionLimits::default()
    };
    let short = SessionLimits {
        idle_ttl: Duration::from_millis(200),
        ..caps.clone()
    };
    let brief = session(Some("p:dave"));
    assert_eq!(store.create(&brief, &short).await, Ok(Created::Created));
    assert_eq!(
        store.create(&session(None), &caps).await,
        Ok(Created::Created)
    );
    assert_eq!(
        store.create(&session(Some("p:dave")), &caps).await,
        Ok(Created::QuotaFull)
    );
    assert_eq!(store.create(&session(None), &caps).await, Ok(Created::Full));
    until_gone(&*store, &brief.id).await;
    // Both the quota's share and the total's are free again, with nothing deleted.
    let dave = session(Some("p:dave"));
    assert_eq!(store.create(&dave, &caps).await, Ok(Created::Created));
    // An expired session is no deletion; its id can be used again.
    assert_eq!(store.delete(&brief.id).await, Ok(false));
    assert_eq!(store.delete(&dave.id).await, Ok(true));
    assert_eq!(store.create(&brief, &caps).await, Ok(Created::Created));
}

pub(crate) async fn concurrent_creates_never_exceed_a_cap(make: &Make) {
    const CREATORS: usize = 50;
    const CAP: usize = 10;
    let store = make().await;
    // Once against a quota's cap, once against the total one.
    for (quota, limits) in [
        (
            Some("p:many"),
            SessionLimits {
                max_per_quota: CAP,
                ..SessionLimits::default()
            },
        ),
        (
            None,
            SessionLimits {
                max_sessions: CAP * 2,
                ..SessionLimits::default()
            },
        ),
    ] {
        let mut creators = tokio::task::JoinSet::new();
        for _ in 0..CREATORS {
            let store = Arc::clone(&store);
            let limits = limits.clone();
            creators.spawn(async move {
                let record = session(quota);
                let created = store.create(&record, &limits).await.unwrap();
                (record.id, created)
            });
        }
        let mut admitted = Vec::new();
        while let Some(joined) = creators.join_next().await {
            let (id, created) = joined.unwrap();
            match created {
                Created::Created => admitted.push(id),
                Created::QuotaFull => assert!(quota.is_some()),
                Created::Full => assert!(quota.is_none()),
                Created::Exists => panic!("fresh ids"),
            }
        }
        // The first round's 10 hold 10 of the total's 20 places.
        assert_eq!(admitted.len(), CAP, "{quota:?}");
        for id in &admitted {
            assert!(store.load(id).await.unwrap().is_some());
        }
    }
}

pub(crate) async fn each_change_applies_and_unknown_ids_are_unknown(make: &Make) {
    let store = make().await;
    let record = session(Some("p:alice"));
    let id = record.id.clone();
    store
        .create(&record, &SessionLimits::default())
        .await
        .unwrap();
    let owner = NodeTag::new(7).unwrap();
    let changes = [
        SessionChange::Initialized,
        SessionChange::LogLevel(LoggingLevel::Debug),
        SessionChange::LogLevel(LoggingLevel::Error),
        SessionChange::Subscribe("file:///a".into()),
        SessionChange::Subscribe("file:///b".into()),
        SessionChange::Subscribe("file:///a".into()),
        SessionChange::Unsubscribe("file:///b".into()),
        SessionChange::Unsubscribe("file:///never".into()),
        SessionChange::GetOwner {
            expected: None,
            new: NodeTag::LOCAL,
        },
        SessionChange::GetOwner {
            expected: Some(NodeTag::LOCAL),
            new: owner,
        },
    ];
    for change in &changes {
        assert_eq!(
            store.update(&id, change.clone()).await,
            Ok(Updated::Applied),
            "{change:?}"
        );
    }
    let mut expected = record.clone();
    expected.initialized = true;
    expected.log_level = Some(LoggingLevel::Error);
    expected.subscriptions = BTreeSet::from(["file:///a".to_owned()]);
    expected.get_owner = Some(owner);
    assert_eq!(store.load(&id).await, Ok(Some(expected.clone())));
    // Unsubscribing the last URI leaves an empty set.
    store
        .update(&id, SessionChange::Unsubscribe("file:///a".into()))
        .await
        .unwrap();
    expected.subscriptions.clear();
    assert_eq!(store.load(&id).await, Ok(Some(expected)));
    // An unknown id, or a deleted session: nothing to change, nothing created.
    store.delete(&id).await.unwrap();
    for unknown in [id.as_str(), "no-such-session"] {
        for change in &changes {
            assert_eq!(
                store.update(unknown, change.clone()).await,
                Ok(Updated::Unknown),
                "{change:?}"
            );
        }
        assert_eq!(store.load(unknown).await, Ok(None));
    }
}

pub(crate) async fn the_subscription_cap_refuses_new_uris(make: &Make) {
    let store = make().await;
    let limits = SessionLimits {
        max_subscriptions: 2,
        ..SessionLimits::default()
    };
    let record = session(None);
    let id = record.id.clone();
    store.create(&record, &limits).await.unwrap();
    let subscribe = |uri: &str| SessionChange::Subscribe(uri.to_owned());
    assert_eq!(
        store.update(&id, subscribe("a")).await,
        Ok(Updated::Applied)
    );
    assert_eq!(
        store.update(&id, subscribe("b")).await,
        Ok(Updated::Applied)
    );
    assert_eq!(
        store.update(&id, subscribe("c")).await,
        Ok(Updated::SubscriptionsFull)
    );
    // A URI held already is no new subscription.
    assert_eq!(
        store.update(&id, subscribe("a")).await,
        Ok(Updated::Applied)
    );
    store
        .update(&id, SessionChange::Unsubscribe("a".into()))
        .await
        .unwrap();
    assert_eq!(
        store.update(&id, subscribe("c")).await,
        Ok(Updated::Applied)
    );
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(
        loaded.subscriptions,
        BTreeSet::from(["b".to_owned(), "c".to_owned()])
    );
    // The cap is the session's own: another session created under another cap has its own.
    let roomy = session(None);
    store
        .create(&roomy, &SessionLimits::default())
        .await
        .unwrap();
    for uri in ["a", "b", "c", "d"] {
        assert_eq!(
            store.update(&roomy.id, subscribe(uri)).await,
            Ok(Updated::Applied)
        );
    }
    // And a session created with its subscriptions keeps them.
    let mut restored = session(None);
    restored.subscriptions = BTreeSet::from(["x".to_owned(), "y".to_owned()]);
    store.create(&restored, &limits).await.unwrap();
    assert_eq!(
        store.update(&restored.id, subscribe("z")).await,
        Ok(Updated::SubscriptionsFull)
    );
    assert_eq!(store.load(&restored.id).await, Ok(Some(restored)));
}

pub(crate) async fn touch_extends_life(make: &Make) {
    const TTL: Duration = Duration::from_millis(400);
    let store = make().await;
    let limits = SessionLimits {
        idle_ttl: TTL,
        max_per_quota: 1,
        ..SessionLimits::default()
    };
    let touched = session(Some("p:touched"));
    let left = session(None);
    store.create(&touched, &limits).await.unwrap();
    store.create(&left, &limits).await.unwrap();
    let created = Instant::now();
    tokio::time::sleep(TTL / 2).await;
    assert_eq!(store.touch(&touched.id, TTL).await, Ok(true));
    let refreshed = Instant::now();
    tokio::time::sleep((created + TTL + TTL / 8).saturating_duration_since(Instant::now())).await;
    // Past the first TTL: the untouched one is gone, the touched one lives (with its
    // subscription set and its quota share).
    assert_eq!(store.load(&left.id).await, Ok(None));
    assert_eq!(store.touch(&left.id, TTL).await, Ok(false));
    assert_eq!(store.delete(&left.id).await, Ok(false));
    assert!(
        refreshed.elapsed() < TTL,
        "the machine is too slow for this check ({:?})",
        refreshed.elapsed()
    );
    assert_eq!(store.load(&touched.id).await, Ok(Some(touched.clone())));
    assert_eq!(
        store.create(&session(Some("p:touched")), &limits).await,
        Ok(Created::QuotaFull)
    );
    // A touch with another TTL sets that one.
    let shortened = Instant::now();
    assert_eq!(
        store.touch(&touched.id, Duration::from_millis(50)).await,
        Ok(true)
    );
    until_gone(&*store, &touched.id).await;
    assert!(shortened.elapsed() < TTL, "the short TTL was taken");
    assert_eq!(store.touch("no-such-session", TTL).await, Ok(false));
    assert_eq!(
        store.create(&session(Some("p:touched")), &limits).await,
        Ok(Created::Created)
    );
}

pub(crate) async fn an_expired_session_is_absent(make: &Make) {
    let store = make().await;
    let record = session(Some("p:alice"));
    store
        .create(&record, &ttl(Duration::from_millis(100)))
        .await
        .unwrap();
    let id = record.id.clone();
    assert!(store.load(&id).await.unwrap().is_some());
    until_gone(&*store, &id).await;
    assert_eq!(
        store.update(&id, SessionChange::Initialized).await,
        Ok(Updated::Unknown)
    );
    assert_eq!(
        store
            .update(&id, SessionChange::Subscribe("file:///a".into()))
            .await,
        Ok(Updated::Unknown)
    );
    assert_eq!(store.touch(&id, Duration::from_secs(60)).await, Ok(false));
    assert_eq!(store.delete(&id).await, Ok(false));
    assert_eq!(store.load(&id).await, Ok(None));
}
