//! Answering the server's questions through the [`ClientHandler`](super::ClientHandler): as
//! JSON-RPC requests in the sessionful revisions, and as the `inputRequests` of a 2026-07-28
//! `input_required` result, which the client answers and then retries.

use std::sync::Arc;

use barrel_mcp_types::{
    ClientCapabilities, ErrorObject, InputRequest, InputRequests, InputResponses,
};
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::defaults;
use super::handler::{DynHandler, HandlerContext};
use crate::{Error, Result};

/// Asks the handler one question and encodes its answer.
pub(crate) async fn answer(
    handler: &Arc<dyn DynHandler>,
    request: InputRequest,
    cx: HandlerContext,
    apply_defaults: bool,
) -> Result<Value, ErrorObject> {
    match request {
        InputRequest::CreateMessage(params) => encode(handler.create_message(params, cx).await?),
        InputRequest::Elicit(params) => {
            let mut result = handler.elicit(params.clone(), cx).await?;
            if apply_defaults {
                defaults::apply(&params, &mut result);
            }
            encode(result)
        }
        InputRequest::ListRoots => encode(handler.list_roots(cx).await?),
    }
}

fn encode<T: Serialize>(value: T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value).map_err(|e| ErrorObject::internal(format!("internal error: {e}")))
}

/// True when the client declared what `request` needs.
pub(crate) fn declared(capabilities: &ClientCapabilities, request: &InputRequest) -> bool {
    match request {
        InputRequest::CreateMessage(_) => capabilities.supports_sampling(),
        InputRequest::Elicit(params) if params.is_url() => capabilities.supports_url_elicitation(),
        InputRequest::Elicit(_) => capabilities.supports_form_elicitation(),
        InputRequest::ListRoots => capabilities.supports_roots(),
    }
}

/// Answers every input request of one `input_required` round, in key order. A request for a
/// capability the client did not declare, or a handler error, fails the call.
pub(crate) async fn answer_all(
    handler: &Arc<dyn DynHandler>,
    capabilities: &ClientCapabilities,
    requests: InputRequests,
    cancel: &CancellationToken,
    apply_defaults: bool,
) -> Result<InputResponses> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        if !declared(capabilities, &request) {
            return Err(Error::Protocol(format!(
                "the server asked for {} (input {key:?}), which this client did not declare",
                request.method()
            )));
        }
        let cx = HandlerContext {
            cancel: cancel.clone(),
            request_id: None,
            input_key: Some(key.clone()),
            task_id: None,
        };
        let answer = tokio::select! {
            answer = answer(handler, request, cx, apply_defaults) => answer.map_err(Error::Rpc)?,
            () = cancel.cancelled() => return Err(Error::Cancelled),
        };
        responses.insert(key, answer);
    }
    Ok(responses)
}
