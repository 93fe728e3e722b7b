//! Requests the host routes besides tool calls: completions of a prompt argument or a template
//! variable, and resource subscriptions, each by its exposed name or URI; and a naming policy
//! that hides, renames and prefixes one server's tools.

use std::collections::HashMap;

use barrel_mcp::client::{Backoff, Client, Clients};
use barrel_mcp::host::format::{self, Provider};
use barrel_mcp::host::names::NamePolicy;
use barrel_mcp::host::{CallFailure, Host};
use barrel_mcp::server::Server;
use barrel_mcp::transport::memory;
use barrel_mcp::types::{CompleteArgument, CompleteParams, CompletionReference};
use serde_json::json;

use super::server;
use crate::support::within;

/// A registry over in-memory servers named `names`, and the servers themselves (to make them
/// send notifications).
pub(super) async fn servers(names: &[&'static str]) -> (Clients, HashMap<&'static str, Server>) {
    let clients = Clients::new();
    let mut servers = HashMap::new();
    for name in names {
        let server = server(name);
        servers.insert(*name, server.clone());
        clients.start(
            *name,
            Client::builder().name("host-test", "1.0.0"),
            Backoff::default(),
            move || {
                let (a, b) = memory();
                let server = server.clone();
                tokio::spawn(async move { server.serve(b).await });
                async move { Ok(a) }
            },
        );
    }
    for name in names {
        within(clients.connected(name)).await.expect("connected");
    }
    (clients, servers)
}

fn completion(reference: CompletionReference, name: &str, value: &str) -> CompleteParams {
    CompleteParams {
        reference,
        argument: CompleteArgument {
            name: name.into(),
            value: value.into(),
        },
        context: None,
        meta: None,
    }
}

#[tokio::test]
async fn completions_reach_the_server_behind_the_exposed_name() {
    within(async {
        let (clients, _servers) = servers(&["alpha", "beta"]).await;
        let host = Host::new(clients);
        host.refresh().await.expect("catalog");
        let prompt = CompletionReference::Prompt {
            name: "beta__cite".into(),
            title: None,
        };
        let done = host
            .complete(completion(prompt, "style", "s"))
            .await
            .expect("prompt completion");
        assert_eq!(done.completion.values, ["short"]);
        let template = CompletionReference::Resource {
            uri: "alpha+memo://notes/{id}".into(),
        };
        let done = host
            .complete(completion(template, "id", "1"))
            .await
            .expect("template completion");
        assert_eq!(done.completion.values, ["1", "10"]);
        let unknown = CompletionReference::Prompt {
            name: "gamma__cite".into(),
            title: None,
        };
        assert!(
            host.complete(completion(unknown, "style", ""))
                .await
                .is_err()
        );
        let unrouted = CompletionReference::Resource {
            uri: "memo://notes/{id}".into(),
        };
        assert!(host.complete(completion(unrouted, "id", "")).await.is_err());
    })
    .await;
}

#[tokio::test]
async fn a_subscription_hears_its_server_under_the_exposed_uri() {
    within(async {
        let (clients, servers) = servers(&["alpha", "beta"]).await;
        let host = Host::new(clients);
        host.refresh().await.expect("catalog");
        let mut updates = host
            .subscribe("beta+memo://readme")
            .await
            .expect("subscribe");
        assert_eq!(updates.uri(), "beta+memo://readme");
        // The same raw URI on the other server is another resource: nothing arrives for it.
        servers["alpha"].notify_resource_updated("memo://readme");
        servers["beta"].notify_resource_updated("memo://readme");
        let update = updates.next().await.expect("an update");
        assert_eq!(update.uri, "beta+memo://readme");
        updates.unsubscribe().await.expect("unsubscribe");
        assert!(host.subscribe("gamma+memo://readme").await.is_err());
    })
    .await;
}

#[tokio::test]
async fn a_policy_hides_renames_and_prefixes_one_servers_tools() {
    within(async {
        let (clients, _servers) = servers(&["alpha", "beta"]).await;
        let policy = NamePolicy::new()
            .prefix("a")
            .deny(["dotted*"])
            .rename("echo", "say")
            .rename("cite", "quote");
        let host = Host::with_naming(clients, HashMap::from([("alpha".to_owned(), policy)]), 64);
        let catalog = host.refresh().await.expect("catalog");
        let names: Vec<&str> = catalog.tools().iter().map(|t| t.exposed.as_str()).collect();
        assert_eq!(names, ["beta__dotted_name", "beta__echo", "say"]);
        assert_eq!(catalog.resources()[0].item.uri, "a+memo://readme");
        // Renames are for tools: the prompt of the same raw name keeps its prefixed name.
        let prompts: Vec<&str> = catalog
            .prompts()
            .iter()
            .map(|p| p.exposed.as_str())
            .collect();
        assert_eq!(prompts, ["a__cite", "beta__cite"]);
        // A hidden tool is an unknown one, whatever name a model guesses for it.
        let calls = format::calls(
            Provider::Anthropic,
            &json!({"content": [
                {"type": "tool_use", "id": "1", "name": "a__dotted_name", "input": {"text": "x"}},
                {"type": "tool_use", "id": "2", "name": "say", "input": {"text": "x"}}]}),
        );
        let (hidden, failure) = host.call(&calls[0]).await;
        assert_eq!(hidden.is_error, Some(true));
        assert_eq!(
            failure,
            Some(CallFailure::UnknownTool("a__dotted_name".into()))
        );
        let (said, failure) = host.call(&calls[1]).await;
        assert_eq!(failure, None);
        assert_eq!(said.text_content(), "alpha: x");
    })
    .await;
}
