//! The host (feature `host`): one catalog over two servers behind a `Clients` registry, a
//! model's tool calls in each provider format routed to the right server, and what happens
//! when a server goes away.

mod golden;
mod requests;
mod schema;

use barrel_mcp::client::{Backoff, Client, Clients};
use barrel_mcp::host::format::{self, Provider};
use barrel_mcp::host::{CallFailure, Host};
use barrel_mcp::server::{Completer, Ctx, ResourceRequest, Server};
use barrel_mcp::transport::memory;
use barrel_mcp::types::{
    ContentBlock, GetPromptResult, Prompt, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, Role,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::support::within;

#[derive(Deserialize, JsonSchema)]
struct Say {
    /// What to say.
    text: String,
}

fn server(name: &'static str) -> Server {
    Server::builder()
        .name(name, "1.0.0")
        .tool("echo", "Say it back", move |_: Ctx, say: Say| async move {
            Ok(format!("{name}: {}", say.text))
        })
        .tool(
            "dotted.name",
            "A name no model API takes",
            |_: Ctx, _: Say| async move { Ok("dotted".to_owned()) },
        )
        .instructions(format!("{name} says things back"))
        .text_resource(
            Resource::new("memo://readme", "readme"),
            format!("{name} readme"),
        )
        .resource_template(
            ResourceTemplate::new("memo://notes/{id}", "note"),
            move |_: Ctx, request: ResourceRequest| async move {
                let id = request.variables.get("id").cloned().unwrap_or_default();
                Ok(vec![ResourceContents::text(
                    request.uri,
                    format!("{name} note {id}"),
                )])
            },
        )
        .complete_prompt_argument("cite", "style", Completer::values(["short", "long"]))
        .complete_template_variable(
            "memo://notes/{id}",
            "id",
            Completer::values(["1", "10", "2"]),
        )
        .prompt(Prompt::new("cite"), move |_: Ctx, _| async move {
            let link = ContentBlock::resource(ResourceContents::text("memo://readme", "quoted"));
            Ok(GetPromptResult::new(vec![PromptMessage::new(
                Role::User,
                link,
            )]))
        })
        .build()
        .expect("server")
}

/// A registry supervising `names`, each an in-memory server; waits until all are connected.
async fn clients(names: &[&'static str]) -> Clients {
    requests::servers(names).await.0
}

#[tokio::test]
async fn one_catalog_and_calls_routed_in_every_format() {
    within(async {
        let host = Host::new(clients(&["alpha", "beta"]).await);
        let catalog = host.refresh().await.expect("catalog");
        let names: Vec<&str> = catalog.tools().iter().map(|t| t.exposed.as_str()).collect();
        assert_eq!(
            names,
            ["alpha__dotted_name", "alpha__echo", "beta__dotted_name", "beta__echo"]
        );
        // Definitions for a request, in every format.
        for provider in Provider::ALL {
            let tools = format::tools(provider, &catalog.specs());
            assert!(tools.to_string().contains("beta__echo"), "{provider:?}");
        }
        // An Anthropic turn: two servers, one unknown tool; results in call order.
        let response = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "beta__echo", "input": {"text": "hi"}},
            {"type": "tool_use", "id": "t2", "name": "alpha__echo", "input": {"text": "yo"}},
            {"type": "tool_use", "id": "t3", "name": "gamma__echo", "input": {}}
        ]});
        let calls = format::calls(Provider::Anthropic, &response);
        let outcomes = host.call_all(&calls).await;
        let texts: Vec<String> = outcomes.iter().map(|(_, r)| r.text_content()).collect();
        assert_eq!(texts[0], "beta: hi");
        assert_eq!(texts[1], "alpha: yo");
        assert!(texts[2].contains("unknown tool"), "{}", texts[2]);
        let message = &format::results(Provider::Anthropic, &outcomes)[0];
        assert_eq!(message["content"][2]["is_error"], true);
        // An OpenAI Chat turn whose arguments are broken JSON: a tool error, not a panic.
        let chat = json!({"choices": [{"message": {"tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "alpha__echo", "arguments": "{\"text\":"}}
        ]}}]});
        let calls = format::calls(Provider::OpenAiChat, &chat);
        let (result, failure) = host.call(&calls[0]).await;
        assert_eq!(result.is_error, Some(true));
        assert!(matches!(failure, Some(CallFailure::InvalidArguments(_))));
        // The dotted raw name is called under its own name.
        let gemini = json!({"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "beta__dotted_name", "args": {"text": "x"}}}
        ]}}]});
        let calls = format::calls(Provider::Gemini, &gemini);
        let outcomes = host.call_all(&calls).await;
        assert_eq!(outcomes[0].1.text_content(), "dotted");
    })
    .await;
}

