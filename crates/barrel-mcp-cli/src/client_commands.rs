//! The client commands: `tools`, `call`, `resources`, `read`, `templates`, `prompts`, `prompt`,
//! `complete`, `skills`, `skill`, `ping` and `info`, each a thin call into
//! [`barrel_mcp::client::Client`].
//!
//! Output is readable by default and JSON with `--json`. Progress goes to stderr. Exit codes
//! follow the MCP Inspector CLI:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | any other failure (bad arguments, a JSON-RPC error, a protocol violation) |
//! | 2 | the command line could not be parsed (clap's usage error) |
//! | 3 | authorization needed (HTTP 401/403) |
//! | 4 | the server is unreachable: it could not be started, or the connection failed |
//! | 5 | the tool reported an error (`isError: true`) |

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use barrel_mcp::client::{CallOptions, Client, ToolTask};
use barrel_mcp::transport::child::{ChildCommand, ChildProcess, StderrMode};
use barrel_mcp::transport::http_client::{HttpClientTransport, LegacySseTransport};
use barrel_mcp::types::{
    CallToolParams, CompleteArgument, CompleteContext, CompleteParams, CompletionReference,
    GetPromptParams, ProtocolVersion, ReadResourceParams, ResourceContents,
};
use serde_json::Value;

use crate::target::{Target, TargetArgs};
use crate::terminal::Progress;

/// Prints a line on stdout. When stdout is closed early (`barrel-mcp tools | head -1`), the
/// process ends quietly with success, as Unix tools do, instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = crate::terminal::for_terminal(format!($($arg)*));
        if let Err(error) = writeln!(std::io::stdout().lock(), "{text}") {
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
        }
    }};
}
pub(crate) use out;

mod output;
mod task_calls;

pub(crate) use output::print_json;
use output::{describe, print_tool_result};
use task_calls::{describe_task, needs_task, requires_task, run_as_task, run_task_handle};

/// Options every client command takes.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Common {
    #[command(flatten)]
    target: TargetArgs,
    /// Print JSON instead of readable text.
    #[arg(long)]
    json: bool,
    /// The protocol revision: `auto` (probe, then fall back) or one of the five revisions.
    #[arg(long, value_name = "VERSION", default_value = "auto")]
    protocol: String,
    /// Seconds to wait for each answer (progress restarts the wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    timeout: u64,
}

/// The client commands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ClientCommand {
    /// List the server's tools.
    Tools(Common),
    /// Call a tool with JSON arguments, e.g. `call echo '{"message":"hi"}' -- SERVER...`.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object.
        arguments: Option<String>,
        /// Run it as a task (2025-11-25, or the 2026-07-28 tasks extension), showing its status
        /// until it ends. Tools that require a task always run as one.
        #[arg(long)]
        task: bool,
        /// With `--task`: print the task as soon as it starts and leave it running (follow it
        /// with `barrel-mcp task ID`).
        #[arg(long, requires = "task")]
        detach: bool,
        #[command(flatten)]
        common: Common,
    },
    /// List the server's resources.
    Resources(Common),
    /// Read a resource.
    Read {
        /// The resource URI.
        uri: String,
        #[command(flatten)]
        common: Common,
    },
    /// List the server's resource templates.
    Templates(Common),
    /// List the server's prompts.
    Prompts(Common),
    /// Get a prompt with JSON arguments (an object of strings).
    Prompt {
        /// The prompt's name.
        name: String,
        /// The arguments, a JSON object of strings.
        arguments: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Complete a prompt argument (`--prompt NAME`) or a template variable (`--resource URI`).
    Complete {
        /// The prompt whose argument to complete.
        #[arg(
            long,
            conflicts_with = "resource",
            required_unless_present = "resource"
        )]
        prompt: Option<String>,
        /// The resource template whose variable to complete.
        #[arg(long)]
        resource: Option<String>,
        /// The argument or variable name.
        #[arg(long)]
        argument: String,
        /// What is typed so far.
        #[arg(long, default_value = "")]
        value: String,
        /// Values of other arguments, a JSON object of strings.
        #[arg(long, value_name = "JSON")]
        context: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// List the tasks the server keeps for you (2025-11-25 `tasks/list`; the 2026-07-28
    /// extension has no list).
    Tasks(Common),
    /// Show a task (`tasks/get`), cancel it (`--cancel`) or wait for its result (`--wait`).
    Task {
        /// The task id (it may begin with `-`: ids are opaque, and a random one often does).
        #[arg(allow_hyphen_values = true)]
        id: String,
        /// Cancel the task.
        #[arg(long, conflicts_with = "wait")]
        cancel: bool,
        /// Wait until the task ends and print its result.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        common: Common,
    },
    /// List the server's skills (SEP-2640): name, number of files, description.
    Skills(Common),
    /// Load a skill by name (or SKILL.md URI), verify it against its entry and print it.
    Skill {
        /// The skill's name, or the URI of its SKILL.md.
        name: String,
        /// Also print this file of the skill (a path relative to the skill, verified too).
        /// Repeatable.
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Check that the server answers.
    Ping(Common),
    /// Show the server's identity, revision, capabilities and instructions.
    Info(Common),
}

