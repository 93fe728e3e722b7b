//! A connection without loops, for a transport that carries one message per exchange and
//! never waits to write: an HTTP session.
//!
//! Each message is handed in by the task that carried it ([`Inlet::deliver`], an HTTP POST),
//! which drives the handler of a request until it must go on alone, then spawns it as a read
//! loop would; what the connection sends is written by the sender at once ([`DirectWriter`]).
//! The connection's own future only waits for its end: the input ends ([`Inlet::end_input`])
//! and what runs is drained, or it is closed.

use std::future::Future;
use std::sync::Arc;

use super::driven::Driven;
use super::handlers::Handlers;
use super::inbound;
use super::shared::{Outbound, RequestIds, Shared};
use super::{Handler, Peer, PeerConfig};
use crate::Error;
use crate::transport::{Caller, Frame, Outgoing};

/// Where a loop-less connection's outgoing messages are written, at once and in the order
/// they are sent. Never waits: a slow reader is the writer's to handle (it ends a live
/// stream, and the client resumes from the replay buffer).
pub(crate) trait DirectWriter: Send + Sync {
    /// Writes one message.
    fn write(&self, outgoing: Outgoing);
    /// The connection has ended: nothing more is written.
    fn close(&self);
}

/// Hands messages to a loop-less connection.
#[derive(Clone)]
pub(crate) struct Inlet {
    peer: Peer,
    handler: Arc<dyn Handler>,
}

impl std::fmt::Debug for Inlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inlet").field("peer", &self.peer).finish()
    }
}

impl Inlet {
    /// Takes one message from `caller`, as a read loop would. A request's handler comes back
    /// to be driven by the caller's task ([`Driven`]: dropping it spawns it, as a read loop
    /// would). `Closed` once the input has ended or the connection is closed: the message was
    /// not taken.
    pub(crate) async fn deliver(
        &self,
        frame: Frame,
        caller: Option<Arc<Caller>>,
    ) -> Result<Option<Driven>, Error> {
        let shared = &self.peer.shared;
        if shared.closed.is_cancelled() || shared.input_ended.is_cancelled() {
            return Err(Error::Closed);
        }
        let work = inbound::on_frame(frame, caller, &*self.handler, &self.peer).await;
        Ok(work.and_then(|work| Handlers::drive(shared, work)))
    }

    /// Ends the input: nothing more is taken; requests already taken finish and are answered
    /// (within [`PeerConfig::drain_timeout`]), then the connection ends.
    pub(crate) fn end_input(&self) {
        self.peer.shared.input_ended.cancel();
    }

    /// The connection's handle.
    pub(crate) fn peer(&self) -> &Peer {
        &self.peer
    }
}

