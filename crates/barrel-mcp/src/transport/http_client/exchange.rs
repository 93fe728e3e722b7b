//! One request's exchange (POST, then its JSON or SSE answer, resumed with GET when the stream
//! breaks), the session's GET stream, and re-running the handshake after a 404.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use barrel_mcp_types::jsonrpc::{self, DecodeError};
use barrel_mcp_types::{ErrorCode, ErrorObject, Message, Payload, RequestId, Response};
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::headers;
use super::retry;
use super::sse::{Item, SseDecoder};
use super::state::{State, lock, next_reinit_id, refusal};
use crate::transport::Frame;
use crate::{Error, HttpError};

/// The request a POST carries, and what its answer teaches the transport.
struct Call {
    id: RequestId,
    method: String,
}

/// Runs one request's exchange; a failure that ends the connection goes to the reader.
pub(super) async fn run(state: Arc<State>, message: Message, cancel: CancellationToken) {
    let Message::Request(request) = &message else {
        return;
    };
    let call = Call {
        id: request.id.clone(),
        method: request.method.clone(),
    };
    let outcome = tokio::select! {
        outcome = exchange(&state, &message, &call) => outcome,
        () = cancel.cancelled() => Ok(()),
        () = state.closed.cancelled() => Ok(()),
    };
    lock(&state.calls).remove(&call.id);
    if let Err(error) = outcome {
        state.fail(error).await;
    }
}

async fn exchange(state: &Arc<State>, message: &Message, call: &Call) -> Result<(), Error> {
    let mut retried = false;
    loop {
        after_reinitialize(state).await;
        let (headers, session) = state.headers_for(message);
        let response = state.post(message.to_json(), headers).await?;
        let status = response.status();
        if call.method == "initialize"
            && let Some(id) = response.headers().get(headers::SESSION_ID)
        {
            lock(&state.session).id = Some(id.clone());
        }
        if status.is_success() {
            return answer(state, call, response).await;
        }
        if let Some(error) = refusal(&response) {
            return Err(error);
        }
        if status == StatusCode::NOT_FOUND
            && !retried
            && state.reinitializes()
            && let Some(stale) = session
        {
            reinitialize_detached(state, &stale).await?;
            retried = true;
            continue;
        }
        // Another 4xx: a JSON-RPC body is the answer; without one, the status is. So is a 429
        // that was not retried (any more): the server never took the request.
        let gave_up = retry::gave_up(&response).map(|why| format!(" ({why})"));
        let body = read_limited(response.into_body(), state.config.max_body_size).await;
        if gave_up.is_none()
            && let Some(Ok(Message::Response(mut response))) = body
                .as_deref()
                .ok()
                .and_then(|b| std::str::from_utf8(b).ok())
                .map(jsonrpc::decode)
        {
            response.id.get_or_insert_with(|| call.id.clone());
            if !deliver(state, call, Ok(Message::Response(response))).await {
                let why = "the error answer is not this request's response".into();
                return fail_call(state, call, why).await;
            }
            return Ok(());
        }
        let text = body
            .ok()
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned())
            .unwrap_or_default();
        let error = ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "HTTP {status}{}: {}",
                gave_up.unwrap_or_default(),
                text.trim()
            ),
        )
        .with_data(json!({ "httpStatus": status.as_u16() }));
        let response = Response::error(Some(call.id.clone()), error);
        state.deliver(Ok(Message::Response(response))).await;
        return Ok(());
    }
}

/// Reads a 2xx answer: JSON, SSE, or (wrongly) nothing.
async fn answer(
    state: &Arc<State>,
    call: &Call,
    response: http::Response<Incoming>,
) -> Result<(), Error> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.starts_with("text/event-stream") {
        return stream(state, call, response.into_body()).await;
    }
    let status = response.status();
    let body = match read_limited(response.into_body(), state.config.max_body_size).await {
        Ok(body) => body,
        Err(why) => return fail_call(state, call, why).await,
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        let why = format!("the server answered {status} without a response");
        return fail_call(state, call, why).await;
    }
    let frame = match std::str::from_utf8(&body) {
        Ok(text) => jsonrpc::decode(text),
        Err(_) => return fail_call(state, call, "the answer is not UTF-8".into()).await,
    };
    let frame = match frame {
        // One POST carried one request: an answer without an id is its answer.
        Ok(Message::Response(mut response)) if response.id.is_none() => {
            response.id = Some(call.id.clone());
            Ok(Message::Response(response))
        }
        other => other,
    };
    if !deliver(state, call, frame).await {
        fail_call(
            state,
            call,
            "the answer is not this request's response".into(),
        )
        .await?;
    }
    Ok(())
}

