//! Dispatch: one `match` on the method string, then the params are decoded and the registry
//! answers. The same code serves both eras; the [`Scope`] says which one this request is in, and
//! results are shaped for its revision.

use std::sync::Arc;

use barrel_mcp_types::{
    CacheScope, CompleteParams, CompleteResult, Completion, CompletionReference, ErrorCode,
    ErrorObject, Feature, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedParams, Payload, Request, SetLevelParams, Shape, SubscribeParams,
    UnsubscribeParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Server;
use super::completion::CompletionRequest;
use super::context::Scope;
use super::cursor::paginate;
use super::invoke;
use super::listen;
use super::registry::{Collection, Keyed, Registry};
use super::stateless;
use super::task_extension;
use super::tasks;
use crate::peer::RequestContext;

/// Answers one request in its scope.
pub(crate) async fn handle(
    server: Server,
    scope: Scope,
    request: Request,
    cx: RequestContext,
) -> Result<Payload, ErrorObject> {
    let stateless = scope.is_stateless();
    // A listen lasts as long as the client wants it and has a cap of its own.
    let long_lived = request.method == "subscriptions/listen";
    let _running = if long_lived {
        None
    } else {
        let permit = Arc::clone(&server.inner.running)
            .try_acquire_owned()
            .map_err(|_| ErrorObject::internal("server busy: too many requests running"))?;
        Some(permit)
    };
    // The routed future is built where it is awaited: built first and awaited later, its
    // 2 KB were copied from one slot of this future to another.
    let result = match server.config().handler_timeout.filter(|_| !long_lived) {
        Some(limit) => tokio::time::timeout(limit, route(&server, scope, request, cx))
            .await
            .map_err(|_| {
                ErrorObject::new(
                    ErrorCode::REQUEST_TIMEOUT,
                    "the request took longer than the server allows",
                )
            })??,
        None => route(&server, scope, request, cx).await?,
    };
    if stateless {
        return match result {
            Payload::Text(text) => stateless::finish_text(text.get(), &server).map_err(internal),
            Payload::Value(value) => Ok(Payload::Value(stateless::finish(value, &server))),
        };
    }
    Ok(result)
}

async fn route(
    server: &Server,
    scope: Scope,
    request: Request,
    cx: RequestContext,
) -> Result<Payload, ErrorObject> {
    let Request { method, params, .. } = request;
    let session = scope.session.clone();
    // A sessionless server keeps nothing between requests: no tasks (a task-augmented call is
    // served as a plain one, as the spec says for a receiver that does not offer tasks).
    let core_tasks = session
        .as_ref()
        .is_some_and(|s| !s.detached && s.version.supports(Feature::CoreTasks));
    match (method.as_str(), &session) {
        ("tools/list", _) => list_tools(server, &scope, decode(params)?),
        ("tools/call", Some(_)) if core_tasks => {
            let raw = params.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
            if raw.get("task").is_some_and(|t| !t.is_null()) {
                return tasks::call_as_task(server, scope, raw, cx)
                    .await
                    .map(Payload::from);
            }
            let name = raw.get("name").and_then(Value::as_str).unwrap_or_default();
            let required = server
                .read_registry()
                .tools
                .get(name)
                .is_some_and(|e| tasks::support(&e.tool) == tasks::TaskSupport::Required);
            if required {
                return Err(ErrorObject::method_not_found(
                    "tools/call without a task (this tool requires one)",
                ));
            }
            invoke::call_tool(server, scope, Some(raw), cx).await
        }
        ("tools/call", None) => task_extension::call(server, scope, params, cx).await,
        ("tools/call", _) => invoke::call_tool(server, scope, params, cx).await,
        ("tasks/get", None) => task_extension::get(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("tasks/update", None) => task_extension::update(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("tasks/cancel", None) => task_extension::cancel(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("tasks/get", Some(_)) if core_tasks => tasks::get(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("tasks/result", Some(_)) if core_tasks => tasks::result(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("tasks/list", Some(_)) if core_tasks => tasks::list(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("tasks/cancel", Some(_)) if core_tasks => tasks::cancel(server, &scope, params, &cx)
            .await
            .map(Payload::from),
        ("resources/list", _) => list_resources(server, &scope, decode(params)?),
        ("resources/templates/list", _) => list_templates(server, &scope, decode(params)?),
        ("resources/read", _) => invoke::read_resource(server, scope, params, cx).await,
        ("prompts/list", _) => list_prompts(server, &scope, decode(params)?),
        ("prompts/get", _) => invoke::get_prompt(server, scope, params, cx).await,
        ("completion/complete", _) => complete(server, &scope, decode(params)?).await,
        ("server/discover", None) => stateless::discover(server).map(Payload::from),
        ("subscriptions/listen", None) => listen::listen(server, &scope, decode(params)?, cx)
            .await
            .map(Payload::from),
        ("ping", Some(_)) => Ok(empty()),
        ("logging/setLevel", Some(session)) => {
            let params: SetLevelParams = decode(params)?;
            session.set_log_level(params.level);
            Ok(empty())
        }
        ("resources/subscribe", Some(session)) if session.detached => {
            Err(ErrorObject::invalid_request(
                "resources/subscribe needs a session: this server is sessionless",
            ))
        }
        ("resources/subscribe", Some(session)) => {
            let params: SubscribeParams = decode(params)?;
            let config = server.config();
            check_subscription_uri(&params.uri, config.max_subscription_uri_length)?;
            session
                .subscribe(params.uri, config.max_resource_subscriptions)
                .map_err(|limit| {
                    ErrorObject::invalid_params(format!(
                        "too many resource subscriptions in this session (limit {limit})"
                    ))
                })?;
            Ok(empty())
        }
        ("resources/unsubscribe", Some(session)) => {
            let params: UnsubscribeParams = decode(params)?;
            session.unsubscribe(&params.uri);
            Ok(empty())
        }
        (other, _) => super::custom::route(server, scope, other, params, cx)
            .await
            .map(Payload::from),
    }
}

/// Refuses a subscription URI longer than `limit` bytes (-32602).
pub(crate) fn check_subscription_uri(uri: &str, limit: usize) -> Result<(), ErrorObject> {
    if uri.len() > limit {
        return Err(ErrorObject::invalid_params(format!(
            "resource URI too long to subscribe to ({} bytes, limit {limit})",
            uri.len()
        )));
    }
    Ok(())
}

/// Decodes params; absent params read as `{}`, so a missing required field is named.
pub(crate) fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    let params = params.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    serde_json::from_value(params)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

/// [`decode`] of params the caller keeps: read in place, without a copy of the whole tree.
pub(crate) fn decode_ref<T: DeserializeOwned>(params: &Value) -> Result<T, ErrorObject> {
    T::deserialize(params).map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

/// Serializes a result after shaping it for the request's revision: straight to JSON text,
/// sent as it is (in the stateless era [`handle`] then adds `resultType` and the server's info
/// in `_meta` to the text); to a value where the scope says so ([`Scope::results_as_text`]:
/// on an in-process pair).
pub(crate) fn encode<T: Serialize + Shape>(
    mut result: T,
    scope: &Scope,
) -> Result<Payload, ErrorObject> {
    result.shape(scope.version);
    let written = if scope.results_as_text {
        Payload::text_of(&result)
    } else {
        serde_json::to_value(result).map(Payload::Value)
    };
    written.map_err(internal)
}

/// A result as a value, for what keeps or edits it (a task's stored result); text is parsed.
pub(crate) fn into_value(result: Payload) -> Result<Value, ErrorObject> {
    result.into_value().map_err(internal)
}

/// A result that could not be written or read back: -32603.
fn internal(error: serde_json::Error) -> ErrorObject {
    ErrorObject::internal(format!("internal error: {error}"))
}

fn empty() -> Payload {
    Payload::Value(Value::Object(serde_json::Map::new()))
}

/// One page of a registry list, in the list's order; a forged or stale cursor is -32602.
fn page<E, T: Clone>(
    server: &Server,
    list: impl Fn(&Registry) -> &Collection<E>,
    item: impl Fn(&E) -> T,
    cursor: Option<&str>,
) -> Result<(Vec<T>, Option<String>), ErrorObject>
where
    E: Keyed,
{
    let registry = server.read_registry();
    let list = list(&registry);
    let all: Vec<&E> = list.iter().collect();
    let (entries, next) = paginate(&all, cursor, server.config().page_size, list.version())
        .map_err(|e| ErrorObject::invalid_params(format!("invalid cursor: {e}")))?;
    Ok((entries.into_iter().map(item).collect(), next))
}

/// The cache hints of 2026-07-28 (`ttlMs`, `cacheScope`); shaped away for older revisions.
pub(crate) fn cache_hints(server: &Server) -> (Option<u64>, Option<CacheScope>) {
    let config = server.config();
    (Some(config.cache_ttl_ms), Some(config.cache_scope))
}

fn list_tools(
    server: &Server,
    scope: &Scope,
    params: PaginatedParams,
) -> Result<Payload, ErrorObject> {
    let (tools, next_cursor) = page(
        server,
        |r| &r.tools,
        |e| e.tool.clone(),
        params.cursor.as_deref(),
    )?;
    let (ttl_ms, cache_scope) = cache_hints(server);
    let result = ListToolsResult {
        tools,
        next_cursor,
        ttl_ms,
        cache_scope,
        meta: None,
    };
    encode(result, scope)
}

fn list_resources(
    server: &Server,
    scope: &Scope,
    params: PaginatedParams,
) -> Result<Payload, ErrorObject> {
    let (resources, next_cursor) = page(
        server,
        |r| &r.resources,
        |e| e.resource.clone(),
        params.cursor.as_deref(),
    )?;
    let (ttl_ms, cache_scope) = cache_hints(server);
    let result = ListResourcesResult {
        resources,
        next_cursor,
        ttl_ms,
        cache_scope,
        meta: None,
    };
    encode(result, scope)
}

fn list_templates(
    server: &Server,
    scope: &Scope,
    params: PaginatedParams,
) -> Result<Payload, ErrorObject> {
    let (resource_templates, next_cursor) = page(
        server,
        |r| &r.templates,
        |e| e.template.clone(),
        params.cursor.as_deref(),
    )?;
    let (ttl_ms, cache_scope) = cache_hints(server);
    let result = ListResourceTemplatesResult {
        resource_templates,
        next_cursor,
        ttl_ms,
        cache_scope,
        meta: None,
    };
    encode(result, scope)
}

fn list_prompts(
    server: &Server,
    scope: &Scope,
    params: PaginatedParams,
) -> Result<Payload, ErrorObject> {
    let (prompts, next_cursor) = page(
        server,
        |r| &r.prompts,
        |e| e.prompt.clone(),
        params.cursor.as_deref(),
    )?;
    let (ttl_ms, cache_scope) = cache_hints(server);
    let result = ListPromptsResult {
        prompts,
        next_cursor,
        ttl_ms,
        cache_scope,
        meta: None,
    };
    encode(result, scope)
}

/// `completion/complete`: the completer registered for the prompt argument or template
/// variable, or no suggestions. An unknown prompt or template is -32602.
async fn complete(
    server: &Server,
    scope: &Scope,
    params: CompleteParams,
) -> Result<Payload, ErrorObject> {
    let argument = params.argument.name.clone();
    let completer = {
        let registry = server.read_registry();
        match &params.reference {
            CompletionReference::Prompt { name, .. } => {
                if registry.prompts.get(name).is_none() {
                    return Err(ErrorObject::invalid_params(format!(
                        "unknown prompt: {name}"
                    )));
                }
                registry
                    .prompt_completers
                    .get(&(name.clone(), argument.clone()))
                    .cloned()
            }
            CompletionReference::Resource { uri } => {
                if registry.templates.get(uri).is_none() && registry.resources.get(uri).is_none() {
                    return Err(ErrorObject::invalid_params(format!(
                        "unknown resource template: {uri}"
                    )));
                }
                registry
                    .template_completers
                    .get(&(uri.clone(), argument.clone()))
                    .cloned()
            }
        }
    };
    let values = match completer {
        Some(completer) => {
            let request = CompletionRequest {
                argument,
                value: params.argument.value,
                context: params.context.and_then(|c| c.arguments).unwrap_or_default(),
            };
            completer
                .complete(request)
                .await
                .map_err(|e| e.to_error_object())?
        }
        None => Vec::new(),
    };
    encode(
        CompleteResult {
            completion: Completion::from_values(values),
            meta: None,
        },
        scope,
    )
}
