//! Provider formats, both ways: MCP tools as a model API's tool definitions, the model's tool
//! calls back out of its response, and MCP results as the messages that carry them to the
//! model, for Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini.
//!
//! - [`tools`]: the `tools` value of a request, each schema shaped into what the provider
//!   takes ([`schema`]): local `$ref`s inlined, nothing ever fetched, OpenAI strict mode where
//!   the schema allows it, Gemini's subset. [`tools_with_report`] also gives every lossy
//!   change ([`SchemaChange`]), and [`schema::restore`] turns a model's arguments back into
//!   what the original schema expects ([`Host::call`](super::Host::call) does it). OpenAI
//!   Responses always gets `strict` written out (left out, it turns every schema strict).
//! - [`calls`]: the tool calls in a provider's response (the whole response, or just its
//!   message or output). Arguments stay as the model wrote them ([`Arguments`]); invalid JSON
//!   becomes a tool error for the model when the call is routed, never a panic and never a
//!   silent `{}`. Everything else in the response (text, thinking) is left to the caller, who
//!   appends the model's turn as it came.
//! - [`results`]: the message(s) or input items that answer the calls, in call order. Every MCP
//!   content kind has a place: text; images where the API takes them (else a text placeholder);
//!   audio as a placeholder; resource links as a line naming the resource; embedded text
//!   resources under a header (a text document for Anthropic); PDFs as documents or files where
//!   the API takes them; structured content when there is no other content (Gemini: always, as
//!   the response object); `isError` in each API's own way. Content whose `audience` leaves out
//!   the assistant is not shown to the model. No result fails to convert.

use barrel_mcp_types::{CallToolResult, ContentBlock, ResourceContents, Role};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

mod anthropic;
mod gemini;
mod openai;
pub mod schema;

pub use schema::{ChangeKind, SchemaChange};

/// A model API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Google Gemini (`generateContent`, REST field names).
    Gemini,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 4] = [
        Self::Anthropic,
        Self::OpenAiChat,
        Self::OpenAiResponses,
        Self::Gemini,
    ];

    /// `anthropic`, `openai-chat`, `openai-responses`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Gemini => "gemini",
        }
    }

    /// The provider named `name` (as [`name`](Self::name) writes it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The exposed name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Its input schema (a JSON Schema object).
    pub input_schema: Value,
}

impl ToolSpec {
    /// A tool named `name` taking `input_schema`.
    pub fn new(name: impl Into<String>, description: Option<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description,
            input_schema,
        }
    }
}

/// The arguments of a tool call, as the model gave them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// An object (Anthropic, Gemini).
    Object(Map<String, Value>),
    /// JSON text (OpenAI): parsed when the call is routed.
    Json(String),
    /// None given.
    Absent,
}

impl Arguments {
    /// The arguments as an object: empty for none or `""`, an error text for the model when
    /// they are not a JSON object.
    pub fn to_object(&self) -> Result<Map<String, Value>, String> {
        match self {
            Self::Object(map) => Ok(map.clone()),
            Self::Absent => Ok(Map::new()),
            Self::Json(text) if text.trim().is_empty() => Ok(Map::new()),
            Self::Json(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(map)) => Ok(map),
                Ok(Value::Null) => Ok(Map::new()),
                Ok(_) => Err("the arguments are not a JSON object".into()),
                Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
            },
        }
    }
}

/// One tool call a model made.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The provider's id for the call (Gemini may give none: results then go by order).
    pub id: Option<String>,
    /// The tool's exposed name.
    pub name: String,
    /// The arguments.
    pub arguments: Arguments,
}

impl ToolCall {
    /// A call of the tool exposed as `name` (one a model made elsewhere, or a test's).
    pub fn new(id: Option<String>, name: impl Into<String>, arguments: Arguments) -> Self {
        Self {
            id,
            name: name.into(),
            arguments,
        }
    }
}

/// The `tools` value of a request to `provider`, each schema shaped for it ([`schema`]).
pub fn tools(provider: Provider, specs: &[ToolSpec]) -> Value {
    tools_with_report(provider, specs).0
}

/// The `tools` value of a request to `provider`, and every lossy change shaping made to the
/// tools' schemas (for a host to log or show), in tool order.
pub fn tools_with_report(provider: Provider, specs: &[ToolSpec]) -> (Value, Vec<SchemaChange>) {
    let shaped: Vec<(&ToolSpec, schema::Shaped)> = specs
        .iter()
        .map(|spec| {
            (
                spec,
                schema::shape(provider, &spec.name, &spec.input_schema),
            )
        })
        .collect();
    let tools = match provider {
        Provider::Anthropic => anthropic::tools(&shaped),
        Provider::OpenAiChat => openai::chat_tools(&shaped),
        Provider::OpenAiResponses => openai::responses_tools(&shaped),
        Provider::Gemini => gemini::tools(&shaped),
    };
    let changes = shaped.into_iter().flat_map(|(_, s)| s.changes).collect();
    (tools, changes)
}

/// The tool calls in `response` (a whole provider response, or its message / output / content).
pub fn calls(provider: Provider, response: &Value) -> Vec<ToolCall> {
    match provider {
        Provider::Anthropic => anthropic::calls(response),
        Provider::OpenAiChat => openai::chat_calls(response),
        Provider::OpenAiResponses => openai::responses_calls(response),
        Provider::Gemini => gemini::calls(response),
    }
}

