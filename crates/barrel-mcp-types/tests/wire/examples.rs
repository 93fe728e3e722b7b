//! Every example of the 2026-07-28 schema that this crate models, decoded into its type and
//! encoded again.
//!
//! Two normalisations are applied before comparing: numbers compare as `f64` (the model reads
//! `50` into an `f64` field and writes `50.0`), and the `resultType` of complete results is
//! removed, because the typed results leave it to the runtime (see `shape::stamp_result_type`).
//! Form-mode elicitations are written without `mode`, so `"mode": "form"` is removed too.

use std::fs;
use std::path::PathBuf;

use barrel_mcp_types::jsonrpc::{self, Message};
use barrel_mcp_types::method::{self, NotificationMethod, RequestMethod};
use barrel_mcp_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn fixtures(dir: &str) -> Vec<(String, Value)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut out: Vec<(String, Value)> = fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|entry| {
            let file = entry.unwrap().path();
            let text = fs::read_to_string(&file).unwrap();
            let value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            (file.display().to_string(), value)
        })
        .collect();
    assert!(!out.is_empty(), "no fixtures in {dir}");
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Numbers as `f64`, `resultType: "complete"` and `mode: "form"` removed, recursively.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(Value::Null, Value::from),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(k, v)| {
                    !(k.as_str() == "resultType" && *v == "complete"
                        || k.as_str() == "mode" && *v == "form")
                })
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn round_trip_value<T: Serialize + DeserializeOwned>(name: &str, value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{name}: does not decode: {e}"));
    let again = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        normalize(&again),
        normalize(value),
        "{name}: changed in a round trip"
    );
    typed
}

fn round_trip<T: Serialize + DeserializeOwned>(dir: &str) -> Vec<T> {
    fixtures(dir)
        .iter()
        .map(|(name, value)| round_trip_value(name, value))
        .collect()
}

#[test]
fn data_types() {
    round_trip::<ContentBlock>("AudioContent");
    round_trip::<ContentBlock>("ImageContent");
    round_trip::<ContentBlock>("TextContent");
    round_trip::<ContentBlock>("EmbeddedResource");
    round_trip::<ContentBlock>("ResourceLink");
    round_trip::<ResourceContents>("BlobResourceContents");
    round_trip::<ResourceContents>("TextResourceContents");
    round_trip::<Resource>("Resource");
    round_trip::<Root>("Root");
    round_trip::<ModelPreferences>("ModelPreferences");
    round_trip::<SamplingMessage>("SamplingMessage");
    round_trip::<SamplingContentBlock>("ToolUseContent");
    round_trip::<SamplingContentBlock>("ToolResultContent");
    round_trip::<ServerCapabilities>("ServerCapabilities");
    for caps in round_trip::<ClientCapabilities>("ClientCapabilities") {
        // Every example declares something; the helpers must agree with the raw fields.
        assert_eq!(caps.supports_sampling(), caps.sampling.is_some());
    }
    let tools = round_trip::<Tool>("Tool");
    for tool in &tools {
        assert_eq!(validate_tool_name(&tool.name), Ok(()));
    }
}

#[test]
fn params() {
    round_trip::<CallToolParams>("CallToolRequestParams");
    round_trip::<CancelledParams>("CancelledNotificationParams");
    round_trip::<CompleteParams>("CompleteRequestParams");
    round_trip::<CreateMessageParams>("CreateMessageRequestParams");
    round_trip::<GetPromptParams>("GetPromptRequestParams");
    round_trip::<LoggingMessageParams>("LoggingMessageNotificationParams");
    round_trip::<PaginatedParams>("PaginatedRequestParams");
    round_trip::<ProgressParams>("ProgressNotificationParams");
    round_trip::<ResourceUpdatedParams>("ResourceUpdatedNotificationParams");
    let forms = round_trip::<ElicitRequestParams>("ElicitRequestFormParams");
    assert!(forms.iter().all(|p| !p.is_url()));
    let urls = round_trip::<ElicitRequestParams>("ElicitRequestURLParams");
    assert!(urls.iter().all(ElicitRequestParams::is_url));
}

