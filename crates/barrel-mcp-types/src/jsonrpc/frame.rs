//! One frame as read off the wire: the envelope's members by name, before any is checked, and
//! their decoding into a [`Message`] or into the error the spec asks for.
//!
//! A frame that is a JSON object is read straight into its six members: no map is built and no
//! member name allocated, and members the envelope does not know are skipped. Anything else
//! (text that is not JSON, an array, a scalar, an object naming a member twice) is read as a
//! [`Value`] first, so its error, and which of two repeated members counts (the last), are a
//! plain JSON parse's.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::{
    DecodeError, ErrorObject, JSONRPC_VERSION, Message, Notification, Request, RequestId, Response,
};

/// The members of one JSON-RPC message as sent: `None` when absent, `Some(Value::Null)` when
/// `null`. Built by [`Frame::read`] or [`Frame::from_object`]; [`Frame::decode`] checks it.
#[derive(Debug, Default, Deserialize)]
pub struct Frame {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A member that is there, `null` included (serde's `Option` would read `null` as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Why bytes are not one frame.
#[derive(Debug)]
pub enum FrameError {
    /// Not JSON: -32700.
    Json(serde_json::Error),
    /// A JSON array, a batch, which MCP does not use: -32600.
    Batch,
    /// JSON, but not an object: -32600.
    NotObject,
}

impl From<FrameError> for DecodeError {
    fn from(error: FrameError) -> Self {
        let error = match error {
            FrameError::Json(e) => ErrorObject::parse_error(format!("parse error: {e}")),
            FrameError::Batch => ErrorObject::invalid_request("batch requests are not supported"),
            FrameError::NotObject => {
                ErrorObject::invalid_request("a message must be a JSON object")
            }
        };
        DecodeError::new(None, error)
    }
}

impl Frame {
    /// Reads one frame of bytes.
    pub fn read(bytes: &[u8]) -> Result<Self, FrameError> {
        // Only an object takes the direct path: serde would also read an array into the
        // members, by position.
        let object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if object && let Ok(frame) = serde_json::from_slice::<Self>(bytes) {
            return Ok(frame);
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(object)) => Ok(Self::from_object(object)),
            Ok(Value::Array(_)) => Err(FrameError::Batch),
            Ok(_) => Err(FrameError::NotObject),
            Err(e) => Err(FrameError::Json(e)),
        }
    }

    /// The frame of a JSON object already parsed.
    pub fn from_object(mut object: Map<String, Value>) -> Self {
        Self {
            jsonrpc: object.remove("jsonrpc"),
            id: object.remove("id"),
            method: object.remove("method"),
            params: object.remove("params"),
            result: object.remove("result"),
            error: object.remove("error"),
        }
    }

    /// The member `name` as sent: one of `jsonrpc`, `id`, `method`, `params`, `result` and
    /// `error`; `None` for any other name.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match name {
            "jsonrpc" => self.jsonrpc.as_ref(),
            "id" => self.id.as_ref(),
            "method" => self.method.as_ref(),
            "params" => self.params.as_ref(),
            "result" => self.result.as_ref(),
            "error" => self.error.as_ref(),
            _ => None,
        }
    }

    /// The method, when it is a string.
    pub fn method(&self) -> Option<&str> {
        self.method.as_ref().and_then(Value::as_str)
    }

    /// Checks the frame and makes it a message, or the error to answer with.
    pub fn decode(self) -> Result<Message, DecodeError> {
        let Self {
            jsonrpc,
            id: raw_id,
            method,
            params,
            result,
            error,
        } = self;
        let is_response = method.is_none();
        let id = match raw_id {
            None => None,
            // An error response about an unreadable request carries a null id.
            Some(Value::Null) if is_response => None,
            Some(v) => match RequestId::from_value(&v) {
                Some(id) => Some(id),
                None => {
                    let mut e = DecodeError::new(
                        None,
                        ErrorObject::invalid_request("id must be a string or an integer"),
                    );
                    e.no_reply = is_response;
                    return Err(e);
                }
            },
        };
        let invalid = |id: &Option<RequestId>, message: &str| {
            DecodeError::new(id.clone(), ErrorObject::invalid_request(message))
        };
        if jsonrpc.as_ref().and_then(Value::as_str) != Some(JSONRPC_VERSION) {
            let mut e = invalid(&id, "jsonrpc must be \"2.0\"");
            // Never answer a frame shaped like a notification (a string method, no id) or a
            // response.
            e.no_reply = match &method {
                Some(Value::String(_)) => id.is_none(),
                Some(_) => false,
                None => true,
            };
            return Err(e);
        }
        match method {
            Some(Value::String(method)) => {
                // Params that are not an object are the method's problem, not the envelope's:
                // invalid params (-32602), like params that do not fit the method.
                let params = take_params(params).map_err(|m| {
                    let mut e = DecodeError::new(id.clone(), ErrorObject::invalid_params(m));
                    e.no_reply = id.is_none();
                    e
                })?;
                Ok(match id {
                    Some(id) => Message::Request(Request { id, method, params }),
                    None => Message::Notification(Notification { method, params }),
                })
            }
            Some(_) => Err(invalid(&id, "method must be a string")),
            // Errors about a response are never answered.
            None => decode_response(id, result, error).map_err(|mut e| {
                e.no_reply = true;
                e
            }),
        }
    }
}

