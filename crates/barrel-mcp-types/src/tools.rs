//! Tools: descriptions, annotations, tool-name rules, and the `tools/*` params and results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::ContentBlock;
use crate::lifecycle::{CacheScope, Icon};
use crate::meta::{JsonObject, Meta};
use crate::mrtr::InputResponses;

/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name; see [`validate_tool_name`].
    pub name: String,
    /// Display name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: JsonObject,
    /// JSON Schema of `structuredContent` (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints (2025-03-26 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Task support (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Metadata (2025-06-18 and later).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Tool {
    /// A tool with a name and an input schema.
    pub fn new(name: impl Into<String>, input_schema: JsonObject) -> Self {
        Self {
            name: name.into(),
            input_schema,
            ..Self::default()
        }
    }

    /// The schema of a tool without arguments: `{"type": "object"}`.
    pub fn empty_input_schema() -> JsonObject {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), Value::from("object"));
        schema
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: JsonObject) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = Some(icons);
        self
    }

    /// Sets the metadata.
    pub fn with_meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Hints about a tool's behaviour. Untrusted unless the server is.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (for example the web).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// How a tool runs: whether it takes tasks. Sent to 2025-11-25 clients only; a server also
/// reads it to decide which calls become tasks of the 2026-07-28 tasks extension.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// `"forbidden"` (the default), `"optional"` or `"required"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// This page of tools.
    pub tools: Vec<Tool>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be cached, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool name.
    pub name: String,
    /// The arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Task augmentation (2025-11-25 only; see [`TaskMetadata`](crate::tasks::TaskMetadata)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    /// Answers to the input requests of a previous round (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The state echoed from a previous round (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Metadata (the per-request envelope in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolParams {
    /// Params calling `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the arguments.
    pub fn with_arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// Result of `tools/call`. A tool failure is a result with `isError: true`, not a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result; empty when the peer sent none.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// The structured result (an object before 2026-07-28, any JSON value since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl CallToolResult {
    /// The structured content read as a `T` (the type the tool's `outputSchema` describes);
    /// an error when there is none or it does not fit. (Not `structured`: that name is the
    /// constructor of a structured result.)
    ///
    /// ```
    /// use barrel_mcp_types::CallToolResult;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, Debug, PartialEq)]
    /// struct Sum {
    ///     sum: i64,
    /// }
    ///
    /// let mut result = CallToolResult::text(r#"{"sum":5}"#);
    /// assert!(result.structured_as::<Sum>().is_err(), "no structuredContent yet");
    /// result.structured_content = Some(serde_json::json!({ "sum": 5 }));
    /// assert_eq!(result.structured_as::<Sum>().expect("fits"), Sum { sum: 5 });
    /// ```
    pub fn structured_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match &self.structured_content {
            Some(value) => T::deserialize(value),
            None => Err(serde::de::Error::custom(
                "the result has no structuredContent",
            )),
        }
    }

    /// The text of every text block, joined by newlines.
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(vec![ContentBlock::text(text)])
    }

    /// A failed result (`isError: true`) with one text block explaining why.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            is_error: Some(true),
            ..Self::default()
        }
    }

    /// A successful result with the given content.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful result with structured content and its JSON text as the one text block,
    /// as the spec recommends for clients that read only `content`.
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![ContentBlock::text(value.to_string())],
            structured_content: Some(value),
            ..Self::default()
        }
    }

    /// True when `isError` is set.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

/// Why a tool name breaks the spec's naming rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolNameError {
    /// The name is empty.
    #[error("tool name is empty")]
    Empty,
    /// The name is longer than 128 characters.
    #[error("tool name is {0} characters long, more than 128")]
    TooLong(usize),
    /// The name holds a character other than ASCII letters, digits, `_`, `-` and `.`.
    #[error(
        "tool name holds {ch:?} at position {index}; only ASCII letters, digits, `_`, `-` and `.` are allowed"
    )]
    InvalidChar {
        /// The character.
        ch: char,
        /// Its position, in characters.
        index: usize,
    },
}

/// The longest tool name the spec allows.
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Checks a tool name against the 2025-11-25 rules: 1 to 128 characters, each an ASCII letter, an
/// ASCII digit, `_`, `-` or `.`. Names are case-sensitive, so no case folding happens here.
pub fn validate_tool_name(name: &str) -> Result<(), ToolNameError> {
    if name.is_empty() {
        return Err(ToolNameError::Empty);
    }
    if let Some((index, ch)) = name
        .chars()
        .enumerate()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(ToolNameError::InvalidChar { ch, index });
    }
    // Every character is ASCII here, so bytes and characters agree.
    if name.len() > MAX_TOOL_NAME_LEN {
        return Err(ToolNameError::TooLong(name.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        for ok in [
            "a",
            "getUser",
            "DATA_EXPORT_v2",
            "admin.tools.list",
            "x-1",
            &"a".repeat(128),
        ] {
            assert_eq!(validate_tool_name(ok), Ok(()), "{ok}");
        }
        assert_eq!(validate_tool_name(""), Err(ToolNameError::Empty));
        assert_eq!(
            validate_tool_name(&"a".repeat(129)),
            Err(ToolNameError::TooLong(129))
        );
        assert_eq!(
            validate_tool_name("get user"),
            Err(ToolNameError::InvalidChar { ch: ' ', index: 3 })
        );
        assert!(validate_tool_name("a,b").is_err());
        assert!(validate_tool_name("a/b").is_err());
        assert!(validate_tool_name("café").is_err());
    }

    #[test]
    fn result_constructors() {
        let r = CallToolResult::error("boom");
        assert!(r.is_error());
        assert_eq!(r.content[0].as_text(), Some("boom"));
        let r: CallToolResult = serde_json::from_str("{}").unwrap();
        assert!(r.content.is_empty());
    }
}
