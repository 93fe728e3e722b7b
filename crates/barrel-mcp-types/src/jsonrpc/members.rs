//! One message's members as read off the wire, before any is checked, and their decoding
//! into a [`Message`] or into the error the spec asks for.
//!
//! A JSON object is read straight into the six members the envelope knows: no map is built
//! and no member name allocated. Any other member is still read whole (and dropped), so text a
//! plain JSON parse refuses (a string that is not UTF-8, nesting past serde_json's limit) is
//! refused here too, and a member named twice counts once, the last time, as in a parsed
//! object. Anything that is not an object, or not JSON, is parsed as a [`Value`] to tell which
//! (and to give a plain parse's error).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{
    DecodeError, ErrorObject, JSONRPC_VERSION, Message, Notification, Request, RequestId, Response,
};

/// The members of one JSON-RPC message as sent: `None` when absent, `Some(Value::Null)` when
/// `null`. Built by [`Members::read`] or [`Members::from_object`]; [`Members::decode`] checks
/// them.
#[derive(Debug, Default)]
pub struct Members {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

/// The name of a member.
enum Name {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl Visitor<'_> for NameVisitor {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Name, E> {
                Ok(match name {
                    "jsonrpc" => Name::Jsonrpc,
                    "id" => Name::Id,
                    "method" => Name::Method,
                    "params" => Name::Params,
                    "result" => Name::Result,
                    "error" => Name::Error,
                    _ => Name::Other,
                })
            }
        }
        deserializer.deserialize_identifier(NameVisitor)
    }
}

/// [`Members`] read from a JSON object only (never from an array, by position).
struct FromObject(Members);

impl<'de> Deserialize<'de> for FromObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = FromObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FromObject, A::Error> {
                let mut members = Members::default();
                while let Some(name) = map.next_key::<Name>()? {
                    let value = map.next_value::<Value>()?;
                    let slot = match name {
                        Name::Jsonrpc => &mut members.jsonrpc,
                        Name::Id => &mut members.id,
                        Name::Method => &mut members.method,
                        Name::Params => &mut members.params,
                        Name::Result => &mut members.result,
                        Name::Error => &mut members.error,
                        Name::Other => continue,
                    };
                    *slot = Some(value);
                }
                Ok(FromObject(members))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// Why bytes are not one message's members.
#[derive(Debug)]
pub enum MembersError {
    /// Not JSON: -32700.
    Json(serde_json::Error),
    /// A JSON array, a batch, which MCP does not use: -32600.
    Batch,
    /// JSON, but not an object: -32600.
    NotObject,
}

impl From<MembersError> for DecodeError {
    fn from(error: MembersError) -> Self {
        let error = match error {
            MembersError::Json(e) => ErrorObject::parse_error(format!("parse error: {e}")),
            MembersError::Batch => ErrorObject::invalid_request("batch requests are not supported"),
            MembersError::NotObject => {
                ErrorObject::invalid_request("a message must be a JSON object")
            }
        };
        DecodeError::new(None, error)
    }
}

impl Members {
    /// Reads one frame of bytes.
    ///
    /// A frame that is UTF-8 as a whole (any JSON text is) is checked once, up front, so its
    /// strings are not checked one by one again; one that is not fails as a plain parse does,
    /// with its error.
    pub fn read(bytes: &[u8]) -> Result<Self, MembersError> {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return serde_json::from_slice::<Value>(bytes)
                .map_err(MembersError::Json)
                .and_then(Self::from_value);
        };
        if let Ok(FromObject(members)) = serde_json::from_str(text) {
            return Ok(members);
        }
        serde_json::from_str::<Value>(text)
            .map_err(MembersError::Json)
            .and_then(Self::from_value)
    }

    /// The members of a parsed JSON value, when it is an object.
    pub fn from_value(value: Value) -> Result<Self, MembersError> {
        match value {
            Value::Object(object) => Ok(Self::from_object(object)),
            Value::Array(_) => Err(MembersError::Batch),
            _ => Err(MembersError::NotObject),
        }
    }

