//! The typed calls: one per client-to-server method, each checked against what the server
//! advertised and what the revision has before anything is sent.

use barrel_mcp_types::method::names;
use barrel_mcp_types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, DiscoverResult,
    GetPromptParams, GetPromptResult, InputRequiredResult, LoggingLevel, Payload,
    ReadResourceParams, ReadResourceResult, ResultType, SetLevelParams, SubscribeParams,
    SubscriptionFilter, SubscriptionsListenParams, SubscriptionsListenResult, UnsubscribeParams,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::cache;
use super::options::CallOptions;
use super::{Client, input, request};
use crate::peer::read_result;
use crate::{Error, Result};

impl Client {
    /// Checks the server is alive: `ping` in a session. 2026-07-28 has no `ping`, so there the
    /// client sends `server/discover`, the cheapest request every server must answer.
    ///
    /// Example: [`Client`].
    pub async fn ping(&self) -> Result<()> {
        self.ping_with(&CallOptions::new()).await
    }

    pub(crate) async fn ping_with(&self, options: &CallOptions) -> Result<()> {
        let method = if self.is_modern() {
            names::SERVER_DISCOVER
        } else {
            names::PING
        };
        self.send(method, None, options).await.map(drop)
    }

    /// `server/discover` (2026-07-28): the server's revisions, capabilities and instructions.
    ///
    /// Example: [`Client`].
    pub async fn discover(&self) -> Result<DiscoverResult> {
        self.require_modern(names::SERVER_DISCOVER)?;
        self.call_method(names::SERVER_DISCOVER, None, &CallOptions::new())
            .await
    }

    /// `tools/call` of `name` with `arguments`: anything that serializes to a JSON object
    /// (a struct, a map, `serde_json::json!({…})`), or `()` for none.
    ///
    /// ```no_run
    /// # async fn f(client: barrel_mcp::client::Client) -> barrel_mcp::Result<()> {
    /// #[derive(serde::Deserialize)]
    /// struct Sum {
    ///     sum: i64,
    /// }
    /// let result = client.call("add", serde_json::json!({ "a": 2, "b": 40 })).await?;
    /// let sum: Sum = result.structured_as()?;
    /// # Ok(()) }
    /// ```
    pub async fn call(
        &self,
        name: &str,
        arguments: impl serde::Serialize,
    ) -> Result<CallToolResult> {
        let arguments = match serde_json::to_value(arguments)? {
            serde_json::Value::Object(arguments) => Some(arguments),
            serde_json::Value::Null => None,
            _ => {
                return Err(Error::Rpc(barrel_mcp_types::ErrorObject::invalid_params(
                    "tool arguments must be a JSON object",
                )));
            }
        };
        self.call_tool(CallToolParams {
            arguments,
            ..CallToolParams::new(name)
        })
        .await
    }

    /// `tools/call`.
    ///
    /// Example: [`Client`].
    pub async fn call_tool(&self, params: CallToolParams) -> Result<CallToolResult> {
        self.call_tool_with(params, CallOptions::new()).await
    }

    /// `tools/call` with per-call options (progress, timeout, cancellation).
    ///
    /// Example: [`Client`].
    pub async fn call_tool_with(
        &self,
        params: CallToolParams,
        options: CallOptions,
    ) -> Result<CallToolResult> {
        self.require(self.capabilities().tools.is_some(), "tools")?;
        self.call_with_input(names::TOOLS_CALL, &params, &options)
            .await
    }

    /// `resources/read`.
    ///
    /// Example: [`Client`].
    pub async fn read_resource(&self, params: ReadResourceParams) -> Result<ReadResourceResult> {
        self.read_resource_with(params, CallOptions::new()).await
    }

    /// `resources/read` with per-call options.
    ///
    /// Example: [`Client`].
    pub async fn read_resource_with(
        &self,
        params: ReadResourceParams,
        options: CallOptions,
    ) -> Result<ReadResourceResult> {
        self.require(self.capabilities().resources.is_some(), "resources")?;
        let params = serde_json::to_value(&params)?;
        let result = self
            .cached_send(names::RESOURCES_READ, params, |params| async move {
                let (result, rounds) = self
                    .call_counting_rounds(names::RESOURCES_READ, &params, &options)
                    .await?;
                Ok((result, rounds == 0))
            })
            .await?;
        decode(names::RESOURCES_READ, result)
    }