/// What answers `outcomes` (each call with its result), in call order: the message(s) or input
/// items to append after the model's turn.
pub fn results(provider: Provider, outcomes: &[(ToolCall, CallToolResult)]) -> Vec<Value> {
    match provider {
        Provider::Anthropic => anthropic::results(outcomes),
        Provider::OpenAiChat => openai::chat_results(outcomes),
        Provider::OpenAiResponses => openai::responses_results(outcomes),
        Provider::Gemini => gemini::results(outcomes),
    }
}

/// A tool failure as a result (an unknown tool, invalid arguments, a server that is down).
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(text)],
        is_error: Some(true),
        ..CallToolResult::default()
    }
}

/// One piece of a result, in the terms every provider module maps from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    /// Text (text blocks, links, text resources with their header, placeholders).
    Text(String),
    /// A text resource (Anthropic keeps it as a document).
    TextDocument { uri: String, text: String },
    /// An image the provider may take, base64.
    Image { mime: String, data: String },
    /// A PDF, base64.
    Pdf { uri: String, data: String },
}

/// Image types every provider that takes images takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The pieces of a result the model is shown: content for the assistant, in order; the
/// structured content as JSON text when there is no content.
pub(crate) fn pieces(result: &CallToolResult) -> Vec<Piece> {
    let mut out = Vec::new();
    for block in &result.content {
        let annotations = match block {
            ContentBlock::Text(b) => b.annotations.as_ref(),
            ContentBlock::Image(b) => b.annotations.as_ref(),
            ContentBlock::Audio(b) => b.annotations.as_ref(),
            ContentBlock::ResourceLink(b) => b.annotations.as_ref(),
            ContentBlock::Resource(b) => b.annotations.as_ref(),
            _ => None,
        };
        let for_assistant = annotations
            .and_then(|a| a.audience.as_ref())
            .is_none_or(|audience| audience.contains(&Role::Assistant));
        if !for_assistant {
            continue;
        }
        out.push(match block {
            ContentBlock::Text(text) => Piece::Text(text.text.clone()),
            ContentBlock::Image(image) if IMAGE_TYPES.contains(&image.mime_type.as_str()) => {
                Piece::Image {
                    mime: image.mime_type.clone(),
                    data: image.data.clone(),
                }
            }
            ContentBlock::Image(image) => placeholder(&image.mime_type, "image", &image.data),
            ContentBlock::Audio(audio) => placeholder(&audio.mime_type, "audio", &audio.data),
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("[resource: {} {}", link.name, link.uri);
                match (&link.mime_type, link.size) {
                    (Some(mime), Some(size)) => line.push_str(&format!(" ({mime}, {size} bytes)")),
                    (Some(mime), None) => line.push_str(&format!(" ({mime})")),
                    (None, Some(size)) => line.push_str(&format!(" ({size} bytes)")),
                    (None, None) => {}
                }
                line.push(']');
                Piece::Text(line)
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::Text(text) => Piece::TextDocument {
                    uri: text.uri.clone(),
                    text: text.text.clone(),
                },
                ResourceContents::Blob(blob) => {
                    let mime = blob
                        .mime_type
                        .as_deref()
                        .unwrap_or("application/octet-stream");
                    if mime == "application/pdf" {
                        Piece::Pdf {
                            uri: blob.uri.clone(),
                            data: blob.blob.clone(),
                        }
                    } else if IMAGE_TYPES.contains(&mime) {
                        Piece::Image {
                            mime: mime.to_owned(),
                            data: blob.blob.clone(),
                        }
                    } else {
                        placeholder(mime, "resource", &blob.blob)
                    }
                }
            },
            // A kind a later revision added.
            _ => Piece::Text("[content of a kind this host does not know]".into()),
        });
    }
    if out.is_empty()
        && let Some(structured) = &result.structured_content
    {
        out.push(Piece::Text(structured.to_string()));
    }
    out
}

/// A text stand-in for content a provider cannot take.
pub(crate) fn placeholder(mime: &str, kind: &str, base64: &str) -> Piece {
    let bytes = STANDARD
        .decode(base64.as_bytes())
        .map_or(base64.len() / 4 * 3, |b| b.len());
    Piece::Text(format!(
        "[{mime} {kind}, {bytes} bytes: this model API does not accept it]"
    ))
}

/// A text resource as text, under a header naming it.
pub(crate) fn with_header(uri: &str, text: &str) -> String {
    format!("--- {uri} ---\n{text}")
}

/// All pieces as one text (for APIs whose tool results are text only), images and PDFs as
/// placeholders.
pub(crate) fn as_text(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => text.clone(),
            Piece::TextDocument { uri, text } => with_header(uri, text),
            Piece::Image { mime, data } => match placeholder(mime, "image", data) {
                Piece::Text(text) => text,
                _ => String::new(),
            },
            Piece::Pdf { data, .. } => match placeholder("application/pdf", "document", data) {
                Piece::Text(text) => text,
                _ => String::new(),
            },
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// True when the result reports a failure.
pub(crate) fn failed(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

#[cfg(test)]
mod tests;