#[test]
fn results() {
    let results = round_trip::<CallToolResult>("CallToolResult");
    assert!(results.iter().any(CallToolResult::is_error));
    assert!(
        results
            .iter()
            .any(|r| r.structured_content.as_ref().is_some_and(Value::is_array))
    );
    round_trip::<CompleteResult>("CompleteResult");
    round_trip::<CreateMessageResult>("CreateMessageResult");
    round_trip::<ElicitResult>("ElicitResult");
    round_trip::<GetPromptResult>("GetPromptResult");
    round_trip::<ListPromptsResult>("ListPromptsResult");
    round_trip::<ListResourceTemplatesResult>("ListResourceTemplatesResult");
    round_trip::<ListResourcesResult>("ListResourcesResult");
    round_trip::<ListRootsResult>("ListRootsResult");
    round_trip::<ReadResourceResult>("ReadResourceResult");
    round_trip::<SubscriptionsListenResult>("SubscriptionsListenResult");
    let lists = round_trip::<ListToolsResult>("ListToolsResult");
    assert_eq!(lists[0].cache_scope, Some(CacheScope::Public));
    assert_eq!(lists[0].ttl_ms, Some(300_000));
    let discover = round_trip::<DiscoverResult>("DiscoverResult");
    let server_info = discover[0]
        .meta
        .as_ref()
        .and_then(|m| m.get(meta::SERVER_INFO_KEY))
        .cloned()
        .map(serde_json::from_value::<Implementation>);
    assert_eq!(server_info.unwrap().unwrap().name, "ExampleServer");
}

#[test]
fn multi_round_trip() {
    // `resultType: "input_required"` is kept: the type writes it itself.
    for (name, value) in fixtures("InputRequiredResult") {
        assert_eq!(value["resultType"], "input_required");
        let typed: InputRequiredResult = round_trip_value(&name, &value);
        assert_eq!(
            ResultType::of(&serde_json::to_value(&typed).unwrap()),
            ResultType::InputRequired
        );
    }
    for (name, value) in fixtures("InputRequests") {
        let requests: InputRequests = round_trip_value(&name, &value);
        assert!(
            requests
                .values()
                .any(|r| matches!(r, InputRequest::Elicit(_)))
        );
        assert!(
            requests
                .values()
                .any(|r| matches!(r, InputRequest::CreateMessage(_)))
        );
    }
    for (name, value) in fixtures("InputResponses") {
        let responses: InputResponses = round_trip_value(&name, &value);
        let elicit: ElicitResult =
            serde_json::from_value(responses["github_login"].clone()).unwrap();
        assert_eq!(elicit.action, ElicitAction::Accept);
        let sampled: CreateMessageResult =
            serde_json::from_value(responses["capital_of_france"].clone()).unwrap();
        assert_eq!(sampled.role, Role::Assistant);
    }
    let roots = InputRequest::ListRoots;
    let v = serde_json::to_value(&roots).unwrap();
    assert_eq!(v, serde_json::json!({"method": "roots/list"}));
    assert_eq!(serde_json::from_value::<InputRequest>(v).unwrap(), roots);
    let with_params = serde_json::json!({"method": "roots/list", "params": {"_meta": {}}});
    assert_eq!(
        serde_json::from_value::<InputRequest>(with_params).unwrap(),
        roots
    );
    assert!(ResultType::of(&serde_json::json!({})) == ResultType::Complete);
    assert_eq!(ResultType::parse("task"), ResultType::Other("task".into()));
}