/// The credentials `barrel-mcp login` stored for `url`, unless the command line gives its
/// own `Authorization` header.
#[cfg(feature = "oauth")]
fn stored_credentials(
    url: &str,
    headers: &BTreeMap<String, String>,
    ca_certs: &[std::path::PathBuf],
) -> anyhow::Result<Option<barrel_mcp::auth::client::oauth::OAuthClient>> {
    if headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
    {
        return Ok(None);
    }
    crate::login_commands::stored_credentials(url, ca_certs).map_err(|e| fail(1, format!("{e:#}")))
}

#[cfg(not(feature = "oauth"))]
fn stored_credentials(
    _: &str,
    _: &BTreeMap<String, String>,
    _: &[std::path::PathBuf],
) -> anyhow::Result<Option<barrel_mcp::auth::client::StaticToken>> {
    Ok(None)
}

/// What to try when a server wants authorization.
fn login_hint(url: &str) -> String {
    if cfg!(feature = "oauth") {
        format!("\nhint: run `barrel-mcp login --url {url}`, or pass a credential with -H")
    } else {
        "\nhint: pass a credential with -H 'Authorization: Bearer …'".to_owned()
    }
}

/// A failure with its exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

pub(crate) fn fail(code: u8, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Failure {
        code,
        message: message.into(),
    })
}

/// The exit code for an error a command returned.
pub(crate) fn exit_code(error: &anyhow::Error) -> u8 {
    error
        .chain()
        .find_map(|e| e.downcast_ref::<Failure>())
        .map_or(1, |f| f.code)
}

impl ClientCommand {
    fn common(&self) -> &Common {
        match self {
            Self::Tools(c)
            | Self::Resources(c)
            | Self::Templates(c)
            | Self::Prompts(c)
            | Self::Skills(c)
            | Self::Ping(c)
            | Self::Tasks(c)
            | Self::Info(c) => c,
            Self::Call { common, .. }
            | Self::Task { common, .. }
            | Self::Read { common, .. }
            | Self::Prompt { common, .. }
            | Self::Skill { common, .. }
            | Self::Complete { common, .. } => common,
        }
    }
}

/// Runs one client command.
pub(crate) fn run(runtime: &tokio::runtime::Runtime, command: ClientCommand) -> anyhow::Result<()> {
    let common = command.common().clone();
    let target = common
        .target
        .resolve()
        .map_err(|e| fail(1, format!("{e:#}")))?;
    runtime.block_on(async move {
        let (client, process) = connect(&common, &target).await?;
        let outcome = execute(&client, &common, command).await.map_err(|e| match e
            .downcast_ref::<barrel_mcp::Error>()
        {
            Some(error) if error.is_auth() => fail(3, format!("{error:#}")),
            _ => e,
        });
        client.close();
        if let Some(process) = process {
            let _ = tokio::time::timeout(Duration::from_secs(5), process.wait()).await;
        }
        outcome
    })
}