/// Reads the call's SSE stream, resuming it with GET + `Last-Event-ID` when it ends early.
async fn stream(state: &Arc<State>, call: &Call, mut body: Incoming) -> Result<(), Error> {
    let mut decoder = SseDecoder::new(state.config.max_event_size);
    let mut resumptions = 0;
    let mut gone = 0;
    loop {
        match pump(state, Some(call), &mut decoder, body).await {
            Pumped::Answered => return Ok(()),
            Pumped::TooLarge => {
                let why = format!(
                    "an SSE event exceeded {} bytes (HttpClientConfig::max_event_size)",
                    state.config.max_event_size
                );
                return fail_call(state, call, why).await;
            }
            // Behind a load balancer the resumption may have reached a server that never had
            // the stream: the next one may reach the one that has it. Twice in a row, it is gone.
            Pumped::Gone if gone + 1 >= GONE_TWICE => {
                let why = "the server no longer holds this request's stream (its replay is \
                           truncated with nothing left)"
                    .into();
                return fail_call(state, call, why).await;
            }
            Pumped::Gone => gone += 1,
            Pumped::Ended => gone = 0,
        }
        let Some(last) = decoder.last_event_id().map(str::to_owned) else {
            let why = "the stream ended before the response (and cannot be resumed)".into();
            return fail_call(state, call, why).await;
        };
        resumptions += 1;
        if resumptions > state.config.max_resumptions {
            let why = format!("the stream broke {resumptions} times before the response");
            return fail_call(state, call, why).await;
        }
        tokio::time::sleep(retry_delay(&state.config, decoder.retry())).await;
        tracing::debug!(id = %call.id, last, "resuming the stream");
        let response = state.get(Some(&last)).await?;
        if let Some(error) = refusal(&response) {
            return Err(error);
        }
        if !response.status().is_success() {
            let why = format!(
                "resuming the stream was refused: HTTP {}{}",
                response.status(),
                retry::gave_up(&response)
                    .map(|why| format!(" ({why})"))
                    .unwrap_or_default()
            );
            return fail_call(state, call, why).await;
        }
        body = response.into_body();
    }
}

/// How many resumptions in a row answered "nothing left of the stream" fail the call.
const GONE_TWICE: u32 = 2;

/// True for `notifications/replay_truncated` without `firstAvailableEventId`: the server kept
/// nothing of the stream (it forgot it, or the request reached a server that never had it).
fn nothing_left(frame: &Result<Message, DecodeError>) -> bool {
    let Ok(Message::Notification(notice)) = frame else {
        return false;
    };
    notice.method == barrel_mcp_types::method::names::NOTIFICATIONS_REPLAY_TRUNCATED
        && notice
            .params
            .as_ref()
            .and_then(|params| params.get("firstAvailableEventId"))
            .is_none_or(Value::is_null)
}

enum Pumped {
    /// The call's response arrived (the rest of the stream was read too).
    Answered,
    /// The stream ended (or broke) first.
    Ended,
    /// An event was too large.
    TooLarge,
    /// The server says it holds nothing more of the call's stream: the response cannot come.
    Gone,
}

