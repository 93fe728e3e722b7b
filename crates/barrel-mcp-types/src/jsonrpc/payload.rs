//! A response's `result` as the runtime holds it: a JSON value, or JSON text written already.
//!
//! A result read off the wire is a [`Value`]. A result a server builds from a typed struct is
//! written once, straight to text ([`Payload::text_of`]), and that text is sent as it is inside
//! the response: no `Value` tree is built, copied or dropped on the way out. A result that is
//! the same for many requests (the `initialize` answer) is kept as text and shared.
//!
//! ```
//! use barrel_mcp_types::jsonrpc::{Message, Payload, RequestId, Response};
//! use serde_json::json;
//!
//! let text = Payload::text_of(&json!({ "tools": [] })).expect("serializable");
//! let response = Message::Response(Response::result(RequestId::Number(1), text.clone()));
//! assert_eq!(response.to_json(), r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#);
//! // Both forms compare, and read, as the JSON they hold.
//! assert_eq!(text, Payload::from(json!({ "tools": [] })));
//! assert_eq!(text.into_value().expect("JSON"), json!({ "tools": [] }));
//! ```

use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The `result` of a response: a JSON value, or JSON text sent as it is.
///
/// Example: [the module's](crate::jsonrpc::payload).
#[derive(Clone)]
pub enum Payload {
    /// A JSON value (what a result read off the wire always is).
    Value(Value),
    /// JSON text written by [`Payload::text_of`].
    Text(JsonText),
}

/// JSON text written by serde_json from a serializable value ([`Payload::text_of`]): compact,
/// so it never holds a raw line break and fits one line of a newline-delimited stream. Shared
/// (an `Arc`) by the responses that send it. Only [`Payload::text_of`] makes one.
#[derive(Clone)]
pub struct JsonText(Arc<RawValue>);

impl JsonText {
    /// The text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl Payload {
    /// Writes `result` as JSON text.
    ///
    /// Example: [the module's](crate::jsonrpc::payload).
    pub fn text_of<T: Serialize + ?Sized>(result: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(result).map(|raw| Self::Text(JsonText(Arc::from(raw))))
    }

    /// The result as a JSON value; text is parsed (it fails only past serde_json's nesting
    /// limit).
    ///
    /// Example: [the module's](crate::jsonrpc::payload).
    pub fn into_value(self) -> Result<Value, serde_json::Error> {
        match self {
            Self::Value(value) => Ok(value),
            Self::Text(text) => serde_json::from_str(text.get()),
        }
    }

    /// Reads the result into `T`, from the value or straight from the text.
    ///
    /// Example: [the module's](crate::jsonrpc::payload).
    pub fn decode<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Self::Value(value) => serde_json::from_value(value),
            Self::Text(text) => serde_json::from_str(text.get()),
        }
    }

    /// The value, when the result is one (not text).
    pub fn as_value(&self) -> Option<&Value> {
        match self {
            Self::Value(value) => Some(value),
            Self::Text(_) => None,
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Value(value) => value.serialize(serializer),
            Self::Text(text) => text.0.serialize(serializer),
        }
    }
}

/// Two payloads are equal when they hold the same JSON, whatever their form.
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Value(a), Self::Value(b)) => a == b,
            (Self::Text(a), Self::Text(b)) if a.get() == b.get() => true,
            _ => match (self.clone().into_value(), other.clone().into_value()) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            },
        }
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Value(value) => value.fmt(f),
            Self::Text(text) => f.write_str(text.get()),
        }
    }
}