    /// `prompts/get`.
    ///
    /// Example: [`Client`].
    pub async fn get_prompt(&self, params: GetPromptParams) -> Result<GetPromptResult> {
        self.get_prompt_with(params, CallOptions::new()).await
    }

    /// `prompts/get` with per-call options.
    ///
    /// Example: [`Client`].
    pub async fn get_prompt_with(
        &self,
        params: GetPromptParams,
        options: CallOptions,
    ) -> Result<GetPromptResult> {
        self.require(self.capabilities().prompts.is_some(), "prompts")?;
        self.call_with_input(names::PROMPTS_GET, &params, &options)
            .await
    }

    /// `completion/complete`. Before 2025-03-26 servers had no `completions` capability, so
    /// there the call is allowed when the server offers prompts or resources.
    ///
    /// Example: [`Client`].
    pub async fn complete(&self, params: CompleteParams) -> Result<CompleteResult> {
        let caps = self.capabilities();
        let advertised = caps.completions.is_some()
            || (!self
                .protocol_version()
                .supports(barrel_mcp_types::Feature::CompletionsCapability)
                && (caps.prompts.is_some() || caps.resources.is_some()));
        self.require(advertised, "completions")?;
        let params = serde_json::to_value(params)?;
        self.call_method(
            names::COMPLETION_COMPLETE,
            Some(params),
            &CallOptions::new(),
        )
        .await
    }

    /// Tells the server the client's roots changed (`notifications/roots/list_changed`), so it
    /// asks for them again. Needs a session (2026-07-28 has no such notification: the server
    /// asks for roots with each request that needs them) and the `roots.listChanged`
    /// capability this client declared; otherwise [`Error::Unsupported`] and nothing is sent.
    ///
    /// Example: [`Client`].
    pub async fn notify_roots_list_changed(&self) -> Result<()> {
        if self.inner.envelope.is_some() {
            return Err(Error::Unsupported(
                "notifications/roots/list_changed does not exist in 2026-07-28".to_owned(),
            ));
        }
        let declared = self
            .client_capabilities()
            .roots
            .as_ref()
            .is_some_and(|roots| roots.list_changed == Some(true));
        if !declared {
            return Err(Error::Unsupported(
                "this client did not declare roots.listChanged".to_owned(),
            ));
        }
        self.inner
            .peer
            .notify(names::NOTIFICATIONS_ROOTS_LIST_CHANGED, None)
            .await
    }

    /// Sets the level of the log messages the server sends. In a session this is
    /// `logging/setLevel`; 2026-07-28 removed it, so there the level is sent with every later
    /// request (`_meta` `io.modelcontextprotocol/logLevel`), which opts in to log messages.
    ///
    /// Example: [`Client`].
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<()> {
        self.require(self.capabilities().logging.is_some(), "logging")?;
        if let Some(envelope) = &self.inner.envelope {
            envelope.set_log_level(level);
            return Ok(());
        }
        let params = serde_json::to_value(SetLevelParams { level, meta: None })?;
        self.send(names::LOGGING_SET_LEVEL, Some(params), &CallOptions::new())
            .await
            .map(drop)
    }

    /// `resources/subscribe` (sessionful revisions). Updates arrive as
    /// [`ServerNotification::ResourceUpdated`](super::ServerNotification::ResourceUpdated);
    /// [`Client::subscribe`] delivers them to a subscriber instead, in every revision.
    ///
    /// Example: [`Client`].
    pub async fn subscribe_resource(&self, uri: impl Into<String>) -> Result<()> {
        self.require_session(names::RESOURCES_SUBSCRIBE)?;
        self.require(self.can_subscribe(), "resources.subscribe")?;
        let params = serde_json::to_value(SubscribeParams {
            uri: uri.into(),
            meta: None,
        })?;
        self.send(
            names::RESOURCES_SUBSCRIBE,
            Some(params),
            &CallOptions::new(),
        )
        .await
        .map(drop)
    }

