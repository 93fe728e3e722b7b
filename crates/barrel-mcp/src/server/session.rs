//! Sessions of the sessionful revisions (2024-11-05 to 2025-11-25): `initialize` negotiation
//! and the state a session keeps (what the client declared, its log level, its subscriptions).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

#[cfg(feature = "http-server")]
use crate::store::SessionRecord;
#[cfg(feature = "http-server")]
use barrel_mcp_types::Request;
use barrel_mcp_types::{
    ClientCapabilities, ErrorObject, Implementation, InitializeParams, InitializeResult,
    LoggingLevel, Payload, ProtocolVersion, ServerCapabilities, Shape,
};
use serde::Deserialize;
use serde_json::Value;

use super::Server;
use super::announcer::Announcer;
use super::connection::SessionEvents;
#[cfg(feature = "http-server")]
use super::context::Scope;
pub(crate) use super::initialize_cache::Kind;
#[cfg(feature = "http-server")]
use crate::peer::{BoxFuture, RequestContext};

/// One client's session.
#[derive(Debug)]
pub(crate) struct Session {
    /// The server's name for the session (128 random bits, hex).
    pub(crate) id: String,
    pub(crate) version: ProtocolVersion,
    pub(crate) client_capabilities: Arc<ClientCapabilities>,
    pub(crate) client_info: Arc<Implementation>,
    log_level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<HashSet<String>>,
    /// Stands for no session at all (a sessionless server's request, served on its own): it
    /// ends with its request, so nothing may be kept for it (no handle, no subscription, no
    /// task) and the client is taken to have declared nothing.
    pub(crate) detached: bool,
    /// The transport of a session carried over many exchanges (Streamable HTTP), told of each
    /// change of the state it keeps (log level, subscriptions), so it can store them.
    events: Option<Weak<dyn SessionEvents>>,
    /// Registry changes on their way to the client, once it initialized.
    pub(crate) announcer: Announcer,
}

impl Session {
    /// A session opened by `initialize` with `params`, on `version`: named `id`, or at random.
    pub(crate) fn new(
        id: Option<String>,
        version: ProtocolVersion,
        params: InitializeParams,
        events: Option<Weak<dyn SessionEvents>>,
    ) -> Self {
        Self {
            id: id.unwrap_or_else(random_id),
            version,
            client_capabilities: Arc::new(params.capabilities),
            client_info: Arc::new(params.client_info),
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
            detached: false,
            events,
            announcer: Announcer::default(),
        }
    }

    /// A session another node opened, named `id` here, in the state `record` holds (what the
    /// client declared, its level and subscriptions), without replaying `initialize`.
    #[cfg(feature = "http-server")]
    pub(crate) fn restored(
        id: String,
        record: &SessionRecord,
        events: Option<Weak<dyn SessionEvents>>,
    ) -> Self {
        Self {
            id,
            version: record.version,
            client_capabilities: Arc::new(record.client_capabilities.clone()),
            client_info: Arc::new(record.client_info.clone()),
            log_level: Mutex::new(record.log_level),
            subscriptions: Mutex::new(record.subscriptions.iter().cloned().collect()),
            detached: false,
            events,
            announcer: Announcer::default(),
        }
    }

    /// Takes the level and the subscriptions `record` holds (another node changed them).
    #[cfg(feature = "http-server")]
    pub(crate) fn follow(&self, record: &SessionRecord) {
        *lock(&self.log_level) = record.log_level;
        let mut subscriptions = lock(&self.subscriptions);
        subscriptions.retain(|uri| record.subscriptions.contains(uri));
        for uri in &record.subscriptions {
            if !subscriptions.contains(uri) {
                subscriptions.insert(uri.clone());
            }
        }
    }

    /// The transport that keeps the session, if it listens for changes.
    fn events(&self) -> Option<Arc<dyn SessionEvents>> {
        self.events.as_ref().and_then(Weak::upgrade)
    }

    /// True when registry changes are announced to the session from this process now.
    pub(crate) fn hears_changes(&self) -> bool {
        self.events().is_none_or(|events| events.hears_changes())
    }

    /// The stand-in for one request of a sessionless server on `version`.
    #[cfg(feature = "http-server")]
    pub(crate) fn detached(version: ProtocolVersion) -> Self {
        /// What a client that declared nothing declared: one copy for every request.
        static NOTHING_DECLARED: std::sync::LazyLock<(
            Arc<ClientCapabilities>,
            Arc<Implementation>,
        )> = std::sync::LazyLock::new(|| {
            let params = InitializeParams::default();
            (Arc::new(params.capabilities), Arc::new(params.client_info))
        });
        let (capabilities, info) = &*NOTHING_DECLARED;
        Self {
            // Never registered or named to anyone: no random id is drawn per request.
            id: String::new(),
            version,
            client_capabilities: Arc::clone(capabilities),
            client_info: Arc::clone(info),
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
            detached: true,
            events: None,
            announcer: Announcer::default(),
        }
    }

    /// The level set with `logging/setLevel`, if any.
    pub(crate) fn log_level(&self) -> Option<LoggingLevel> {
        *lock(&self.log_level)
    }

    /// True when a log message at `level` is to be sent: everything until the client sets a
    /// level, then what is at or above it.
    pub(crate) fn wants_log(&self, level: LoggingLevel) -> bool {
        self.log_level().is_none_or(|threshold| level >= threshold)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
        if let Some(events) = self.events() {
            events.log_level(level);
        }
    }