    /// The members of a JSON object already parsed.
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

    /// Checks the members and makes them a message, or the error to answer with.
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

    /// The members of `text` read directly, and through a parsed object.
    fn both(text: &str) -> (Members, Members) {
        let FromObject(direct) = serde_json::from_str(text).expect("read directly");
        let Value::Object(object) = serde_json::from_str(text).expect("JSON") else {
            panic!("an object");
        };
        (direct, Members::from_object(object))
    }

    /// Every message decodes the same read directly and through a parsed object.
    #[test]
    fn the_direct_read_agrees_with_the_parsed_object() {
        let texts = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#" {"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null,"extra":{"a":[1]}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":null}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m","method":"n"}"#,
            r#"{"jsonr\u0070c":"2.0","id":1,"method":"m"}"#,
        ];
        for text in texts {
            let (direct, parsed) = both(text);
            assert_eq!(direct.decode(), parsed.decode(), "{text}");
        }
    }

    #[test]
    fn what_is_not_one_object_is_read_as_json_first() {
        // An array never fills the members by position.
        assert!(matches!(
            Members::read(br#"["2.0", 1, "tools/list"]"#),
            Err(MembersError::Batch)
        ));
        assert!(matches!(Members::read(b"5"), Err(MembersError::NotObject)));
        assert!(matches!(Members::read(b"{"), Err(MembersError::Json(_))));
        assert!(matches!(Members::read(b"{} x"), Err(MembersError::Json(_))));
        // A repeated member: the last one counts, as in a parsed object.
        let members =
            Members::read(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#).expect("members");
        assert_eq!(members.get("id"), Some(&Value::from(2)));
        assert_eq!(members.method(), Some("m"));
        assert_eq!(members.get("other"), None);
        // `null` is kept apart from absent.
        let members = Members::read(br#"{"id":null}"#).expect("members");
        assert_eq!(members.get("id"), Some(&Value::Null));
        assert_eq!(members.get("params"), None);
    }

    /// A member the envelope does not know is read whole: what a parse refuses is refused.
    #[test]
    fn unknown_members_are_held_to_what_a_parse_accepts() {
        let mut not_utf8 = br#"{"jsonrpc":"2.0","id":1,"method":"m","x":""#.to_vec();
        not_utf8.extend_from_slice(b"\xff\"}");
        assert!(matches!(
            Members::read(&not_utf8),
            Err(MembersError::Json(_))
        ));
        let lone_surrogate = br#"{"jsonrpc":"2.0","id":1,"method":"m","x":"\uD800"}"#;
        assert!(matches!(
            Members::read(lone_surrogate),
            Err(MembersError::Json(_))
        ));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(
            Members::read(deep.as_bytes()),
            Err(MembersError::Json(_))
        ));
    }

    /// A frame is checked for UTF-8 once: text reads as before, and bytes that are not UTF-8
    /// (inside a string or outside) fail with a plain parse's own error.
    #[test]
    fn utf8_is_checked_once_for_the_whole_frame() {
        let text =
            r#"{"jsonrpc":"2.0","id":"é-1","method":"m","params":{"q":"naïve ☃ 🦀","\u00e9":1}}"#;
        let members = Members::read(text.as_bytes()).expect("members");
        assert_eq!(members.get("id"), Some(&Value::from("é-1")));
        assert_eq!(
            members.get("params"),
            Some(&serde_json::json!({ "q": "naïve ☃ 🦀", "é": 1 }))
        );
        for bytes in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\xff\"}"[..],
            &b"{\"jsonrpc\":\"2.0\",\"id\":1\xc3}"[..],
            &b"\xef\xbb\xbf{}"[..],
        ] {
            let plain = serde_json::from_slice::<Value>(bytes).expect_err("not JSON");
            match Members::read(bytes) {
                Err(MembersError::Json(error)) => assert_eq!(error.to_string(), plain.to_string()),
                other => panic!("a parse error, not {other:?}"),
            }
        }
    }
}
