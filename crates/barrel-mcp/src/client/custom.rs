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
    /// nothing is checked against the capabilities first. A method of the spec is refused ([`Error::Unsupported`]): it has a typed call, whose
    /// checks this would bypass.
    ///
    /// # Example
    ///
    /// A server answering a method of its own ([`ServerBuilder::request`](crate::server::ServerBuilder::request)),
    /// and a client calling it:
    ///
    /// ```
    /// use barrel_mcp::server::{Ctx, Server};
    /// use barrel_mcp::types::ErrorObject;
    /// use serde_json::{Value, json};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> barrel_mcp::Result<()> {
    /// let server = Server::builder()
    ///     .request("com.example/echo", |_: Ctx, params: Value| async move {
    ///         Ok::<_, ErrorObject>(json!({ "echoed": params }))
    ///     })
    ///     .build()?;
    /// let client = server.connect_local().await?;
    /// let answer = client.custom_request("com.example/echo", json!({ "x": 1 })).await?;
    /// assert_eq!(answer["echoed"]["x"], 1);
    /// // The spec's own methods have typed calls.
    /// assert!(client.custom_request("tools/list", ()).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn custom_request(&self, method: &str, params: impl Serialize) -> Result<Value> {
        refuse_spec_method(method)?;
        let params = match serde_json::to_value(params)? {
            Value::Null => None,
            object @ Value::Object(_) => Some(object),
            _ => return Err(Error::Protocol("params must be a JSON object".into())),
        };
        let result = self.send(method, params, &CallOptions::new()).await?;
        crate::peer::read_result(result)
    }

    /// Sends a notification the spec does not define (an extension's or the application's
    /// own); a method of the spec is refused as in [`Client::custom_request`].
    ///
    /// Example: [`Client::custom_request`].
    pub async fn custom_notification(&self, method: &str, params: Option<Value>) -> Result<()> {
        refuse_spec_method(method)?;
        self.peer().notify(method, params).await
    }
}

fn refuse_spec_method(method: &str) -> Result<()> {
    if barrel_mcp_types::method::is_spec_method(method) {
        return Err(Error::Unsupported(format!(
            "{method} is a method of the spec: use its typed call"
        )));
    }
    Ok(())
}
