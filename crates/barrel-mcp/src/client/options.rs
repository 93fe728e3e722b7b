//! [`CallOptions`]: per-call timeout, progress, cancellation and extra `_meta`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use barrel_mcp_types::{Meta, ProgressParams};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Receives the progress of one call.
///
/// Example: [`CallOptions`].
pub type ProgressCallback = Arc<dyn Fn(ProgressParams) + Send + Sync>;

/// How to make one call; `Default` uses the client's settings.
///
/// ```
/// use std::time::Duration;
/// use barrel_mcp::client::CallOptions;
///
/// let options = CallOptions::new()
///     .timeout(Duration::from_secs(5))
///     .max_total(Duration::from_secs(60))
///     .on_progress(|p| eprintln!("{}/{:?}", p.progress, p.total));
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
pub struct CallOptions {
    /// How long to wait for the answer (each round, for a multi round-trip call); `None` uses
    /// the client's request timeout.
    pub timeout: Option<Duration>,
    /// The longest wait however often progress resets the timeout; `None` uses the client's.
    pub max_total: Option<Duration>,
    /// Restart the timeout whenever the server reports progress for this call.
    pub reset_timeout_on_progress: bool,
    /// Called with each progress notification of this call, in order, before the call returns.
    pub progress: Option<ProgressCallback>,
    /// Cancelling it cancels the call (`notifications/cancelled` is sent; the call returns
    /// [`Error::Cancelled`](crate::Error::Cancelled)). Dropping the call's future does the same.
    pub cancel: Option<CancellationToken>,
    /// Extra `_meta` entries for the request.
    pub meta: Option<Meta>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("progress", &self.progress.is_some())
            .field("cancel", &self.cancel)
            .field("meta", &self.meta)
            .finish()
    }
}

impl CallOptions {
    /// The client's defaults.
    ///
    /// Example: [`CallOptions`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the timeout.
    ///
    /// Example: [`CallOptions`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the longest total wait.
    ///
    /// Example: [`CallOptions`].
    pub fn max_total(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }

    /// Calls `callback` with each progress notification, and restarts the timeout on each.
    ///
    /// Example: [`CallOptions`].
    pub fn on_progress(
        mut self,
        callback: impl Fn(ProgressParams) + Send + Sync + 'static,
    ) -> Self {
        self.progress = Some(Arc::new(callback));
        self.reset_timeout_on_progress = true;
        self
    }

    /// Sends each progress notification to `sender`, and restarts the timeout on each.
    ///
    /// Example: [`CallOptions`].
    pub fn progress_channel(self, sender: mpsc::UnboundedSender<ProgressParams>) -> Self {
        self.on_progress(move |p| {
            let _ = sender.send(p);
        })
    }

    /// Whether progress restarts the timeout.
    ///
    /// Example: [`CallOptions`].
    pub fn reset_timeout_on_progress(mut self, reset: bool) -> Self {
        self.reset_timeout_on_progress = reset;
        self
    }

    /// Cancels the call when `token` fires.
    ///
    /// Example: [`CallOptions`].
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Adds `_meta` entries to the request.
    ///
    /// Example: [`CallOptions`].
    pub fn meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }
}
