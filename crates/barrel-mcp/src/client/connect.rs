//! Connecting: start the connection, then agree on a revision.
//!
//! In [`VersionMode::Auto`] the client probes with `server/discover` carrying the 2026-07-28
//! envelope. A usable discover result naming a revision both sides speak selects 2026-07-28.
//! Anything else the server *answers* (an error other than a client bug, a result that is not a
//! discover result, no common revision) selects the sessionful path: `initialize` at the newest
//! sessionful revision, then `notifications/initialized`. A probe timeout falls back too when
//! [`ClientConfig::fallback_on_probe_timeout`](super::ClientConfig) is set (stdio); transport
//! failures (a closed connection, and over HTTP a 401/403 or a 5xx, which never arrive as
//! JSON-RPC answers) are errors, never an era verdict.

use std::sync::{Arc, OnceLock, RwLock, Weak};

use barrel_mcp_types::meta::SERVER_INFO_KEY;
use barrel_mcp_types::method::names;
use barrel_mcp_types::{
    DiscoverResult, ErrorCode, ErrorObject, Implementation, InitializeParams, InitializeResult,
    Payload, ProtocolVersion, ServerCapabilities,
};
use serde_json::{Value, json};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};

use super::builder::{ClientBuilder, VersionMode};
use super::cache::ResponseCache;
use super::dispatch::{self, Dispatch};
use super::options::CallOptions;
use super::request::{self, Envelope};
use super::task_receiver::{self, TaskReceiver};
use super::{Client, Inner, keepalive};
use crate::peer::{self, Peer, read_result};
use crate::transport::{Handshake, Transport};
use crate::{Error, HttpError, Result};

/// What the handshake settled (again, after a transport lost its session).
#[derive(Clone)]
pub(crate) struct Negotiated {
    pub(crate) version: ProtocolVersion,
    pub(crate) server_info: Arc<Implementation>,
    pub(crate) capabilities: Arc<ServerCapabilities>,
    pub(crate) instructions: Option<Arc<str>>,
}

/// How the probe came out.
enum Probe {
    Modern(Box<Negotiated>),
    Legacy,
}

pub(crate) async fn connect<T: Transport>(
    builder: &ClientBuilder,
    mut transport: T,
) -> Result<Client> {
    let config = builder.config.clone();
    let mut capabilities = builder
        .capabilities
        .clone()
        .unwrap_or_else(|| builder.handler.capabilities());
    if config.task_requests {
        task_receiver::declare(&mut capabilities);
    }
    let tasks = TaskReceiver::new(
        &capabilities,
        config.task_limits.clone(),
        config.peer.handler_grace,
    )
    .map(Arc::new);
    let (events, _) = broadcast::channel(64);
    let (queue, queue_rx) = mpsc::channel(config.notification_queue.max(1));
    tokio::spawn(dispatch::pump(queue_rx, Arc::clone(&builder.handler)));
    let cache = Arc::new(ResponseCache::new(config.response_cache_entries));
    let dispatch = Arc::new(Dispatch {
        changes: builder.changes.clone(),
        cache: Arc::clone(&cache),
        handler: Arc::clone(&builder.handler),
        queue,
        events: events.clone(),
        apply_defaults: config.apply_elicitation_defaults,
        capabilities: capabilities.clone(),
        tasks: tasks.clone(),
    });
    let rehandshake = Arc::new(Rehandshake::new(builder, &capabilities, tasks.clone()));
    transport.set_handshake(Arc::clone(&rehandshake) as Arc<dyn Handshake>);
    let (peer, task) = peer::serve(transport, dispatch, config.peer.clone());
    let mut guard = CloseOnDrop(Some(peer.clone()));
    let hello = Hello {
        peer: &peer,
        builder,
        capabilities: &capabilities,
        tasks: tasks.as_deref(),
    };
    let (ended_tx, ended) = watch::channel(None);
    tokio::spawn(async move {
        let why = match task.await {
            Ok(Err(Error::Http(e))) => Some(Failure::Http(e)),
            Ok(Err(Error::Auth(why))) => Some(Failure::Auth(why)),
            _ => None,
        };
        let _ = ended_tx.send(Some(why));
    });
    let negotiated = match hello.negotiate().await {
        Ok(negotiated) => negotiated,
        Err(error) => {
            drop(guard);
            return Err(why_closed(error, &ended).await);
        }
    };
    guard.0 = None;
    if let Some(tasks) = &tasks {
        // Settled already by `initialize` in a session; a 2026-07-28 connection has none.
        tasks.settle(negotiated.version);
    }
    let envelope = negotiated
        .version
        .is_stateless()
        .then(|| Envelope::new(negotiated.version, &capabilities, &builder.info));
    let client = Client {
        inner: Arc::new(Inner {
            peer,
            negotiated: RwLock::new(negotiated),
            envelope,
            handler: Arc::clone(&builder.handler),
            client_info: builder.info.clone(),
            client_capabilities: capabilities,
            config,
            events,
            ended,
            cache,
        }),
    };
    let _ = rehandshake.client.set(Arc::downgrade(&client.inner));
    if let Some(keepalive) = client.inner.config.keepalive {
        let inner = Arc::downgrade(&client.inner);
        tokio::spawn(keepalive::run(inner, client.peer().clone(), keepalive));
    }
    Ok(client)
}

