//! Running a user handler: `tools/call`, `resources/read` and `prompts/get`, the three requests
//! that may ask the client for input.
//!
//! In 2026-07-28 these carry the multi round-trip state: the sealed `requestState` (answers
//! from earlier rounds, bound to the method and a digest of the params) and this round's
//! `inputResponses`. A tampered, expired or transplanted `requestState` is -32602.

#[cfg(test)]
mod tests;

use barrel_mcp_types::{
    CallToolParams, CallToolResult, ErrorCode, ErrorObject, GetPromptParams, InputRequiredResult,
    InputResponses, Meta, Payload, ReadResourceParams, ReadResourceResult,
};
use serde_json::{Map, Value, json};

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Server;
use super::context::{Ctx, Scope};
use super::dispatch::{decode, decode_ref, encode};
use super::handler::{PromptArguments, ResourceRequest};
use super::input::{InputMode, Rounds};
use super::registry::ToolEntry;
use super::request_state::{MAX_TOKEN_LEN, RequestState, UNDIGESTED, params_digest};
use super::task_extension::{self, TaskPlan};
use super::task_input::TaskSlot;
use crate::Error;
use crate::auth::AuthInfo;
use crate::peer::RequestContext;
use crate::transport::Caller;

/// What a finished handler run turned into.
enum Outcome<T> {
    Done(T),
    InputRequired(Value),
}

/// The multi round-trip part of a stateless request.
struct RoundTrip {
    method: &'static str,
    /// The params digest, computed when a state is opened; otherwise only if the handler asks
    /// for input (most requests never do, and the digest hashes every argument).
    digest: Option<String>,
    round: u32,
    /// Who asked: the state is sealed for this principal and opens only for it.
    principal: Option<String>,
}

/// Sets up how the handler may ask for input: a session asks the client directly; a stateless
/// request opens its sealed state and merges this round's answers.
fn input_mode(
    server: &Server,
    scope: &Scope,
    method: &'static str,
    params: &Value,
    round: Round,
    principal: Option<String>,
) -> Result<(InputMode, Option<RoundTrip>), ErrorObject> {
    let Round {
        request_state,
        input_responses: responses,
        ..
    } = round;
    let request_state = request_state.as_deref();
    if !scope.is_stateless() {
        return Ok((InputMode::Session, None));
    }
    let (mut answers, round, digest) = match request_state {
        Some(token) => {
            let digest = params_digest(method, params);
            let state = server
                .inner
                .state_codec
                .open(token, method, &digest, principal.as_deref())
                .map_err(|e| ErrorObject::invalid_params(format!("invalid requestState: {e}")))?;
            (state.answers, state.round, Some(digest))
        }
        None => (Map::new(), 0, None),
    };
    answers.extend(responses.unwrap_or_default());
    let trip = RoundTrip {
        method,
        digest,
        round,
        principal,
    };
    Ok((InputMode::Rounds(Rounds::new(answers)), Some(trip)))
}

/// What a request carries for its handler's context: its `_meta` and, in 2026-07-28, the
/// multi round-trip state.
#[derive(Default)]
struct Round {
    meta: Option<Meta>,
    request_state: Option<String>,
    input_responses: Option<InputResponses>,
}

impl Round {
    /// Takes the request's `_meta`, `inputResponses` and `requestState` (the members the
    /// params digest leaves out, [`UNDIGESTED`]) out of `params`: they go to the handler's
    /// context, moved rather than copied. Decoded as the request's typed params would decode
    /// them (`null` is absent).
    fn take_from(params: &mut Value) -> Result<Self, ErrorObject> {
        let Value::Object(map) = params else {
            // Not an object: the typed decode that follows says why.
            return Ok(Self::default());
        };
        let [meta, input_responses, request_state] =
            UNDIGESTED.map(|key| map.remove(key).filter(|value| !value.is_null()));
        Ok(Self {
            // An object or a string is taken as it is (a decode would rebuild it); anything
            // else is decoded only to say why it is refused.
            meta: match meta {
                Some(Value::Object(meta)) => Some(meta),
                other => other.map(|meta| decode(Some(meta))).transpose()?,
            },
            request_state: match request_state {
                Some(Value::String(state)) => Some(state),
                other => other.map(|state| decode(Some(state))).transpose()?,
            },
            input_responses: input_responses
                .map(|responses| decode(Some(responses)))
                .transpose()?,
        })
    }
}

