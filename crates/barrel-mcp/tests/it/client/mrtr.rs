//! The 2026-07-28 multi round-trip retry: each round is answered through the handler and the
//! request is resent with a new id, the answers and the echoed state; rounds are capped.

use std::sync::{Arc, Mutex};

use barrel_mcp::client::{ClientHandler, HandlerContext};
use barrel_mcp::types::{
    CallToolParams, ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorObject, JsonObject, ProtocolVersion, RequestId,
};
use serde_json::{Value, json};

use super::{builder, connect_fake, discover_result};
use crate::support::within;

struct Yes;

impl ClientHandler for Yes {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        let mut content = JsonObject::new();
        content.insert("said".into(), json!(params.message()));
        content.insert("key".into(), json!(cx.input_key));
        Ok(ElicitResult::accept(content))
    }
}

fn ask(round: u64) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": { format!("q{round}"): {
            "method": "elicitation/create",
            "params": { "message": format!("round {round}"), "requestedSchema": { "type": "object" } }
        }},
        "requestState": format!("state-{round}")
    })
}

#[tokio::test]
async fn retries_with_answers_state_and_new_ids_until_complete() {
    let seen: Arc<Mutex<Vec<(RequestId, Value)>>> = Arc::default();
    let log = Arc::clone(&seen);
    let client = connect_fake(builder(Some(ProtocolVersion::V2026_07_28)).handler(Yes), move |req, _| {
        let log = Arc::clone(&log);
        Box::pin(async move {
            if req.method == "server/discover" {
                return Ok(discover_result(json!({ "tools": {} })));
            }
            let params = req.params.clone().unwrap_or_default();
            let round = {
                let mut log = log.lock().expect("lock");
                log.push((req.id.clone(), params));
                log.len() as u64
            };
            Ok(if round < 3 {
                ask(round)
            } else {
                json!({ "resultType": "complete", "content": [{ "type": "text", "text": "done" }] })
            })
        })
    })
    .await;
    let result = within(client.call_tool(CallToolParams::new("multi")))
        .await
        .expect("call");
    assert!(!result.is_error());
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 3);
    let ids: std::collections::HashSet<_> = seen.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids.len(), 3, "each retry has a new id");
    assert!(seen[0].1.get("inputResponses").is_none());
    assert!(seen[0].1.get("requestState").is_none());
    for round in 1..3u64 {
        let params = &seen[round as usize].1;
        assert_eq!(params["name"], "multi");
        assert_eq!(params["requestState"], format!("state-{round}"));
        let answer = &params["inputResponses"][format!("q{round}")];
        assert_eq!(answer["action"], "accept");
        assert_eq!(answer["content"]["said"], format!("round {round}"));
        assert_eq!(answer["content"]["key"], format!("q{round}"));
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        // Answers are per round, never accumulated.
        assert_eq!(
            params["inputResponses"].as_object().map(|o| o.len()),
            Some(1)
        );
    }
}

#[tokio::test]
async fn rounds_are_capped() {
    let client = connect_fake(builder(None).handler(Yes).max_input_rounds(3), |req, _| {
        Box::pin(async move {
            match req.method.as_str() {
                "server/discover" => Ok(discover_result(json!({ "tools": {} }))),
                _ => Ok(ask(1)),
            }
        })
    })
    .await;
    let err = within(client.call_tool(CallToolParams::new("forever")))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("after 3 rounds"), "{err}");
}

#[tokio::test]
async fn a_question_for_an_undeclared_capability_fails_the_call() {
    let client = connect_fake(builder(None), |req, _| {
        Box::pin(async move {
            match req.method.as_str() {
                "server/discover" => Ok(discover_result(json!({ "tools": {} }))),
                _ => Ok(ask(1)),
            }
        })
    })
    .await;
    let err = within(client.call_tool(CallToolParams::new("x")))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did not declare"), "{err}");
}