    /// Subscribes to `uri`, unless the session already holds `limit` other subscriptions.
    pub(crate) fn subscribe(&self, uri: String, limit: usize) -> Result<(), usize> {
        let mut subscriptions = lock(&self.subscriptions);
        if subscriptions.contains(&uri) {
            return Ok(());
        }
        if subscriptions.len() >= limit {
            return Err(limit);
        }
        if let Some(events) = self.events() {
            events.subscribed(&uri);
        }
        subscriptions.insert(uri);
        Ok(())
    }

    /// Unsubscribes from `uri`. The transport hears of it even when this copy did not hold
    /// the URI: a replica of a shared session may have missed the subscription, which the
    /// store still holds.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
        if let Some(events) = self.events() {
            events.unsubscribed(uri);
        }
    }

    /// The URIs subscribed to, sorted.
    #[cfg(feature = "http-server")]
    pub(crate) fn subscribed(&self) -> Vec<String> {
        let mut uris: Vec<String> = lock(&self.subscriptions).iter().cloned().collect();
        uris.sort();
        uris
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }
}

/// Locks `m`, whatever a panic left it in.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The revision to answer `initialize` with: the client's when this server speaks it (in the
/// sessionful era), else the newest sessionful one.
pub(crate) fn negotiate(requested: &str) -> ProtocolVersion {
    ProtocolVersion::parse(requested)
        .filter(|v| !v.is_stateless())
        .unwrap_or(ProtocolVersion::LATEST_SESSIONFUL)
}

/// The `initialize` answer for a session on `version`, or for a sessionless server's client
/// (`kind`), as JSON: built from the registry once, then kept until the registry changes.
pub(crate) fn initialize_answer(
    server: &Server,
    version: ProtocolVersion,
    kind: Kind,
) -> Result<Payload, ErrorObject> {
    let registry = server.read_registry();
    registry.initialize.get_or_build(version, kind, || {
        let mut result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities: registry.capabilities(),
            server_info: server.info().clone(),
            instructions: server.inner.instructions.clone(),
            meta: None,
        };
        result.shape(version);
        if kind == Kind::Sessionless {
            without_session_features(&mut result.capabilities);
        }
        Payload::text_of(&result).map_err(|e| ErrorObject::internal(e.to_string()))
    })
}

/// What a sessionless server does not offer: what needs a session to be kept (list-change
/// notifications, resource subscriptions, tasks).
fn without_session_features(capabilities: &mut ServerCapabilities) {
    if let Some(tools) = capabilities.tools.as_mut() {
        tools.list_changed = None;
    }
    if let Some(prompts) = capabilities.prompts.as_mut() {
        prompts.list_changed = None;
    }
    if let Some(resources) = capabilities.resources.as_mut() {
        resources.list_changed = None;
        resources.subscribe = None;
    }
    capabilities.tasks = None;
}

/// Serves one request of a sessionless server in the sessionful revision `version` (see
/// `HttpConfig::sessionless`): `initialize` is answered and opens nothing; every other request
/// runs in a stand-in session that ends with it.
#[cfg(feature = "http-server")]
pub(crate) fn serve_sessionless(
    server: &Server,
    version: ProtocolVersion,
    request: Request,
    cx: RequestContext,
) -> BoxFuture<'static, Result<Payload, ErrorObject>> {
    let ready = |outcome| -> BoxFuture<'static, _> { Box::pin(std::future::ready(outcome)) };
    match request.method.as_str() {
        "initialize" => ready(read_initialize(request.params.as_ref()).and_then(|params| {
            initialize_answer(
                server,
                negotiate(&params.protocol_version),
                Kind::Sessionless,
            )
        })),
        "server/discover" => ready(Err(super::stateless::discover_without_envelope())),
        _ => {
            let scope = Scope::in_session(Arc::new(Session::detached(version)));
            crate::peer::box_in_place(|| {
                super::dispatch::handle(server.clone(), scope, request, cx)
            })
        }
    }
}

/// `initialize`'s params, decoded (-32602 when they do not).
pub(crate) fn read_initialize(params: Option<&Value>) -> Result<InitializeParams, ErrorObject> {
    let Some(params) = params else {
        return Err(ErrorObject::invalid_params(
            "invalid params: initialize needs params",
        ));
    };
    InitializeParams::deserialize(params)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

/// A random identifier of 128 bits, hex encoded.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    // A failing OS random source leaves zeros; ids made here are not secrets.
    let _ = getrandom::fill(&mut bytes);
    hex_id(&bytes)
}

/// `bytes` as lowercase hex: an identifier made of bytes drawn (or digested) elsewhere.
pub(crate) fn hex_id(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Bytes into slots of known place, checked once at the end: `String::push` encodes each
    // `char` as UTF-8 (a third of the cost of naming a session went there).
    let mut id = vec![0u8; bytes.len() * 2];
    for (digits, &byte) in id.chunks_exact_mut(2).zip(bytes) {
        digits[0] = HEX[usize::from(byte >> 4)];
        digits[1] = HEX[usize::from(byte & 0x0f)];
    }
    // Hex digits only: always UTF-8.
    String::from_utf8(id).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn random_ids_are_32_lowercase_hex_digits_and_differ() {
        let (a, b) = (super::random_id(), super::random_id());
        for id in [&a, &b] {
            assert_eq!(id.len(), 32);
            assert!(
                id.bytes()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
            );
        }
        assert_ne!(a, b);
    }

    #[test]
    fn hex_ids_spell_each_byte_high_digit_first() {
        assert_eq!(super::hex_id(&[0x00, 0x0f, 0xa5, 0xff, 0x10]), "000fa5ff10");
        assert_eq!(super::hex_id(&[]), "");
    }
}
