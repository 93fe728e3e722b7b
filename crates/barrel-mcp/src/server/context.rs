//! `Ctx`: what a handler knows about its request and what it can do while it runs.

use std::sync::Arc;

use barrel_mcp_types::meta::{LOG_LEVEL_KEY, progress_token};
use barrel_mcp_types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, InputRequest, ListRootsResult, LoggingLevel, Meta, ProgressToken,
    ProtocolVersion, RequestId,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Server;
use super::input::InputMode;
use super::session::Session;
use super::session_handle::SessionHandle;
use super::task_input::{TaskInput, TaskSlot};
use crate::Error;
use crate::auth::AuthInfo;
use crate::peer::Peer;
use crate::transport::Caller;

/// The params of `notifications/progress`; the message only where the revision has it.
pub(crate) fn progress_params(
    token: &ProgressToken,
    progress: f64,
    total: Option<f64>,
    message: Option<&str>,
    version: ProtocolVersion,
) -> Value {
    let mut params = json!({ "progressToken": token, "progress": progress });
    if let Some(total) = total {
        params["total"] = json!(total);
    }
    if let Some(message) = message
        && version.supports(barrel_mcp_types::Feature::ProgressMessage)
    {
        params["message"] = json!(message);
    }
    params
}

/// The params of `notifications/message`.
pub(crate) fn log_params(
    level: LoggingLevel,
    logger: Option<&str>,
    data: impl Serialize,
) -> crate::Result<Value> {
    let mut params = json!({ "level": level, "data": serde_json::to_value(data)? });
    if let Some(logger) = logger {
        params["logger"] = json!(logger);
    }
    Ok(params)
}

/// A question with a name, from [`Ctx::input_key`].
///
/// Example: [`Ctx`].
#[derive(Debug)]
pub struct KeyedInput<'a> {
    ctx: &'a Ctx,
    key: String,
}

impl KeyedInput<'_> {
    /// [`Ctx::elicit`] under this key.
    ///
    /// Example: [`Ctx`].
    pub async fn elicit(&self, params: ElicitRequestParams) -> crate::Result<ElicitResult> {
        let request = InputRequest::Elicit(params);
        self.ctx.ask_typed(Some(&self.key), request).await
    }

    /// [`Ctx::create_message`] under this key.
    ///
    /// Example: [`Ctx`].
    pub async fn create_message(
        &self,
        params: CreateMessageParams,
    ) -> crate::Result<CreateMessageResult> {
        let request = InputRequest::CreateMessage(params);
        self.ctx.ask_typed(Some(&self.key), request).await
    }

    /// [`Ctx::list_roots`] under this key.
    ///
    /// Example: [`Ctx`].
    pub async fn list_roots(&self) -> crate::Result<ListRootsResult> {
        let request = InputRequest::ListRoots;
        self.ctx.ask_typed(Some(&self.key), request).await
    }

    /// [`Ctx::input`] under this key.
    ///
    /// Example: [`Ctx`].
    pub async fn input(&self, request: InputRequest) -> crate::Result<Value> {
        self.ctx.ask(Some(&self.key), request).await
    }
}

/// What one request's era tells about the client: set per request in 2026-07-28, per session
/// before.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) version: ProtocolVersion,
    pub(crate) client_capabilities: Arc<ClientCapabilities>,
    pub(crate) client_info: Option<Arc<Implementation>>,
    /// The session, for the sessionful revisions.
    pub(crate) session: Option<Arc<Session>>,
    /// The per-request log level of 2026-07-28 (`None`: send no log messages).
    pub(crate) request_log_level: Option<LoggingLevel>,
    /// Whether `dispatch::encode` writes results to JSON text (else values): true where the
    /// transport encodes messages, false where they pass as they are (an in-process pair).
    pub(crate) results_as_text: bool,
}

impl Scope {
    /// The scope of a request in `session` (a detached stand-in session knows no client).
    pub(crate) fn in_session(session: Arc<Session>) -> Self {
        Self {
            version: session.version,
            client_capabilities: Arc::clone(&session.client_capabilities),
            client_info: (!session.detached).then(|| Arc::clone(&session.client_info)),
            session: Some(session),
            request_log_level: None,
            results_as_text: true,
        }
    }

    pub(crate) fn is_stateless(&self) -> bool {
        self.session.is_none()
    }
}

