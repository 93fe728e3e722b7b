//! The GET stream's owner changes by compare-and-set (`SessionChange::GetOwner`): only from
//! the owner the caller expected, so of several nodes taking a session's GET stream over at
//! once exactly one wins. Checks of the shared suite (`session_store.rs`).

use std::sync::Arc;

use barrel_mcp::store::{NodeTag, SessionChange, SessionLimits, Updated};

use super::{Make, session};

pub(crate) async fn the_get_owner_changes_only_from_the_expected_one(make: &Make) {
    let store = make().await;
    let record = session(None);
    let id = record.id.clone();
    store
        .create(&record, &SessionLimits::default())
        .await
        .unwrap();
    let (a, b, c) = (
        NodeTag::new(1).unwrap(),
        NodeTag::new(2).unwrap(),
        NodeTag::new(NodeTag::MAX).unwrap(),
    );
    let take = |expected: Option<NodeTag>, new: NodeTag| SessionChange::GetOwner { expected, new };
    // No owner yet: only a takeover that expects none applies.
    assert_eq!(
        store.update(&id, take(Some(a), b)).await,
        Ok(Updated::Conflict)
    );
    assert_eq!(store.load(&id).await.unwrap().unwrap().get_owner, None);
    assert_eq!(store.update(&id, take(None, a)).await, Ok(Updated::Applied));
    // Owned by a: expecting none, or another node, conflicts and writes nothing.
    for expected in [None, Some(b), Some(c)] {
        assert_eq!(
            store.update(&id, take(expected, c)).await,
            Ok(Updated::Conflict),
            "{expected:?}"
        );
        assert_eq!(store.load(&id).await.unwrap().unwrap().get_owner, Some(a));
    }
    assert_eq!(
        store.update(&id, take(Some(a), b)).await,
        Ok(Updated::Applied)
    );
    assert_eq!(
        store.update(&id, take(Some(b), b)).await,
        Ok(Updated::Applied)
    );
    assert_eq!(store.load(&id).await.unwrap().unwrap().get_owner, Some(b));
    // An unknown session is unknown, whatever is expected.
    assert_eq!(
        store.update("no-such-session", take(None, a)).await,
        Ok(Updated::Unknown)
    );
}

pub(crate) async fn concurrent_takeovers_of_the_get_stream_have_one_winner(make: &Make) {
    const ROUNDS: usize = 20;
    const NODES: u32 = 4;
    let store = make().await;
    let previous = NodeTag::new(100).unwrap();
    for round in 0..ROUNDS {
        let record = session(None);
        store
            .create(&record, &SessionLimits::default())
            .await
            .unwrap();
        let take = SessionChange::GetOwner {
            expected: None,
            new: previous,
        };
        assert_eq!(store.update(&record.id, take).await, Ok(Updated::Applied));
        // Every node saw `previous` as the owner, and takes over at once.
        let start = Arc::new(tokio::sync::Barrier::new(NODES as usize));
        let mut nodes = tokio::task::JoinSet::new();
        for n in 1..=NODES {
            let store = Arc::clone(&store);
            let start = Arc::clone(&start);
            let id = record.id.clone();
            nodes.spawn(async move {
                let mine = NodeTag::new(n).unwrap();
                start.wait().await;
                let change = SessionChange::GetOwner {
                    expected: Some(previous),
                    new: mine,
                };
                (mine, store.update(&id, change).await.unwrap())
            });
        }
        let mut winners = Vec::new();
        while let Some(joined) = nodes.join_next().await {
            match joined.unwrap() {
                (mine, Updated::Applied) => winners.push(mine),
                (_, Updated::Conflict) => {}
                (_, other) => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
        assert_eq!(
            store.load(&record.id).await.unwrap().unwrap().get_owner,
            Some(winners[0]),
            "round {round}"
        );
    }
}