/// The handler's context for a request that may ask the client for input.
fn context(
    server: &Server,
    scope: &Scope,
    method: &'static str,
    raw: &Value,
    mut round: Round,
    cx: RequestContext,
) -> Result<(Ctx, Option<RoundTrip>), ErrorObject> {
    let meta = round.meta.take().unwrap_or_default();
    let principal = cx
        .caller
        .as_deref()
        .and_then(Caller::auth)
        .map(AuthInfo::principal);
    let (input, trip) = input_mode(server, scope, method, raw, round, principal)?;
    let ctx = Ctx::new(
        cx.id,
        meta,
        scope.clone(),
        cx.cancel,
        cx.peer,
        server.clone(),
        input,
        cx.caller,
    );
    Ok((ctx, trip))
}

/// Turns the handler's outcome into a result, or into `input_required` when it asked questions
/// that have no answer yet (whatever it returned).
fn settle<T>(
    server: &Server,
    ctx: &Ctx,
    trip: Option<RoundTrip>,
    params: &Value,
    result: crate::Result<T>,
) -> Result<Outcome<crate::Result<T>>, ErrorObject> {
    let (InputMode::Rounds(rounds), Some(trip)) = (ctx.input_mode(), trip) else {
        return Ok(Outcome::Done(result));
    };
    let (asked, answers) = rounds.finish();
    if asked.is_empty() {
        if let Err(Error::InputRequired) = result {
            return Err(ErrorObject::internal(
                "the handler asked for input it did not record",
            ));
        }
        return Ok(Outcome::Done(result));
    }
    let next_round = trip.round + 1;
    if next_round > server.config().max_input_rounds {
        return Err(ErrorObject::invalid_params(format!(
            "too many input rounds (limit {})",
            server.config().max_input_rounds
        )));
    }
    let state = RequestState {
        method: trip.method.to_owned(),
        params_digest: trip
            .digest
            .unwrap_or_else(|| params_digest(trip.method, params)),
        principal: trip.principal,
        // The codec stamps the expiry when it seals.
        expires_at_ms: 0,
        answers,
        round: next_round,
    };
    let token = server.inner.state_codec.seal(&state);
    if token.len() > MAX_TOKEN_LEN {
        // Issuing it would make every retry fail: say why now.
        return Err(ErrorObject::internal(format!(
            "the answers gathered so far are too large to carry in requestState \
             ({} bytes sealed, at most {MAX_TOKEN_LEN})",
            token.len()
        )));
    }
    let result = InputRequiredResult {
        input_requests: Some(asked),
        request_state: Some(token),
        meta: None,
    };
    let value = serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))?;
    Ok(Outcome::InputRequired(value))
}

/// `tools/call`: unknown tool is -32602; arguments that fail the `inputSchema` and handler
/// errors become `isError` results; a result that fails the `outputSchema` is -32603.
pub(crate) async fn call_tool(
    server: &Server,
    scope: Scope,
    raw: Option<Value>,
    cx: RequestContext,
) -> Result<Payload, ErrorObject> {
    call_tool_as(server, scope, raw, cx, AsTask::No).await
}

/// How a `tools/call` relates to a task.
pub(crate) enum AsTask {
    /// A plain call.
    No,
    /// The work of a task that already exists (2025-11-25): its questions mark it.
    Running(Arc<TaskSlot>),
    /// A call that is, or may become, a 2026-07-28 task.
    MayBecome(TaskPlan),
}