    /// `resources/unsubscribe` (sessionful revisions).
    ///
    /// Example: [`Client`].
    pub async fn unsubscribe_resource(&self, uri: impl Into<String>) -> Result<()> {
        self.require_session(names::RESOURCES_UNSUBSCRIBE)?;
        self.require(self.can_subscribe(), "resources.subscribe")?;
        let params = serde_json::to_value(UnsubscribeParams {
            uri: uri.into(),
            meta: None,
        })?;
        self.send(
            names::RESOURCES_UNSUBSCRIBE,
            Some(params),
            &CallOptions::new(),
        )
        .await
        .map(drop)
    }

    /// `subscriptions/listen` (2026-07-28): a long-lived request on which the server delivers
    /// the notifications `filter` opts in to (to the handler, and resource updates to
    /// [`Client::subscribe`]rs). Resolves when the server ends the subscription; drop the future
    /// (or cancel `options.cancel`) to end it. Without a timeout in `options` it waits as long
    /// as the client's maximum request time allows; [`Client::subscribe`] sets none.
    ///
    /// Example: [`Client`].
    pub async fn subscriptions_listen(
        &self,
        filter: SubscriptionFilter,
        mut options: CallOptions,
    ) -> Result<SubscriptionsListenResult> {
        self.require_modern(names::SUBSCRIPTIONS_LISTEN)?;
        if options.timeout.is_none() {
            options.timeout = Some(self.config().peer.max_request_timeout);
        }
        let params = serde_json::to_value(SubscriptionsListenParams {
            notifications: filter,
            meta: None,
        })?;
        self.call_method(names::SUBSCRIPTIONS_LISTEN, Some(params), &options)
            .await
    }