#[tokio::test]
async fn a_server_that_goes_away_leaves_the_rest_usable() {
    within(async {
        let host = Host::new(clients(&["alpha", "beta"]).await);
        host.refresh().await.expect("catalog");
        assert!(host.clients().stop("beta").await);
        let call = format::calls(
            Provider::Anthropic,
            &json!({"content": [{"type": "tool_use", "id": "t", "name": "beta__echo", "input": {"text": "x"}}]}),
        );
        let (result, failure) = host.call(&call[0]).await;
        assert_eq!(result.is_error, Some(true));
        assert_eq!(failure, Some(CallFailure::Unavailable("beta".into())));
        // The next catalog leaves it out; alpha still answers.
        let catalog = host.refresh().await.expect("catalog");
        assert!(catalog.tools().iter().all(|t| t.server == "alpha"));
        assert_eq!(catalog.generation, 2);
        let call = format::calls(
            Provider::Anthropic,
            &json!({"content": [{"type": "tool_use", "id": "t", "name": "alpha__echo", "input": {"text": "x"}}]}),
        );
        assert_eq!(host.call(&call[0]).await.0.text_content(), "alpha: x");
    })
    .await;
}

/// A server that answers `initialize` and then never answers a list: the refresh leaves it
/// out after the list timeout, the other server's catalog is whole, and calls to it go on.
#[tokio::test]
async fn a_server_that_hangs_is_left_out_after_the_list_timeout() {
    use std::sync::Arc;
    use std::time::Duration;

    use barrel_mcp::peer::{self, PeerConfig};
    use barrel_mcp::types::ErrorObject;

    within(async {
        let clients = clients(&["alpha"]).await;
        let script: Arc<crate::client::Script> = Arc::new(|request, _| {
            Box::pin(async move {
                match request.method.as_str() {
                    "initialize" => Ok(json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}, "prompts": {}},
                        "serverInfo": {"name": "stuck", "version": "0"}
                    })),
                    m if m.ends_with("/list") => std::future::pending().await,
                    other => Err(ErrorObject::method_not_found(other)),
                }
            })
        });
        clients.start(
            "stuck",
            Client::builder().name("host-test", "1.0.0"),
            Backoff::default(),
            move || {
                let (a, b) = memory();
                let fake = crate::client::Fake(Arc::clone(&script));
                let _ = peer::serve(b, Arc::new(fake), PeerConfig::default());
                async move { Ok(a) }
            },
        );
        clients.connected("stuck").await.expect("connected");
        let host = Host::new(clients);
        host.set_list_timeout(Duration::from_millis(200));
        let catalog = host.refresh().await.expect("catalog");
        let names: Vec<&str> = catalog.tools().iter().map(|t| t.exposed.as_str()).collect();
        assert_eq!(names, ["alpha__dotted_name", "alpha__echo"]);
        assert_eq!(catalog.prompts().len(), 1);
        let call = format::calls(
            Provider::Anthropic,
            &json!({"content": [{"type": "tool_use", "id": "t", "name": "alpha__echo", "input": {"text": "x"}}]}),
        );
        assert_eq!(host.call(&call[0]).await.0.text_content(), "alpha: x");
    })
    .await;
}

