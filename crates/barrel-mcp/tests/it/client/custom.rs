//! Methods the spec does not define, both ways: a server's tool asks the client with its own
//! request (answered by `ClientHandler::on_request`) and notifies it; the client notifies the
//! server (`ServerBuilder::notification`). Spec methods are refused on every such path.

use std::sync::{Arc, Mutex};

use barrel_mcp::client::{ClientHandler, HandlerContext, ServerNotification};
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::types::{ErrorObject, ProtocolVersion};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{builder, connect_to};
use crate::support::within;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Answers `acme/ping` and keeps the custom notifications it hears.
#[derive(Default)]
struct Acme {
    heard: Mutex<Vec<(String, Option<Value>)>>,
}

impl ClientHandler for Acme {
    async fn on_request(
        &self,
        method: String,
        params: Option<Value>,
        _: HandlerContext,
    ) -> Result<Value, ErrorObject> {
        match method.as_str() {
            "acme/ping" => Ok(json!({ "pong": params.unwrap_or_default()["n"] })),
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn on_notification(&self, notification: ServerNotification) {
        if let ServerNotification::Other(n) = notification {
            self.heard.lock().expect("lock").push((n.method, n.params));
        }
    }
}

fn server(heard: mpsc::UnboundedSender<Value>) -> Server {
    Server::builder()
        .name("custom", "1.0.0")
        .tool(
            "ask_client",
            "Asks the client its own way",
            |ctx: Ctx, _: NoArgs| async move {
                ctx.custom_notification("acme/note", Some(json!({"about": "to ask"})))
                    .await?;
                let answer = ctx
                    .custom_request("acme/ping", Some(json!({"n": 7})))
                    .await?;
                let refused = ctx.custom_request("roots/list", None).await;
                assert!(refused.is_err_and(|e| e.is_unsupported()));
                let unknown = ctx.custom_request("acme/unknown", None).await;
                assert!(matches!(unknown, Err(barrel_mcp::Error::Rpc(e)) if e.code.0 == -32601));
                Ok(answer.to_string())
            },
        )
        .notification("acme/hello", move |params| {
            let heard = heard.clone();
            async move {
                let _ = heard.send(params.unwrap_or_default());
            }
        })
        .build()
        .expect("server")
}

#[tokio::test]
async fn custom_requests_and_notifications_go_both_ways_in_a_session() {
    within(async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let server = server(tx);
        let handler = Arc::new(Acme::default());
        let client = connect_to(
            &server,
            builder(Some(ProtocolVersion::V2025_11_25)).handler(Arc::clone(&handler)),
        )
        .await;
        let result = client.call("ask_client", json!({})).await.expect("call");
        assert_eq!(result.text_content(), r#"{"pong":7}"#);
        client
            .custom_notification("acme/hello", Some(json!({"from": "client"})))
            .await
            .expect("sent");
        assert_eq!(rx.recv().await.expect("heard"), json!({"from": "client"}));
        let refused = client
            .custom_notification("notifications/initialized", None)
            .await
            .unwrap_err();
        assert!(refused.is_unsupported(), "{refused}");
        let heard = handler.heard.lock().expect("lock").clone();
        assert_eq!(
            heard,
            vec![("acme/note".to_owned(), Some(json!({"about": "to ask"})))]
        );
    })
    .await;
}

#[tokio::test]
async fn a_2026_server_sends_no_custom_requests_and_spec_names_are_refused() {
    within(async {
        let server = Server::builder()
            .name("custom", "1.0.0")
            .tool("ask", "Tries to ask", |ctx: Ctx, _: NoArgs| async move {
                let refused = ctx.custom_request("acme/ping", None).await;
                Ok(format!("{}", refused.is_err_and(|e| e.is_unsupported())))
            })
            .build()
            .expect("server");
        let client = connect_to(&server, builder(Some(ProtocolVersion::V2026_07_28))).await;
        let result = client.call("ask", json!({})).await.expect("call");
        assert_eq!(result.text_content(), "true");
        assert!(
            Server::builder()
                .notification("notifications/cancelled", |_| async {})
                .build()
                .is_err()
        );
    })
    .await;
}