/// What ended the connection, once its task is done: the transport failure, if that was it.
pub(crate) type Ended = watch::Receiver<Option<Option<Failure>>>;

/// A transport failure that ended the connection.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// An HTTP answer or the lack of one.
    Http(HttpError),
    /// Getting a credential failed.
    Auth(String),
}

/// `error`, or when it only says "closed", the transport failure that closed the connection
/// (an HTTP 401, a 5xx, an unreachable server, a failed authorization), when there was one.
pub(crate) async fn why_closed(error: Error, ended: &Ended) -> Error {
    if !error.is_closed() {
        return error;
    }
    let mut ended = ended.clone();
    let waited = tokio::time::timeout(Duration::from_secs(3), ended.wait_for(Option::is_some));
    match waited.await {
        Ok(Ok(why)) => match why.as_ref() {
            Some(Some(Failure::Http(http))) => Error::Http(http.clone()),
            Some(Some(Failure::Auth(why))) => Error::Auth(why.clone()),
            _ => Error::Closed,
        },
        _ => Error::Closed,
    }
}

/// Closes the connection unless the handshake finished.
struct CloseOnDrop(Option<Peer>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.0.take() {
            peer.close();
        }
    }
}

struct Hello<'a> {
    peer: &'a Peer,
    builder: &'a ClientBuilder,
    capabilities: &'a barrel_mcp_types::ClientCapabilities,
    /// Told the revision before `notifications/initialized`, after which the server may send
    /// task-augmented requests.
    tasks: Option<&'a TaskReceiver>,
}