/// Opens a loop-less connection writing to `writer`. Returns its inlet and the future that
/// must run to its end (it ends when the connection does; [`Handler::on_close`] runs then).
/// Its outbound requests take `ids`.
pub(crate) fn open(
    handler: Arc<dyn Handler>,
    config: PeerConfig,
    writer: Arc<dyn DirectWriter>,
    ids: RequestIds,
) -> (Inlet, impl Future<Output = ()> + Send + 'static) {
    let outbound = Outbound::Direct(Arc::clone(&writer));
    let peer = Peer {
        shared: Arc::new(Shared::with_ids(config, outbound, ids)),
        related: None,
    };
    let inlet = Inlet {
        peer: peer.clone(),
        handler: Arc::clone(&handler),
    };
    let run = async move {
        let shared = &peer.shared;
        tokio::select! {
            () = shared.closed.cancelled() => {}
            () = shared.input_ended.cancelled() => Box::pin(shared.drain()).await,
        }
        shared.shutdown();
        handler.on_close();
        // The end's futures are boxed: held inline, they would take room in every open
        // session's task for its whole life.
        Box::pin(shared.handlers.stop(shared.config.handler_grace)).await;
        writer.close();
    };
    (inlet, run)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use barrel_mcp_types::{ErrorObject, Message, Notification, Payload, Request, RequestId};
    use serde_json::json;
    use tokio::sync::Notify;

    use super::*;
    use crate::peer::{BoxFuture, RequestContext};

    /// Records what the connection writes.
    #[derive(Default)]
    struct Recorder {
        written: Mutex<Vec<Outgoing>>,
        was_closed: Mutex<bool>,
    }

    impl Recorder {
        fn messages(&self) -> Vec<Message> {
            self.written
                .lock()
                .unwrap()
                .iter()
                .map(|o| o.message.clone())
                .collect()
        }
    }

    impl DirectWriter for Recorder {
        fn write(&self, outgoing: Outgoing) {
            self.written.lock().unwrap().push(outgoing);
        }

        fn close(&self) {
            *self.was_closed.lock().unwrap() = true;
        }
    }

    /// `now` answers at once after a progress notification; `later` waits for `release`.
    struct Handler {
        release: Arc<Notify>,
    }

    impl super::Handler for Handler {
        fn on_request(
            &self,
            request: Request,
            cx: RequestContext,
        ) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
            let release = Arc::clone(&self.release);
            Box::pin(async move {
                if request.method == "later" {
                    release.notified().await;
                }
                cx.peer
                    .notify("notifications/progress", None)
                    .await
                    .map_err(|e| ErrorObject::internal(e.to_string()))?;
                Ok(Payload::from(json!({ "method": request.method })))
            })
        }

        fn on_notification(&self, _: Notification, _: &Peer) {}
    }

    fn request(id: i64, method: &str) -> Frame {
        Ok(Message::Request(Request {
            id: RequestId::Number(id),
            method: method.into(),
            params: None,
        }))
    }

    fn open_recorded() -> (
        Inlet,
        Arc<Recorder>,
        Arc<Notify>,
        tokio::task::JoinHandle<()>,
    ) {
        let recorder = Arc::new(Recorder::default());
        let release = Arc::new(Notify::new());
        let handler = Arc::new(Handler {
            release: Arc::clone(&release),
        });
        let config = PeerConfig {
            handler_grace: Duration::from_millis(50),
            ..PeerConfig::default()
        };
        let (inlet, run) = open(handler, config, recorder.clone(), RequestIds::ALL);
        (inlet, recorder, release, tokio::spawn(run))
    }

    fn is_response(message: &Message, id: i64) -> bool {
        matches!(message, Message::Response(r) if r.id == Some(RequestId::Number(id)))
    }

    /// Waits until the recorder holds `count` messages.
    async fn written(recorder: &Recorder, count: usize) -> Vec<Message> {
        tokio::time::timeout(Duration::from_secs(5), async {
            while recorder.messages().len() < count {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("written in time");
        recorder.messages()
    }

    /// Delivers request 1 of `method` and takes its handler back, to drive it.
    async fn deliver_driven(inlet: &Inlet, method: &str) -> Driven {
        inlet
            .deliver(request(1, method), None)
            .await
            .expect("taken")
            .expect("a request's handler comes back")
    }

    /// Closes the connection and waits for its end.
    async fn close_and_wait(inlet: &Inlet, run: tokio::task::JoinHandle<()>) {
        inlet.peer().close();
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the connection ended")
            .expect("no panic");
    }

    #[tokio::test]
    async fn what_a_handler_sends_is_written_before_its_response() {
        let (inlet, recorder, _, _) = open_recorded();
        inlet.deliver(request(1, "now"), None).await.expect("taken");
        let written = written(&recorder, 2).await;
        assert!(matches!(written[0], Message::Notification(_)));
        assert!(is_response(&written[1], 1));
    }

    #[tokio::test]
    async fn a_request_is_driven_by_the_task_that_delivered_it() {
        let (inlet, recorder, _, _) = open_recorded();
        let mut work = deliver_driven(&inlet, "now").await;
        assert!(recorder.messages().is_empty(), "nothing ran yet");
        assert_eq!(inlet.peer.shared.handlers.running_count(), 1);
        // One poll of the caller runs the handler to its end: no task, no wait.
        work.alongside(std::future::ready(())).await;
        let written = recorder.messages();
        assert!(is_response(&written[1], 1), "{written:?}");
        drop(work);
        assert_eq!(inlet.peer.shared.handlers.running_count(), 0);
    }

    #[tokio::test]
    async fn a_driven_handler_left_unfinished_goes_on_on_a_task() {
        let (inlet, recorder, release, _) = open_recorded();
        let mut work = deliver_driven(&inlet, "later").await;
        work.alongside(std::future::ready(())).await;
        assert!(recorder.messages().is_empty(), "the handler waits");
        // The POST that drove it is done (or its client went away): the handler goes on.
        drop(work);
        release.notify_one();
        let written = written(&recorder, 2).await;
        assert!(is_response(&written[1], 1), "{written:?}");
    }

    #[tokio::test]
    async fn a_driven_handler_is_given_its_grace_when_the_connection_ends_then_aborted() {
        let (inlet, recorder, _, run) = open_recorded();
        let mut work = deliver_driven(&inlet, "later").await;
        work.alongside(std::future::ready(())).await;
        let started = tokio::time::Instant::now();
        close_and_wait(&inlet, run).await;
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "the end waited for the driven handler's grace"
        );
        assert_eq!(inlet.peer.shared.handlers.running_count(), 0);
        // It ignored its cancellation (it waits for `release`, never given): aborted, it ends
        // at its waiter's next poll, without running on.
        assert!(!work.is_done());
        work.alongside(std::future::ready(())).await;
        assert!(work.is_done(), "aborted with its connection");
        drop(work);
        assert_eq!(inlet.peer.shared.handlers.running_count(), 0);
        assert!(recorder.messages().is_empty(), "{:?}", recorder.messages());
        assert!(*recorder.was_closed.lock().unwrap());
    }

    #[tokio::test]
    async fn a_driven_handler_left_after_the_connection_ended_is_not_spawned() {
        let (inlet, _, release, run) = open_recorded();
        let mut work = deliver_driven(&inlet, "later").await;
        work.alongside(std::future::ready(())).await;
        close_and_wait(&inlet, run).await;
        // Its waiter lets go without polling it again: nothing is spawned for it.
        drop(work);
        assert_eq!(inlet.peer.shared.handlers.running_count(), 0);
        release.notify_one();
        tokio::task::yield_now().await;
        assert_eq!(inlet.peer.shared.handlers.running_count(), 0);
    }

    #[tokio::test]
    async fn driven_work_that_panics_below_the_handler_leaves_no_entry() {
        let (inlet, _, _, _) = open_recorded();
        let shared = &inlet.peer.shared;
        let mut work = super::Handlers::drive(shared, async { panic!("a bug below the handler") })
            .expect("the connection runs");
        assert_eq!(shared.handlers.running_count(), 1);
        work.alongside(std::future::ready(())).await;
        assert!(work.is_done(), "the panic was caught and the work dropped");
        assert_eq!(
            shared.handlers.running_count(),
            0,
            "its entry was forgotten"
        );
        drop(work);
        assert_eq!(shared.handlers.running_count(), 0, "nothing was spawned");
    }

    #[tokio::test]
    async fn a_handler_that_waits_holds_up_no_other_request() {
        let (inlet, recorder, release, _) = open_recorded();
        inlet
            .deliver(request(1, "later"), None)
            .await
            .expect("taken");
        // The next message is taken and answered while the first handler waits.
        inlet.deliver(request(2, "now"), None).await.expect("taken");
        assert!(is_response(&written(&recorder, 2).await[1], 2));
        release.notify_one();
        let written = written(&recorder, 4).await;
        assert!(matches!(written[2], Message::Notification(_)));
        assert!(is_response(&written[3], 1));
    }

    #[tokio::test]
    async fn once_the_input_ends_nothing_is_taken_and_running_requests_are_answered() {
        let (inlet, recorder, release, run) = open_recorded();
        inlet
            .deliver(request(1, "later"), None)
            .await
            .expect("taken");
        inlet.end_input();
        assert!(matches!(
            inlet.deliver(request(2, "now"), None).await,
            Err(Error::Closed)
        ));
        release.notify_one();
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the connection ended once drained")
            .expect("no panic");
        let written = recorder.messages();
        assert!(
            is_response(written.last().expect("an answer"), 1),
            "{written:?}"
        );
        assert!(*recorder.was_closed.lock().unwrap());
    }

    #[tokio::test]
    async fn a_request_that_passed_deliver_as_the_input_ended_is_refused_not_lost() {
        let (inlet, recorder, _, _) = open_recorded();
        inlet.end_input();
        // As if it had passed `deliver`'s check just before: admission checks again.
        inbound::on_frame(request(1, "now"), None, &*inlet.handler, &inlet.peer).await;
        let written = written(&recorder, 1).await;
        assert!(
            matches!(&written[..], [Message::Response(r)] if r.outcome.is_err()),
            "{written:?}"
        );
    }

    #[tokio::test]
    async fn a_handler_that_would_wait_after_the_connection_stopped_is_dropped() {
        let (inlet, _, _, run) = open_recorded();
        inlet.peer().close();
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the connection ended")
            .expect("no panic");
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        super::super::handlers::Handlers::spawn(&inlet.peer.shared, async move {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn closing_cancels_running_requests_and_closes_the_writer() {
        let (inlet, recorder, _, run) = open_recorded();
        inlet
            .deliver(request(1, "later"), None)
            .await
            .expect("taken");
        inlet.peer().close();
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the connection ended")
            .expect("no panic");
        assert!(
            recorder.messages().is_empty(),
            "a cancelled request is not answered"
        );
        assert!(*recorder.was_closed.lock().unwrap());
        assert!(matches!(
            inlet.deliver(request(2, "now"), None).await,
            Err(Error::Closed)
        ));
    }
}