    pub(crate) fn can_subscribe(&self) -> bool {
        self.capabilities()
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true))
    }

    pub(crate) fn is_modern(&self) -> bool {
        self.inner.envelope.is_some()
    }

    /// Fails unless the server advertised `what`.
    pub(crate) fn require(&self, advertised: bool, what: &str) -> Result<()> {
        if advertised {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "the server does not advertise the {what} capability"
            )))
        }
    }

    fn require_modern(&self, method: &str) -> Result<()> {
        if self.is_modern() {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "{method} does not exist in {}",
                self.protocol_version()
            )))
        }
    }

    pub(crate) fn require_session(&self, method: &str) -> Result<()> {
        if self.is_modern() {
            Err(Error::Unsupported(format!(
                "{method} does not exist in {}",
                self.protocol_version()
            )))
        } else {
            Ok(())
        }
    }

    /// `send` through the 2026-07-28 response cache: a fresh cached result of the same request
    /// is answered without sending; a result the server says may be cached is kept.
    /// `send` answers the result and whether it may be kept (not when it took answers from the
    /// user: a result that needed `inputResponses` is never cached).
    pub(crate) async fn cached_send<F, Fut>(
        &self,
        method: &'static str,
        params: Value,
        send: F,
    ) -> Result<Payload>
    where
        F: FnOnce(Value) -> Fut,
        Fut: std::future::Future<Output = Result<(Payload, bool)>>,
    {
        let slot = self
            .is_modern()
            .then(|| cache::cacheable(method))
            .flatten()
            .map(|method| (method, cache::key(Some(&params))));
        if let Some((method, key)) = &slot
            && let Some(hit) = self.inner.cache.get(method, key, false)
        {
            return Ok(Payload::Value(hit));
        }
        // A change announced while the request was out makes its answer stale at once.
        let generation = self.inner.cache.generation();
        let (result, keep) = send(params).await?;
        // 2026-07-28 results, the only ones cached, are values (`request::send`).
        if keep
            && let Some((method, key)) = slot
            && let Some(value) = result.as_value()
        {
            self.inner.cache.put(method, key, value, generation);
        }
        Ok(result)
    }

    /// A fresh cached result of `method` with `params` that the server marked `public`
    /// (`cacheScope`), for a layer that serves many callers; `None` if there is none.
    ///
    /// Example: [`Client`].
    pub fn cached_public(&self, method: &str, params: &Value) -> Option<Value> {
        let method = cache::cacheable(method)?;
        self.inner
            .cache
            .get(method, &cache::key(Some(params)), true)
    }

    /// Forgets every cached result (the next request of each kind is sent).
    ///
    /// Example: [`Client`].
    pub fn clear_response_cache(&self) {
        self.inner.cache.clear();
    }

    /// Sends one request in the connection's era and returns the raw result (a value, or the
    /// text a server in this process wrote: its `initialize` answer, or any result over a
    /// transport that does not say it passes messages as they are).
    pub(crate) async fn send(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Payload> {
        let envelope = self.inner.envelope.as_ref();
        let result =
            request::send(&self.inner.peer, envelope, method, params, options, false).await;
        match result {
            Err(error) => Err(super::connect::why_closed(error, &self.inner.ended).await),
            ok => ok,
        }
    }

    /// Sends one request and decodes its result.
    pub(crate) async fn call_method<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<R> {
        let result = self.send(method, params, options).await?;
        decode(method, result)
    }

    /// Sends a request that may answer `input_required` (2026-07-28): answers each round through
    /// the handler and retries with a new id, `inputResponses` and the echoed `requestState`.
    pub(crate) async fn call_with_input<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: &CallOptions,
    ) -> Result<R> {
        let (result, _) = self.call_counting_rounds(method, params, options).await?;
        decode(method, result)
    }

    /// [`Client::call_with_input`], raw, with the number of `input_required` rounds it took.
    pub(crate) async fn call_counting_rounds<P: Serialize>(
        &self,
        method: &str,
        params: &P,
        options: &CallOptions,
    ) -> Result<(Payload, u32)> {
        let Value::Object(mut params) = serde_json::to_value(params)? else {
            return Err(Error::Protocol("params must be a JSON object".into()));
        };
        let Some(envelope) = self.inner.envelope.as_ref() else {
            let result = self
                .send(method, Some(Value::Object(params)), options)
                .await?;
            return Ok((result, 0));
        };
        let cancel = options
            .cancel
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        let _cancel_on_drop = cancel.clone().drop_guard();
        let max = self.config().max_input_rounds;
        for round in 0..=max {
            let result = request::send(
                &self.inner.peer,
                Some(envelope),
                method,
                Some(Value::Object(params.clone())),
                options,
                true,
            )
            .await;
            let result = match result.and_then(read_result) {
                Ok(result) => result,
                Err(error) => {
                    return Err(super::connect::why_closed(error, &self.inner.ended).await);
                }
            };
            if ResultType::of(&result) != ResultType::InputRequired {
                return Ok((Payload::Value(result), round));
            }
            if round == max {
                break;
            }
            let asked: InputRequiredResult = serde_json::from_value(result)
                .map_err(|e| Error::Protocol(format!("invalid input_required result: {e}")))?;
            self.next_round(&mut params, asked, &cancel).await?;
        }
        Err(Error::Protocol(format!(
            "{method} still needs input after {max} rounds (ClientConfig::max_input_rounds)"
        )))
    }

    /// Answers one `input_required` round and puts the answers and the state into `params`.
    async fn next_round(
        &self,
        params: &mut Map<String, Value>,
        asked: InputRequiredResult,
        cancel: &CancellationToken,
    ) -> Result<()> {
        params.remove("inputResponses");
        params.remove("requestState");
        let requests = asked.input_requests.unwrap_or_default();
        if !requests.is_empty() {
            let answers = input::answer_all(
                &self.inner.handler,
                self.client_capabilities(),
                requests,
                cancel,
                self.config().apply_elicitation_defaults,
            )
            .await?;
            params.insert("inputResponses".into(), serde_json::to_value(answers)?);
        }
        if let Some(state) = asked.request_state {
            params.insert("requestState".into(), Value::String(state));
        }
        Ok(())
    }
}

/// Decodes a result (a value, or text a server in this process wrote, read straight into `R`),
/// naming the method when it does not fit.
pub(crate) fn decode<R: DeserializeOwned>(method: &str, result: impl Into<Payload>) -> Result<R> {
    result
        .into()
        .decode()
        .map_err(|e| Error::Protocol(format!("invalid {method} result: {e}")))
}
