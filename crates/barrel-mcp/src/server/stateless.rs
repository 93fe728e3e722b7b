//! The 2026-07-28 envelope: per-request `_meta` in, `resultType` and `serverInfo` out.
//!
//! A request whose `params._meta` names `io.modelcontextprotocol/protocolVersion` is served
//! statelessly: everything the server needs to know about the client travels with it.

use std::sync::Arc;

use barrel_mcp_types::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY,
};
use barrel_mcp_types::{
    ClientCapabilities, DiscoverResult, ErrorCode, ErrorObject, Implementation, Meta,
    ProtocolVersion, Shape,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Server;
use super::context::{Ctx, Scope};

/// The `_meta` object of a request's params, if any.
pub(crate) fn request_meta(params: Option<&Value>) -> Option<&Meta> {
    params?.get("_meta")?.as_object()
}

/// True when the request claims a revision in its `_meta` (so it is served statelessly).
pub(crate) fn claims_version(params: Option<&Value>) -> bool {
    request_meta(params).is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY))
}

/// Methods of the sessionful revisions that 2026-07-28 removed: -32601 when enveloped.
pub(crate) fn is_removed_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "notifications/initialized"
    )
}

/// Reads the per-request envelope: the revision (-32022 when unsupported), the client's
/// capabilities (required: -32602 when missing), its info and log level.
pub(crate) fn scope(meta: &Meta) -> Result<Scope, ErrorObject> {
    let requested = meta
        .get(PROTOCOL_VERSION_KEY)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid_meta(PROTOCOL_VERSION_KEY, "must be a string"))?;
    let version = ProtocolVersion::parse(requested)
        .filter(|v| v.is_stateless())
        .ok_or_else(|| unsupported_version(requested))?;
    let caps = meta
        .get(CLIENT_CAPABILITIES_KEY)
        .ok_or_else(|| invalid_meta(CLIENT_CAPABILITIES_KEY, "is required"))?;
    let client_capabilities = ClientCapabilities::deserialize(caps)
        .map_err(|e| invalid_meta(CLIENT_CAPABILITIES_KEY, &e.to_string()))?;
    let client_info = match meta.get(CLIENT_INFO_KEY) {
        None => None,
        Some(info) => Some(Arc::new(
            Implementation::deserialize(info)
                .map_err(|e| invalid_meta(CLIENT_INFO_KEY, &e.to_string()))?,
        )),
    };
    let request_log_level = Ctx::meta_log_level(meta).map_err(|()| {
        invalid_meta(
            barrel_mcp_types::meta::LOG_LEVEL_KEY,
            "is not a logging level",
        )
    })?;
    Ok(Scope {
        version,
        client_capabilities: Arc::new(client_capabilities),
        client_info,
        session: None,
        request_log_level,
    })
}

fn invalid_meta(key: &str, problem: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("invalid params: _meta[{key:?}] {problem}"))
}

/// Every revision this server speaks, newest first: what `server/discover` lists and what a
/// -32022 error names, always the same list. Clients pick the stateless ones they share; the
/// sessionful ones tell them `initialize` works too.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    ProtocolVersion::ALL
        .iter()
        .rev()
        .map(|v| v.as_str())
        .collect()
}

/// -32022 with the revisions this server speaks and the one asked for.
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    let supported = supported_versions();
    ErrorObject::new(
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
    )
    .with_data(json!({ "supported": supported, "requested": requested }))
}

/// The `server/discover` result.
pub(crate) fn discover(server: &Server) -> Result<Value, ErrorObject> {
    let result = DiscoverResult {
        supported_versions: supported_versions()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        capabilities: {
            // What every stateless revision keeps (no `tasks` slot: that is the extension's).
            let mut capabilities = server.capabilities();
            capabilities.shape(ProtocolVersion::LATEST);
            capabilities
        },
        instructions: server.inner.instructions.clone(),
        ttl_ms: Some(server.config().cache_ttl_ms),
        cache_scope: Some(server.config().cache_scope),
        meta: None,
    };
    serde_json::to_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
}

/// Completes a 2026-07-28 result: `resultType` (complete unless already set) and the server's
/// identity in `_meta`.
pub(crate) fn finish(mut result: Value, server: &Server) -> Value {
    if let Value::Object(object) = &mut result {
        object
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Meta::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                SERVER_INFO_KEY.to_owned(),
                serde_json::to_value(server.info()).unwrap_or(Value::Null),
            );
        }
    }
    result
}
