//! [`Host`]: the catalog over many servers and the routing of a model's tool calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use barrel_mcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, CompletionReference,
    ContentBlock, ErrorObject, GetPromptParams, GetPromptResult, ReadResourceParams,
    ReadResourceResult,
};

use super::catalog::{Catalog, ServerItems};
use super::format::{ToolCall, error_result};
use super::names::{DEFAULT_MAX_LEN, NamePolicy};
use super::sampling::{SamplingHandler, ServerSampling};
use crate::Error;
use crate::client::{Backoff, Client, ClientBuilder, Clients, ServerStatus, ServersFile};

/// Why a routed call did not reach a tool, or what the tool's server answered instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallFailure {
    /// No tool has that exposed name.
    UnknownTool(String),
    /// The arguments are not a JSON object.
    InvalidArguments(String),
    /// The tool's server is not connected.
    Unavailable(String),
    /// The server answered with an error (a JSON-RPC one, or the connection failed).
    Upstream(String),
}

/// One catalog over the servers of a [`Clients`] registry, and the routing of a model's tool
/// calls back to the server that owns each tool. Cheap to clone.
///
/// - [`Host::refresh`] lists every connected server's tools (all pages) and swaps in a new
///   [`Catalog`]; a server that is down, or fails to list, is left out of it (and logged), so one
///   bad server never fails the catalog. Call it after connecting and whenever a server says
///   its tools changed.
/// - [`Host::call`] resolves an exposed name in the current catalog, parses the model's
///   arguments, and calls the tool on its server under its own name. Every failure (an unknown
///   tool, arguments that are not a JSON object, a server that is not connected, a JSON-RPC
///   error) comes back as a tool result with `isError` and a short text the model can act on,
///   with the typed reason beside it ([`CallFailure`]).
/// - [`Host::call_all`] runs a turn's calls concurrently and keeps their order; one failure
///   never stops the others.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    clients: Clients,
    policies: HashMap<String, NamePolicy>,
    max_len: usize,
    /// The current catalog, and every rebuild announced to subscribers.
    catalog: watch::Sender<Arc<Catalog>>,
    /// One refresh at a time, so an older listing never replaces a newer catalog.
    refreshing: tokio::sync::Mutex<()>,
    /// Woken when a server's lists may have changed (see [`Host::changes`]).
    changes: Arc<Notify>,
    /// How long the rebuild waits after a change for more (milliseconds).
    debounce_ms: AtomicU64,
    /// How long one server's listing may take in a refresh (milliseconds).
    list_timeout_ms: AtomicU64,
    /// Stops the rebuilding task when the last handle goes.
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The wait after a change before the catalog is rebuilt, so a burst of changes (a server
/// adding ten tools) makes one rebuild.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// How long one server's lists may take in a [`Host::refresh`] before it is left out.
pub const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(10);

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("generation", &self.catalog().generation)
            .field("tools", &self.catalog().tools().len())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host over `clients`, naming with the default policy and 64-character names.
    pub fn new(clients: Clients) -> Self {
        Self::with_naming(clients, HashMap::new(), DEFAULT_MAX_LEN)
    }

    /// A host over `clients` with per-server naming `policies` and names of at most `max_len`
    /// characters.
    pub fn with_naming(
        clients: Clients,
        policies: HashMap<String, NamePolicy>,
        max_len: usize,
    ) -> Self {
        let host = Self {
            inner: Arc::new(Inner {
                clients,
                policies,
                max_len,
                catalog: watch::Sender::new(Arc::new(Catalog::default())),
                refreshing: tokio::sync::Mutex::new(()),
                changes: Arc::new(Notify::new()),
                debounce_ms: AtomicU64::new(millis(DEFAULT_DEBOUNCE)),
                list_timeout_ms: AtomicU64::new(millis(DEFAULT_LIST_TIMEOUT)),
                stop: CancellationToken::new(),
            }),
        };
        // Outside a runtime there is nothing to run the rebuilds on: `refresh` by hand.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(rebuild_on_changes(
                Arc::downgrade(&host.inner),
                Arc::clone(&host.inner.changes),
                host.inner.stop.clone(),
            ));
        }
        host
    }

    /// What wakes the host's rebuilds: give it to the [`ClientBuilder::on_changes`] of the
    /// clients behind a host built with [`Host::new`] ([`Host::from_servers`] does it itself),
    /// and every `list_changed`, connection and disconnection rebuilds the catalog (after
    /// [`Host::set_debounce`]; subscribers see each new one).
    pub fn changes(&self) -> Arc<Notify> {
        Arc::clone(&self.inner.changes)
    }

    /// How long a rebuild waits after a change for more ([`DEFAULT_DEBOUNCE`]).
    pub fn set_debounce(&self, wait: Duration) {
        self.inner
            .debounce_ms
            .store(millis(wait), Ordering::Relaxed);
    }

    /// How long one server's lists may take in a refresh ([`DEFAULT_LIST_TIMEOUT`]).
    pub fn set_list_timeout(&self, limit: Duration) {
        self.inner
            .list_timeout_ms
            .store(millis(limit), Ordering::Relaxed);
    }

    /// Every new catalog as it is built.
    pub fn watch(&self) -> watch::Receiver<Arc<Catalog>> {
        self.inner.catalog.subscribe()
    }

    /// A host over the servers of a servers file (`mcpServers` or VS Code `servers`), each
    /// supervised in a new [`Clients`] registry, connected by `builder`, reconnected with
    /// `backoff`, named by the policy its entry asks for ([`NamePolicy::from_entry`]: a
    /// `prefix`, and `tools` `allow`, `deny` and `rename`). Call [`Host::ready`] and
    /// [`Host::refresh`] next.
    pub fn from_servers(
        file: &ServersFile,
        builder: &ClientBuilder,
        backoff: Backoff,
    ) -> Result<Self, Error> {
        let host = Self::for_file(file)?;
        let builder = builder.clone().on_changes(host.changes());
        file.start_all(host.clients(), &builder, backoff)?;
        Ok(host)
    }

    /// [`Host::from_servers`], with every server's sampling requests answered by `sampler`
    /// (told which server asks). Each client declares the `sampling` capability; `builder`'s
    /// own handler is replaced (and capabilities set on `builder` with
    /// [`ClientBuilder::capabilities`] win over the handler's: leave them unset, or include
    /// `sampling`).
    pub fn from_servers_sampling<S: SamplingHandler>(
        file: &ServersFile,
        builder: &ClientBuilder,
        backoff: Backoff,
        sampler: S,
    ) -> Result<Self, Error> {
        let host = Self::for_file(file)?;
        let sampler = Arc::new(sampler);
        let builder = builder.clone().on_changes(host.changes());
        for (name, entry) in &file.servers {
            let handler = ServerSampling {
                server: name.clone(),
                sampler: Arc::clone(&sampler),
            };
            entry.start(
                host.clients(),
                name,
                builder.clone().handler(handler),
                backoff,
            )?;
        }
        Ok(host)
    }

    /// An empty host named by the policies the entries of `file` ask for.
    fn for_file(file: &ServersFile) -> Result<Self, Error> {
        let mut policies = HashMap::new();
        for (name, written) in &file.written {
            let policy = NamePolicy::from_entry(written).map_err(|why| match why {
                Error::Definition(text) => Error::Definition(format!("server {name:?}: {text}")),
                other => other,
            })?;
            policies.insert(name.clone(), policy);
        }
        Ok(Self::with_naming(Clients::new(), policies, DEFAULT_MAX_LEN))
    }

    /// Waits until every server is connected, for at most `limit`; returns the names of those
    /// that are not (a server that is down never holds the host back longer than that).
    pub async fn ready(&self, limit: Duration) -> Vec<String> {
        let clients = &self.inner.clients;
        // One deadline for all: waiting on each in turn takes no longer than waiting on all.
        let deadline = tokio::time::Instant::now() + limit;
        let mut missing = Vec::new();
        for (name, _) in clients.list() {
            let connected = tokio::time::timeout_at(deadline, clients.connected(&name)).await;
            if !matches!(connected, Ok(Some(_))) {
                missing.push(name);
            }
        }
        missing
    }

    /// The servers behind the host.
    pub fn clients(&self) -> &Clients {
        &self.inner.clients
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.inner.catalog.borrow())
    }

    /// Lists every connected server's tools, prompts, resources and templates (all at once,
    /// each server within [`Host::set_list_timeout`]) and swaps in a new catalog; a server that
    /// fails or takes longer is left out of it until the next refresh. Fails only when the
    /// naming policies are inconsistent (two servers with one prefix, two renames to one name).
    pub async fn refresh(&self) -> Result<Arc<Catalog>, Error> {
        let _one_at_a_time = self.inner.refreshing.lock().await;
        let limit = Duration::from_millis(self.inner.list_timeout_ms.load(Ordering::Relaxed));
        // All servers at once, each within the limit: one that hangs costs the limit, once.
        let mut listing = tokio::task::JoinSet::new();
        for (server, _) in self.inner.clients.list() {
            let Some(client) = self.inner.clients.get(&server) else {
                continue;
            };
            listing.spawn(async move {
                let listed = tokio::time::timeout(limit, list_everything(&client)).await;
                (server, listed)
            });
        }
        let mut lists = BTreeMap::new();
        while let Some(done) = listing.join_next().await {
            match done {
                Ok((server, Ok(Ok(items)))) => {
                    lists.insert(server, items);
                }
                Ok((server, Ok(Err(error)))) => {
                    tracing::warn!(%server, %error, "listing failed; left out");
                }
                Ok((server, Err(_))) => {
                    tracing::warn!(%server, ?limit, "listing timed out; left out");
                }
                Err(error) => tracing::warn!(%error, "a listing did not finish"),
            }
        }
        let generation = self.catalog().generation + 1;
        let catalog = Arc::new(Catalog::build(
            generation,
            &lists,
            &self.inner.policies,
            self.inner.max_len,
        )?);
        self.inner.catalog.send_replace(Arc::clone(&catalog));
        Ok(catalog)
    }

    /// Routes one call (see [`Host`]): the result for the model, and the reason when it did not
    /// come from the tool.
    pub async fn call(&self, call: &ToolCall) -> (CallToolResult, Option<CallFailure>) {
        let catalog = self.catalog();
        let Some(entry) = catalog.tool(&call.name) else {
            let failure = CallFailure::UnknownTool(call.name.clone());
            return (
                error_result(format!("unknown tool {:?}", call.name)),
                Some(failure),
            );
        };
        let arguments = match call.arguments.to_object() {
            // Back from the provider's shaped schema into the tool's own terms.
            Ok(arguments) => catalog.mend(entry, arguments),
            Err(why) => {
                return (
                    error_result(why.clone()),
                    Some(CallFailure::InvalidArguments(why)),
                );
            }
        };
        let Some(client) = self.inner.clients.get(&entry.server) else {
            let text = format!("server {} is unavailable", entry.server);
            return (
                error_result(text),
                Some(CallFailure::Unavailable(entry.server.clone())),
            );
        };
        let params = CallToolParams::new(&entry.tool.name).with_arguments(arguments);
        match client.call_tool(params).await {
            Ok(mut result) => {
                // Links and embedded resources name URIs the host can read back.
                for block in &mut result.content {
                    let names_a_uri = matches!(
                        block,
                        ContentBlock::ResourceLink(_) | ContentBlock::Resource(_)
                    );
                    if names_a_uri
                        && let Ok(exposed) = expose_uris(&catalog, &entry.server, block.clone())
                    {
                        *block = exposed;
                    }
                }
                (result, None)
            }
            Err(error) => {
                let text = format!("server {}: {error}", entry.server);
                (
                    error_result(text.clone()),
                    Some(CallFailure::Upstream(text)),
                )
            }
        }
    }

    /// Reads the resource at an exposed URI (`prefix+uri`, as the catalog lists it or a
    /// template makes it) from its server; the URIs in the contents come back exposed.
    pub async fn read_resource(&self, exposed: &str) -> Result<ReadResourceResult, Error> {
        let catalog = self.catalog();
        let (server, raw) = catalog.route_uri(exposed)?;
        let client = self.connected(server)?;
        let mut result = client.read_resource(ReadResourceParams::new(raw)).await?;
        for contents in &mut result.contents {
            *contents = expose_uris(&catalog, server, contents.clone())?;
        }
        Ok(result)
    }

    /// Gets the prompt exposed as `name` from its server; resource URIs in its messages come
    /// back exposed.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, Error> {
        let catalog = self.catalog();
        let entry = catalog.prompt(name).ok_or_else(|| {
            Error::Rpc(ErrorObject::invalid_params(format!(
                "unknown prompt {name:?}"
            )))
        })?;
        let client = self.connected(&entry.server)?;
        let params = GetPromptParams {
            name: entry.prompt.name.clone(),
            arguments: Some(arguments),
            ..GetPromptParams::default()
        };
        let mut result = client.get_prompt(params).await?;
        for message in &mut result.messages {
            message.content = expose_uris(&catalog, &entry.server, message.content.clone())?;
        }
        Ok(result)
    }

    /// Asks the server behind a prompt or resource template for completions of one of its
    /// arguments: `params.reference` names the prompt by its exposed name, or the template by
    /// its exposed URI template, and goes upstream in the server's own terms. The values come
    /// back as the server wrote them (they are argument values, not URIs).
    pub async fn complete(&self, mut params: CompleteParams) -> Result<CompleteResult, Error> {
        let catalog = self.catalog();
        let server = match &mut params.reference {
            CompletionReference::Prompt { name, .. } => {
                let entry = catalog.prompt(name).ok_or_else(|| {
                    Error::Rpc(ErrorObject::invalid_params(format!(
                        "unknown prompt {name:?}"
                    )))
                })?;
                name.clone_from(&entry.prompt.name);
                entry.server.clone()
            }
            CompletionReference::Resource { uri } => {
                let (server, raw) = catalog.route_uri(uri)?;
                let server = server.to_owned();
                *uri = raw.to_owned();
                server
            }
        };
        self.connected(&server)?.complete(params).await
    }

    /// Every server's instructions, one section each (see [`Catalog::instructions`]).
    pub fn instructions(&self) -> Option<String> {
        self.catalog().instructions()
    }

    /// Where each server stands (connected, reconnecting, ...), by name.
    pub fn health(&self) -> Vec<(String, ServerStatus)> {
        self.inner.clients.list()
    }

    pub(super) fn connected(&self, server: &str) -> Result<Client, Error> {
        self.inner.clients.get(server).ok_or_else(|| {
            Error::Rpc(ErrorObject::internal(format!(
                "server {server} is unavailable"
            )))
        })
    }

    /// Routes a turn's calls concurrently; the outcomes keep the calls' order.
    pub async fn call_all(&self, calls: &[ToolCall]) -> Vec<(ToolCall, CallToolResult)> {
        let mut running = tokio::task::JoinSet::new();
        for (at, call) in calls.iter().enumerate() {
            let (host, call) = (self.clone(), call.clone());
            running.spawn(async move {
                let (result, _) = host.call(&call).await;
                (at, call, result)
            });
        }
        let mut outcomes: Vec<Option<(ToolCall, CallToolResult)>> = vec![None; calls.len()];
        while let Some(done) = running.join_next().await {
            match done {
                Ok((at, call, result)) => outcomes[at] = Some((call, result)),
                Err(error) => tracing::warn!(%error, "a routed call did not finish"),
            }
        }
        outcomes
            .into_iter()
            .zip(calls)
            .map(|(outcome, call)| {
                outcome.unwrap_or_else(|| (call.clone(), error_result("the call did not finish")))
            })
            .collect()
    }
}