async fn connect(
    common: &Common,
    target: &Target,
) -> anyhow::Result<(Client, Option<ChildProcess>)> {
    let mut builder = Client::builder()
        .name("barrel-mcp-cli", env!("CARGO_PKG_VERSION"))
        .request_timeout(Duration::from_secs(common.timeout));
    if common.protocol != "auto" {
        let version = ProtocolVersion::parse(&common.protocol)
            .ok_or_else(|| fail(1, format!("unknown protocol version {:?}", common.protocol)))?;
        builder = builder.pin(version);
    }
    match target {
        Target::Http {
            url,
            headers,
            legacy,
            ca_certs,
        } => {
            let connected = if *legacy {
                let mut transport =
                    LegacySseTransport::new(url).map_err(|e| fail(1, e.to_string()))?;
                for ca in ca_certs {
                    transport = transport
                        .add_root_certificates_file(ca)
                        .map_err(|e| fail(1, format!("--ca-cert: {e}")))?;
                }
                for (name, value) in headers {
                    transport = transport
                        .header(name, value)
                        .map_err(|e| fail(1, e.to_string()))?;
                }
                if let Some(stored) = stored_credentials(url, headers, ca_certs)? {
                    transport = transport.auth(stored);
                }
                builder
                    .fallback_on_probe_timeout(false)
                    .connect(transport)
                    .await
            } else {
                let mut transport =
                    HttpClientTransport::new(url).map_err(|e| fail(1, e.to_string()))?;
                for ca in ca_certs {
                    transport = transport
                        .add_root_certificates_file(ca)
                        .map_err(|e| fail(1, format!("--ca-cert: {e}")))?;
                }
                for (name, value) in headers {
                    transport = transport
                        .header(name, value)
                        .map_err(|e| fail(1, e.to_string()))?;
                }
                if let Some(stored) = stored_credentials(url, headers, ca_certs)? {
                    transport = transport.auth(stored);
                }
                builder.connect_http(transport).await
            };
            match connected {
                Ok(client) => Ok((client, None)),
                Err(e) if e.is_auth() => Err(fail(3, format!("{url}: {e}{}", login_hint(url)))),
                Err(e) => Err(fail(4, format!("connecting to {url}: {e}"))),
            }
        }
        Target::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut child = ChildCommand::new(command)
                .args(args)
                .stderr(StderrMode::Capture);
            for (key, value) in env {
                child = child.env(key, value);
            }
            if let Some(cwd) = cwd {
                child = child.current_dir(cwd);
            }
            let transport = child
                .spawn()
                .map_err(|e| fail(4, format!("starting {command}: {e}")))?;
            let process = transport.process();
            match builder.connect(transport).await {
                Ok(client) => Ok((client, Some(process))),
                Err(e) => {
                    let tail = process.stderr_tail();
                    let mut message = format!("connecting to {command}: {e}");
                    if !tail.is_empty() {
                        message.push_str("\nthe server's last stderr lines:\n");
                        message.push_str(&tail.join("\n"));
                    }
                    Err(fail(4, message))
                }
            }
        }
    }
}

/// At most this many tasks are listed by `barrel-mcp tasks`.
const MAX_LISTED_TASKS: usize = 10_000;

fn parse_object(text: Option<&str>, what: &str) -> anyhow::Result<serde_json::Map<String, Value>> {
    let Some(text) = text else {
        return Ok(serde_json::Map::new());
    };
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(fail(1, format!("{what} must be a JSON object"))),
        Err(e) => Err(fail(1, format!("{what} is not valid JSON: {e}"))),
    }
}

fn string_map(text: Option<&str>, what: &str) -> anyhow::Result<BTreeMap<String, String>> {
    parse_object(text, what)?
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => Ok((k, other.to_string())),
        })
        .collect()
}

