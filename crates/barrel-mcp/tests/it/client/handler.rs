//! The `ClientHandler`: sampling, elicitation (with schema defaults, and URL mode), roots and
//! notifications, answered the same way in a session and through `input_required`; deferred
//! replies from another task.

use std::sync::{Arc, Mutex};

use barrel_mcp::client::{ClientHandler, HandlerContext, ServerNotification};
use barrel_mcp::types::{
    CallToolParams, ClientCapabilities, ContentBlock, CreateMessageParams, CreateMessageResult,
    ElicitAction, ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorObject,
    JsonObject, ListRootsResult, LoggingLevel, Payload, ProtocolVersion, Role, Root,
    RootsCapability, SamplingCapability, SamplingContent,
};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::{fixture_client, modes};
use crate::support::{as_payload, within};

/// Answers everything; elicitation answers `{}` so the schema defaults apply.
#[derive(Default)]
struct Everything {
    notifications: Mutex<Vec<ServerNotification>>,
}

fn everything_caps() -> ClientCapabilities {
    ClientCapabilities {
        sampling: Some(SamplingCapability::default()),
        elicitation: Some(ElicitationCapability {
            form: Some(JsonObject::new()),
            url: Some(JsonObject::new()),
        }),
        roots: Some(RootsCapability::default()),
        ..ClientCapabilities::default()
    }
}

impl ClientHandler for Everything {
    fn capabilities(&self) -> ClientCapabilities {
        everything_caps()
    }

    async fn create_message(
        &self,
        _: CreateMessageParams,
        _: HandlerContext,
    ) -> Result<CreateMessageResult, ErrorObject> {
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::text("short"),
            model: "test-model".into(),
            stop_reason: None,
            meta: None,
        })
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        _: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        if params.is_url() {
            return Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: None,
                meta: None,
            });
        }
        Ok(ElicitResult::accept(JsonObject::new()))
    }

    async fn list_roots(&self, _: HandlerContext) -> Result<ListRootsResult, ErrorObject> {
        Ok(ListRootsResult {
            roots: vec![Root::new("file:///a"), Root::new("file:///b")],
            meta: None,
        })
    }

    async fn on_notification(&self, notification: ServerNotification) {
        self.notifications.lock().expect("lock").push(notification);
    }
}