impl Hello<'_> {
    async fn negotiate(&self) -> Result<Negotiated> {
        match self.builder.mode {
            VersionMode::Pinned(version) if version.is_stateless() => {
                match self.probe(version).await? {
                    Probe::Modern(n) => Ok(*n),
                    Probe::Legacy => Err(Error::Unsupported(format!(
                        "the server does not speak {version} (server/discover found no common revision)"
                    ))),
                }
            }
            VersionMode::Pinned(version) => self.initialize(version, true).await,
            VersionMode::Auto => match self.probe(ProtocolVersion::LATEST).await? {
                Probe::Modern(n) => Ok(*n),
                Probe::Legacy => {
                    self.initialize(ProtocolVersion::LATEST_SESSIONFUL, false)
                        .await
                }
            },
        }
    }

    /// `server/discover` with the envelope of `version`, classified. A -32022 that lists the
    /// revision we asked for is corrective (a server or proxy that wants a retry): probed once
    /// more.
    async fn probe(&self, version: ProtocolVersion) -> Result<Probe> {
        let envelope = Envelope::new(version, self.capabilities, &self.builder.info);
        let options = CallOptions::new().timeout(self.builder.config.probe_timeout);
        let discover = || {
            request::send(
                self.peer,
                Some(&envelope),
                names::SERVER_DISCOVER,
                None,
                &options,
                false,
            )
        };
        let mut answer = discover().await;
        if let Err(Error::Rpc(error)) = &answer
            && error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            && supported(error).contains(&version)
        {
            tracing::debug!("server/discover refused {version} while listing it; probing again");
            answer = discover().await;
        }
        match answer {
            Ok(result) => Ok(classify_discover(read_result(result)?)),
            Err(Error::Rpc(error)) => classify_error(error),
            // A result with an unknown resultType is still not a discover result.
            Err(Error::Protocol(why)) => {
                tracing::debug!("server/discover answer unusable ({why}); falling back");
                Ok(Probe::Legacy)
            }
            Err(Error::Timeout) if self.builder.config.fallback_on_probe_timeout => {
                tracing::debug!("server/discover timed out; falling back to initialize");
                Ok(Probe::Legacy)
            }
            Err(other) => Err(other),
        }
    }

    /// `initialize` at `version`, then `notifications/initialized`. `pinned` refuses another
    /// revision than `version`; otherwise a server that turns out to be modern-only (-32022
    /// naming 2026-07-28) is probed once more.
    async fn initialize(&self, version: ProtocolVersion, pinned: bool) -> Result<Negotiated> {
        let params = initialize_params(version, self.capabilities, &self.builder.info)?;
        let options = CallOptions::new();
        let answer = request::send(
            self.peer,
            None,
            names::INITIALIZE,
            Some(params),
            &options,
            false,
        )
        .await;
        let result = match answer {
            Ok(result) => result,
            Err(Error::Rpc(error))
                if !pinned
                    && error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                    && supported(&error).iter().any(|v| v.is_stateless()) =>
            {
                return match Box::pin(self.probe(ProtocolVersion::LATEST)).await? {
                    Probe::Modern(n) => Ok(*n),
                    Probe::Legacy => Err(Error::Rpc(error)),
                };
            }
            Err(e) => return Err(e),
        };
        let negotiated = accept_initialize(result, version, pinned, self.tasks)?;
        self.peer
            .notify(names::NOTIFICATIONS_INITIALIZED, None)
            .await?;
        Ok(negotiated)
    }
}

/// The `initialize` params asking for `version`.
fn initialize_params(
    version: ProtocolVersion,
    capabilities: &barrel_mcp_types::ClientCapabilities,
    info: &Implementation,
) -> Result<Value> {
    let params = InitializeParams {
        protocol_version: version.as_str().to_owned(),
        capabilities: capabilities.clone(),
        client_info: info.clone(),
        meta: None,
    };
    Ok(serde_json::to_value(params)?)
}

/// Reads an `initialize` result: the server must choose a sessionful revision this client
/// speaks (`version` itself when `pinned`). The task receiver learns the revision before
/// `notifications/initialized`, after which the server may send task-augmented requests.
fn accept_initialize(
    result: Payload,
    version: ProtocolVersion,
    pinned: bool,
    tasks: Option<&TaskReceiver>,
) -> Result<Negotiated> {
    let result: InitializeResult = result
        .decode()
        .map_err(|e| Error::Protocol(format!("invalid initialize result: {e}")))?;
    let chosen = ProtocolVersion::parse(&result.protocol_version)
        .filter(|v| !v.is_stateless())
        .ok_or_else(|| {
            Error::Unsupported(format!(
                "the server chose protocol version {:?}, which this client does not speak",
                result.protocol_version
            ))
        })?;
    if pinned && chosen != version {
        return Err(Error::Unsupported(format!(
            "pinned to {version}, but the server chose {chosen}"
        )));
    }
    if let Some(tasks) = tasks {
        tasks.settle(chosen);
    }
    Ok(Negotiated {
        version: chosen,
        server_info: Arc::new(result.server_info),
        capabilities: Arc::new(result.capabilities),
        instructions: result.instructions.map(Arc::from),
    })
}

