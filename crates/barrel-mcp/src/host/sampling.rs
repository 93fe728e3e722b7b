//! Sampling through the host: the servers behind a host ask its model for completions
//! (`sampling/createMessage`); the application answers them all in one place, told which
//! server asks.
//!
//! [`SamplingHandler`] is implemented once by the application (usually by calling the same
//! model API its agent loop uses). [`Host::from_servers_sampling`](super::Host::from_servers_sampling)
//! gives each server's client a handler that declares the `sampling` capability and hands each
//! request to it with the server's name, so the application can apply a policy per server
//! (refuse one, cap another's `maxTokens`, log them all).

use std::future::Future;
use std::sync::Arc;

use barrel_mcp_types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ErrorObject, SamplingCapability,
};

use crate::client::{ClientHandler, HandlerContext};

/// Answers the sampling requests of every server behind a host.
pub trait SamplingHandler: Send + Sync + 'static {
    /// Answers `sampling/createMessage` from `server` (its name in the host).
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageParams,
    ) -> impl Future<Output = Result<CreateMessageResult, ErrorObject>> + Send;
}

/// One server's client handler: sampling goes to the host's [`SamplingHandler`], named.
pub(crate) struct ServerSampling<S> {
    pub(crate) server: String,
    pub(crate) sampler: Arc<S>,
}

impl<S: SamplingHandler> ClientHandler for ServerSampling<S> {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: Some(SamplingCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageParams,
        _: HandlerContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        self.sampler.create_message(&self.server, params).await
    }
}