fn text(result: &barrel_mcp::types::CallToolResult) -> String {
    match &result.content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn answers_sampling_elicitation_and_roots_in_every_revision() {
    // The fixture's `name` property has no default, so add one through a custom server below;
    // here the form answer is empty and the tool sees no name.
    for mode in modes() {
        let version = mode.unwrap_or(ProtocolVersion::LATEST);
        if !version.supports(barrel_mcp::types::Feature::Elicitation) {
            continue;
        }
        let handler = Arc::new(Everything::default());
        let client = fixture_client(mode, Arc::clone(&handler)).await;
        let call = |name: &str| client.call_tool(CallToolParams::new(name));
        assert_eq!(
            text(&within(call("summarize")).await.expect("sampling")),
            "Summary: short"
        );
        assert_eq!(
            text(&within(call("roots")).await.expect("roots")),
            "file:///a\nfile:///b"
        );
        assert_eq!(
            text(&within(call("ask_name")).await.expect("elicit")),
            "Hello, ?!"
        );
        assert_eq!(
            text(&within(call("ask_twice")).await.expect("two inputs")),
            "?/short"
        );
        if version.supports(barrel_mcp::types::Feature::UrlElicitation) {
            assert_eq!(
                text(&within(call("open_url")).await.expect("url")),
                "Accept"
            );
        }
        client.close();
    }
}

#[tokio::test]
async fn form_answers_get_the_schema_defaults() {
    use barrel_mcp::server::{Ctx, Server};
    let schema = json!({ "type": "object", "properties": {
        "name": { "type": "string", "default": "John Doe" },
        "age": { "type": "integer", "default": 30 },
        "score": { "type": "number", "default": 95.5 },
        "status": { "type": "string", "enum": ["active", "inactive"], "default": "active" },
        "verified": { "type": "boolean", "default": true }
    }});
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let server = Server::builder()
        .name("defaults", "1")
        .tool(
            "defaults",
            "Elicit with defaults",
            move |ctx: Ctx, _: NoArgs| {
                let schema = schema.as_object().cloned().unwrap_or_default();
                async move {
                    let answer = ctx
                        .elicit(ElicitRequestParams::form("Review", schema))
                        .await?;
                    Ok(serde_json::to_string(&answer.content)?)
                }
            },
        )
        .build()
        .expect("server");
    for mode in [Some(ProtocolVersion::V2025_11_25), None] {
        let handler = Arc::new(Everything::default());
        let client = super::connect_to(&server, super::builder(mode).handler(handler)).await;
        let result = within(client.call_tool(CallToolParams::new("defaults")))
            .await
            .expect("call");
        let content: serde_json::Value = serde_json::from_str(&text(&result)).expect("json");
        assert_eq!(
            content,
            json!({ "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true }),
            "{mode:?}"
        );
    }
}

/// Hands each elicitation to a test task through a channel and answers when that task says so.
struct Deferred {
    questions: mpsc::UnboundedSender<(String, oneshot::Sender<ElicitResult>)>,
}

impl ClientHandler for Deferred {
    fn capabilities(&self) -> ClientCapabilities {
        everything_caps()
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        _: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let (answer, later) = oneshot::channel();
        let _ = self.questions.send((params.message().to_owned(), answer));
        later
            .await
            .map_err(|_| ErrorObject::internal("nobody answered"))
    }
}

#[tokio::test]
async fn a_handler_answers_later_from_another_task() {
    for mode in [Some(ProtocolVersion::V2025_06_18), None] {
        let (questions, mut asked) = mpsc::unbounded_channel();
        let client = fixture_client(mode, Deferred { questions }).await;
        let answering = tokio::spawn(async move {
            let (message, answer) = within(asked.recv()).await.expect("a question");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let mut content = JsonObject::new();
            content.insert("name".into(), json!("Later"));
            let _ = answer.send(ElicitResult::accept(content));
            message
        });
        let result = within(client.call_tool(CallToolParams::new("ask_name")))
            .await
            .expect("call");
        assert_eq!(text(&result), "Hello, Later!", "{mode:?}");
        assert_eq!(answering.await.expect("task"), "Name?");
    }
}

#[tokio::test]
async fn notifications_reach_the_handler_in_order() {
    let handler = Arc::new(Everything::default());
    let client = fixture_client(Some(ProtocolVersion::V2025_11_25), Arc::clone(&handler)).await;
    for message in ["one", "two"] {
        let mut args = JsonObject::new();
        args.insert("level".into(), json!("info"));
        args.insert("message".into(), json!(message));
        within(client.call_tool(CallToolParams::new("log").with_arguments(args)))
            .await
            .expect("log");
    }
    within(async {
        loop {
            let logged: Vec<String> = handler
                .notifications
                .lock()
                .expect("lock")
                .iter()
                .filter_map(|n| match n {
                    ServerNotification::LoggingMessage(m) => {
                        assert_eq!(m.level, LoggingLevel::Info);
                        m.data.as_str().map(str::to_owned)
                    }
                    _ => None,
                })
                .collect();
            if logged.len() == 2 {
                assert_eq!(logged, ["one", "two"]);
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn undeclared_capabilities_are_not_answered() {
    // No handler: nothing declared. In a session the server refuses before asking; in
    // 2026-07-28 it answers -32021 naming the capability.
    for mode in [Some(ProtocolVersion::V2025_11_25), None] {
        let client = fixture_client(mode, barrel_mcp::client::NoHandler).await;
        let outcome = within(client.call_tool(CallToolParams::new("summarize"))).await;
        match outcome {
            Ok(result) => assert!(result.is_error(), "{mode:?}: {result:?}"),
            Err(e) => assert!(e.as_rpc().is_some(), "{mode:?}: {e}"),
        }
    }
}

#[tokio::test]
async fn a_server_asking_for_an_undeclared_capability_gets_method_not_found() {
    // A server that asks anyway, in a session: the handler could answer, but the client
    // declared only roots, so sampling and elicitation are refused and roots is answered.
    let declared = ClientCapabilities {
        roots: Some(RootsCapability::default()),
        ..ClientCapabilities::default()
    };
    let builder = super::builder(Some(ProtocolVersion::V2025_11_25))
        .handler(Everything::default())
        .capabilities(declared);
    let client = super::connect_fake(builder, |request, peer| {
        Box::pin(async move {
            match request.method.as_str() {
                "initialize" => Ok(json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "asks-anyway", "version": "0" }
                })),
                "tools/call" => {
                    let options = barrel_mcp::peer::RequestOptions::default();
                    let mut codes = Vec::new();
                    for (method, params) in [
                        ("sampling/createMessage", json!({"messages": [], "maxTokens": 5})),
                        ("elicitation/create", json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}})),
                        ("roots/list", json!({})),
                    ] {
                        let code = match peer.request(method, Some(params), options.clone()).await {
                            Ok(_) => 0,
                            Err(e) => e.as_rpc().map_or(-1, |rpc| i64::from(rpc.code.0)),
                        };
                        codes.push(json!(code));
                    }
                    Ok(json!({ "content": [], "structuredContent": { "codes": codes } }))
                }
                _ => Ok(json!({})),
            }
        })
    })
    .await;
    let result = within(client.call_tool(CallToolParams::new("ask")))
        .await
        .expect("call");
    assert_eq!(
        result.structured_content.expect("codes")["codes"],
        json!([-32601, -32601, 0])
    );
    client.close();
}

/// Declares roots with `listChanged`.
struct ChangingRoots;

impl ClientHandler for ChangingRoots {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(RootsCapability {
                list_changed: Some(true),
            }),
            ..ClientCapabilities::default()
        }
    }
}