/// Reads one SSE body to its end, delivering each message.
async fn pump(
    state: &State,
    call: Option<&Call>,
    decoder: &mut SseDecoder,
    mut body: Incoming,
) -> Pumped {
    let mut answered = false;
    let mut items = Vec::new();
    loop {
        let frame = if answered {
            // The response is in: the stream should end now. One that stays open is dropped.
            match tokio::time::timeout(state.config.stream_end_wait, body.frame()).await {
                Ok(frame) => frame,
                Err(_) => break,
            }
        } else {
            body.frame().await
        };
        let chunk = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Some(Err(e)) => {
                tracing::debug!("SSE stream broke: {e}");
                break;
            }
            None => break,
        };
        decoder.feed(&chunk, &mut items);
        for item in items.drain(..) {
            let event = match item {
                Item::Event(event) => event,
                Item::TooLarge => return Pumped::TooLarge,
            };
            let is_message = event.event.as_deref().is_none_or(|e| e == "message");
            if !is_message || event.data.trim().is_empty() {
                continue;
            }
            let frame = jsonrpc::decode(&event.data);
            if call.is_some() && !answered && nothing_left(&frame) {
                return Pumped::Gone;
            }
            match call {
                Some(call) => answered |= deliver(state, call, frame).await,
                None => state.deliver(frame).await,
            }
        }
    }
    if answered {
        Pumped::Answered
    } else {
        Pumped::Ended
    }
}

/// Delivers a frame of `call`'s answer, learning from it; true when it answers the call.
async fn deliver(state: &State, call: &Call, frame: Frame) -> bool {
    let answers = match &frame {
        Ok(Message::Response(response)) => response.id.as_ref() == Some(&call.id),
        Err(error) => error.id.as_ref() == Some(&call.id) && error.no_reply,
        _ => false,
    };
    let mut frame = frame;
    if answers
        && let Ok(Message::Response(Response {
            // Read off the wire: always a value.
            outcome: Ok(Payload::Value(result)),
            ..
        })) = &mut frame
    {
        learn(state, call, result);
    }
    state.deliver(frame).await;
    answers
}

/// What the transport keeps from answers: the revision `initialize` chose, and the
/// `x-mcp-header` arguments of listed tools. Tools whose annotations are invalid are dropped
/// from the `tools/list` result, as the spec asks of HTTP clients.
fn learn(state: &State, call: &Call, result: &mut Value) {
    match call.method.as_str() {
        "initialize" => {
            let version = result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .and_then(|v| HeaderValue::try_from(v).ok());
            lock(&state.session).version = version;
        }
        "tools/list" => {
            let (valid, invalid) = headers::tool_params(result);
            {
                let mut tools = lock(&state.tool_params);
                // What this page lists replaces what was known of those tools (a tool may
                // have lost its x-mcp-header arguments, or become invalid).
                let listed = result.get("tools").and_then(Value::as_array);
                for name in listed
                    .into_iter()
                    .flatten()
                    .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                {
                    tools.remove(name);
                }
                for (name, params) in valid {
                    if tools.len() >= headers::MAX_TOOLS_WITH_HEADERS {
                        tracing::warn!(tool = %name, "too many tools with x-mcp-header; ignored");
                        break;
                    }
                    tools.insert(name, params);
                }
            }
            if let Some(Value::Array(listed)) = result.get_mut("tools") {
                listed.retain(|tool| {
                    let name = tool.get("name").and_then(Value::as_str);
                    !name.is_some_and(|name| invalid.iter().any(|bad| bad == name))
                });
            }
        }
        _ => {}
    }
}

/// Fails the call (its future returns a protocol error) and keeps the connection.
async fn fail_call(state: &State, call: &Call, why: String) -> Result<(), Error> {
    tracing::debug!(id = %call.id, "{why}");
    let error = DecodeError {
        id: Some(call.id.clone()),
        error: ErrorObject::internal(why),
        no_reply: true,
    };
    state.deliver(Err(error)).await;
    Ok(())
}

/// Reads a body of at most `max` bytes.
async fn read_limited(mut body: Incoming, max: usize) -> Result<Bytes, String> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the answer failed: {e}"))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > max {
                return Err(format!(
                    "the answer is larger than {max} bytes (HttpClientConfig::max_body_size)"
                ));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