/// A servers file with a remote server (an in-process Streamable HTTP server), a stdio one
/// that cannot start, and a disabled one: `ready` names the one that never connects, and the
/// catalog holds the other.
#[cfg(all(feature = "http-client", feature = "http-server"))]
#[tokio::test]
async fn a_host_from_a_servers_file() {
    use std::time::Duration;

    use barrel_mcp::client::ServersFile;
    use barrel_mcp::http::HttpConfig;

    let mut remote =
        crate::http::TestServer::start_with(server("remote"), HttpConfig::default()).await;
    let file = ServersFile::parse(&json!({ "mcpServers": {
        "remote": { "type": "http", "url": format!("http://{}/mcp", remote.addr),
                    "headers": { "X-Trace": "${BARREL_MCP_TEST_UNSET:-on}" },
                    "prefix": "far", "tools": { "deny": ["dotted*"], "rename": { "echo": "say" } } },
        "broken": { "command": "/nonexistent/barrel-mcp-test-server" },
        "off": { "command": "/nonexistent/other", "disabled": true }
    }}))
    .expect("file");
    let host = Host::from_servers(
        &file,
        &Client::builder().name("host-test", "1.0.0"),
        Backoff::default(),
    )
    .expect("host");
    let missing = host.ready(Duration::from_secs(2)).await;
    assert_eq!(missing, vec!["broken".to_owned()]);
    let catalog = within(host.refresh()).await.expect("catalog");
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.exposed.as_str()).collect();
    // The entry's own policy: its prefix, a tool hidden, one renamed.
    assert_eq!(names, ["say"]);
    assert_eq!(catalog.resources()[0].item.uri, "far+memo://readme");
    let call = format::calls(
        Provider::Anthropic,
        &json!({"content": [{"type": "tool_use", "id": "t", "name": "say", "input": {"text": "hi"}}]}),
    );
    assert_eq!(
        within(host.call(&call[0])).await.0.text_content(),
        "remote: hi"
    );
    host.clients().stop_all().await;
    remote.stop().await;
}

#[tokio::test]
async fn resources_and_prompts_of_every_server_in_one_namespace() {
    within(async {
        let host = Host::new(clients(&["alpha", "beta"]).await);
        let catalog = host.refresh().await.expect("catalog");
        let uris: Vec<&str> = catalog
            .resources()
            .iter()
            .map(|r| r.item.uri.as_str())
            .collect();
        assert_eq!(uris, ["alpha+memo://readme", "beta+memo://readme"]);
        let templates: Vec<&str> = catalog
            .templates()
            .iter()
            .map(|t| t.item.uri_template.as_str())
            .collect();
        assert_eq!(
            templates,
            ["alpha+memo://notes/{id}", "beta+memo://notes/{id}"]
        );
        let prompts: Vec<&str> = catalog
            .prompts()
            .iter()
            .map(|p| p.exposed.as_str())
            .collect();
        assert_eq!(prompts, ["alpha__cite", "beta__cite"]);
        // A listed URI, and one only a template makes: the prefix routes both.
        let read = host
            .read_resource("beta+memo://readme")
            .await
            .expect("read");
        let text = serde_json::to_value(&read.contents[0]).expect("json");
        assert_eq!(text["text"], "beta readme");
        assert_eq!(
            text["uri"], "beta+memo://readme",
            "contents carry the exposed URI"
        );
        let note = host
            .read_resource("alpha+memo://notes/7")
            .await
            .expect("note");
        assert_eq!(
            serde_json::to_value(&note.contents[0]).expect("json")["text"],
            "alpha note 7"
        );
        assert!(host.read_resource("gamma+memo://readme").await.is_err());
        assert!(host.read_resource("memo://readme").await.is_err());
        // A prompt's embedded resource comes back under the exposed URI.
        let prompt = host
            .get_prompt("beta__cite", Default::default())
            .await
            .expect("prompt");
        let message = serde_json::to_value(&prompt.messages[0]).expect("json");
        assert_eq!(message["content"]["resource"]["uri"], "beta+memo://readme");
        assert!(
            host.get_prompt("beta__nope", Default::default())
                .await
                .is_err()
        );
        let instructions = host.instructions().expect("instructions");
        assert_eq!(
            instructions,
            "## alpha\n\nalpha says things back\n\n## beta\n\nbeta says things back"
        );
        let health = host.health();
        assert_eq!(health.len(), 2);
        assert!(
            health
                .iter()
                .all(|(_, s)| *s == barrel_mcp::client::ServerStatus::Connected)
        );
    })
    .await;
}

