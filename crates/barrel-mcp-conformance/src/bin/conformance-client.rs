//! `conformance-client`: the client the official conformance suite drives.
//!
//! `conformance-client URL`: the suite starts a mock server per scenario and passes its URL as the
//! last argument, the scenario in `MCP_CONFORMANCE_SCENARIO`, the revision under test in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (0.2.0 only; `2026-07-28` means "probe") and scenario data
//! in `MCP_CONFORMANCE_CONTEXT`. Exits 0 when the scenario's steps all went through.
//!
//! Every connection carries an [`OAuthClient`]: the auth scenarios answer with 401 and the
//! client authorizes (headless: it reads the authorization server's redirect itself), with the
//! grant the scenario's context calls for; the others never ask.

use anyhow::{Context as _, bail};
use barrel_mcp::auth::client::oauth::{EnterpriseIdp, Headless, OAuthClient};
use barrel_mcp::client::{Client, ClientHandler, HandlerContext};
use barrel_mcp::transport::http_client::{HttpClientConfig, HttpClientTransport};
use barrel_mcp::types::{
    CallToolParams, ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorObject, JsonObject, ProtocolVersion, Tool,
};
use serde_json::{Map, Value, json};

/// Accepts every form elicitation with an empty answer, so the schema defaults fill it.
struct Accept;