fn decode_frame(name: &str, value: &Value) -> Message {
    jsonrpc::decode(&value.to_string()).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

/// Every example of a request folder decodes as `M`'s request with round-tripping params.
fn request<M: RequestMethod>(dir: &str) {
    for (name, value) in fixtures(dir) {
        let Message::Request(r) = decode_frame(&name, &value) else {
            panic!("{name}: not a request");
        };
        assert_eq!(r.method, M::METHOD, "{name}");
        let params = r
            .params
            .unwrap_or_else(|| Value::Object(Default::default()));
        round_trip_value::<M::Params>(&name, &params);
    }
}

/// Every example of a response folder decodes with a round-tripping `M::Result`.
fn response<M: RequestMethod>(dir: &str) {
    for (name, value) in fixtures(dir) {
        let Message::Response(r) = decode_frame(&name, &value) else {
            panic!("{name}: not a response");
        };
        let result = r.outcome.unwrap_or_else(|e| panic!("{name}: {e}"));
        let result = result
            .into_value()
            .expect("a result read off the wire is a value");
        if ResultType::of(&result) == ResultType::Complete {
            round_trip_value::<M::Result>(&name, &result);
        } else {
            round_trip_value::<InputRequiredResult>(&name, &result);
        }
    }
}

fn notification<M: NotificationMethod>(dir: &str) {
    for (name, value) in fixtures(dir) {
        let Message::Notification(n) = decode_frame(&name, &value) else {
            panic!("{name}: not a notification");
        };
        assert_eq!(n.method, M::METHOD, "{name}");
        let params = n
            .params
            .unwrap_or_else(|| Value::Object(Default::default()));
        round_trip_value::<M::Params>(&name, &params);
    }
}

#[test]
fn envelopes() {
    use method::*;
    request::<CallTool>("CallToolRequest");
    request::<Complete>("CompleteRequest");
    request::<Discover>("DiscoverRequest");
    request::<GetPrompt>("GetPromptRequest");
    request::<ListPrompts>("ListPromptsRequest");
    request::<ListResourceTemplates>("ListResourceTemplatesRequest");
    request::<ListResources>("ListResourcesRequest");
    request::<ListTools>("ListToolsRequest");
    request::<ReadResource>("ReadResourceRequest");
    request::<SubscriptionsListen>("SubscriptionsListenRequest");

    response::<CallTool>("CallToolResultResponse");
    response::<Complete>("CompleteResultResponse");
    response::<Discover>("DiscoverResultResponse");
    response::<GetPrompt>("GetPromptResultResponse");
    response::<ListPrompts>("ListPromptsResultResponse");
    response::<ListResourceTemplates>("ListResourceTemplatesResultResponse");
    response::<ListResources>("ListResourcesResultResponse");
    response::<ListTools>("ListToolsResultResponse");
    response::<ReadResource>("ReadResourceResultResponse");
    response::<SubscriptionsListen>("SubscriptionsListenResultResponse");

    notification::<Cancelled>("CancelledNotification");
    notification::<LoggingMessage>("LoggingMessageNotification");
    notification::<Progress>("ProgressNotification");
    notification::<PromptListChanged>("PromptListChangedNotification");
    notification::<ResourceListChanged>("ResourceListChangedNotification");
    notification::<ResourceUpdated>("ResourceUpdatedNotification");
    notification::<SubscriptionsAcknowledged>("SubscriptionsAcknowledgedNotification");
    notification::<ToolListChanged>("ToolListChangedNotification");

    // Embedded input requests are `{method, params}` only; one example still carries an id.
    for dir in ["CreateMessageRequest", "ElicitRequest", "ListRootsRequest"] {
        for (name, mut value) in fixtures(dir) {
            if let Some(object) = value.as_object_mut() {
                object.remove("id");
                object.remove("jsonrpc");
            }
            round_trip_value::<InputRequest>(&name, &value);
        }
    }
}

#[test]
fn error_examples() {
    let cases = [
        ("HeaderMismatchError", ErrorCode::HEADER_MISMATCH),
        (
            "MissingRequiredClientCapabilityError",
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ),
        (
            "UnsupportedProtocolVersionError",
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ),
    ];
    for (dir, code) in cases {
        for (name, value) in fixtures(dir) {
            let Message::Response(r) = decode_frame(&name, &value) else {
                panic!("{name}: not a response");
            };
            assert_eq!(r.outcome.unwrap_err().code, code, "{name}");
        }
    }
    let cases = [
        ("InternalError", ErrorCode::INTERNAL_ERROR),
        ("InvalidParamsError", ErrorCode::INVALID_PARAMS),
        ("MethodNotFoundError", ErrorCode::METHOD_NOT_FOUND),
        ("ParseError", ErrorCode::PARSE_ERROR),
    ];
    for (dir, code) in cases {
        for (name, value) in fixtures(dir) {
            let error: ErrorObject = round_trip_value(&name, &value);
            assert_eq!(error.code, code, "{name}");
        }
    }
}

#[test]
fn meta_keys_of_examples_are_valid() {
    fn walk(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                if let Some(Value::Object(meta)) = object.get("_meta") {
                    found.extend(meta.keys().cloned());
                }
                object.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut keys = Vec::new();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for dir in fs::read_dir(root).unwrap() {
        let dir = dir.unwrap().file_name().into_string().unwrap();
        for (_, value) in fixtures(&dir) {
            walk(&value, &mut keys);
        }
    }
    assert!(!keys.is_empty());
    for key in keys {
        assert!(meta::is_valid_meta_key(&key), "{key}");
    }
}