fn take_params(params: Option<Value>) -> Result<Option<Value>, &'static str> {
    match params {
        None | Some(Value::Null) => Ok(None),
        Some(p @ Value::Object(_)) => Ok(Some(p)),
        Some(Value::Array(_)) => {
            Err("invalid params: params must be an object (MCP uses named params)")
        }
        Some(_) => Err("invalid params: params must be an object"),
    }
}

fn decode_response(
    id: Option<RequestId>,
    result: Option<Value>,
    error: Option<Value>,
) -> Result<Message, DecodeError> {
    let outcome = match (result, error) {
        (Some(result), None) => {
            let Some(id) = id else {
                return Err(DecodeError::new(
                    None,
                    ErrorObject::invalid_request("a result needs an id"),
                ));
            };
            return Ok(Message::Response(Response::result(id, result)));
        }
        (None, Some(error)) => serde_json::from_value::<ErrorObject>(error).map_err(|e| {
            DecodeError::new(
                id.clone(),
                ErrorObject::invalid_request(format!("malformed error object: {e}")),
            )
        })?,
        (Some(_), Some(_)) => {
            return Err(DecodeError::new(
                id,
                ErrorObject::invalid_request("a response has result or error, not both"),
            ));
        }
        (None, None) => {
            return Err(DecodeError::new(
                id,
                ErrorObject::invalid_request("a message needs a method, a result or an error"),
            ));
        }
    };
    Ok(Message::Response(Response::error(id, outcome)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every frame decodes the same read directly and through a parsed value.
    #[test]
    fn the_direct_read_agrees_with_the_parsed_value() {
        let frames = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#" {"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null,"extra":{"a":[1]}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
        ];
        for text in frames {
            let direct = serde_json::from_str::<Frame>(text).expect("read directly");
            let Value::Object(object) = serde_json::from_str(text).expect("JSON") else {
                panic!("an object");
            };
            assert_eq!(
                direct.decode(),
                Frame::from_object(object).decode(),
                "{text}"
            );
        }
    }

    #[test]
    fn what_is_not_one_object_is_read_as_json_first() {
        // An array never fills the members by position.
        assert!(matches!(
            Frame::read(br#"["2.0", 1, "tools/list"]"#),
            Err(FrameError::Batch)
        ));
        assert!(matches!(Frame::read(b"5"), Err(FrameError::NotObject)));
        assert!(matches!(Frame::read(b"{"), Err(FrameError::Json(_))));
        assert!(matches!(Frame::read(b"{} x"), Err(FrameError::Json(_))));
        // A repeated member: the last one counts, as in a parsed object.
        let frame =
            Frame::read(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#).expect("a frame");
        assert_eq!(frame.get("id"), Some(&Value::from(2)));
        assert_eq!(frame.method(), Some("m"));
        assert_eq!(frame.get("other"), None);
        // `null` is kept apart from absent.
        let frame = Frame::read(br#"{"id":null}"#).expect("a frame");
        assert_eq!(frame.get("id"), Some(&Value::Null));
        assert_eq!(frame.get("params"), None);
    }
}
