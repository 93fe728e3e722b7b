//! Local calls: a [`Server`] used in-process, without setting up a transport, for tests and
//! for embedding it in an application.
//!
//! Each call goes through a [`Client`] connected to the server over an in-memory pair, so it
//! passes exactly the checks a remote call passes (argument schemas, unknown names, output
//! schemas, pagination) and its handler sees an ordinary [`Ctx`](super::Ctx). The one-shot
//! calls (`call_tool`, `read_resource`, …) connect for the call and close after it;
//! [`Server::connect_local`] keeps one connection for many calls, or for a handler that asks
//! the client for input (give the builder a handler).

use std::collections::BTreeMap;

use barrel_mcp_types::{
    CallToolResult, GetPromptParams, GetPromptResult, Prompt, ReadResourceParams,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use serde::Serialize;

use super::Server;
use crate::client::{Client, ClientBuilder};
use crate::transport::memory;

impl Server {
    /// A client connected to this server in-process.
    ///
    /// Example: [`Server::call_tool`].
    pub async fn connect_local(&self) -> crate::Result<Client> {
        self.connect_local_with(Client::builder()).await
    }

    /// [`connect_local`](Self::connect_local) with a client of your making (a handler that
    /// answers sampling or elicitation, a pinned revision).
    ///
    /// Example: [`Server::call_tool`].
    pub async fn connect_local_with(&self, builder: ClientBuilder) -> crate::Result<Client> {
        let (server_side, client_side) = memory();
        let server = self.clone();
        tokio::spawn(async move {
            if let Err(error) = server.serve(server_side).await {
                tracing::debug!(%error, "local connection ended");
            }
        });
        builder.connect(client_side).await
    }

    /// Calls the tool `name` with `arguments` (anything that serializes to a JSON object, or
    /// `()` for none). Arguments that fail the tool's schema and tool failures are
    /// `isError` results, as for a remote caller; an unknown tool is an error.
    ///
    /// # Example
    ///
    /// ```
    /// use barrel_mcp::server::{Ctx, Json, Server};
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    /// use serde_json::json;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct AddArgs { a: i64, b: i64 }
    ///
    /// #[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
    /// struct Sum { sum: i64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> barrel_mcp::Result<()> {
    /// let server = Server::builder()
    ///     .tool("add", "Add", |_: Ctx, args: AddArgs| async move {
    ///         Ok(Json(Sum { sum: args.a + args.b }))
    ///     })
    ///     .build()?;
    /// let sum = server.call_tool("add", json!({ "a": 2, "b": 40 })).await?;
    /// assert_eq!(sum.structured_as::<Sum>()?, Sum { sum: 42 });
    /// // Arguments the schema refuses: a tool error for the model, as over a transport.
    /// let refused = server.call_tool("add", json!({ "a": "two" })).await?;
    /// assert_eq!(refused.is_error, Some(true));
    /// // An unknown tool: a JSON-RPC error (-32602).
    /// assert!(server.call_tool("nope", ()).await.is_err());
    /// assert_eq!(server.list_tools().await?.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> crate::Result<CallToolResult> {
        self.connect_local().await?.call(name, arguments).await
    }

    /// Reads the resource at `uri` (a fixed resource, or one a template matches).
    ///
    /// Example: [`Server::call_tool`].
    pub async fn read_resource(&self, uri: &str) -> crate::Result<ReadResourceResult> {
        self.connect_local()
            .await?
            .read_resource(ReadResourceParams::new(uri))
            .await
    }

    /// Gets the prompt `name` with its arguments.
    ///
    /// Example: [`Server::call_tool`].
    pub async fn get_prompt<K: Into<String>, V: Into<String>>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> crate::Result<GetPromptResult> {
        let arguments: BTreeMap<String, String> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            ..GetPromptParams::default()
        };
        self.connect_local().await?.get_prompt(params).await
    }

    /// Every tool, as a client lists them (all pages).
    ///
    /// Example: [`Server::call_tool`].
    pub async fn list_tools(&self) -> crate::Result<Vec<Tool>> {
        self.connect_local().await?.list_all_tools().await
    }

    /// Every fixed resource (all pages).
    ///
    /// Example: [`Server::call_tool`].
    pub async fn list_resources(&self) -> crate::Result<Vec<Resource>> {
        self.connect_local().await?.list_all_resources().await
    }

    /// Every resource template (all pages).
    ///
    /// Example: [`Server::call_tool`].
    pub async fn list_resource_templates(&self) -> crate::Result<Vec<ResourceTemplate>> {
        self.connect_local()
            .await?
            .list_all_resource_templates()
            .await
    }

    /// Every prompt (all pages).
    ///
    /// Example: [`Server::call_tool`].
    pub async fn list_prompts(&self) -> crate::Result<Vec<Prompt>> {
        self.connect_local().await?.list_all_prompts().await
    }
}
