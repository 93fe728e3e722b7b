//! Outbound requests: ids, the pending table, timeouts, progress and cancellation.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use barrel_mcp_types::method::names::INITIALIZE;
use barrel_mcp_types::{Message, Payload, RequestId, Response};
use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::RequestOptions;
use super::shared::{Shared, cancelled_notification, lock};
use crate::Error;
use crate::transport::Outgoing;

/// An outbound request waiting for its response.
pub(super) struct Pending {
    reply: oneshot::Sender<Result<Payload, Error>>,
    /// Where this request's progress goes, when the caller asked for it.
    progress: Option<mpsc::Sender<Value>>,
    /// Woken by each progress notification, when progress resets the timeout.
    activity: Option<Arc<Notify>>,
    /// True when the request carries a progress token.
    has_token: bool,
}

pub(super) async fn request(
    shared: &Arc<Shared>,
    related: Option<RequestId>,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
) -> Result<Payload, Error> {
    let RequestOptions {
        timeout,
        max_total,
        reset_timeout_on_progress,
        progress,
        cancel,
    } = options;
    if !shared.accepts_responses() {
        return Err(Error::Closed);
    }
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    if id > shared.last_id {
        return Err(Error::Protocol(
            "this connection has used every request id it may give".into(),
        ));
    }
    let has_token = progress.is_some() || reset_timeout_on_progress;
    let params = if has_token {
        Some(with_progress_token(params, id)?)
    } else {
        params
    };
    let activity = reset_timeout_on_progress.then(|| Arc::new(Notify::new()));
    let (reply, rx) = oneshot::channel();
    {
        let mut pending = lock(&shared.pending);
        if !shared.accepts_responses() {
            return Err(Error::Closed);
        }
        let entry = Pending {
            reply,
            progress,
            activity: activity.clone(),
            has_token,
        };
        pending.insert(id, entry);
    }
    let mut call = Call {
        shared,
        id,
        related: related.clone(),
        sent: false,
        done: false,
        // The spec: a client MUST NOT cancel its initialize request.
        tell_on_cancel: method != INITIALIZE,
    };
    let message = Message::request(id, method, params);
    let limits = Limits {
        timeout: timeout.unwrap_or(shared.config.request_timeout),
        max_total: max_total.unwrap_or(shared.config.max_request_timeout),
    };
    // The clock and the cancel token run from here: a full outbound queue (the other side
    // reads nothing) counts against the timeout. Giving up before the request is queued sends
    // nothing (the drop forgets the request).
    let start = Instant::now();
    let queued = shared
        .outbound
        .send(Box::new(Outgoing { message, related }));
    tokio::select! {
        biased;
        queued = queued => queued?,
        () = cancelled(cancel.as_ref()) => return Err(Error::Cancelled),
        () = tokio::time::sleep_until(after(start, limits.timeout.min(limits.max_total))) => {
            return Err(Error::Timeout);
        }
    }
    call.sent = true;
    call.wait(start, rx, limits, activity.as_deref(), cancel.as_ref())
        .await
}

struct Limits {
    timeout: Duration,
    max_total: Duration,
}

/// One outbound request in progress. Dropping it before it is done forgets the request and,
/// once it was sent, tells the other side with `notifications/cancelled`.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    id: i64,
    /// The inbound request this call is made for, if any.
    related: Option<RequestId>,
    sent: bool,
    done: bool,
    /// Send `notifications/cancelled` when giving up (false for `initialize`).
    tell_on_cancel: bool,
}

