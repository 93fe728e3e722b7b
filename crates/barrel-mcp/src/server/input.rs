//! Asking the client for input, in both eras.
//!
//! In a session the question is a real server-to-client request. In 2026-07-28 the server
//! cannot send requests: a question ends the round. Each question a handler asks gets a key in
//! the order asked (`r0`, `r1`, ...); a question whose answer is already known (from the sealed
//! `requestState` or from this round's `inputResponses`) is answered at once, the others are
//! collected into the `input_required` result. On the retry the handler runs again from the
//! start and gets further.

use std::sync::Mutex;
use std::time::Duration;

use barrel_mcp_types::{
    ClientCapabilities, ElicitRequestParams, ErrorCode, ErrorObject, InputRequest, InputRequests,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::peer::{Peer, RequestOptions};

/// How a request may ask its client for input.
pub(crate) enum InputMode {
    /// Send server-to-client requests over the session's connection.
    Session,
    /// End the round with `input_required` (2026-07-28).
    Rounds(Rounds),
}

/// The questions and answers of one stateless round.
#[derive(Default)]
pub(crate) struct Rounds {
    state: Mutex<RoundState>,
}

#[derive(Default)]
struct RoundState {
    /// Answers known so far: from earlier rounds (sealed) and from this round's responses.
    answers: Map<String, Value>,
    /// Questions asked this round that have no answer yet.
    asked: InputRequests,
    /// The key the next question gets.
    next: u32,
}

impl Rounds {
    pub(crate) fn new(answers: Map<String, Value>) -> Self {
        Self {
            state: Mutex::new(RoundState {
                answers,
                ..RoundState::default()
            }),
        }
    }

    /// Answers a question at once when its answer is known, else records it and ends the
    /// round. Unnamed questions get `r0`, `r1`, ... in the order asked.
    pub(crate) fn ask(&self, key: Option<&str>, request: InputRequest) -> crate::Result<Value> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = match key {
            Some(key) => key.to_owned(),
            None => {
                let key = format!("r{}", state.next);
                state.next += 1;
                key
            }
        };
        if let Some(answer) = state.answers.get(&key) {
            return Ok(answer.clone());
        }
        state.asked.insert(key, request);
        Err(Error::InputRequired)
    }

    /// The unanswered questions and every answer known, once the handler has returned.
    pub(crate) fn finish(&self) -> (InputRequests, Map<String, Value>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (
            std::mem::take(&mut state.asked),
            std::mem::take(&mut state.answers),
        )
    }
}

/// Refuses a question the client did not declare it can answer: -32021 in 2026-07-28 (with the
/// capability it needs), -32600 in a session.
pub(crate) fn check_capability(
    request: &InputRequest,
    caps: &ClientCapabilities,
    stateless: bool,
) -> crate::Result<()> {
    let (supported, needed, name) = match request {
        InputRequest::Elicit(params) if params.is_url() => (
            caps.supports_url_elicitation(),
            json!({ "elicitation": { "url": {} } }),
            "elicitation (URL mode)",
        ),
        InputRequest::Elicit(_) => (
            caps.supports_form_elicitation(),
            json!({ "elicitation": {} }),
            "elicitation",
        ),
        InputRequest::CreateMessage(params) if params.tools.is_some() => (
            caps.supports_sampling_tools(),
            json!({ "sampling": { "tools": {} } }),
            "sampling with tools",
        ),
        InputRequest::CreateMessage(_) => (
            caps.supports_sampling(),
            json!({ "sampling": {} }),
            "sampling",
        ),
        InputRequest::ListRoots => (caps.supports_roots(), json!({ "roots": {} }), "roots"),
    };
    if supported {
        return Ok(());
    }
    let message = format!("the client did not declare the {name} capability");
    Err(Error::Rpc(if stateless {
        ErrorObject::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
            .with_data(json!({ "requiredCapabilities": needed }))
    } else {
        ErrorObject::invalid_request(message)
    }))
}

/// Sends the question as a request to the client and waits for the answer, giving up when the
/// handler's request is cancelled or after `timeout`. A question of a task (2025-11-25) names
/// it in `_meta` (`related_task`).
pub(crate) async fn ask_in_session(
    peer: &Peer,
    cancel: &CancellationToken,
    request: InputRequest,
    timeout: Duration,
    related_task: Option<&str>,
) -> crate::Result<Value> {
    let method = request.method();
    let params = match request {
        InputRequest::Elicit(mut params) => {
            if let ElicitRequestParams::Url(url) = &mut params {
                url.elicitation_id
                    .get_or_insert_with(super::session::random_id);
            }
            Some(serde_json::to_value(params)?)
        }
        InputRequest::CreateMessage(params) => Some(serde_json::to_value(params)?),
        InputRequest::ListRoots => None,
    };
    let params = match related_task {
        None => params,
        Some(id) => {
            let mut params = params.unwrap_or_else(|| json!({}));
            if let Value::Object(object) = &mut params {
                object.insert(
                    "_meta".into(),
                    json!({ barrel_mcp_types::meta::RELATED_TASK_KEY: { "taskId": id } }),
                );
            }
            Some(params)
        }
    };
    let options = RequestOptions {
        timeout: Some(timeout),
        cancel: Some(cancel.child_token()),
        ..RequestOptions::default()
    };
    peer.request(method, params, options).await
}
