//! Sending one request: the 2026-07-28 `_meta` envelope, per-call options, progress delivery and
//! the `resultType` check.

use std::sync::{Mutex, PoisonError};

use barrel_mcp_types::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY,
};
use barrel_mcp_types::{
    ClientCapabilities, Implementation, LoggingLevel, Meta, Payload, ProgressParams,
    ProtocolVersion, ResultType,
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::options::CallOptions;
use crate::peer::{Peer, RequestOptions, read_result};
use crate::{Error, Result};

/// What every 2026-07-28 request carries in `params._meta`.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub(crate) version: ProtocolVersion,
    capabilities: Value,
    client_info: Value,
    /// The log level requests opt in to (`logging/setLevel` does not exist in 2026-07-28).
    log_level: Mutex<Option<LoggingLevel>>,
}

impl Envelope {
    pub(crate) fn new(
        version: ProtocolVersion,
        capabilities: &ClientCapabilities,
        client_info: &Implementation,
    ) -> Self {
        Self {
            version,
            capabilities: serde_json::to_value(capabilities).unwrap_or_default(),
            client_info: serde_json::to_value(client_info).unwrap_or_default(),
            log_level: Mutex::new(None),
        }
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    fn log_level(&self) -> Option<LoggingLevel> {
        *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts the envelope into `meta`; entries the caller set are kept, except the revision.
    fn stamp(&self, meta: &mut Meta) {
        meta.insert(
            PROTOCOL_VERSION_KEY.into(),
            Value::from(self.version.as_str()),
        );
        meta.entry(CLIENT_CAPABILITIES_KEY)
            .or_insert_with(|| self.capabilities.clone());
        meta.entry(CLIENT_INFO_KEY)
            .or_insert_with(|| self.client_info.clone());
        if let Some(level) = self.log_level() {
            meta.entry(LOG_LEVEL_KEY)
                .or_insert_with(|| serde_json::to_value(level).unwrap_or_default());
        }
    }
}

/// The params with the caller's extra `_meta` and, in 2026-07-28, the envelope.
fn prepare(
    params: Option<Value>,
    envelope: Option<&Envelope>,
    extra: Option<&Meta>,
) -> Result<Option<Value>> {
    if envelope.is_none() && extra.is_none() {
        return Ok(params);
    }
    let mut params = match params {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(Error::Protocol("params must be a JSON object".into())),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(Error::Protocol("params._meta must be a JSON object".into()));
    };
    if let Some(extra) = extra {
        for (key, value) in extra {
            meta.insert(key.clone(), value.clone());
        }
    }
    if let Some(envelope) = envelope {
        envelope.stamp(meta);
    }
    Ok(Some(Value::Object(params)))
}

/// Sends one request and returns its raw result. In 2026-07-28 (`envelope` given) the result's
/// `resultType` must be `complete` (absent reads as complete), unless `allow_input` is set and
/// it is `input_required`, or `task` for a request that declared the tasks extension.
pub(crate) async fn send(
    peer: &Peer,
    envelope: Option<&Envelope>,
    method: &str,
    params: Option<Value>,
    options: &CallOptions,
    allow_input: bool,
) -> Result<Payload> {
    let params = prepare(params, envelope, options.meta.as_ref())?;
    let may_be_task = allow_input && declares_tasks(params.as_ref());
    let result = request(peer, method, params, options).await?;
    if envelope.is_some() {
        let result = read_result(result)?;
        match ResultType::of(&result) {
            ResultType::Complete => {}
            ResultType::InputRequired if allow_input => {}
            ResultType::Other(other) if may_be_task && other == "task" => {}
            ResultType::InputRequired => {
                return Err(Error::Protocol(format!(
                    "the server answered {method} with input_required, which only tools/call, \
                     prompts/get and resources/read may use"
                )));
            }
            ResultType::Other(other) => {
                return Err(Error::Protocol(format!(
                    "unknown resultType {other:?} in the answer to {method}"
                )));
            }
        }
        return Ok(Payload::Value(result));
    }
    Ok(result)
}

/// True when the request's client capabilities declare the tasks extension.
fn declares_tasks(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(crate::task::EXTENSION))
        .is_some()
}

/// The peer request, delivering progress to the call's callback while it waits.
async fn request(
    peer: &Peer,
    method: &str,
    params: Option<Value>,
    options: &CallOptions,
) -> Result<Payload> {
    let mut peer_options = RequestOptions {
        timeout: options.timeout,
        max_total: options.max_total,
        reset_timeout_on_progress: options.reset_timeout_on_progress,
        progress: None,
        cancel: options.cancel.clone(),
    };
    let Some(callback) = options.progress.as_ref() else {
        return peer.request_result(method, params, peer_options).await;
    };
    let (tx, mut rx) = mpsc::channel(peer.config().progress_queue.max(1));
    peer_options.progress = Some(tx);
    let deliver = |raw: Value| match serde_json::from_value::<ProgressParams>(raw) {
        Ok(progress) => callback(progress),
        Err(e) => tracing::debug!("malformed progress notification ignored: {e}"),
    };
    let call = peer.request_result(method, params, peer_options);
    tokio::pin!(call);
    let result = loop {
        tokio::select! {
            biased;
            Some(raw) = rx.recv() => deliver(raw),
            result = &mut call => break result,
        }
    };
    while let Ok(raw) = rx.try_recv() {
        deliver(raw);
    }
    result
}
