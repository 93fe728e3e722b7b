//! `ServerBuilder`: the server's identity, limits and offerings, checked once at `build`.

use std::future::Future;
use std::sync::{Arc, RwLock};

use barrel_mcp_types::{
    ErrorObject, GetPromptResult, Implementation, JsonObject, Prompt, Resource, ResourceContents,
    ResourceTemplate, TextResourceContents, Tool,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::broadcast;

use super::completion::Completer;
use super::custom::RequestHandler;
use super::events::EVENT_BUFFER;
use super::handler::{
    IntoToolResult, PromptArguments, PromptHandler, ResourceHandler, ResourceRequest, ToolHandler,
    input_schema_of,
};
use super::registry::{PromptEntry, Registry, ResourceEntry, TemplateEntry, ToolEntry};
use super::request_state::{KeyRing, RequestStateCodec};
use super::typed::{self, IntoPromptResult, IntoResourceContents};
use super::{Ctx, Inner, Server, ServerConfig};
use crate::Error;

/// Builds a [`Server`]. Definitions are checked at [`ServerBuilder::build`]: the first invalid
/// one (a bad tool name, a schema that does not compile, a malformed URI template) is the error.
///
/// # Example
///
/// Every kind of definition, then local calls (no transport) that use them:
///
/// ```
/// use barrel_mcp::server::{Completer, Ctx, Json, ResourceRequest, Server};
/// use barrel_mcp::types::{
///     GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
///     ResourceTemplate,
/// };
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use serde_json::json;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs { a: f64, b: f64 }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum { sum: f64 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> barrel_mcp::Result<()> {
/// let server = Server::builder()
///     .name("demo", "0.1.0")
///     .instructions("Adds numbers and greets people.")
///     // Typed arguments and a structured result: both schemas are derived from the types.
///     .tool("add", "Add two numbers", |_: Ctx, args: AddArgs| async move {
///         Ok(Json(Sum { sum: args.a + args.b }))
///     })
///     .text_resource(Resource::new("demo://readme", "readme"), "# demo")
///     // The untyped forms: template variables and prompt arguments as string maps (see
///     // `typed_template` and `typed_prompt` for structs).
///     .resource_template(
///         ResourceTemplate::new("demo://notes/{id}", "note"),
///         |_: Ctx, request: ResourceRequest| async move {
///             let id = request.variables.get("id").cloned().unwrap_or_default();
///             Ok(vec![ResourceContents::text(request.uri, format!("Note {id}"))])
///         },
///     )
///     .prompt(
///         Prompt::new("greet").with_arguments(vec![PromptArgument::new("name").required()]),
///         |_: Ctx, arguments| async move {
///             let name = arguments.get("name").cloned().unwrap_or_default();
///             let text = format!("Greet {name}.");
///             Ok(GetPromptResult::new(vec![PromptMessage::user(text)]))
///         },
///     )
///     .complete_prompt_argument("greet", "name", Completer::values(["Ada", "Alan"]))
///     .build()?;
///
/// let sum = server.call_tool("add", json!({ "a": 2, "b": 3 })).await?;
/// assert_eq!(sum.structured_content, Some(json!({ "sum": 5.0 })));
/// let note = server.read_resource("demo://notes/7").await?;
/// assert_eq!(note.contents, [ResourceContents::text("demo://notes/7", "Note 7")]);
/// let greeting = server.get_prompt("greet", [("name", "Ada")]).await?;
/// assert_eq!(greeting.messages, [PromptMessage::user("Greet Ada.")]);
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct ServerBuilder {
    info: Option<Implementation>,
    instructions: Option<String>,
    config: ServerConfig,
    state_keys: Option<KeyRing>,
    registry: Registry,
    error: Option<Error>,
    task_store: Option<Arc<dyn crate::task::TaskStore>>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// The server's name and version (`serverInfo`).
    ///
    /// Example: [`ServerBuilder`].
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Some(Implementation::new(name, version));
        self
    }

    /// The server's full self-description (title, icons, website, ...).
    ///
    /// Example: [`ServerBuilder`].
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = Some(info);
        self
    }

    /// Instructions for the client's model on how to use this server.
    ///
    /// Example: [`ServerBuilder`].
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Where tasks are kept (default: a `MemoryTaskStore` with the configured task limits).
    ///
    /// Example: [`ServerBuilder`].
    pub fn task_store(mut self, store: impl crate::task::TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Limits and defaults.
    ///
    /// Example: [`ServerBuilder`].
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// The key that seals and opens `requestState` (at least 32 bytes; a shorter one fails
    /// [`build`](Self::build)): a ring of one key, see
    /// [`request_state_keys`](Self::request_state_keys). Servers behind a load balancer must
    /// share it; by default each server draws a random one.
    ///
    /// Example: [`ServerBuilder`].
    pub fn request_state_key(mut self, key: &[u8]) -> Self {
        match KeyRing::single(key) {
            Ok(ring) => self.state_keys = Some(ring),
            Err(e) => self.fail(Error::Definition(format!("request state key: {e}"))),
        }
        self
    }

    /// The keys that seal and open `requestState`: the first seals, every one opens, so a
    /// ring with the new key first and the old one second rotates without breaking the
    /// retries in flight. Every server that may receive a client's retry (all the nodes
    /// behind one address) must hold the same ring: read it from configuration
    /// ([`KeyRing::from_file`], [`KeyRing::from_env`]), never from a shared store. By default
    /// each server draws a random key.
    ///
    /// Example: [`KeyRing`].
    pub fn request_state_keys(mut self, ring: KeyRing) -> Self {
        self.state_keys = Some(ring);
        self
    }

    /// Adds a tool with typed arguments: its `inputSchema` comes from `A`, its `outputSchema`
    /// from the return type (see [`super::Json`]).
    ///
    /// Example: [`ServerBuilder`].
    pub fn tool<A, R, F, Fut>(self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: IntoToolResult,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<R>> + Send + 'static,
    {
        let tool = Tool {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            ..Tool::default()
        };
        self.tool_with(tool, handler)
    }

    /// Adds a tool from a full definition (title, annotations, icons, `_meta`, ...). An empty
    /// `inputSchema` is derived from `A`, a missing `outputSchema` from the return type.
    ///
    /// Example: [`ServerBuilder`].
    pub fn tool_with<A, R, F, Fut>(self, mut tool: Tool, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: IntoToolResult,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<R>> + Send + 'static,
    {
        if tool.input_schema.is_empty() {
            tool.input_schema = input_schema_of::<A>();
        }
        if tool.output_schema.is_none() {
            tool.output_schema = R::output_schema();
        }
        self.raw_tool(tool, ToolHandler::typed(handler))
    }

    /// Adds a tool whose handler takes the raw JSON arguments.
    ///
    /// Example: [`ServerBuilder`].
    pub fn raw_tool(mut self, tool: Tool, handler: ToolHandler) -> Self {
        match ToolEntry::new(tool, handler) {
            Ok(entry) => self.registry.tools.insert(Arc::new(entry)),
            Err(e) => self.fail(e),
        }
        self
    }

    /// Lets the 2026-07-28 task of the tool `name` start in its handler, when the handler calls
    /// [`Ctx::start_task`], instead of before the handler runs. Until then the call is a plain
    /// request, so the handler can first gather input in `input_required` rounds (what the
    /// tasks extension recommends for input needed before the work starts). The tool must take
    /// tasks (`execution.taskSupport`); without this, its task starts at once.
    ///
    /// Example: [`ServerBuilder`].
    pub fn task_starts_in_handler(mut self, name: &str) -> Self {
        self.registry.deferred_tasks.insert(name.to_owned());
        self
    }

    /// Adds a resource read by `handler`.
    ///
    /// Example: [`ServerBuilder`].
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(Ctx, ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<Vec<ResourceContents>>> + Send + 'static,
    {
        let handler = ResourceHandler::new(handler);
        self.registry
            .resources
            .insert(ResourceEntry { resource, handler });
        self
    }

    /// Adds a resource with fixed text.
    ///
    /// Example: [`ServerBuilder`].
    pub fn text_resource(self, resource: Resource, text: impl Into<String>) -> Self {
        let contents = ResourceContents::Text(TextResourceContents {
            uri: resource.uri.clone(),
            mime_type: resource.mime_type.clone(),
            text: text.into(),
            meta: None,
        });
        self.resource(resource, move |_, _| {
            std::future::ready(Ok(vec![contents.clone()]))
        })
    }

    /// Adds a resource template (RFC 6570); `handler` gets the variables matched in the URI.
    ///
    /// Example: [`ServerBuilder`].
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(Ctx, ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<Vec<ResourceContents>>> + Send + 'static,
    {
        match TemplateEntry::new(template, ResourceHandler::new(handler)) {
            Ok(entry) => self.registry.templates.insert(entry),
            Err(e) => self.fail(e),
        }
        self
    }

    /// Adds a prompt; required arguments are checked before `handler` runs.
    ///
    /// Example: [`ServerBuilder`].
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(Ctx, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<GetPromptResult>> + Send + 'static,
    {
        let handler = PromptHandler::new(handler);
        self.registry
            .prompts
            .insert(PromptEntry { prompt, handler });
        self
    }

    /// Adds a prompt whose arguments are the fields of `A`: each field an argument described
    /// by its doc comment, required unless it is an `Option` (or has a default). The handler
    /// gets the arguments as an `A` (values that do not fit are -32602) and returns a
    /// `String` (one user message), a `Vec<PromptMessage>`, or a [`GetPromptResult`].
    ///
    /// ```
    /// use barrel_mcp::server::{Ctx, Server};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    ///     /// How strict to be.
    ///     strictness: Option<String>,
    /// }
    ///
    /// let server = Server::builder()
    ///     .typed_prompt("review", "Review code", |_: Ctx, args: Review| async move {
    ///         let strictness = args.strictness.as_deref().unwrap_or("fair");
    ///         Ok(format!("Review this code, {strictness}ly:\n{}", args.code))
    ///     })
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn typed_prompt<A, R, F, Fut>(mut self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: IntoPromptResult,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<R>> + Send + 'static,
    {
        let arguments = match typed::prompt_arguments::<A>() {
            Ok(arguments) => arguments,
            Err(why) => {
                self.fail(Error::Definition(format!("prompt {name}: {why}")));
                return self;
            }
        };
        let prompt = Prompt::new(name)
            .with_description(description)
            .with_arguments(arguments);
        let handler = Arc::new(handler);
        self.prompt(prompt, move |ctx, arguments: PromptArguments| {
            let handler = Arc::clone(&handler);
            async move {
                let arguments: A = typed::from_strings(&arguments, "prompt arguments")?;
                Ok(handler(ctx, arguments).await?.into_prompt_result())
            }
        })
    }

    /// Adds a resource template whose variables are read into `V` (a struct with one field
    /// per variable; values that do not fit are -32602). The handler returns a `String` (one
    /// text content with the template's MIME type) or the contents themselves.
    ///
    /// ```
    /// use barrel_mcp::server::{Ctx, Server};
    /// use barrel_mcp::types::ResourceTemplate;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize)]
    /// struct Note {
    ///     id: String,
    /// }
    ///
    /// let server = Server::builder()
    ///     .typed_template(
    ///         ResourceTemplate::new("notes://{id}", "note").with_mime_type("text/plain"),
    ///         |_: Ctx, note: Note| async move { Ok(format!("note {}", note.id)) },
    ///     )
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn typed_template<V, R, F, Fut>(self, template: ResourceTemplate, handler: F) -> Self
    where
        V: DeserializeOwned + Send + 'static,
        R: IntoResourceContents,
        F: Fn(Ctx, V) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<R>> + Send + 'static,
    {
        let mime_type = template.mime_type.clone();
        let handler = Arc::new(handler);
        self.resource_template(template, move |ctx, request: ResourceRequest| {
            let handler = Arc::clone(&handler);
            let mime_type = mime_type.clone();
            async move {
                let variables: V = typed::from_strings(&request.variables, "template variables")?;
                let contents = handler(ctx, variables).await?;
                Ok(contents.into_contents(&request.uri, mime_type.as_deref()))
            }
        })
    }

    /// Completes the argument `argument` of the prompt `prompt`.
    ///
    /// Example: [`ServerBuilder`].
    pub fn complete_prompt_argument(
        mut self,
        prompt: &str,
        argument: &str,
        completer: Completer,
    ) -> Self {
        self.registry
            .prompt_completers
            .insert((prompt.to_owned(), argument.to_owned()), completer);
        self
    }

    /// Completes the variable `variable` of the resource template `template`.
    ///
    /// Example: [`ServerBuilder`].
    pub fn complete_template_variable(
        mut self,
        template: &str,
        variable: &str,
        completer: Completer,
    ) -> Self {
        self.registry
            .template_completers
            .insert((template.to_owned(), variable.to_owned()), completer);
        self
    }

    /// Declares the extension `id` (`io.modelcontextprotocol/skills`, `com.example/x`) with its
    /// settings, advertised inline under `capabilities.extensions` in `server/discover` and in
    /// `initialize` for the revisions that carry extensions. An empty object declares support
    /// with no optional features. Declaring an extension does not implement it: add its
    /// methods with [`ServerBuilder::request`].
    ///
    /// Example: [`ServerBuilder`].
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        let id = id.into();
        if id.is_empty() {
            self.fail(Error::Definition("an extension identifier is empty".into()));
            return self;
        }
        self.registry.custom.declare(id, settings);
        self
    }

    /// Answers `method`, a request the specification does not define, with `handler`: it gets
    /// the same [`Ctx`] as a tool and the request's params (`{}` when absent), and returns the
    /// result object or the JSON-RPC error to send. A method the specification defines (in any
    /// revision), a `notifications/` name or an `rpc.` name is refused at
    /// [`build`](Self::build).
    ///
    /// ```
    /// use barrel_mcp::server::{Ctx, Server};
    /// use barrel_mcp::types::ErrorObject;
    /// use serde_json::{Value, json};
    ///
    /// let server = Server::builder()
    ///     .request("acme/echo", |_: Ctx, params: Value| async move {
    ///         Ok::<_, ErrorObject>(json!({ "echo": params["text"] }))
    ///     })
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn request<F, Fut>(mut self, method: &str, handler: F) -> Self
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        match super::custom::check_method(method) {
            Ok(()) => self
                .registry
                .custom
                .insert(method.to_owned(), RequestHandler::new(handler)),
            Err(e) => self.fail(e),
        }
        self
    }

    /// Handles a notification the spec does not define (an extension's or the application's
    /// own) sent by clients in a session or over stdio; its work runs on a task of its own. A
    /// spec notification is refused at [`ServerBuilder::build`].
    ///
    /// Example: [`ServerBuilder`].
    pub fn notification<F, Fut>(mut self, method: &str, handler: F) -> Self
    where
        F: Fn(Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        match super::custom::check_notification(method) {
            Ok(()) => {
                let handler: super::custom::NotificationHandler =
                    Arc::new(move |params| Box::pin(handler(params)));
                self.registry
                    .custom
                    .insert_notification(method.to_owned(), handler);
            }
            Err(e) => self.fail(e),
        }
        self
    }

    pub(crate) fn fail(&mut self, error: Error) {
        self.error.get_or_insert(error);
    }

    /// Checks every definition and builds the server.
    ///
    /// Example: [`ServerBuilder`].
    pub fn build(self) -> Result<Server, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let state_keys = match self.state_keys {
            Some(ring) => ring,
            None => KeyRing::random()
                .map_err(|e| Error::Definition(format!("request state key: {e}")))?,
        };
        let state_codec =
            RequestStateCodec::with_keys(state_keys).ttl(self.config.request_state_ttl);
        let info = self
            .info
            .unwrap_or_else(|| Implementation::new("barrel-mcp", env!("CARGO_PKG_VERSION")));
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let (task_events, _) = broadcast::channel(EVENT_BUFFER);
        Ok(Server {
            inner: Arc::new(Inner {
                info_json: serde_json::to_value(&info).unwrap_or(Value::Null),
                info_text: serde_json::value::to_raw_value(&info).unwrap_or_default(),
                info,
                instructions: self.instructions,
                registry: RwLock::new(self.registry),
                events,
                task_events,
                state_codec,
                open_subscriptions: std::sync::atomic::AtomicUsize::new(0),
                running: Arc::new(tokio::sync::Semaphore::new(
                    self.config
                        .max_running_handlers
                        .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
                )),
                tasks: super::tasks::Tasks::new(self.task_store.unwrap_or_else(|| {
                    Arc::new(crate::task::MemoryTaskStore::new(
                        self.config.task_limits.clone(),
                    ))
                })),
                config: self.config,
                sessions: std::sync::Mutex::default(),
                relay: std::sync::OnceLock::new(),
                relay_lost: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }
}
