//! [`SessionHandle`]: a live session, reachable from outside a handler (barrel_mcp's
//! `notify_progress`, `notify_log`, `notify_list_changed`, `sampling_create_message`,
//! `elicit_create` and `roots_list` addressed to a session).
//!
//! A handler gets one with [`Ctx::session`](super::Ctx::session) and may keep it, or hand it to
//! a background task; [`Server::session`](super::Server::session) finds one by its id. It
//! speaks to its session only, with the same rules as a handler: log messages follow the
//! session's level, and questions to the client need the capability the client declared. Once
//! the session has ended every call fails with [`Error::Closed`](crate::Error::Closed).
//!
//! The 2026-07-28 revision has no sessions: there, what a background task wants a client to
//! hear travels on a `subscriptions/listen` stream (list changes, resource updates; see
//! [`Server::tools_list_changed`](super::Server::tools_list_changed) and
//! [`Server::notify_resource_updated`](super::Server::notify_resource_updated), which reach
//! every session and listen stream), and progress, logs and questions belong to the request
//! being served: a long job is a task, whose status the client polls.

use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, InputRequest, ListRootsResult, LoggingLevel, ProgressToken,
    ProtocolVersion,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::context::{log_params, progress_params};
use super::events::ServerEvent;
use super::input;
use super::session::Session;
use crate::Error;
use crate::peer::Peer;

/// A live session of the sessionful revisions. Cheap to clone.
///
/// # Example
///
/// A tool that answers at once and leaves a background task to tell its session (and no
/// other) how a job goes; the task stops when the session ends (`examples/background_notify.rs`
/// runs the same over Streamable HTTP):
///
/// ```
/// use std::time::Duration;
///
/// use barrel_mcp::server::{Ctx, Server};
/// use barrel_mcp::types::LoggingLevel;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Job { name: String }
///
/// async fn start(ctx: Ctx, job: Job) -> barrel_mcp::Result<String> {
///     let Some(session) = ctx.session() else {
///         return Ok("no session to report to (2026-07-28): poll a task instead".to_owned());
///     };
///     tokio::spawn(async move {
///         for tick in 1..=3 {
///             tokio::time::sleep(Duration::from_secs(1)).await;
///             let note = format!("{}: step {tick}", job.name);
///             // Error::Closed once the client has gone: nothing more to say.
///             if session.log(LoggingLevel::Info, note).await.is_err() {
///                 return;
///             }
///         }
///         let _ = session.tools_list_changed().await;
///     });
///     Ok("started".to_owned())
/// }
///
/// # fn main() -> barrel_mcp::Result<()> {
/// let server = Server::builder().tool("start", "Start a job", start).build()?;
/// // Elsewhere, a session is found again by the id a handler saw (`Ctx::session_id`).
/// assert!(server.session("an id from Ctx::session_id").is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SessionHandle {
    session: Arc<Session>,
    /// The connection, with no inbound request attached: what it sends goes to the session's
    /// general stream (the GET stream over HTTP).
    peer: Peer,
    client_request_timeout: Duration,
}

impl std::fmt::Debug for SessionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHandle")
            .field("id", &self.session.id)
            .field("closed", &self.peer.is_closed())
            .finish_non_exhaustive()
    }
}

impl SessionHandle {
    pub(crate) fn new(session: Arc<Session>, peer: Peer, client_request_timeout: Duration) -> Self {
        Self {
            session,
            peer,
            client_request_timeout,
        }
    }

    /// Notes a registry change for the session's client (see `announcer.rs`).
    pub(crate) fn note_change(&self, event: &ServerEvent) {
        self.session
            .announcer
            .note(event, &self.session, &self.peer);
    }