/// Starts the session's GET stream unless it runs already, and waits (at most
/// [`HttpClientConfig::get_stream_wait`](super::HttpClientConfig::get_stream_wait)) until the
/// server answered its first GET: a server that sends a request right after the handshake
/// (outside any POST's stream) can only deliver it on a stream that is open.
pub(super) async fn start_listening(state: &Arc<State>) {
    if !state.config.open_get_stream || state.listening.swap(true, Ordering::AcqRel) {
        return;
    }
    let (ready, answered) = oneshot::channel();
    let listener = Arc::clone(state);
    tokio::spawn(async move {
        tokio::select! {
            () = listen(&listener, ready) => {}
            () = listener.closed.cancelled() => {}
        }
        listener.listening.store(false, Ordering::Release);
    });
    let _ = tokio::time::timeout(state.config.get_stream_wait, answered).await;
}

/// The GET stream: server-initiated messages, reconnected with `Last-Event-ID` after `retry`.
/// `ready` fires once the first GET has an answer (a stream, a refusal or an error).
async fn listen(state: &State, ready: oneshot::Sender<()>) {
    let mut ready = Some(ready);
    let mut last: Option<String> = None;
    // The session `last` belongs to: a cursor is no use in a session taken up again.
    let mut cursor_session = lock(&state.session).id.clone();
    let mut failures = 0u32;
    let mut empty = 0u32;
    let mut oversized = 0u32;
    loop {
        let session = lock(&state.session).id.clone();
        if session != cursor_session {
            last = None;
            cursor_session = session;
        }
        let response = state.get(last.as_deref()).await;
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                failures += 1;
                if failures > state.config.max_resumptions {
                    tracing::debug!(%error, "the GET stream is gone");
                    return;
                }
                tokio::time::sleep(state.config.default_retry * failures).await;
                continue;
            }
        };
        if let Some(error) = refusal(&response) {
            if error.is_auth() {
                state.fail(error).await;
            }
            return;
        }
        if !response.status().is_success() {
            // 405: the server offers no stream; 404: the session is gone (a POST re-runs the
            // handshake and starts a new stream).
            tracing::debug!(status = %response.status(), "no GET stream");
            return;
        }
        failures = 0;
        let mut decoder = SseDecoder::new(state.config.max_event_size).with_last_event_id(last);
        let opened = tokio::time::Instant::now();
        let too_large = matches!(
            pump(state, None, &mut decoder, response.into_body()).await,
            Pumped::TooLarge
        );
        if too_large {
            // Resuming may replay the same event (when its id came after the data that broke
            // the limit): after a few tries the stream is given up.
            oversized += 1;
            if oversized > state.config.max_resumptions {
                tracing::warn!(
                    "events on the GET stream keep exceeding max_event_size; it is closed"
                );
                return;
            }
            tracing::warn!("an event on the GET stream was too large; reconnecting");
        } else {
            oversized = 0;
        }
        last = decoder.last_event_id().map(str::to_owned);
        // A stream that ends at once without a single event is no stream: wait longer each
        // time, so that such a server is not asked again and again. (One that lasted, say
        // until a proxy cut it, is reopened after the usual wait.)
        let hollow = decoder.events() == 0 && opened.elapsed() < state.config.default_retry;
        empty = if hollow || too_large {
            (empty + 1).min(5)
        } else {
            0
        };
        tokio::time::sleep(retry_delay(&state.config, decoder.retry()) * (1 << empty)).await;
    }
}

/// How long to wait before resuming or reconnecting: the server's `retry`, or the default,
/// and never less than the configured floor.
fn retry_delay(config: &super::HttpClientConfig, retry: Option<Duration>) -> Duration {
    retry
        .unwrap_or(config.default_retry)
        .min(config.max_retry)
        .max(config.min_retry)
}

/// Re-runs the handshake after the server forgot the session `stale`, on a task of its own:
/// a caller that gives up (its call timed out or was cancelled) must not leave the session
/// half re-initialized, with no id for every later message. Bounded by
/// [`HttpClientConfig::reinitialize_timeout`](super::HttpClientConfig::reinitialize_timeout)
/// (messages wait for it); ends with the connection.
pub(super) async fn reinitialize_detached(
    state: &Arc<State>,
    stale: &HeaderValue,
) -> Result<(), Error> {
    let (task_state, stale) = (Arc::clone(state), stale.clone());
    let task = tokio::spawn(async move {
        let limit = task_state.config.reinitialize_timeout;
        let done = tokio::select! {
            done = tokio::time::timeout(limit, reinitialize(&task_state, &stale)) => {
                done.unwrap_or(Err(Error::Timeout))
            }
            () = task_state.closed.cancelled() => Err(Error::Closed),
        };
        if done.is_err() {
            // The old id goes back: later messages meet the 404 again and retry the handshake,
            // instead of going out with no session id at all.
            let mut session = lock(&task_state.session);
            if session.id.is_none() {
                session.id = Some(stale);
            }
        }
        done
    });
    task.await
        .unwrap_or_else(|e| Err(Error::Protocol(format!("re-initializing failed: {e}"))))
}