impl Call<'_> {
    async fn wait(
        &mut self,
        start: Instant,
        mut rx: oneshot::Receiver<Result<Payload, Error>>,
        limits: Limits,
        activity: Option<&Notify>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Payload, Error> {
        let cap = after(start, limits.max_total);
        let mut deadline = after(start, limits.timeout).min(cap);
        loop {
            tokio::select! {
                biased;
                outcome = &mut rx => {
                    self.done = true;
                    return outcome.unwrap_or(Err(Error::Closed));
                }
                () = cancelled(cancel) => {
                    self.abandon("cancelled by the caller").await;
                    return Err(Error::Cancelled);
                }
                () = progressed(activity) => {
                    deadline = after(Instant::now(), limits.timeout).min(cap);
                }
                () = tokio::time::sleep_until(deadline) => {
                    self.abandon("request timed out").await;
                    return Err(Error::Timeout);
                }
            }
        }
    }

    /// Gives up on the request and tells the other side, unless its response already came.
    async fn abandon(&mut self, reason: &str) {
        self.done = true;
        let was_pending = lock(&self.shared.pending).remove(&self.id).is_some();
        if was_pending && self.tell_on_cancel && !self.shared.closed.is_cancelled() {
            self.shared
                .enqueue(
                    cancelled_notification(self.id, reason),
                    self.related.clone(),
                )
                .await;
        }
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let was_pending = lock(&self.shared.pending).remove(&self.id).is_some();
        if !(was_pending && self.sent && self.tell_on_cancel) || self.shared.closed.is_cancelled() {
            return;
        }
        tracing::debug!(
            id = self.id,
            "request dropped before its response; cancelling"
        );
        let message = Box::new(Outgoing {
            message: cancelled_notification(self.id, "the caller stopped waiting"),
            related: self.related.clone(),
        });
        match self.shared.outbound.try_send(message) {
            Ok(()) => {}
            Err(message) => {
                // A full queue must not block a destructor: queue it from a task instead.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let outbound = self.shared.outbound.clone();
                    runtime.spawn(async move {
                        let _ = outbound.send(message).await;
                    });
                }
            }
        }
    }
}

async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

async fn progressed(activity: Option<&Notify>) {
    match activity {
        Some(activity) => activity.notified().await,
        None => std::future::pending().await,
    }
}

/// `start + duration`, saturating at a far-away instant instead of overflowing.
fn after(start: Instant, duration: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    start
        .checked_add(duration.min(FAR))
        .unwrap_or_else(|| start + Duration::from_secs(3600))
}

/// Adds `_meta.progressToken` to the params, which must be an object or absent.
fn with_progress_token(params: Option<Value>, token: i64) -> Result<Value, Error> {
    let not_object =
        || Error::Protocol("params must be an object to carry a progress token".into());
    let mut params = match params {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(not_object()),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(not_object());
    };
    meta.insert("progressToken".into(), Value::from(token));
    Ok(Value::Object(params))
}

impl Shared {
    /// Hands a response to the request waiting for it; unknown ids are logged and dropped.
    pub(super) fn complete(&self, response: Response) {
        let Response { id, outcome } = response;
        let entry = match &id {
            Some(RequestId::Number(n)) => lock(&self.pending).remove(n),
            _ => None,
        };
        match entry {
            Some(entry) => {
                let _ = entry.reply.send(outcome.map_err(Error::Rpc));
            }
            None => tracing::debug!(?id, "response for no pending request; dropped"),
        }
    }

    /// Fails a pending request whose response could not be decoded.
    pub(super) fn fail(&self, id: &RequestId, error: Error) {
        let entry = match id {
            RequestId::Number(n) => lock(&self.pending).remove(n),
            RequestId::String(_) => None,
        };
        if let Some(entry) = entry {
            let _ = entry.reply.send(Err(error));
        }
    }

    /// Routes progress to the request that owns its token. Returns false for unknown tokens.
    pub(super) fn route_progress(&self, params: Option<&Value>) -> bool {
        let Some(params) = params else { return false };
        let Some(token) = params.get("progressToken").and_then(Value::as_i64) else {
            return false;
        };
        let pending = lock(&self.pending);
        let Some(entry) = pending.get(&token).filter(|entry| entry.has_token) else {
            return false;
        };
        if let Some(progress) = &entry.progress
            && let Err(mpsc::error::TrySendError::Full(_)) = progress.try_send(params.clone())
        {
            tracing::debug!(token, "progress dropped: the caller is not keeping up");
        }
        if let Some(activity) = &entry.activity {
            activity.notify_one();
        }
        true
    }
}