    /// True when this is a handle on `session`.
    pub(crate) fn is_of(&self, session: &Session) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.session), session)
    }

    /// The session's id: the server's own name for it (over HTTP it is not the
    /// `Mcp-Session-Id`, which belongs to the transport).
    ///
    /// Example: [`SessionHandle`].
    pub fn id(&self) -> &str {
        &self.session.id
    }

    /// The revision the session negotiated.
    ///
    /// Example: [`SessionHandle`].
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.session.version
    }

    /// What the client declared it can do.
    ///
    /// Example: [`SessionHandle`].
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.session.client_capabilities
    }

    /// The client's self-description.
    ///
    /// Example: [`SessionHandle`].
    pub fn client_info(&self) -> &Implementation {
        &self.session.client_info
    }

    /// True once the session has ended.
    ///
    /// Example: [`SessionHandle`].
    pub fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }

    /// Resolves when the session ends. Cancel-safe.
    ///
    /// Example: [`SessionHandle`].
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// Sends a log message when the session wants this level (everything until the client
    /// sets one with `logging/setLevel`, then what is at or above it). Nothing is sent when
    /// it does not; that is not an error.
    ///
    /// Example: [`SessionHandle`].
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) -> crate::Result<()> {
        self.log_with_logger(level, None, data).await
    }

    /// [`log`](Self::log) naming a logger.
    ///
    /// Example: [`SessionHandle`].
    pub async fn log_with_logger(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: impl Serialize,
    ) -> crate::Result<()> {
        self.check_open()?;
        if !self.session.wants_log(level) {
            return Ok(());
        }
        let params = log_params(level, logger, data)?;
        self.peer
            .notify("notifications/message", Some(params))
            .await
    }

    /// Reports progress on a request of this session that asked for it with `token` (a
    /// long-running job that outlives its handler's first answer, say).
    ///
    /// Example: [`SessionHandle`].
    pub async fn progress(
        &self,
        token: &ProgressToken,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> crate::Result<()> {
        self.check_open()?;
        let params = progress_params(token, progress, total, message, self.session.version);
        self.peer
            .notify("notifications/progress", Some(params))
            .await
    }

    /// Tells this session (and no other) that the tool list changed.
    ///
    /// Example: [`SessionHandle`].
    pub async fn tools_list_changed(&self) -> crate::Result<()> {
        self.notify("notifications/tools/list_changed").await
    }

    /// Tells this session that the resource list changed.
    ///
    /// Example: [`SessionHandle`].
    pub async fn resources_list_changed(&self) -> crate::Result<()> {
        self.notify("notifications/resources/list_changed").await
    }

    /// Tells this session that the prompt list changed.
    ///
    /// Example: [`SessionHandle`].
    pub async fn prompts_list_changed(&self) -> crate::Result<()> {
        self.notify("notifications/prompts/list_changed").await
    }

    /// Tells this session that `uri` changed, when it is subscribed to it; returns whether a
    /// notification was sent.
    ///
    /// Example: [`SessionHandle`].
    pub async fn resource_updated(&self, uri: &str) -> crate::Result<bool> {
        self.check_open()?;
        if !self.session.is_subscribed(uri) {
            return Ok(false);
        }
        self.peer
            .notify(
                "notifications/resources/updated",
                Some(json!({ "uri": uri })),
            )
            .await?;
        Ok(true)
    }

    /// Asks the client's model for a completion (`sampling/createMessage`); -32600 when the
    /// client did not declare sampling.
    ///
    /// Example: [`SessionHandle`].
    pub async fn create_message(
        &self,
        params: CreateMessageParams,
    ) -> crate::Result<CreateMessageResult> {
        self.ask(InputRequest::CreateMessage(params)).await
    }

    /// Asks the user for input (`elicitation/create`); -32600 when the client did not declare
    /// the mode asked for.
    ///
    /// Example: [`SessionHandle`].
    pub async fn elicit(&self, params: ElicitRequestParams) -> crate::Result<ElicitResult> {
        self.ask(InputRequest::Elicit(params)).await
    }

    /// Asks the client for its roots (`roots/list`); -32600 when it did not declare roots.
    ///
    /// Example: [`SessionHandle`].
    pub async fn list_roots(&self) -> crate::Result<ListRootsResult> {
        self.ask(InputRequest::ListRoots).await
    }

    async fn ask<T: DeserializeOwned>(&self, request: InputRequest) -> crate::Result<T> {
        self.check_open()?;
        input::check_capability(&request, &self.session.client_capabilities, false)?;
        let method = request.method();
        // The session's end fails the request; nothing else cancels it.
        let never = CancellationToken::new();
        let value: Value = input::ask_in_session(
            &self.peer,
            &never,
            request,
            self.client_request_timeout,
            None,
        )
        .await?;
        serde_json::from_value(value).map_err(|e| {
            Error::Rpc(barrel_mcp_types::ErrorObject::invalid_params(format!(
                "malformed answer to {method}: {e}"
            )))
        })
    }

    async fn notify(&self, method: &str) -> crate::Result<()> {
        self.check_open()?;
        self.peer.notify(method, None).await
    }

    fn check_open(&self) -> crate::Result<()> {
        if self.peer.is_closed() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }
}
