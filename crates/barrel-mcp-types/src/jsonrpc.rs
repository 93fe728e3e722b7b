//! The JSON-RPC 2.0 envelope: messages, ids, error objects, and decoding with the right error code.
//!
//! `params` and `result` stay raw [`Value`]s until the method is known; the runtime dispatches on
//! the method string and only then decodes the params into a typed struct. A result on its way
//! out may instead be JSON text written once from a typed struct ([`Payload`]). [`decode`] turns one
//! frame of text into a [`Message`] or into the error the spec asks for: -32700 (with a null id)
//! for text that is not JSON, -32600 for anything that is JSON but not a single well-formed message
//! (a top-level array included).

use std::fmt;

mod members;
pub mod payload;

pub use members::{Members, MembersError};
pub use payload::{JsonText, Payload};

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `jsonrpc` member every message carries.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: a string or an integer. `null`, fractions and other shapes are refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` unless it is a string or an integer.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) => n.as_i64().map(Self::Number),
            _ => None,
        }
    }

    /// The id as a JSON value, keeping its JSON type.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::String(s) => Value::from(s.as_str()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => serializer.serialize_i64(*n),
            Self::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(&value)
            .ok_or_else(|| de::Error::custom("a request id must be a string or an integer"))
    }
}

/// A JSON-RPC error code. Open: any `i32` is representable; the known ones are constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// -32700: the text is not JSON.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// -32600: JSON, but not a valid request.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// -32601: unknown method, or one behind a capability the server did not advertise.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// -32602: the params are wrong (also: resource not found and bad `_meta` in 2026-07-28).
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// -32603: the receiver failed.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// -32002: resource not found, in the sessionful revisions.
    pub const RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// -32042: URL elicitation required (2025-11-25 only).
    pub const URL_ELICITATION_REQUIRED: Self = Self(-32042);
    /// -32020: an HTTP header disagrees with the body (2026-07-28).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// -32021: the request needs a client capability the client did not declare (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// -32022: the requested protocol revision is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
    /// -32000: implementation-defined server error, used for "session not initialized".
    pub const SERVER_ERROR: Self = Self(-32000);
    /// -32001: implementation-defined, used for request timeouts.
    pub const REQUEST_TIMEOUT: Self = Self(-32001);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description, safe to show to the peer.
    pub message: String,
    /// Structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }

    /// -32600.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }

    /// -32601 naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A request: a method call that expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The params, still raw. `None` when absent or `null`.
    pub params: Option<Value>,
}

/// A notification: a method call with no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params, still raw. `None` when absent or `null`.
    pub params: Option<Value>,
}

/// A response: the result of a request, or its error.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request; `None` only for an error about an unreadable request.
    pub id: Option<RequestId>,
    /// The result (a value, or JSON text sent as it is), or the error.
    pub outcome: Result<Payload, ErrorObject>,
}

impl Response {
    /// A successful response.
    pub fn result(id: RequestId, result: impl Into<Payload>) -> Self {
        Self {
            id: Some(id),
            outcome: Ok(result.into()),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self {
            id,
            outcome: Err(error),
        }
    }
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

impl Message {
    /// A request message.
    pub fn request(
        id: impl Into<RequestId>,
        method: impl Into<String>,
        params: Option<Value>,
    ) -> Self {
        Self::Request(Request {
            id: id.into(),
            method: method.into(),
            params,
        })
    }

    /// A notification message.
    pub fn notification(method: impl Into<String>, params: Option<Value>) -> Self {
        Self::Notification(Notification {
            method: method.into(),
            params,
        })
    }

    /// Serializes the message to compact JSON text.
    pub fn to_json(&self) -> String {
        // Serializing a `Message` only writes strings, integers, `Value`s and JSON text, which
        // cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Self::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Self::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Self::Response(r)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        match self {
            Self::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Self::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Self::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
            }
        }
        map.end()
    }
}

/// Why a frame could not be read as a message, with the id to answer to when one was readable.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The id of the offending request when it could be read, else `None` (answered as `null`).
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: ErrorObject,
    /// True when the frame was a notification or a response: errors about those are never answered.
    pub no_reply: bool,
}

impl DecodeError {
    fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self {
            id,
            error,
            no_reply: false,
        }
    }

    /// The error response to send back, if any.
    pub fn to_response(&self) -> Option<Message> {
        (!self.no_reply)
            .then(|| Message::Response(Response::error(self.id.clone(), self.error.clone())))
    }
}

/// Decodes one frame of text into a message, or into the error response the spec asks for.
pub fn decode(text: &str) -> Result<Message, DecodeError> {
    Members::read(text.as_bytes())?.decode()
}

/// Decodes an already parsed JSON value into a message.
pub fn decode_value(value: Value) -> Result<Message, DecodeError> {
    Members::from_value(value)?.decode()
}