/// A server side that reports every notification it receives.
struct Listening(mpsc::UnboundedSender<String>);

impl Listening {
    /// The answer, as a value.
    fn answer(
        &self,
        request: barrel_mcp::types::Request,
        _: barrel_mcp::peer::RequestContext,
    ) -> barrel_mcp::peer::BoxFuture<'static, Result<serde_json::Value, ErrorObject>> {
        let answer = match request.method.as_str() {
            "initialize" => Ok(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": { "name": "listening", "version": "0" }
            })),
            other => Err(ErrorObject::method_not_found(other)),
        };
        Box::pin(std::future::ready(answer))
    }
}

impl barrel_mcp::peer::Handler for Listening {
    fn on_request(
        &self,
        request: barrel_mcp::types::Request,
        cx: barrel_mcp::peer::RequestContext,
    ) -> barrel_mcp::peer::BoxFuture<'static, Result<Payload, ErrorObject>> {
        as_payload(self.answer(request, cx))
    }

    fn on_notification(
        &self,
        notification: barrel_mcp::types::Notification,
        _: &barrel_mcp::peer::Peer,
    ) {
        let _ = self.0.send(notification.method);
    }
}

#[tokio::test]
async fn roots_list_changed_is_sent_when_declared_and_in_a_session() {
    let (tx, mut heard) = mpsc::unbounded_channel();
    let (a, b) = barrel_mcp::transport::memory();
    let _server = barrel_mcp::peer::serve(b, Arc::new(Listening(tx)), Default::default());
    let client = within(
        super::builder(Some(ProtocolVersion::V2025_11_25))
            .handler(ChangingRoots)
            .connect(a),
    )
    .await
    .expect("connects");
    assert_eq!(
        within(heard.recv()).await.as_deref(),
        Some("notifications/initialized")
    );
    client.notify_roots_list_changed().await.expect("sent");
    assert_eq!(
        within(heard.recv()).await.as_deref(),
        Some("notifications/roots/list_changed")
    );
    // Without the capability, or in 2026-07-28, nothing is sent.
    let plain = fixture_client(
        Some(ProtocolVersion::V2025_11_25),
        Everything {
            notifications: Mutex::default(),
        },
    )
    .await;
    assert!(
        plain
            .notify_roots_list_changed()
            .await
            .expect_err("not declared")
            .is_unsupported()
    );
    let modern = fixture_client(Some(ProtocolVersion::V2026_07_28), ChangingRoots).await;
    assert!(
        modern
            .notify_roots_list_changed()
            .await
            .expect_err("no such notification")
            .is_unsupported()
    );
}

/// A hostile server floods the client with 10,000 requests at once: every one is answered (or
/// refused as busy past the in-flight cap), none is lost, and the client goes on working.
#[tokio::test]
async fn ten_thousand_server_requests_at_once_are_all_answered() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use barrel_mcp::peer::RequestOptions;
    use barrel_mcp::types::ProtocolVersion;

    let answered = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let (a, r) = (Arc::clone(&answered), Arc::clone(&refused));
    let client = super::connect_fake(
        super::builder(Some(ProtocolVersion::V2025_11_25)),
        move |request, peer| {
            let (answered, refused) = (Arc::clone(&a), Arc::clone(&r));
            Box::pin(async move {
                match request.method.as_str() {
                    "initialize" => Ok(serde_json::json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "flood", "version": "0"}
                    })),
                    "tools/list" => {
                        let mut flood = tokio::task::JoinSet::new();
                        for _ in 0..10_000 {
                            let peer = peer.clone();
                            flood.spawn(async move {
                                peer.request("ping", None, RequestOptions::default()).await
                            });
                        }
                        while let Some(outcome) = flood.join_next().await {
                            match outcome.expect("joined") {
                                Ok(_) => answered.fetch_add(1, Ordering::Relaxed),
                                Err(_) => refused.fetch_add(1, Ordering::Relaxed),
                            };
                        }
                        Ok(serde_json::json!({"tools": []}))
                    }
                    "ping" => Ok(serde_json::json!({})),
                    other => Err(barrel_mcp::types::ErrorObject::method_not_found(other)),
                }
            })
        },
    )
    .await;
    within(client.list_tools(None))
        .await
        .expect("listed after the flood");
    assert_eq!(
        answered.load(Ordering::Relaxed) + refused.load(Ordering::Relaxed),
        10_000,
        "every request got an answer"
    );
    assert!(answered.load(Ordering::Relaxed) > 0);
    within(client.ping()).await.expect("the client goes on");
}