/// [`call_tool`], where the call is or may become a 2026-07-28 task (`plan`): the handler then
/// runs on a task of its own and [`task_extension::run`] decides what the request answers.
pub(crate) async fn call_tool_as(
    server: &Server,
    scope: Scope,
    raw: Option<Value>,
    cx: RequestContext,
    mode: AsTask,
) -> Result<Payload, ErrorObject> {
    let mut raw = raw.unwrap_or_else(|| json!({}));
    let round = Round::take_from(&mut raw)?;
    // Only a stateless request reads its params again (the digest of an input round).
    let mut params = call_params(&mut raw, scope.is_stateless())?;
    let entry = server
        .read_registry()
        .tools
        .get(&params.name)
        .cloned()
        .ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {}", params.name)))?;
    let arguments = Value::Object(params.arguments.take().unwrap_or_default());
    if let Err(problems) = entry.input.validate(&arguments) {
        let text = format!("invalid arguments: {}", problems.join("; "));
        return encode(CallToolResult::error(text), &scope);
    }
    let Value::Object(arguments) = arguments else {
        return Err(ErrorObject::internal("arguments are not an object"));
    };
    let plan = match mode {
        AsTask::No | AsTask::Running(_) => {
            let (mut ctx, trip) = context(server, &scope, "tools/call", &raw, round, cx)?;
            if let AsTask::Running(slot) = mode {
                ctx.set_task_slot(slot);
            }
            let result = (entry.handler.0)(ctx.clone(), arguments).await;
            return finish_tool_call(server, &ctx, trip, &raw, &entry, &params.name, result);
        }
        AsTask::MayBecome(plan) => plan,
    };
    // The work's result is kept as a value (a task's stored result, or the call's answer,
    // finished as one): written as text, it would be parsed straight back.
    let mut scope = scope;
    scope.results_as_text = false;
    // The work gets a token of its own: once the call is a task, it outlives this request.
    let request_cancel = cx.cancel.clone();
    let work_cancel = CancellationToken::new();
    let work_cx = RequestContext {
        cancel: work_cancel.clone(),
        ..cx
    };
    let (mut ctx, trip) = context(server, &scope, "tools/call", &raw, round, work_cx)?;
    ctx.set_task_slot(Arc::clone(&plan.slot));
    let (runner, name) = (server.clone(), params.name.clone());
    let work = async move {
        let result = (entry.handler.0)(ctx.clone(), arguments).await;
        finish_tool_call(&runner, &ctx, trip, &raw, &entry, &name, result)
            .and_then(super::dispatch::into_value)
    };
    task_extension::run(server, plan, work, request_cancel, work_cancel)
        .await
        .map(Payload::from)
}

/// The typed params of a `tools/call`. The usual shape, a name and arguments (or none) and
/// nothing else, is taken from the tree as it is: copied when the request still needs its
/// params (`keep`), moved out otherwise, which leaves `raw` empty. Any other shape is decoded,
/// which also says what is wrong with it.
fn call_params(raw: &mut Value, keep: bool) -> Result<CallToolParams, ErrorObject> {
    let usual = match &*raw {
        Value::Object(map) => {
            let arguments = map.get("arguments");
            matches!(map.get("name"), Some(Value::String(_)))
                && matches!(arguments, None | Some(Value::Null | Value::Object(_)))
                && map.len() == 1 + usize::from(arguments.is_some())
        }
        _ => false,
    };
    if !usual {
        return decode_ref(raw);
    }
    let mut params = CallToolParams::default();
    let mut set = |key: &str, value: Value| match (key, value) {
        ("name", Value::String(name)) => params.name = name,
        ("arguments", Value::Object(arguments)) => params.arguments = Some(arguments),
        // A `null` for arguments: none.
        _ => {}
    };
    match raw {
        Value::Object(map) if keep => map.iter().for_each(|(k, v)| set(k, v.clone())),
        Value::Object(map) => std::mem::take(map)
            .into_iter()
            .for_each(|(k, v)| set(&k, v)),
        _ => {}
    }
    Ok(params)
}

/// A tool handler's outcome as the `tools/call` answer (or its `input_required` round).
fn finish_tool_call(
    server: &Server,
    ctx: &Ctx,
    trip: Option<RoundTrip>,
    raw: &Value,
    entry: &ToolEntry,
    tool: &str,
    result: crate::Result<CallToolResult>,
) -> Result<Payload, ErrorObject> {
    let scope = ctx.scope();
    let result = match settle(server, ctx, trip, raw, result)? {
        Outcome::InputRequired(value) => return Ok(value.into()),
        Outcome::Done(result) => result,
    };
    let result = match result {
        Ok(result) => result,
        Err(Error::Rpc(e)) => return Err(e),
        Err(Error::Tool(text)) => CallToolResult::error(text),
        Err(other) => {
            // Its text may name paths, hosts or queries: it stays in the server's log.
            tracing::warn!(%tool, error = %other, "tool failed");
            CallToolResult::error(tool_failure(&other))
        }
    };
    if server.config().validate_output
        && let Some(output) = &entry.output
        && result.is_error != Some(true)
    {
        let structured = result.structured_content.as_ref().ok_or_else(|| {
            ErrorObject::internal("the tool has an outputSchema but returned no structuredContent")
        })?;
        if let Err(problems) = output.validate(structured) {
            return Err(ErrorObject::internal(format!(
                "the tool's structuredContent does not match its outputSchema: {}",
                problems.join("; ")
            )));
        }
    }
    encode(result, scope)
}

