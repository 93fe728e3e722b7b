//! Requests the specification does not define: an extension's methods, sent in the
//! connection's era (with the 2026-07-28 envelope when there is one).

use serde::Serialize;
use serde_json::Value;

use super::Client;
use super::options::CallOptions;
use crate::{Error, Result};

impl Client {
    /// Sends `method` with `params` (anything that serializes to a JSON object, or `()` for
    /// none) and returns the raw result. For the methods of an extension the server declares
    /// (see [`ServerCapabilities::extensions`](crate::types::ServerCapabilities::extensions));
    /// nothing is checked against the capabilities first.
    pub async fn custom_request(&self, method: &str, params: impl Serialize) -> Result<Value> {
        let params = match serde_json::to_value(params)? {
            Value::Null => None,
            object @ Value::Object(_) => Some(object),
            _ => return Err(Error::Protocol("params must be a JSON object".into())),
        };
        self.send(method, params, &CallOptions::new()).await
    }
}