/// A handler's view of its request. Cheap to clone.
///
/// # Example
///
/// A tool that reports progress, logs, stops when cancelled, and keeps its session for later:
///
/// ```
/// use barrel_mcp::server::{Ctx, Server};
/// use barrel_mcp::types::LoggingLevel;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Steps { steps: u32 }
///
/// async fn countdown(ctx: Ctx, args: Steps) -> barrel_mcp::Result<String> {
///     for step in 1..=args.steps {
///         if ctx.is_cancelled() {
///             return Ok(format!("stopped at {step}"));
///         }
///         let total = Some(f64::from(args.steps));
///         ctx.progress(f64::from(step), total, Some("counting")).await?;
///     }
///     ctx.log(LoggingLevel::Info, "counted down").await?;
///     // In a session (not in 2026-07-28) a background task may keep this.
///     let _kept = ctx.session();
///     Ok(format!("done ({})", ctx.protocol_version()))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> barrel_mcp::Result<()> {
/// let server = Server::builder().tool("countdown", "Count down", countdown).build()?;
/// let result = server.call_tool("countdown", serde_json::json!({ "steps": 3 })).await?;
/// assert!(result.text_content().starts_with("done"));
/// # Ok(())
/// # }
/// ```
///
/// Asking the client for input ([`Ctx::elicit`], [`Ctx::create_message`],
/// [`Ctx::list_roots`]) is shown in `examples/everything_http.rs`; with a named key, on
/// [`Ctx::input_key`].
#[derive(Clone)]
pub struct Ctx {
    inner: Arc<Inner>,
}

struct Inner {
    request_id: RequestId,
    meta: Meta,
    scope: Scope,
    cancel: CancellationToken,
    peer: Peer,
    server: Server,
    progress_token: Option<ProgressToken>,
    input: InputMode,
    caller: Option<Arc<Caller>>,
    /// Set when the call is, or may become, a 2026-07-28 task.
    task: Option<Arc<TaskSlot>>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("request_id", &self.inner.request_id)
            .field("protocol_version", &self.inner.scope.version)
            .finish_non_exhaustive()
    }
}

