//! [`Caller`]: what a transport knows about who sent an inbound message.
//!
//! It travels from the transport to the handler with each request: the transport's reader
//! names it ([`MessageReader::caller`](super::MessageReader::caller)), the peer puts it in the
//! [`RequestContext`](crate::peer::RequestContext), and handlers read it through
//! [`Ctx::auth`](crate::server::Ctx::auth) (and `Ctx::http_request` over HTTP). stdio and the
//! in-memory transport know nobody: there is no caller.

use std::sync::Arc;

use crate::auth::AuthInfo;

/// Who sent an inbound message, and how it arrived.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    auth: Option<Arc<AuthInfo>>,
    #[cfg(feature = "http-server")]
    http: Option<Arc<http::request::Parts>>,
}

impl Caller {
    /// A caller known only by its authentication (a transport that is not HTTP).
    #[cfg_attr(not(feature = "http-server"), allow(clippy::needless_update))]
    pub fn authenticated(auth: Option<Arc<AuthInfo>>) -> Self {
        Self {
            auth,
            ..Self::default()
        }
    }

    /// The caller of an HTTP request: its head, and the [`AuthInfo`] the server's
    /// authenticator put in its extensions, if any.
    #[cfg(feature = "http-server")]
    pub fn http(head: Arc<http::request::Parts>) -> Self {
        Self {
            auth: head.extensions.get::<Arc<AuthInfo>>().cloned(),
            http: Some(head),
        }
    }

    /// The authenticated caller, if the transport authenticated one.
    pub fn auth(&self) -> Option<&AuthInfo> {
        self.auth.as_deref()
    }

    /// The head of the HTTP request that carried the message: method, URI, headers and the
    /// extensions other layers added.
    #[cfg(feature = "http-server")]
    pub fn http_request(&self) -> Option<&http::request::Parts> {
        self.http.as_deref()
    }
}