/// The client as the owner of its handshake: a transport that lost its session (a 404 over
/// Streamable HTTP) runs `initialize` again with the params asked for the first time, and what
/// the server answers replaces what the client knew.
struct Rehandshake {
    /// The client, once connected (weak: the transport that holds this is the client's).
    client: OnceLock<Weak<Inner>>,
    /// The revision asked for, and whether it is the only one taken.
    version: ProtocolVersion,
    pinned: bool,
    capabilities: barrel_mcp_types::ClientCapabilities,
    info: Implementation,
    tasks: Option<Arc<TaskReceiver>>,
}

impl Rehandshake {
    fn new(
        builder: &ClientBuilder,
        capabilities: &barrel_mcp_types::ClientCapabilities,
        tasks: Option<Arc<TaskReceiver>>,
    ) -> Self {
        let (version, pinned) = match builder.mode {
            VersionMode::Pinned(version) => (version, true),
            VersionMode::Auto => (ProtocolVersion::LATEST_SESSIONFUL, false),
        };
        Self {
            client: OnceLock::new(),
            version,
            pinned,
            capabilities: capabilities.clone(),
            info: builder.info.clone(),
            tasks,
        }
    }
}

impl Handshake for Rehandshake {
    fn params(&self) -> Result<Value> {
        initialize_params(self.version, &self.capabilities, &self.info)
    }

    fn accept(&self, result: Value) -> Result<()> {
        // Still connecting (the first handshake has no session to lose), or gone.
        let inner = self
            .client
            .get()
            .and_then(Weak::upgrade)
            .ok_or(Error::Closed)?;
        let negotiated = accept_initialize(
            result.into(),
            self.version,
            self.pinned,
            self.tasks.as_deref(),
        )?;
        tracing::debug!(version = %negotiated.version, "initialized again");
        *inner
            .negotiated
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = negotiated;
        Ok(())
    }
}

/// A discover result naming a modern revision we speak is modern; anything else is legacy.
fn classify_discover(result: Value) -> Probe {
    let server_info = result
        .get("_meta")
        .and_then(|meta| meta.get(SERVER_INFO_KEY))
        .and_then(|info| serde_json::from_value::<Implementation>(info.clone()).ok());
    let Ok(discovered) = serde_json::from_value::<DiscoverResult>(result) else {
        tracing::debug!("server/discover answered with something else; falling back");
        return Probe::Legacy;
    };
    let version = discovered
        .supported_versions
        .iter()
        .filter_map(|v| ProtocolVersion::parse(v))
        .filter(|v| v.is_stateless())
        .max();
    match version {
        Some(version) => Probe::Modern(Box::new(Negotiated {
            version,
            server_info: Arc::new(server_info.unwrap_or_default()),
            capabilities: Arc::new(discovered.capabilities),
            instructions: discovered.instructions.map(Arc::from),
        })),
        None => {
            tracing::debug!(
                supported = ?discovered.supported_versions,
                "server/discover names no modern revision we speak; falling back"
            );
            Probe::Legacy
        }
    }
}

/// A JSON-RPC error to the probe: -32020/-32021 are client bugs (fail); -32022 listing only
/// revisions we cannot speak statelessly means legacy; any other error means legacy.
fn classify_error(error: ErrorObject) -> Result<Probe> {
    let code = error.code;
    if code == ErrorCode::HEADER_MISMATCH || code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
        return Err(Error::Rpc(error));
    }
    if code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        let supported = supported(&error);
        if supported.iter().any(|v| v.is_stateless()) {
            // We probed with the only modern revision we speak.
            return Err(Error::Protocol(format!(
                "the server rejected {} while listing it as supported: {}",
                ProtocolVersion::LATEST,
                json!(error.data)
            )));
        }
        let listed = error
            .data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|list| !list.is_empty());
        if supported.is_empty() && listed {
            return Err(Error::Unsupported(format!(
                "no protocol revision in common with the server: {}",
                json!(error.data)
            )));
        }
    }
    tracing::debug!(
        code = code.0,
        "server/discover refused; falling back to initialize"
    );
    Ok(Probe::Legacy)
}

/// The revisions we speak among `data.supported` of a -32022 error.
fn supported(error: &ErrorObject) -> Vec<ProtocolVersion> {
    error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .filter_map(ProtocolVersion::parse)
                .collect()
        })
        .unwrap_or_default()
}
