//! The 2026-07-28 envelope: per-request `_meta` in, `resultType` and `serverInfo` out.
//!
//! A request whose `params._meta` names `io.modelcontextprotocol/protocolVersion` is served
//! statelessly: everything the server needs to know about the client travels with it.

mod appended;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use barrel_mcp_types::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY,
};
use barrel_mcp_types::{
    ClientCapabilities, DiscoverResult, ErrorCode, ErrorObject, Implementation, Meta, Payload,
    ProtocolVersion, Request, Shape,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::context::{Ctx, Scope};
use super::{Server, dispatch};
use crate::peer::{BoxFuture, RequestContext};

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

/// A 2026-07-28 request's `_meta` envelope, read once: the revision it claims (what the HTTP
/// headers must agree with) and what the request is served with.
pub(crate) struct Envelope<'a> {
    /// The revision the body claims, as written.
    pub(crate) claim: &'a str,
    /// An object; decoded once the revision is known to be spoken.
    client_capabilities: &'a Value,
    client_info: Option<Implementation>,
    request_log_level: Option<barrel_mcp_types::LoggingLevel>,
}

impl<'a> Envelope<'a> {
    /// Reads the envelope, in the order of the spec's ingress rules: the revision is a string,
    /// the client's capabilities are an object, its info and log level decode (each -32602
    /// when not). Whether the revision is one this server speaks is [`Envelope::scope`]'s
    /// question, asked after the headers are compared with the claim; the capabilities are
    /// decoded then, as their shape is the revision's.
    pub(crate) fn read(meta: &'a Meta) -> Result<Self, ErrorObject> {
        let claim = meta
            .get(PROTOCOL_VERSION_KEY)
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_meta(PROTOCOL_VERSION_KEY, "must be a string"))?;
        let caps = meta
            .get(CLIENT_CAPABILITIES_KEY)
            .ok_or_else(|| invalid_meta(CLIENT_CAPABILITIES_KEY, "is required"))?;
        if !caps.is_object() {
            return Err(invalid_meta(CLIENT_CAPABILITIES_KEY, "must be an object"));
        }
        let client_info = match meta.get(CLIENT_INFO_KEY) {
            None => None,
            Some(info) => Some(Implementation::deserialize(info).map_err(|_| {
                invalid_meta(
                    CLIENT_INFO_KEY,
                    "must be an object with a name and a version",
                )
            })?),
        };
        let request_log_level = Ctx::meta_log_level(meta).map_err(|()| {
            invalid_meta(
                barrel_mcp_types::meta::LOG_LEVEL_KEY,
                "is not a logging level",
            )
        })?;
        Ok(Self {
            claim,
            client_capabilities: caps,
            client_info,
            request_log_level,
        })
    }

    /// The scope the request is served in: -32022 when the claimed revision is not a
    /// stateless one this server speaks, -32602 when the capabilities do not decode.
    pub(crate) fn scope(self) -> Result<Scope, ErrorObject> {
        let version = ProtocolVersion::parse(self.claim)
            .filter(|v| v.is_stateless())
            .ok_or_else(|| unsupported_version(self.claim))?;
        let client_capabilities = ClientCapabilities::deserialize(self.client_capabilities)
            .map_err(|e| invalid_meta(CLIENT_CAPABILITIES_KEY, &e.to_string()))?;
        Ok(Scope {
            version,
            client_capabilities: Arc::new(client_capabilities),
            client_info: self.client_info.map(Arc::new),
            session: None,
            request_log_level: self.request_log_level,
            results_as_text: true,
        })
    }
}

/// Serves one 2026-07-28 request whose envelope was read: -32601 for the methods that
/// revision removed, else the server's answer.
pub(crate) fn serve(
    server: &Server,
    scope: Scope,
    request: Request,
    cx: RequestContext,
) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
    if is_removed_method(&request.method) {
        let error = ErrorObject::method_not_found(&request.method);
        return Box::pin(std::future::ready(Err(error)));
    }
    crate::peer::box_in_place(|| dispatch::handle(server.clone(), scope, request, cx))
}

/// `server/discover` without the envelope that names a revision.
pub(crate) fn discover_without_envelope() -> ErrorObject {
    ErrorObject::invalid_params(
        "invalid params: server/discover needs _meta[\"io.modelcontextprotocol/protocolVersion\"]",
    )
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

/// [`finish`] of a result written as text: its members are read as they are (borrowed, no
/// value built), `resultType` and the server's identity in `_meta` added, and the lot written
/// again. The usual result, with neither member of its own, keeps its members' order and gets
/// both after them (`appended.rs`); one with either, or naming a member twice, or with more
/// than 32 members, is written in name order (as a `Value` writes it while serde_json's
/// `preserve_order` is off). A result whose members cannot be
/// borrowed (not an object, a name or a `_meta` key with an escape, or a `_meta` that is not
/// an object) is finished as a value.
pub(crate) fn finish_text(text: &str, server: &Server) -> Result<Payload, serde_json::Error> {
    if let Some(finished) = appended::append_finish(text, &server.inner.info_text) {
        return Ok(finished);
    }
    if let Some(finished) = finish_members(text, server)? {
        return Ok(finished);
    }
    let value = serde_json::from_str(text)?;
    Ok(Payload::Value(finish(value, server)))
}

/// [`finish_text`] on borrowed members; `None` when they cannot be borrowed.
fn finish_members(text: &str, server: &Server) -> Result<Option<Payload>, serde_json::Error> {
    let Ok(mut members) = serde_json::from_str::<BTreeMap<&str, &RawValue>>(text) else {
        return Ok(None);
    };
    let mut meta: BTreeMap<&str, &RawValue> = match members.get("_meta") {
        None => BTreeMap::new(),
        Some(raw) => match serde_json::from_str(raw.get()) {
            Ok(meta) => meta,
            Err(_) => return Ok(None),
        },
    };
    meta.insert(SERVER_INFO_KEY, &server.inner.info_text);
    let meta = serde_json::value::to_raw_value(&meta)?;
    members.insert("_meta", &meta);
    let complete: &RawValue = serde_json::from_str(r#""complete""#)?;
    members.entry("resultType").or_insert(complete);
    Payload::text_of(&members).map(Some)
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
            meta.insert(SERVER_INFO_KEY.to_owned(), server.inner.info_json.clone());
        }
    }
    result
}