/// `list_changed` from a server, and its connection lost and made again, rebuild the catalog
/// (debounced) without anyone calling `refresh`; subscribers see each new catalog.
#[tokio::test]
async fn the_catalog_follows_list_changes_and_reconnections() {
    use std::time::Duration;

    use barrel_mcp::server::ToolHandler;
    use barrel_mcp::types::Tool;

    within(async {
        let alpha = server("alpha");
        let clients = Clients::new();
        let host = Host::new(clients.clone());
        host.set_debounce(Duration::from_millis(20));
        let served = alpha.clone();
        clients.start(
            "alpha",
            Client::builder()
                .name("host-test", "1.0.0")
                .on_changes(host.changes()),
            Backoff::default(),
            move || {
                let (a, b) = memory();
                let server = served.clone();
                tokio::spawn(async move { server.serve(b).await });
                async move { Ok(a) }
            },
        );
        let mut catalogs = host.watch();
        // Connecting is a change: the first catalog arrives by itself.
        let first = catalogs
            .wait_for(|c| c.tool("alpha__echo").is_some())
            .await
            .expect("a catalog")
            .clone();
        assert!(first.tool("alpha__new").is_none());
        // The server adds a tool: its `list_changed` rebuilds the catalog.
        alpha
            .add_tool(
                Tool::new("new", Tool::empty_input_schema()),
                ToolHandler::raw(|_: Ctx, _| async move { Ok("new".to_owned()) }),
            )
            .expect("added");
        let second = catalogs
            .wait_for(|c| c.tool("alpha__new").is_some())
            .await
            .expect("rebuilt")
            .clone();
        assert!(second.generation > first.generation);
        // Gone: its items leave the catalog.
        assert!(clients.stop("alpha").await);
        catalogs
            .wait_for(|c| c.tools().is_empty())
            .await
            .expect("emptied");
    })
    .await;
}

/// Servers' sampling requests reach the host application's one handler, named.
#[cfg(all(feature = "http-client", feature = "http-server"))]
#[tokio::test]
async fn sampling_requests_of_every_server_reach_one_handler_named() {
    use std::time::Duration;

    use barrel_mcp::client::ServersFile;
    use barrel_mcp::host::SamplingHandler;
    use barrel_mcp::http::HttpConfig;
    use barrel_mcp::types::{
        CreateMessageParams, CreateMessageResult, ErrorObject, SamplingContent, SamplingMessage,
    };

    struct Model;

    impl SamplingHandler for Model {
        async fn create_message(
            &self,
            server: &str,
            params: CreateMessageParams,
        ) -> Result<CreateMessageResult, ErrorObject> {
            let asked = serde_json::to_value(&params.messages[0]).expect("json");
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: SamplingContent::text(format!(
                    "for {server}: {}",
                    asked["content"]["text"].as_str().unwrap_or_default()
                )),
                model: "scripted".into(),
                stop_reason: None,
                meta: None,
            })
        }
    }

    let asker = Server::builder()
        .name("asker", "1.0.0")
        .tool(
            "ask",
            "Asks the host's model",
            |ctx: Ctx, say: Say| async move {
                let params = CreateMessageParams::new(vec![SamplingMessage::user(say.text)], 50);
                let answer = ctx.create_message(params).await?;
                Ok(answer.text_content().unwrap_or_default())
            },
        )
        .build()
        .expect("server");
    let mut one = crate::http::TestServer::start_with(asker.clone(), HttpConfig::default()).await;
    let mut two = crate::http::TestServer::start_with(asker, HttpConfig::default()).await;
    let file = ServersFile::parse(&json!({ "mcpServers": {
        "one": { "url": format!("http://{}/mcp", one.addr) },
        "two": { "url": format!("http://{}/mcp", two.addr) }
    }}))
    .expect("file");
    let host = Host::from_servers_sampling(
        &file,
        &Client::builder().name("host-test", "1.0.0"),
        Backoff::default(),
        Model,
    )
    .expect("host");
    assert!(host.ready(Duration::from_secs(5)).await.is_empty());
    within(host.refresh()).await.expect("catalog");
    let calls = format::calls(
        Provider::Anthropic,
        &json!({"content": [
            {"type": "tool_use", "id": "a", "name": "one__ask", "input": {"text": "hello"}},
            {"type": "tool_use", "id": "b", "name": "two__ask", "input": {"text": "bonjour"}}
        ]}),
    );
    let outcomes = within(host.call_all(&calls)).await;
    assert_eq!(outcomes[0].1.text_content(), "for one: hello");
    assert_eq!(outcomes[1].1.text_content(), "for two: bonjour");
    host.clients().stop_all().await;
    one.stop().await;
    two.stop().await;
}