/// `resources/read`: a fixed resource first, then the first matching template. Not found is
/// -32602 in 2026-07-28 and -32002 in the sessionful revisions.
pub(crate) async fn read_resource(
    server: &Server,
    scope: Scope,
    raw: Option<Value>,
    cx: RequestContext,
) -> Result<Payload, ErrorObject> {
    let mut raw = raw.unwrap_or_else(|| json!({}));
    let round = Round::take_from(&mut raw)?;
    let params: ReadResourceParams = decode_ref(&raw)?;
    let found = server
        .read_registry()
        .find_resource(&params.uri)
        .filter(|(_, variables)| {
            !server.config().reject_dot_segments || !variables.values().any(|v| has_dot_segment(v))
        });
    let Some((handler, variables)) = found else {
        let code = if scope.is_stateless() {
            ErrorCode::INVALID_PARAMS
        } else {
            ErrorCode::RESOURCE_NOT_FOUND
        };
        return Err(
            ErrorObject::new(code, format!("resource not found: {}", params.uri))
                .with_data(json!({ "uri": params.uri })),
        );
    };
    let (ctx, trip) = context(server, &scope, "resources/read", &raw, round, cx)?;
    let request = ResourceRequest {
        uri: params.uri.clone(),
        variables,
    };
    let result = (handler.0)(ctx.clone(), request).await;
    let contents = match settle(server, &ctx, trip, &raw, result)? {
        Outcome::InputRequired(value) => return Ok(value.into()),
        Outcome::Done(result) => result.map_err(|e| handler_error(&e))?,
    };
    let config = server.config();
    encode(
        ReadResourceResult {
            contents,
            ttl_ms: Some(config.cache_ttl_ms),
            cache_scope: Some(config.cache_scope),
            meta: None,
        },
        &scope,
    )
}

/// `prompts/get`: unknown prompt or a missing required argument is -32602.
pub(crate) async fn get_prompt(
    server: &Server,
    scope: Scope,
    raw: Option<Value>,
    cx: RequestContext,
) -> Result<Payload, ErrorObject> {
    let mut raw = raw.unwrap_or_else(|| json!({}));
    let round = Round::take_from(&mut raw)?;
    let mut params: GetPromptParams = decode_ref(&raw)?;
    let (prompt, handler) = {
        let registry = server.read_registry();
        let entry = registry.prompts.get(&params.name).ok_or_else(|| {
            ErrorObject::invalid_params(format!("unknown prompt: {}", params.name))
        })?;
        (entry.prompt.clone(), entry.handler.clone())
    };
    let arguments: PromptArguments = params.arguments.take().unwrap_or_default();
    for argument in prompt.arguments.iter().flatten() {
        if argument.required == Some(true) && !arguments.contains_key(&argument.name) {
            return Err(ErrorObject::invalid_params(format!(
                "missing required argument: {}",
                argument.name
            )));
        }
    }
    let (ctx, trip) = context(server, &scope, "prompts/get", &raw, round, cx)?;
    let result = (handler.0)(ctx.clone(), arguments).await;
    match settle(server, &ctx, trip, &raw, result)? {
        Outcome::InputRequired(value) => Ok(value.into()),
        Outcome::Done(result) => encode(result.map_err(|e| handler_error(&e))?, &scope),
    }
}

/// True when `value`, read as a path, has a `..` segment (either separator).
fn has_dot_segment(value: &str) -> bool {
    value.split(['/', '\\']).any(|segment| segment == "..")
}

/// What the caller is told of a tool's Rust error: nothing of its text, only its kind where
/// that is safe (a timed-out or cancelled request).
fn tool_failure(error: &Error) -> &'static str {
    match error {
        Error::Timeout => "the tool failed: a request it made timed out",
        Error::Cancelled => "the tool failed: a request it made was cancelled",
        _ => "the tool failed (the server's log has the details)",
    }
}

/// A handler's failure as a JSON-RPC error: its own JSON-RPC errors pass through; anything else
/// is logged here and sent as a generic internal error.
fn handler_error(error: &Error) -> ErrorObject {
    match error {
        Error::Rpc(e) => e.clone(),
        other => {
            tracing::warn!(error = %other, "handler failed");
            other.to_error_object()
        }
    }
}