/// Everything a server offers (every page of each list it advertises) and its instructions.
/// A list that fails is left empty (and logged): a server that answers `resources/templates/list`
/// with an error keeps its tools in the catalog. Fails only when no list could be read.
async fn list_everything(client: &Client) -> Result<ServerItems, Error> {
    fn kept<T>(what: &str, listed: Result<Vec<T>, Error>, failed: &mut Option<Error>) -> Vec<T> {
        listed.unwrap_or_else(|error| {
            tracing::warn!(%error, "listing {what} failed; left out");
            failed.get_or_insert(error);
            Vec::new()
        })
    }
    let capabilities = client.capabilities();
    let mut items = ServerItems::default();
    let (mut failed, mut asked, mut errors) = (None, 0, 0);
    let mut count = |listed: bool| {
        asked += 1;
        if !listed {
            errors += 1;
        }
    };
    if capabilities.tools.is_some() {
        let listed = client.list_all_tools().await;
        count(listed.is_ok());
        items.tools = kept("tools", listed, &mut failed);
    }
    if capabilities.prompts.is_some() {
        let listed = client.list_all_prompts().await;
        count(listed.is_ok());
        items.prompts = kept("prompts", listed, &mut failed);
    }
    if capabilities.resources.is_some() {
        let listed = client.list_all_resources().await;
        count(listed.is_ok());
        items.resources = kept("resources", listed, &mut failed);
        let listed = client.list_all_resource_templates().await;
        count(listed.is_ok());
        items.templates = kept("resource templates", listed, &mut failed);
    }
    if asked > 0 && errors == asked {
        return Err(failed.unwrap_or_else(|| Error::Protocol("no list could be read".into())));
    }
    items.instructions = client.instructions().map(|text| text.to_string());
    Ok(items)
}

/// `item` (a content block or resource contents) with its URIs in the exposed form of
/// `server`'s.
fn expose_uris<T: serde::Serialize + serde::de::DeserializeOwned>(
    catalog: &Catalog,
    server: &str,
    item: T,
) -> Result<T, Error> {
    let mut value = [serde_json::to_value(item)?];
    super::uri::rewrite_content(&mut value, &|uri| {
        catalog
            .expose_uri(server, uri)
            .unwrap_or_else(|| uri.to_owned())
    });
    let [value] = value;
    Ok(serde_json::from_value(value)?)
}

/// Rebuilds the catalog after each burst of changes, until the host is gone.
async fn rebuild_on_changes(host: Weak<Inner>, changes: Arc<Notify>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = changes.notified() => {}
            () = stop.cancelled() => return,
        }
        let Some(inner) = host.upgrade() else {
            return;
        };
        let wait = Duration::from_millis(inner.debounce_ms.load(Ordering::Relaxed));
        let host = Host { inner };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stop.cancelled() => return,
        }
        if let Err(error) = host.refresh().await {
            tracing::warn!(%error, "the catalog could not be rebuilt");
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
