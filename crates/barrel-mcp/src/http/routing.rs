//! A session's routing table: where each message the server sends goes (the stream or JSON
//! reply of the request it belongs to, else the GET stream), and the bounds on what its streams
//! keep for replay.

use std::collections::HashMap;

use barrel_mcp_types::RequestId;
use tokio::sync::oneshot;

use super::session::GET_STREAM;
use super::sse::EventStream;
use super::streams::Streams;

/// Where a session's messages go, and its streams.
#[derive(Debug)]
pub(super) struct Routing {
    /// A refused `initialize`: the session ends once its answer is out.
    pub(super) ends_after: Option<RequestId>,
    /// The stream of the session's first request (the `initialize` that opened it), if it
    /// was answered on one; `Some(None)` once the first request was seen without one.
    pub(super) first_stream: Option<Option<u64>>,
    pub(super) by_request: HashMap<RequestId, Route>,
    pub(super) streams: Streams,
    pub(super) next_stream: u64,
    /// The bytes every stream's replay buffer holds, together.
    pub(super) replay_bytes: usize,
}

/// Where the answer to one request goes.
#[derive(Debug)]
pub(super) enum Route {
    /// Onto this stream.
    Stream(u64),
    /// The JSON text of the answer goes to the POST waiting for it.
    Json(oneshot::Sender<String>),
}

/// Where one outgoing message goes.
pub(super) enum Destination {
    /// Onto this stream; `true` when it is the response that ends it.
    Stream(u64, bool),
    /// Into the JSON reply a POST waits for.
    Json(oneshot::Sender<String>),
    /// Nowhere, for the reason given.
    Nowhere(&'static str),
}

/// The stream (or JSON reply) of the request a message belongs to; the GET stream for what
/// belongs to no request (or to a request answered as JSON); never a response on the GET
/// stream.
pub(super) fn destination(
    routing: &mut Routing,
    related: Option<&RequestId>,
    answers: Option<&RequestId>,
) -> Destination {
    if let Some(id) = related {
        if answers == Some(id) {
            return match routing.by_request.remove(id) {
                Some(Route::Stream(number)) => Destination::Stream(number, true),
                Some(Route::Json(reply)) => Destination::Json(reply),
                None => Destination::Nowhere("response for a forgotten request"),
            };
        }
        match routing.by_request.get(id) {
            Some(Route::Stream(number)) => return Destination::Stream(*number, false),
            // A JSON reply carries one message: the rest goes to the GET stream.
            Some(Route::Json(_)) => {}
            None => return Destination::Nowhere("message for a finished request"),
        }
    }
    if answers.is_some() {
        return Destination::Nowhere("a response is never sent on the GET stream");
    }
    Destination::Stream(GET_STREAM, false)
}

/// Keeps the session's replay buffers, all streams together, within `budget` bytes: the oldest
/// events of finished streams go first, then those of the stream holding the most. A client
/// resuming past what was dropped is told (`notifications/replay_truncated`).
pub(super) fn keep_replay_budget(routing: &mut Routing, budget: usize) {
    while routing.replay_bytes > budget {
        let finished = routing
            .streams
            .iter()
            .find(|(_, stream)| stream.is_finished() && stream.replay_bytes() > 0)
            .map(|(number, _)| number);
        let victim = finished.or_else(|| {
            routing
                .streams
                .iter()
                .max_by_key(|(_, stream)| stream.replay_bytes())
                .map(|(number, _)| number)
        });
        let freed = victim
            .and_then(|number| routing.streams.get_mut(number))
            .map_or(0, EventStream::drop_oldest);
        if freed == 0 {
            break;
        }
        routing.replay_bytes = routing.replay_bytes.saturating_sub(freed);
    }
}

/// Forgets the oldest finished streams nobody reads beyond the retention bound.
pub(super) fn forget_old_streams(routing: &mut Routing, retained: usize) {
    while routing.streams.len() > retained.max(1) + 1 {
        let oldest = routing
            .streams
            .iter()
            .find(|(number, s)| *number != GET_STREAM && s.is_finished() && !s.has_live_reader())
            .map(|(number, _)| number);
        match oldest {
            Some(number) => {
                if let Some(stream) = routing.streams.remove(number) {
                    routing.replay_bytes =
                        routing.replay_bytes.saturating_sub(stream.replay_bytes());
                }
            }
            None => break,
        }
    }
}
