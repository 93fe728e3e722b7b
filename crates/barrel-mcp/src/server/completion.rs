//! Completions for prompt arguments and resource template variables (`completion/complete`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use crate::peer::BoxFuture;

/// What a completer is asked to complete.
///
/// Example: [`Completer`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompletionRequest {
    /// The argument or template variable being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Values of other arguments the client already resolved (`context.arguments`).
    pub context: BTreeMap<String, String>,
}

type CompleteFn =
    dyn Fn(CompletionRequest) -> BoxFuture<'static, crate::Result<Vec<String>>> + Send + Sync;

/// Suggests values for one prompt argument or template variable.
///
/// # Example
///
/// ```
/// use barrel_mcp::server::{Completer, CompletionRequest, Server};
///
/// # fn main() -> barrel_mcp::Result<()> {
/// let server = Server::builder()
///     .complete_prompt_argument("greet", "style", Completer::values(["formal", "friendly"]))
///     .complete_template_variable(
///         "demo://notes/{id}",
///         "id",
///         Completer::new(|request: CompletionRequest| async move {
///             Ok((1..=3).map(|n| format!("{}{n}", request.value)).collect())
///         }),
///     )
///     .build()?;
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Completer(Arc<CompleteFn>);

impl Completer {
    /// A completer from an async function returning suggestions (at most 100 are sent).
    ///
    /// Example: [`Completer`].
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::Result<Vec<String>>> + Send + 'static,
    {
        Self(Arc::new(move |req| Box::pin(f(req))))
    }

    /// A completer over a fixed list: the values that start with what was typed, ignoring case.
    ///
    /// Example: [`Completer`].
    pub fn values<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let values: Arc<[String]> = values.into_iter().map(Into::into).collect();
        Self::new(move |req: CompletionRequest| {
            let typed = req.value.to_lowercase();
            let found = values
                .iter()
                .filter(|v| v.to_lowercase().starts_with(&typed))
                .cloned()
                .collect();
            std::future::ready(Ok(found))
        })
    }

    pub(crate) async fn complete(&self, request: CompletionRequest) -> crate::Result<Vec<String>> {
        (self.0)(request).await
    }
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Completer")
    }
}
