//! Multi round-trip requests (2026-07-28): a server answers `tools/call`, `prompts/get` or
//! `resources/read` with an [`InputRequiredResult`] listing what it needs from the client
//! (elicitation, sampling, roots); the client retries the request with `inputResponses` and the
//! echoed `requestState`. Also [`ResultType`], the `resultType` member every 2026-07-28 result has.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::elicitation::ElicitRequestParams;
use crate::meta::Meta;
use crate::method::names;
use crate::sampling::CreateMessageParams;

/// The `resultType` member of a result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum ResultType {
    /// `"complete"`: the final result. Also what an absent `resultType` means.
    #[default]
    Complete,
    /// `"input_required"`: an [`InputRequiredResult`].
    InputRequired,
    /// Any other value, such as an extension's `"task"`.
    Other(String),
}

impl ResultType {
    /// The key of the member.
    pub const KEY: &'static str = "resultType";

    /// The value as written on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Other(s) => s,
        }
    }

    /// Reads the value of a wire string.
    pub fn parse(s: &str) -> Self {
        match s {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The result type of a raw result: [`ResultType::Complete`] when the member is absent or not
    /// a string, as clients must treat results of earlier revisions.
    pub fn of(result: &Value) -> Self {
        result
            .get(Self::KEY)
            .and_then(Value::as_str)
            .map_or(Self::Complete, Self::parse)
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(Self::parse(&s))
    }
}

/// A request a server embeds in an [`InputRequiredResult`], written `{"method": …, "params": …}`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequestParams),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageParams),
    /// `roots/list` (no params).
    ListRoots,
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => names::ELICITATION_CREATE,
            Self::CreateMessage(_) => names::SAMPLING_CREATE_MESSAGE,
            Self::ListRoots => names::ROOTS_LIST,
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("method", self.method())?;
        match self {
            Self::Elicit(p) => map.serialize_entry("params", p)?,
            Self::CreateMessage(p) => map.serialize_entry("params", p)?,
            Self::ListRoots => {}
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            method: String,
            #[serde(default)]
            params: Option<Value>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let params = || {
            raw.params
                .clone()
                .ok_or_else(|| de::Error::missing_field("params"))
        };
        match raw.method.as_str() {
            names::ELICITATION_CREATE => serde_json::from_value(params()?)
                .map(Self::Elicit)
                .map_err(de::Error::custom),
            names::SAMPLING_CREATE_MESSAGE => serde_json::from_value(params()?)
                .map(Self::CreateMessage)
                .map_err(de::Error::custom),
            names::ROOTS_LIST => Ok(Self::ListRoots),
            other => Err(de::Error::unknown_variant(
                other,
                &[
                    names::ELICITATION_CREATE,
                    names::SAMPLING_CREATE_MESSAGE,
                    names::ROOTS_LIST,
                ],
            )),
        }
    }
}

/// Input requests by server-chosen key.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// Answers by the keys of the input requests. Raw, since each answer's type depends on its request
/// (`ElicitResult`, `CreateMessageResult` or `ListRootsResult`).
pub type InputResponses = BTreeMap<String, Value>;

/// A result asking the client for input before the request can complete. Written with
/// `"resultType": "input_required"`; at least one of the two fields should be present.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequiredResult {
    /// What the server needs.
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client must echo on its retry.
    pub request_state: Option<String>,
    /// Metadata.
    pub meta: Option<Meta>,
}

impl InputRequiredResult {
    /// An empty result; add requests with [`InputRequiredResult::with_request`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input request under `key`.
    pub fn with_request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.input_requests
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), request);
        self
    }

    /// Sets the request state.
    pub fn with_state(mut self, state: impl Into<String>) -> Self {
        self.request_state = Some(state.into());
        self
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequiredWire {
    result_type: ResultType,
    #[serde(default)]
    input_requests: Option<InputRequests>,
    #[serde(default)]
    request_state: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

impl Serialize for InputRequiredResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(ResultType::KEY, ResultType::InputRequired.as_str())?;
        if let Some(r) = &self.input_requests {
            map.serialize_entry("inputRequests", r)?;
        }
        if let Some(s) = &self.request_state {
            map.serialize_entry("requestState", s)?;
        }
        if let Some(m) = &self.meta {
            map.serialize_entry("_meta", m)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for InputRequiredResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let w = InputRequiredWire::deserialize(deserializer)?;
        if w.result_type != ResultType::InputRequired {
            return Err(de::Error::custom(format_args!(
                "resultType is {:?}, not \"input_required\"",
                w.result_type.as_str()
            )));
        }
        Ok(Self {
            input_requests: w.input_requests,
            request_state: w.request_state,
            meta: w.meta,
        })
    }
}
