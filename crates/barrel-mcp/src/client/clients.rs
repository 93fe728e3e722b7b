//! Federation: [`Clients`], a registry of named, supervised connections. Each server id has a
//! task that connects (through a closure that makes a fresh transport each time), hands out the
//! connected [`Client`], and reconnects with exponential backoff when the connection ends. A
//! connection counts as healthy (the backoff starts over) only once it has lasted
//! [`Backoff::reset_after`], so a server that accepts and dies at once is not hammered.
//! Dropping the last clone of a [`Clients`] stops every server it supervises.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Client, ClientBuilder};
use crate::Result;
use crate::transport::Transport;

/// How long to wait between connection attempts.
///
/// Example: [`Clients`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait. Default 100 ms.
    pub initial: Duration,
    /// The longest wait. Default 30 s.
    pub max: Duration,
    /// How long a connection must last to count as healthy; after a shorter one the next wait
    /// keeps growing. Default 30 s.
    pub reset_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The wait before attempt `attempt` (1-based): `initial` doubled each time, capped.
    ///
    /// Example: [`Clients`].
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// Where a supervised server stands.
///
/// Example: [`Clients`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Connecting (the first time, or again).
    Connecting,
    /// Connected; [`Clients::get`] returns the client.
    Connected,
    /// Waiting to reconnect after `attempt` failures in a row; `error` is the last one.
    Retrying {
        /// Failures in a row.
        attempt: u32,
        /// Why the last attempt or connection ended.
        error: String,
    },
    /// Stopped with [`Clients::stop`].
    Stopped,
}

#[derive(Clone)]
struct State {
    client: Option<Client>,
    status: ServerStatus,
}

struct Supervised {
    state: watch::Receiver<State>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// A registry of named, supervised clients. Cheap to clone; dropping the last clone stops
/// every server it supervises.
///
/// # Example
///
/// ```no_run
/// use barrel_mcp::client::{Backoff, Client, Clients};
/// use barrel_mcp::transport::child::ChildCommand;
///
/// # async fn run() -> barrel_mcp::Result<()> {
/// let clients = Clients::new();
/// // Reconnected with growing waits whenever the process exits.
/// clients.start("files", Client::builder(), Backoff::default(), || async {
///     ChildCommand::new("files-server").spawn()
/// });
/// if let Some(files) = clients.connected("files").await {
///     println!("{} tools", files.list_all_tools().await?.len());
/// }
/// println!("{:?}", clients.list());
/// clients.stop_all().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Clients {
    servers: Arc<Registry>,
}

#[derive(Default)]
struct Registry(Mutex<BTreeMap<String, Supervised>>);

impl Drop for Registry {
    fn drop(&mut self) {
        let servers = self.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        for supervised in servers.values() {
            // Each supervisor closes its client and ends.
            supervised.stop.cancel();
        }
    }
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.list()).finish()
    }
}

impl Clients {
    /// An empty registry.
    ///
    /// Example: [`Clients`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts supervising server `id`: `connect` makes a fresh transport for each attempt and
    /// `builder` connects the client over it. A server already registered under `id` is stopped
    /// first.
    ///
    /// Example: [`Clients`].
    pub fn start<F, Fut, T>(
        &self,
        id: impl Into<String>,
        builder: ClientBuilder,
        backoff: Backoff,
        connect: F,
    ) where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Transport,
    {
        let id = id.into();
        let (tx, rx) = watch::channel(State {
            client: None,
            status: ServerStatus::Connecting,
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(supervise(
            id.clone(),
            builder,
            backoff,
            connect,
            tx,
            stop.clone(),
        ));
        let entry = Supervised {
            state: rx,
            stop,
            task,
        };
        if let Some(old) = self.lock().insert(id, entry) {
            old.stop.cancel();
        }
    }

    /// The connected client of server `id`, if it is connected now.
    ///
    /// Example: [`Clients`].
    pub fn get(&self, id: &str) -> Option<Client> {
        self.lock().get(id)?.state.borrow().client.clone()
    }

    /// Waits until server `id` is connected and returns its client; `None` when it is unknown
    /// or stopped. Cancel-safe.
    ///
    /// Example: [`Clients`].
    pub async fn connected(&self, id: &str) -> Option<Client> {
        let mut state = self.lock().get(id)?.state.clone();
        let state = state
            .wait_for(|s| s.client.is_some() || s.status == ServerStatus::Stopped)
            .await
            .ok()?;
        state.client.clone()
    }

    /// Where server `id` stands.
    ///
    /// Example: [`Clients`].
    pub fn status(&self, id: &str) -> Option<ServerStatus> {
        Some(self.lock().get(id)?.state.borrow().status.clone())
    }

    /// Every registered server and where it stands, by id.
    ///
    /// Example: [`Clients`].
    pub fn list(&self) -> Vec<(String, ServerStatus)> {
        self.lock()
            .iter()
            .map(|(id, s)| (id.clone(), s.state.borrow().status.clone()))
            .collect()
    }

    /// Stops supervising server `id` and closes its connection; false when it was unknown.
    ///
    /// Example: [`Clients`].
    pub async fn stop(&self, id: &str) -> bool {
        let Some(entry) = self.lock().remove(id) else {
            return false;
        };
        entry.stop.cancel();
        let _ = entry.task.await;
        true
    }

    /// Stops every server.
    ///
    /// Example: [`Clients`].
    pub async fn stop_all(&self) {
        let entries: Vec<Supervised> = std::mem::take(&mut *self.lock()).into_values().collect();
        for entry in entries {
            entry.stop.cancel();
            let _ = entry.task.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Supervised>> {
        self.servers
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

async fn supervise<F, Fut, T>(
    id: String,
    builder: ClientBuilder,
    backoff: Backoff,
    connect: F,
    state: watch::Sender<State>,
    stop: CancellationToken,
) where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
    T: Transport,
{
    let set = |client: Option<Client>, status: ServerStatus| {
        state.send_replace(State { client, status });
        if let Some(changes) = &builder.changes {
            changes.notify_one();
        }
    };
    let mut attempt = 0u32;
    loop {
        set(None, ServerStatus::Connecting);
        let attempted = tokio::select! {
            () = stop.cancelled() => break,
            client = async { builder.connect(connect().await?).await } => client,
        };
        let error = match attempted {
            Ok(client) => {
                tracing::debug!(server = %id, "connected");
                let connected_at = tokio::time::Instant::now();
                set(Some(client.clone()), ServerStatus::Connected);
                let ended = tokio::select! {
                    () = stop.cancelled() => {
                        client.close();
                        break;
                    }
                    () = client.closed() => "the connection ended".to_owned(),
                };
                if connected_at.elapsed() >= backoff.reset_after {
                    attempt = 0;
                }
                ended
            }
            Err(error) => error.to_string(),
        };
        attempt = attempt.saturating_add(1);
        tracing::debug!(server = %id, attempt, %error, "reconnecting after a pause");
        set(None, ServerStatus::Retrying { attempt, error });
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(backoff.delay(attempt)) => {}
        }
    }
    set(None, ServerStatus::Stopped);
}
