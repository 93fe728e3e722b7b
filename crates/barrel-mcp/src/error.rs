//! The crate's one error type.
//!
//! Three failure planes stay apart: a JSON-RPC error from or for the peer is [`Error::Rpc`]
//! carrying an [`ErrorObject`]; a tool that fails reports it in its result (`isError: true`), not
//! here; everything else that can go wrong in this process is one of the other variants.

use barrel_mcp_types::{ErrorCode, ErrorObject};

/// What can go wrong in barrel-mcp.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing the transport failed.
    #[error("transport I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// A value could not be encoded or decoded as JSON.
    #[error("JSON encoding failed: {0}")]
    Json(#[from] serde_json::Error),
    /// The peer broke the protocol (an unexpected message, a missing field, ...).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The peer answered with a JSON-RPC error, or a handler wants one sent.
    #[error("JSON-RPC error {}: {}", .0.code, .0.message)]
    Rpc(ErrorObject),
    /// The connection is closed.
    #[error("connection closed")]
    Closed,
    /// The request got no answer in time.
    #[error("request timed out")]
    Timeout,
    /// The request was cancelled.
    #[error("request cancelled")]
    Cancelled,
    /// A tool failed and says why in words meant for the caller (and the model): the text is
    /// sent as the tool's `isError` result. Other errors a tool returns are logged and sent as
    /// a generic message, so paths, host names or SQL never reach the client.
    #[error("{0}")]
    Tool(String),
    /// A tool, resource, template or prompt definition is invalid (bad name, bad schema, ...).
    #[error("invalid definition: {0}")]
    Definition(String),
    /// A stateless (2026-07-28) request needs input from the client first.
    ///
    /// Handlers get this from the [`Ctx`](crate::server::Ctx) input API and pass it on with `?`;
    /// the server answers the request with an `input_required` result and runs the handler again
    /// when the client retries with the answers.
    #[error("input required from the client")]
    InputRequired,
    /// The call is not available on this connection: the server did not advertise the
    /// capability it needs, or the negotiated revision has no such method. Nothing was sent.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// An HTTP transport failed in a way the protocol has no answer for: authorization is needed
    /// (401/403, never read as a protocol answer), the server failed (5xx), or it could not be
    /// reached. The connection is closed.
    #[error("{0}")]
    Http(HttpError),
    /// Content a server sent does not match what it promised: a skill file whose size,
    /// digest or front matter differs from the skill's entry, a file the entry does not list,
    /// or an entry that breaks the skills extension's rules. The content is not used.
    #[error("verification failed: {0}")]
    Verification(String),
    /// Getting a credential failed: OAuth discovery, registration or a grant went wrong, an
    /// authorization server's answer did not pass a check, or the user declined. Nothing was
    /// sent to the MCP server with a credential from it.
    #[error("authorization failed: {0}")]
    Auth(String),
}

/// Why an HTTP transport gave up: the status (if an answer came) and the challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The HTTP status, or `None` when no answer came (refused, reset, timed out).
    pub status: Option<u16>,
    /// What happened, for people.
    pub message: String,
    /// The `WWW-Authenticate` header of a 401 or 403.
    pub www_authenticate: Option<String>,
}

impl HttpError {
    /// True for 401 and 403: the server wants (other) credentials.
    pub fn is_auth(&self) -> bool {
        matches!(self.status, Some(401 | 403))
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(status) => write!(f, "HTTP {status}: {}", self.message),
            None => write!(f, "HTTP request failed: {}", self.message),
        }
    }
}

impl Error {
    /// [`Error::Tool`]: a tool failure with text of the handler's choosing.
    pub fn tool(text: impl Into<String>) -> Self {
        Self::Tool(text.into())
    }

    /// True when the connection is gone.
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed)
    }

    /// True when the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout)
    }

    /// True when the call was refused locally because the server or the revision lacks it.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported(_))
    }

    /// True when an HTTP server asked for authorization (401 or 403) and none could be had, or
    /// getting one failed ([`Error::Auth`]).
    pub fn is_auth(&self) -> bool {
        matches!(self, Self::Http(e) if e.is_auth()) || matches!(self, Self::Auth(_))
    }

    /// True when content failed verification against what the server promised.
    pub fn is_verification(&self) -> bool {
        matches!(self, Self::Verification(_))
    }

    /// The HTTP failure, when this is one.
    pub fn as_http(&self) -> Option<&HttpError> {
        match self {
            Self::Http(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC error, when this is one.
    pub fn as_rpc(&self) -> Option<&ErrorObject> {
        match self {
            Self::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// The error as a JSON-RPC error object to send to a peer. Messages of local failures are
    /// kept generic so nothing about this process leaks.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::Rpc(e) => e.clone(),
            Self::Json(e) => ErrorObject::invalid_params(format!("invalid params: {e}")),
            Self::Timeout => ErrorObject::new(ErrorCode::REQUEST_TIMEOUT, "request timed out"),
            Self::Cancelled => ErrorObject::new(ErrorCode::REQUEST_TIMEOUT, "request cancelled"),
            _ => ErrorObject::internal("internal error"),
        }
    }
}

impl From<ErrorObject> for Error {
    fn from(e: ErrorObject) -> Self {
        Self::Rpc(e)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
