//! Tests of driven work: polled by its waiter, spawned when detached or dropped, counted by the
//! tracker throughout.

use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

#[tokio::test]
async fn work_that_answers_at_once_runs_on_the_waiter_and_is_never_spawned() {
    let tasks = TaskTracker::new();
    let (tx, mut rx) = mpsc::channel(1);
    let mut driven = Driven::new(
        async move {
            tx.send(7).await.expect("room");
        },
        &tasks,
    );
    assert_eq!(tasks.len(), 1, "the driven work counts as a task");
    assert_eq!(driven.alongside(rx.recv()).await, Some(7));
    assert!(driven.work.is_none(), "the work ended in that poll");
    assert_eq!(tasks.len(), 0);
    drop(driven);
    assert_eq!(tasks.len(), 0, "nothing was left to spawn");
}

#[tokio::test]
async fn detached_work_goes_on_and_the_tracker_waits_for_it() {
    let tasks = TaskTracker::new();
    let (tx, mut rx) = mpsc::channel(4);
    let (go, wait) = oneshot::channel::<()>();
    let finished = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&finished);
    let mut driven = Driven::new(
        async move {
            tx.send("first").await.expect("room");
            wait.await.expect("told to go on");
            tx.send("last").await.expect("room");
            done.store(true, Ordering::SeqCst);
        },
        &tasks,
    );
    assert_eq!(driven.alongside(rx.recv()).await, Some("first"));
    driven.detach();
    assert!(driven.work.is_none());
    assert_eq!(tasks.len(), 1, "the spawned work is tracked");
    go.send(()).expect("the work waits");
    assert_eq!(rx.recv().await, Some("last"));
    tasks.close();
    tokio::time::timeout(Duration::from_secs(5), tasks.wait())
        .await
        .expect("the tracker sees the work end");
    assert!(finished.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_dropped_waiter_leaves_its_work_running() {
    let tasks = TaskTracker::new();
    let (go, wait) = oneshot::channel::<()>();
    let (told, ended) = oneshot::channel();
    let mut driven = Driven::new(
        async move {
            wait.await.expect("told to go on");
            told.send(()).expect("the test waits");
        },
        &tasks,
    );
    // The waiter gives up (as a POST whose client went away) while the work waits.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(20),
        driven.alongside(std::future::pending::<()>()),
    )
    .await;
    assert!(gave_up.is_err());
    drop(driven);
    assert_eq!(tasks.len(), 1, "dropping spawned what was left");
    go.send(()).expect("the work waits");
    tokio::time::timeout(Duration::from_secs(5), ended)
        .await
        .expect("the work ran to its end")
        .expect("it said so");
}

#[test]
fn outside_a_runtime_what_is_left_is_dropped() {
    let tasks = TaskTracker::new();
    let (tx, rx) = oneshot::channel::<()>();
    let driven = Driven::new(
        async move {
            let _keep = tx;
            std::future::pending::<()>().await;
        },
        &tasks,
    );
    drop(driven);
    assert_eq!(tasks.len(), 0, "nothing spawned, the token returned");
    assert!(
        rx.blocking_recv().is_err(),
        "the work and what it held are gone"
    );
}

#[tokio::test]
async fn work_that_panics_on_its_waiter_is_dropped_and_the_waiter_goes_on() {
    let tasks = TaskTracker::new();
    let (tx, mut rx) = mpsc::channel::<u8>(1);
    let mut driven = Driven::new(
        async move {
            let _keep = tx;
            panic!("a bug below the handler");
        },
        &tasks,
    );
    // The panic is caught; the queue's sender went with the work, so the waiter sees the end.
    assert_eq!(driven.alongside(rx.recv()).await, None);
    assert!(driven.is_done());
    assert_eq!(tasks.len(), 0, "the token went with the work");
    drop(driven);
    assert_eq!(tasks.len(), 0, "nothing was spawned");
}