impl ClientHandler for Accept {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(JsonObject::new()),
                url: None,
            }),
            ..ClientCapabilities::default()
        }
    }

    async fn elicit(
        &self,
        _: ElicitRequestParams,
        _: HandlerContext,
    ) -> Result<ElicitResult, ErrorObject> {
        Ok(ElicitResult::accept(JsonObject::new()))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let url = std::env::args()
        .next_back()
        .context("usage: conformance-client URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    let mut builder = Client::builder()
        .name("barrel-mcp-conformance-client", env!("CARGO_PKG_VERSION"))
        .handler(Accept);
    // 0.1.16 names no revision and its mocks know no server/discover (pitfall P11).
    match version.as_deref().and_then(ProtocolVersion::parse) {
        Some(v) if v.is_stateless() => {}
        Some(v) => builder = builder.pin(v),
        None => builder = builder.pin(ProtocolVersion::LATEST_SESSIONFUL),
    }
    // The elicitation mock sends its question on the session's GET stream; the sse-retry mock
    // takes any GET for the reconnection it times, so there only resumptions GET.
    let open_get_stream = scenario != "sse-retry";
    let oauth = oauth(&url, &scenario, &context)?;
    let transport = || -> anyhow::Result<HttpClientTransport> {
        Ok(HttpClientTransport::new(&url)?
            .config(HttpClientConfig {
                open_get_stream,
                ..HttpClientConfig::default()
            })
            .auth(oauth.clone()))
    };
    let client = match builder.connect_http(transport()?).await {
        Ok(client) => client,
        // A mock that answers with an older sessionful revision (sse-retry picks 2025-03-26):
        // take its counter-offer.
        Err(e) if e.is_unsupported() => {
            let text = e.to_string();
            let offered = text
                .rsplit("server chose ")
                .next()
                .and_then(ProtocolVersion::parse)
                .with_context(|| format!("connecting to {url}: {e}"))?;
            builder
                .pin(offered)
                .connect_http(transport()?)
                .await
                .with_context(|| format!("connecting to {url}"))?
        }
        Err(e) => return Err(e).with_context(|| format!("connecting to {url}")),
    };
    let outcome = run(&client, &scenario, &context).await;
    client.close();
    // Give the DELETE a moment on the way out.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    outcome
}

/// The OAuth client for `scenario`: the grant its context calls for, else the authorization
/// code grant with a client ID metadata document URL (used where the authorization server
/// accepts them) and pre-registered credentials when the context has some.
fn oauth(url: &str, scenario: &str, context: &Value) -> anyhow::Result<OAuthClient> {
    let text = |key: &str| context.get(key).and_then(Value::as_str);
    let mut builder = OAuthClient::builder(url)?;
    if let Some(id) = text("client_id") {
        builder = builder.client_id(id);
    }
    if let Some(secret) = text("client_secret") {
        builder = builder.client_secret(secret);
    }
    let builder = match scenario {
        "auth/client-credentials-basic" => builder.client_credentials(),
        "auth/client-credentials-jwt" => {
            let pem = text("private_key_pem").context("no private_key_pem in the context")?;
            let algorithm = text("signing_algorithm").unwrap_or("ES256");
            builder
                .private_key_pem(algorithm, pem.as_bytes())?
                .client_credentials()
        }
        "auth/cross-app-access-complete-flow" | "auth/enterprise-managed-authorization" => {
            let field = |key: &str| text(key).with_context(|| format!("no {key} in the context"));
            builder.enterprise(EnterpriseIdp::new(
                field("idp_token_endpoint")?,
                field("idp_client_id")?,
                field("idp_id_token")?,
            ))
        }
        "auth/wif-jwt-bearer" => {
            builder.jwt_bearer(text("valid_jwt").context("no valid_jwt in the context")?)
        }
        _ => builder
            .authorization_code(Headless::new("http://localhost:3000/callback"))
            .client_metadata_url("https://conformance-test.local/client-metadata.json"),
    };
    Ok(builder.build()?)
}

async fn run(client: &Client, scenario: &str, context: &Value) -> anyhow::Result<()> {
    let tools = if client.capabilities().tools.is_some() {
        client.list_all_tools().await.context("tools/list")?
    } else {
        Vec::new()
    };
    match scenario {
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => {}
        "tools_call" => {
            call(client, "add_numbers", json!({ "a": 2, "b": 3 })).await?;
        }
        "http-custom-headers" => {
            let calls = context
                .get("toolCalls")
                .and_then(Value::as_array)
                .context("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
            for entry in calls {
                let name = entry["name"].as_str().unwrap_or_default();
                call(client, name, entry["arguments"].clone()).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .context("the focal tool is missing")?;
            let echo = tools
                .iter()
                .find(|t| t.name != focal.name)
                .context("the echo tool is missing")?;
            let schema = Value::Object(focal.input_schema.clone());
            call(client, &echo.name, json!({ "schema": schema })).await?;
        }
        // SEP-2640: a host lists skills without fetching any file; the others load each skill
        // (its SKILL.md, verified against the entry) and then read its files, verified too.
        "sep-2640-client-no-prefetch" => {
            skills(client, false).await?;
        }
        other if other.starts_with("sep-2640-") => {
            skills(client, true).await?;
        }
        "http-standard-headers" => {
            for tool in &tools {
                call(client, &tool.name, sample_arguments(tool)).await?;
            }
            if client.capabilities().resources.is_some() {
                for resource in client.list_all_resources().await? {
                    let params = barrel_mcp::types::ReadResourceParams::new(resource.uri);
                    client.read_resource(params).await?;
                }
            }
            if client.capabilities().prompts.is_some() {
                for prompt in client.list_all_prompts().await? {
                    let params = barrel_mcp::types::GetPromptParams {
                        name: prompt.name,
                        ..Default::default()
                    };
                    client.get_prompt(params).await?;
                }
            }
        }
        // Every other scenario: call each listed tool once (the transport has already left
        // out tools with invalid x-mcp-header annotations).
        _ => {
            for tool in &tools {
                call(client, &tool.name, sample_arguments(tool)).await?;
            }
        }
    }
    Ok(())
}

/// Lists the server's skills; with `load`, loads each one and reads its files. A skill that
/// fails verification is reported and left unloaded (that is the expected outcome of a
/// tampered skill), never read further.
async fn skills(client: &Client, load: bool) -> anyhow::Result<()> {
    let entries = client.list_all_skills().await.context("skills/list")?;
    for entry in &entries {
        eprintln!("skill {} ({})", entry.name().unwrap_or("?"), entry.uri);
        if !load {
            continue;
        }
        let skill = match client.load_skill(entry).await {
            Ok(skill) => skill,
            Err(e) if e.is_verification() => {
                eprintln!("refused {}: {e}", entry.uri);
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("loading {}", entry.uri)),
        };
        for file in skill.files().iter().filter(|f| f.uri != entry.uri) {
            match skill.read(&file.uri).await {
                Ok(bytes) => eprintln!("read {} ({} bytes)", file.uri, bytes.len()),
                Err(e) if e.is_verification() => eprintln!("refused {}: {e}", file.uri),
                Err(e) => return Err(e).with_context(|| format!("reading {}", file.uri)),
            }
        }
    }
    Ok(())
}

async fn call(client: &Client, name: &str, arguments: Value) -> anyhow::Result<()> {
    let arguments = match arguments {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => bail!("arguments for {name} are not an object: {other}"),
    };
    let result = client
        .call_tool(CallToolParams::new(name).with_arguments(arguments))
        .await
        .with_context(|| format!("tools/call {name}"))?;
    eprintln!("{name}: {}", serde_json::to_string(&result)?);
    Ok(())
}

/// Arguments that satisfy a tool's required properties with placeholder values.
fn sample_arguments(tool: &Tool) -> Value {
    let schema = &tool.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("x"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
