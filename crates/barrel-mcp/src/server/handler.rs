//! Handler types: the one place where user functions are erased into boxed, shareable handlers.
//!
//! A tool handler takes a [`Ctx`] and its arguments and returns anything that is
//! [`IntoToolResult`]: a `String`, a [`CallToolResult`], content blocks, or [`Json`] for
//! structured output whose `outputSchema` is derived from the type. Typed arguments are any
//! `DeserializeOwned + JsonSchema` type; the tool's `inputSchema` is derived from it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use barrel_mcp_types::{
    CallToolResult, ContentBlock, GetPromptResult, JsonObject, ResourceContents,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Ctx;
use crate::peer::BoxFuture;

type ToolFn =
    dyn Fn(Ctx, JsonObject) -> BoxFuture<'static, crate::Result<CallToolResult>> + Send + Sync;
type ResourceFn = dyn Fn(Ctx, ResourceRequest) -> BoxFuture<'static, crate::Result<Vec<ResourceContents>>>
    + Send
    + Sync;
type PromptFn = dyn Fn(Ctx, PromptArguments) -> BoxFuture<'static, crate::Result<GetPromptResult>>
    + Send
    + Sync;

/// A tool's handler, erased.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
#[derive(Clone)]
pub struct ToolHandler(pub(crate) Arc<ToolFn>);

impl ToolHandler {
    /// A handler over raw JSON arguments.
    ///
    /// Example: [`ServerBuilder`](super::ServerBuilder).
    pub fn raw<F, Fut, R>(f: F) -> Self
    where
        F: Fn(Ctx, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<R>> + Send + 'static,
        R: IntoToolResult,
    {
        Self(Arc::new(move |ctx, args| {
            let fut = f(ctx, args);
            Box::pin(async move { fut.await.map(IntoToolResult::into_tool_result) })
        }))
    }

    /// A handler over typed arguments, decoded from the JSON arguments with serde. Arguments
    /// that do not decode give an `isError` result naming the problem.
    ///
    /// Example: [`ServerBuilder`](super::ServerBuilder).
    pub fn typed<A, F, Fut, R>(f: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<R>> + Send + 'static,
        R: IntoToolResult,
    {
        let f = Arc::new(f);
        Self(Arc::new(move |ctx, args| {
            let f = Arc::clone(&f);
            Box::pin(async move {
                match serde_json::from_value::<A>(Value::Object(args)) {
                    Ok(args) => f(ctx, args).await.map(IntoToolResult::into_tool_result),
                    Err(e) => Ok(CallToolResult::error(format!("invalid arguments: {e}"))),
                }
            })
        }))
    }
}

impl std::fmt::Debug for ToolHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolHandler")
    }
}

/// What a resource handler is asked to read.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRequest {
    /// The URI the client asked for.
    pub uri: String,
    /// For a template, the variables matched in the URI (percent-decoded); empty otherwise.
    pub variables: BTreeMap<String, String>,
}

/// A resource's (or a resource template's) handler, erased.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
#[derive(Clone)]
pub struct ResourceHandler(pub(crate) Arc<ResourceFn>);

impl ResourceHandler {
    /// A handler from an async function returning the resource's contents.
    ///
    /// Example: [`ServerBuilder`](super::ServerBuilder).
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Ctx, ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<Vec<ResourceContents>>> + Send + 'static,
    {
        Self(Arc::new(move |ctx, req| Box::pin(f(ctx, req))))
    }
}

impl std::fmt::Debug for ResourceHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResourceHandler")
    }
}

/// The arguments of a `prompts/get` call.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
pub type PromptArguments = BTreeMap<String, String>;

/// A prompt's handler, erased.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
#[derive(Clone)]
pub struct PromptHandler(pub(crate) Arc<PromptFn>);

impl PromptHandler {
    /// A handler from an async function returning the prompt's messages.
    ///
    /// Example: [`ServerBuilder`](super::ServerBuilder).
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Ctx, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<GetPromptResult>> + Send + 'static,
    {
        Self(Arc::new(move |ctx, args| Box::pin(f(ctx, args))))
    }
}

impl std::fmt::Debug for PromptHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PromptHandler")
    }
}

/// A value a tool handler can return.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
pub trait IntoToolResult {
    /// The `outputSchema` this return type implies, if any.
    fn output_schema() -> Option<JsonObject> {
        None
    }

    /// The `tools/call` result.
    fn into_tool_result(self) -> CallToolResult;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> CallToolResult {
        vec![self].into_tool_result()
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult {
            content: self,
            ..CallToolResult::default()
        }
    }
}

/// Structured tool output: `structuredContent` is the value, a text block carries its JSON for
/// clients that read only text, and the tool's `outputSchema` is derived from `T`.
///
/// Example: [`ServerBuilder`](super::ServerBuilder).
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn output_schema() -> Option<JsonObject> {
        Some(schema_object::<T>())
    }

    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => {
                let text = value.to_string();
                CallToolResult {
                    content: vec![ContentBlock::text(text)],
                    structured_content: Some(value),
                    ..CallToolResult::default()
                }
            }
            Err(e) => CallToolResult::error(format!("the tool's output did not serialize: {e}")),
        }
    }
}

/// The JSON Schema (2020-12, subschemas inlined) of `T`, as a JSON object, without `$schema`.
pub(crate) fn schema_object<T: JsonSchema>() -> JsonObject {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    };
    object.remove("$schema");
    object
}

/// The `inputSchema` of a typed tool: the schema of `A`, forced to describe an object.
pub(crate) fn input_schema_of<A: JsonSchema>() -> JsonObject {
    let mut schema = schema_object::<A>();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        schema = JsonObject::new();
        schema.insert("type".into(), Value::from("object"));
    }
    schema
}