impl Ctx {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        request_id: RequestId,
        meta: Meta,
        scope: Scope,
        cancel: CancellationToken,
        peer: Peer,
        server: Server,
        input: InputMode,
        caller: Option<Arc<Caller>>,
    ) -> Self {
        let progress_token = progress_token(&meta);
        Self {
            inner: Arc::new(Inner {
                request_id,
                meta,
                scope,
                cancel,
                peer,
                server,
                progress_token,
                input,
                caller,
                task: None,
            }),
        }
    }

    /// Marks the call as one that is, or may become, a task. Only on a fresh context.
    pub(crate) fn set_task_slot(&mut self, slot: Arc<TaskSlot>) {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.task = Some(slot);
        } else {
            debug_assert!(false, "set_task_slot on a shared context");
        }
    }

    /// The 2026-07-28 task this call has become, if it has.
    fn task(&self) -> Option<&Arc<TaskInput>> {
        self.inner.task.as_ref().and_then(|slot| slot.task())
    }

    pub(crate) fn scope(&self) -> &Scope {
        &self.inner.scope
    }

    /// Turns this tool call into a task now, when it can become one: the request is answered
    /// with the task (`resultType: "task"`), and the rest of the handler runs as the task's work
    /// (its questions then wait in the task for `tasks/update`). Returns `true` once the call
    /// is a task, `false` when it cannot become one (the handler goes on as a plain request).
    ///
    /// A call becomes a task only in 2026-07-28, for a client that declared the
    /// `io.modelcontextprotocol/tasks` extension on the request, and for a tool that takes
    /// tasks (`execution.taskSupport`). Most such tools start their task before the handler
    /// runs; a tool registered with [`ServerBuilder::task_starts_in_handler`] runs as a plain
    /// request (gathering input in `input_required` rounds, say) until it calls this.
    ///
    /// [`ServerBuilder::task_starts_in_handler`]: super::ServerBuilder::task_starts_in_handler
    ///
    /// Example: [`Ctx`].
    pub async fn start_task(&self) -> crate::Result<bool> {
        match &self.inner.task {
            Some(slot) => slot.start().await,
            None => Ok(false),
        }
    }

    /// The JSON-RPC id of the request being handled.
    ///
    /// Example: [`Ctx`].
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The request's `_meta`.
    ///
    /// Example: [`Ctx`].
    pub fn meta(&self) -> &Meta {
        &self.inner.meta
    }

    /// The protocol revision of this request.
    ///
    /// Example: [`Ctx`].
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.scope.version
    }

    /// What the client declared it can do.
    ///
    /// Example: [`Ctx`].
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.scope.client_capabilities
    }

    /// The client's self-description, when it gave one.
    ///
    /// Example: [`Ctx`].
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.scope.client_info.as_deref()
    }

    /// The authenticated caller of this request: set on every HTTP path (sessionful, 2026-07-28
    /// and legacy HTTP+SSE) when the server authenticates requests
    /// (`HttpConfig::auth`, feature `auth`); `None` over stdio, where the
    /// process's environment is the credential, and for anonymous callers.
    ///
    /// Example: [`Ctx`].
    pub fn auth(&self) -> Option<&AuthInfo> {
        self.inner.caller.as_deref().and_then(Caller::auth)
    }

    /// The head of the HTTP request that carried this request (headers, URI, and the extensions
    /// of any layer in front of the router); `None` on other transports.
    ///
    /// Example: [`Ctx`].
    #[cfg(feature = "http-server")]
    pub fn http_request(&self) -> Option<&http::request::Parts> {
        self.inner.caller.as_deref().and_then(Caller::http_request)
    }

    /// The session this request belongs to, as a handle that may outlive the handler (to log,
    /// report progress, notify list changes or ask the client from a background task); `None`
    /// in 2026-07-28, which has no sessions (see [`SessionHandle`]), and on a sessionless
    /// server (`HttpConfig::sessionless`).
    ///
    /// Example: [`Ctx`].
    pub fn session(&self) -> Option<SessionHandle> {
        let session = self.inner.scope.session.as_ref().filter(|s| !s.detached)?;
        Some(SessionHandle::new(
            Arc::clone(session),
            self.inner.peer.unrelated(),
            self.inner.server.config().client_request_timeout,
        ))
    }

    /// The id of the session this request belongs to ([`Server::session`] finds it); `None`
    /// in 2026-07-28 and on a sessionless server.
    ///
    /// Example: [`Ctx`].
    pub fn session_id(&self) -> Option<&str> {
        self.inner
            .scope
            .session
            .as_deref()
            .filter(|s| !s.detached)
            .map(|s| s.id.as_str())
    }

    /// The server handling the request (to add tools, notify updates, ...).
    ///
    /// Example: [`Ctx`].
    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// True once the client cancelled the request (or the connection ended).
    ///
    /// Example: [`Ctx`].
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Resolves when the request is cancelled. Cancel-safe.
    ///
    /// Example: [`Ctx`].
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await;
    }

    /// The request's cancellation token, to hand to other tasks. Cancelling it ends the
    /// request unanswered; over 2026-07-28 or sessionless HTTP, where the request is the whole
    /// exchange, its stream ends too.
    ///
    /// Example: [`Ctx`].
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Reports progress, when the client asked for it with a `progressToken`; a no-op otherwise
    /// and after cancellation. Progress sent before the handler returns reaches the client before
    /// the result.
    ///
    /// Example: [`Ctx`].
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> crate::Result<()> {
        if let Some(task) = self.task().filter(|task| task.parks()) {
            // A 2026-07-28 task reports through its status message, never notifications.
            let note = match (message, total) {
                (Some(message), _) => message.to_owned(),
                (None, Some(total)) => format!("{progress}/{total}"),
                (None, None) => progress.to_string(),
            };
            return task.note(note).await;
        }
        let Some(token) = &self.inner.progress_token else {
            return Ok(());
        };
        if self.is_cancelled() {
            return Ok(());
        }
        let params = progress_params(token, progress, total, message, self.protocol_version());
        self.inner
            .peer
            .notify("notifications/progress", Some(params))
            .await
    }

    /// Sends a log message (`notifications/message`) when the client wants this level: in a
    /// session, at or above the level set with `logging/setLevel` (everything until it is set);
    /// in 2026-07-28, at or above the request's `logLevel`, and nothing without one.
    ///
    /// Example: [`Ctx`].
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) -> crate::Result<()> {
        self.log_with_logger(level, None, data).await
    }

    /// [`Ctx::log`] naming a logger.
    ///
    /// Example: [`Ctx`].
    pub async fn log_with_logger(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: impl Serialize,
    ) -> crate::Result<()> {
        let wanted = match &self.inner.scope.session {
            Some(session) => session.wants_log(level),
            None => self
                .inner
                .scope
                .request_log_level
                .is_some_and(|threshold| level >= threshold),
        };
        // A 2026-07-28 task sends no log messages (the request they would go with is over).
        if !wanted || self.is_cancelled() || self.task().is_some_and(|task| task.parks()) {
            return Ok(());
        }
        let params = log_params(level, logger, data)?;
        self.inner
            .peer
            .notify("notifications/message", Some(params))
            .await
    }

    /// Asks the user for input through the client (`elicitation/create`, form or URL mode).
    ///
    /// In 2026-07-28 this ends the round when the answer is not there yet: pass the error on
    /// with `?` and the handler runs again when the client retries with the answer.
    ///
    /// Example: [`Ctx`].
    pub async fn elicit(&self, params: ElicitRequestParams) -> crate::Result<ElicitResult> {
        self.ask_typed(None, InputRequest::Elicit(params)).await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    ///
    /// Example: [`Ctx`].
    pub async fn create_message(
        &self,
        params: CreateMessageParams,
    ) -> crate::Result<CreateMessageResult> {
        self.ask_typed(None, InputRequest::CreateMessage(params))
            .await
    }

    /// Asks the client for its roots (`roots/list`).
    ///
    /// Example: [`Ctx`].
    pub async fn list_roots(&self) -> crate::Result<ListRootsResult> {
        self.ask_typed(None, InputRequest::ListRoots).await
    }

    /// Asks the client for any kind of input and returns the raw answer. The typed calls above
    /// are built on this one.
    ///
    /// Example: [`Ctx`].
    pub async fn input(&self, request: InputRequest) -> crate::Result<Value> {
        self.ask(None, request).await
    }

    /// Sends the client a request the spec does not define (an extension's or the
    /// application's own method) and returns its raw result; the client's
    /// `ClientHandler::on_request` answers it. Only in a session: 2026-07-28 servers send no
    /// requests ([`Error::Unsupported`]), and a method of the spec is refused too (it has its
    /// own call).
    ///
    /// Example: [`Ctx`].
    pub async fn custom_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> crate::Result<Value> {
        refuse_spec_method(method)?;
        if self.inner.scope.is_stateless() {
            return Err(Error::Unsupported(format!(
                "{method}: a 2026-07-28 server sends no requests"
            )));
        }
        if self
            .inner
            .scope
            .session
            .as_ref()
            .is_some_and(|s| s.detached)
        {
            return Err(Error::Unsupported(format!(
                "{method}: a sessionless server sends no requests"
            )));
        }
        let options = crate::peer::RequestOptions {
            timeout: Some(self.inner.server.config().client_request_timeout),
            cancel: Some(self.inner.cancel.child_token()),
            ..crate::peer::RequestOptions::default()
        };
        self.inner.peer.request(method, params, options).await
    }

    /// Sends the client a notification the spec does not define, with this request (on its
    /// stream over HTTP); a method of the spec is refused.
    ///
    /// Example: [`Ctx`].
    pub async fn custom_notification(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> crate::Result<()> {
        refuse_spec_method(method)?;
        self.inner.peer.notify(method, params).await
    }

    /// Names the next question. In 2026-07-28 the question travels under this key in
    /// `inputRequests` (otherwise keys are `r0`, `r1`, ... in the order asked), so a client or a
    /// test can address it; in a session the key is not sent.
    ///
    /// ```no_run
    /// # use barrel_mcp::server::Ctx;
    /// # use barrel_mcp::types::ElicitRequestParams;
    /// # async fn f(ctx: Ctx, params: ElicitRequestParams) -> barrel_mcp::Result<()> {
    /// let answer = ctx.input_key("user_name").elicit(params).await?;
    /// # Ok(()) }
    /// ```
    pub fn input_key(&self, key: impl Into<String>) -> KeyedInput<'_> {
        KeyedInput {
            ctx: self,
            key: key.into(),
        }
    }

    async fn ask(&self, key: Option<&str>, request: InputRequest) -> crate::Result<Value> {
        let caps = &self.inner.scope.client_capabilities;
        super::input::check_capability(&request, caps, self.inner.scope.is_stateless())?;
        let timeout = self.inner.server.config().client_request_timeout;
        if let Some(task) = self.task() {
            if task.parks() {
                return task.ask(key, request, &self.inner.cancel).await;
            }
            // 2025-11-25: the question goes to the client as a request naming the task, which
            // is `input_required` until it is answered.
            let _waiting = task.waiting_on_client().await?;
            let cancel = &self.inner.cancel;
            return super::input::ask_in_session(
                &self.inner.peer,
                cancel,
                request,
                timeout,
                Some(task.id()),
            )
            .await;
        }
        match &self.inner.input {
            InputMode::Session => {
                super::input::ask_in_session(
                    &self.inner.peer,
                    &self.inner.cancel,
                    request,
                    timeout,
                    None,
                )
                .await
            }
            InputMode::Rounds(rounds) => rounds.ask(key, request),
        }
    }

    async fn ask_typed<T: DeserializeOwned>(
        &self,
        key: Option<&str>,
        request: InputRequest,
    ) -> crate::Result<T> {
        let method = request.method();
        let value = self.ask(key, request).await?;
        serde_json::from_value(value).map_err(|e| {
            Error::Rpc(barrel_mcp_types::ErrorObject::invalid_params(format!(
                "malformed answer to {method}: {e}"
            )))
        })
    }

    pub(crate) fn input_mode(&self) -> &InputMode {
        &self.inner.input
    }

    /// The 2026-07-28 per-request log level named in `_meta`, if any.
    pub(crate) fn meta_log_level(meta: &Meta) -> Result<Option<LoggingLevel>, ()> {
        match meta.get(LOG_LEVEL_KEY) {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|_| ()),
        }
    }
}

fn refuse_spec_method(method: &str) -> crate::Result<()> {
    if barrel_mcp_types::method::is_spec_method(method) {
        return Err(Error::Unsupported(format!(
            "{method} is a method of the spec: use its own call"
        )));
    }
    Ok(())
}