/// Waits while a re-initialization runs, so that a message is sent with the new session id
/// rather than none.
pub(super) async fn after_reinitialize(state: &State) {
    drop(state.reinit.lock().await);
}

/// Runs the handshake again after the server forgot the session `stale`: the owner of the
/// handshake gives the `initialize` params and takes the result; this sends both messages
/// itself and holds every other message back until `notifications/initialized` is answered.
async fn reinitialize(state: &Arc<State>, stale: &HeaderValue) -> Result<(), Error> {
    let _one_at_a_time = state.reinit.lock().await;
    let Some(handshake) = state.handshake.clone() else {
        return Err(Error::Closed);
    };
    {
        let mut session = lock(&state.session);
        if session.id.as_ref() != Some(stale) {
            return Ok(()); // another task already did it
        }
        session.id = None;
    }
    let params = Some(handshake.params()?);
    tracing::debug!("the server forgot the session; initializing again");
    let id = next_reinit_id(state);
    let message = Message::request(id.clone(), "initialize", params);
    let (headers, _) = state.headers_for(&message);
    let response = state.post(message.to_json(), headers).await?;
    if let Some(error) = refusal(&response) {
        return Err(error);
    }
    let lost = |why: String| {
        Error::Http(HttpError {
            status: Some(404),
            message: format!("the session expired and initializing again failed: {why}"),
            www_authenticate: None,
        })
    };
    if !response.status().is_success() {
        return Err(lost(format!("HTTP {}", response.status())));
    }
    let new_id = response.headers().get(headers::SESSION_ID).cloned();
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let result = if is_sse {
        let mut decoder = SseDecoder::new(state.config.max_event_size);
        first_response(&mut decoder, response.into_body(), &id).await
    } else {
        read_limited(response.into_body(), state.config.max_body_size)
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.get("result").cloned())
    };
    let result = result.ok_or_else(|| lost("no initialize result".into()))?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .and_then(|v| HeaderValue::try_from(v).ok());
    // The owner decides whether the answer will do, and keeps what it says of the server.
    if let Err(why) = handshake.accept(result) {
        if let Some(orphan) = new_id {
            state.delete(orphan).await;
        }
        return Err(lost(why.to_string()));
    }
    {
        let mut session = lock(&state.session);
        session.id = new_id;
        session.version = version;
    }
    let initialized = Message::notification("notifications/initialized", None);
    let (headers, _) = state.headers_for(&initialized);
    let sent = match state.post(initialized.to_json(), headers).await {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(lost(format!(
            "notifications/initialized got HTTP {}",
            response.status()
        ))),
        Err(error) => Err(error),
    };
    if let Err(error) = sent {
        // The new session is half made: it goes, and the old id comes back for the next try.
        let orphan = lock(&state.session).id.take();
        if let Some(orphan) = orphan {
            state.delete(orphan).await;
        }
        return Err(error);
    }
    start_listening(state).await;
    Ok(())
}

/// The result of the response to `id` on an SSE body, if it comes.
async fn first_response(
    decoder: &mut SseDecoder,
    mut body: Incoming,
    id: &RequestId,
) -> Option<Value> {
    let mut items = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        decoder.feed(&chunk, &mut items);
        for item in items.drain(..) {
            let Item::Event(event) = item else {
                return None;
            };
            if let Ok(Message::Response(Response {
                id: Some(got),
                outcome,
            })) = jsonrpc::decode(&event.data)
                && &got == id
            {
                return outcome.ok().and_then(|result| result.into_value().ok());
            }
        }
    }
    None
}