/// Runs `call` with options that show its progress on stderr (a bar on a terminal, one line
/// each otherwise), and ends the bar's line before the result is printed.
async fn with_progress<T, F>(
    common: &Common,
    call: impl FnOnce(CallOptions) -> F,
) -> anyhow::Result<T>
where
    F: std::future::Future<Output = barrel_mcp::Result<T>>,
{
    let progress = Progress::to_stderr();
    let shown = progress.clone();
    let options = CallOptions::new()
        .timeout(Duration::from_secs(common.timeout))
        .on_progress(move |update| shown.show(&update));
    let result = call(options).await;
    progress.finish();
    Ok(result?)
}

async fn execute(client: &Client, common: &Common, command: ClientCommand) -> anyhow::Result<()> {
    let json = common.json;
    match command {
        ClientCommand::Tools(_) => {
            let tools = client.list_all_tools().await?;
            if json {
                return print_json(&serde_json::json!({ "tools": tools }));
            }
            for tool in tools {
                out!("{:<16} {}", tool.name, tool.description.unwrap_or_default());
            }
        }
        ClientCommand::Call {
            tool,
            arguments,
            task,
            detach,
            ..
        } => {
            let arguments = parse_object(arguments.as_deref(), "the tool arguments")?;
            let params = CallToolParams::new(&tool).with_arguments(arguments);
            if detach {
                return match client.start_tool_task(params, None).await? {
                    ToolTask::Started(handle) if json => print_json(handle.task()),
                    ToolTask::Started(handle) => {
                        out!("{}", describe_task(handle.task()));
                        Ok(())
                    }
                    ToolTask::Finished(result) => {
                        print_tool_result(&result, json)?;
                        if result.is_error() {
                            return Err(fail(5, format!("the tool {tool} reported an error")));
                        }
                        Ok(())
                    }
                };
            }
            let result = if task || requires_task(client, &tool).await? {
                run_as_task(client, params, json).await?
            } else {
                let plain = with_progress(common, |options| {
                    client.call_tool_with(params.clone(), options)
                })
                .await;
                match plain {
                    // A 2026-07-28 tool that runs only as a task says so when called.
                    Err(e)
                        if client.supports_tool_tasks()
                            && e.downcast_ref().is_some_and(needs_task) =>
                    {
                        run_as_task(client, params, json).await?
                    }
                    other => other?,
                }
            };
            print_tool_result(&result, json)?;
            if result.is_error() {
                return Err(fail(5, format!("the tool {tool} reported an error")));
            }
        }
        ClientCommand::Resources(_) => {
            let resources = client.list_all_resources().await?;
            if json {
                return print_json(&serde_json::json!({ "resources": resources }));
            }
            for resource in resources {
                let mime = resource.mime_type.unwrap_or_default();
                out!("{:<24} {:<12} {mime}", resource.uri, resource.name);
            }
        }
        ClientCommand::Read { uri, .. } => {
            let params = ReadResourceParams::new(uri);
            let result =
                with_progress(common, |options| client.read_resource_with(params, options)).await?;
            if json {
                return print_json(&result);
            }
            for contents in result.contents {
                match contents {
                    ResourceContents::Text(t) => out!("{}", t.text),
                    ResourceContents::Blob(b) => out!(
                        "[{} bytes of base64 {}]",
                        b.blob.len(),
                        b.mime_type.unwrap_or_else(|| "data".into())
                    ),
                }
            }
        }
        ClientCommand::Templates(_) => {
            let templates = client.list_all_resource_templates().await?;
            if json {
                return print_json(&serde_json::json!({ "resourceTemplates": templates }));
            }
            for template in templates {
                out!("{:<24} {}", template.uri_template, template.name);
            }
        }
        ClientCommand::Prompts(_) => {
            let prompts = client.list_all_prompts().await?;
            if json {
                return print_json(&serde_json::json!({ "prompts": prompts }));
            }
            for prompt in prompts {
                let arguments: Vec<String> = prompt
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| {
                        if a.required == Some(true) {
                            a.name
                        } else {
                            format!("[{}]", a.name)
                        }
                    })
                    .collect();
                out!(
                    "{:<16} {:<24} {}",
                    prompt.name,
                    arguments.join(" "),
                    prompt.description.unwrap_or_default()
                );
            }
        }
        ClientCommand::Prompt {
            name, arguments, ..
        } => {
            let params = GetPromptParams {
                name,
                arguments: Some(string_map(arguments.as_deref(), "the prompt arguments")?),
                ..GetPromptParams::default()
            };
            let result =
                with_progress(common, |options| client.get_prompt_with(params, options)).await?;
            if json {
                return print_json(&result);
            }
            for message in result.messages {
                let role = serde_json::to_value(message.role)?;
                out!(
                    "{}: {}",
                    role.as_str().unwrap_or("?"),
                    describe(&message.content)
                );
            }
        }
        ClientCommand::Complete {
            prompt,
            resource,
            argument,
            value,
            context,
            ..
        } => {
            let reference = match (prompt, resource) {
                (Some(name), _) => CompletionReference::Prompt { name, title: None },
                (None, Some(uri)) => CompletionReference::Resource { uri },
                (None, None) => return Err(fail(1, "give --prompt NAME or --resource URI")),
            };
            let context = match context {
                Some(text) => Some(CompleteContext {
                    arguments: Some(string_map(Some(&text), "--context")?),
                }),
                None => None,
            };
            let result = client
                .complete(CompleteParams {
                    reference,
                    argument: CompleteArgument {
                        name: argument,
                        value,
                    },
                    context,
                    meta: None,
                })
                .await?;
            if json {
                return print_json(&result);
            }
            for value in result.completion.values {
                out!("{value}");
            }
        }
        ClientCommand::Tasks(_) => {
            let mut tasks = Vec::new();
            let mut cursor = None;
            loop {
                let page = client.list_tasks(cursor).await?;
                tasks.extend(page.tasks);
                match page.next_cursor {
                    Some(next) if tasks.len() < MAX_LISTED_TASKS => cursor = Some(next),
                    _ => break,
                }
            }
            if json {
                return print_json(&serde_json::json!({ "tasks": tasks }));
            }
            for task in &tasks {
                out!("{}", describe_task(task));
            }
        }
        ClientCommand::Task {
            id, cancel, wait, ..
        } => {
            let handle = client.task(&id).await?;
            if wait {
                let result = run_task_handle(handle, json).await?;
                print_tool_result(&result, json)?;
                if result.is_error() {
                    return Err(fail(5, format!("the task {id} ended with a tool error")));
                }
                return Ok(());
            }
            let task = if cancel {
                handle.cancel().await?
            } else {
                handle.task().clone()
            };
            if json {
                return print_json(&task);
            }
            out!("{}", describe_task(&task));
        }
        ClientCommand::Skills(_) => crate::skill_commands::list(client, json).await?,
        ClientCommand::Skill { name, files, .. } => {
            crate::skill_commands::load(client, &name, &files, json).await?;
        }
        ClientCommand::Ping(_) => {
            let start = std::time::Instant::now();
            client.ping().await?;
            let elapsed = start.elapsed();
            if json {
                return print_json(&serde_json::json!({ "ok": true, "ms": elapsed.as_millis() }));
            }
            out!("pong from {} in {elapsed:.1?}", client.server_info().name);
        }
        ClientCommand::Info(_) => {
            let info = serde_json::json!({
                "protocolVersion": client.protocol_version(),
                "serverInfo": &*client.server_info(),
                "capabilities": &*client.capabilities(),
                "instructions": client.instructions().as_deref(),
            });
            if json {
                return print_json(&info);
            }
            let server = client.server_info();
            out!("server:       {} {}", server.name, server.version);
            out!("protocol:     {}", client.protocol_version());
            let capabilities = serde_json::to_value(&*client.capabilities())?;
            let names: Vec<&String> = capabilities
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            out!(
                "capabilities: {}",
                names
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if let Some(instructions) = client.instructions() {
                out!("instructions: {instructions}");
            }
        }
    }
    Ok(())
}
