//! JSON Schema checks of tool arguments and results, with the `jsonschema` crate.
//!
//! Schemas use the JSON Schema 2020-12 dialect unless they name another in `$schema`. A `$ref`
//! is resolved only inside the schema itself: a reference to any other document (`http:`,
//! `file:` or anything else) makes the schema fail to compile, so a schema can never make the
//! server fetch a URL or read a file. This holds even if another crate in the build turns on
//! `jsonschema`'s resolver features, because we install our own refusing retriever.
//!
//! Input that fails validation is a tool execution error (`isError: true`) listing the
//! messages from [`SchemaValidator::validate`], so the model can correct itself.
//!
//! ```
//! use barrel_mcp::server::validation::SchemaValidator;
//! use serde_json::json;
//!
//! let schema = json!({ "type": "object", "properties": { "a": { "type": "integer" } } });
//! let validator = SchemaValidator::new(&schema).expect("a valid schema");
//! assert!(validator.is_valid(&json!({ "a": 1 })));
//! let errors = validator.validate(&json!({ "a": "x" })).expect_err("not an integer");
//! assert!(errors[0].starts_with("/a: "), "{errors:?}");
//! // A schema that points outside itself never compiles.
//! assert!(SchemaValidator::new(&json!({ "$ref": "https://example.com/s.json" })).is_err());
//! ```

#[cfg(test)]
mod tests;

use std::fmt;

use serde_json::Value;

/// The most messages [`SchemaValidator::validate`] returns.
///
/// Example: [the module's](crate::server::validation).
pub const MAX_ERRORS: usize = 10;
/// The longest single message, in characters; longer ones are cut and end with `…`.
///
/// Example: [the module's](crate::server::validation).
pub const MAX_MESSAGE_CHARS: usize = 300;

/// Why a schema was refused.
///
/// Example: [the module's](crate::server::validation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A tool's `inputSchema` is not a JSON object.
    #[error("schema must be a JSON object")]
    NotAnObject,
    /// A tool's `inputSchema` lacks `"type": "object"`.
    #[error("schema must have \"type\": \"object\"")]
    NotTypeObject,
    /// The schema does not compile: an unknown keyword value, a bad `pattern`, an unresolvable
    /// or remote `$ref`, and so on.
    #[error("invalid schema: {0}")]
    Invalid(String),
}

/// A compiled JSON Schema. Compile once (per tool), validate many times.
///
/// Example: [the module's](crate::server::validation).
#[derive(Clone)]
pub struct SchemaValidator {
    inner: jsonschema::Validator,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator")
            .field("draft", &self.inner.draft())
            .finish_non_exhaustive()
    }
}

impl SchemaValidator {
    /// Compiles `schema`. Fails on an invalid schema and on any `$ref` outside it.
    ///
    /// Example: [the module's](crate::server::validation).
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        let inner = jsonschema::options()
            .with_retriever(NoExternalRefs)
            .build(schema)
            .map_err(|e| SchemaError::Invalid(shorten(e.to_string())))?;
        Ok(Self { inner })
    }

    /// Validates `instance`. On failure returns up to [`MAX_ERRORS`] messages, each
    /// `"<JSON pointer>: <message>"` with the root written as `/`, for example
    /// `/a: "x" is not of type "integer"`.
    ///
    /// Example: [the module's](crate::server::validation).
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<String>> {
        if self.inner.is_valid(instance) {
            return Ok(());
        }
        let messages: Vec<String> = self
            .inner
            .iter_errors(instance)
            .take(MAX_ERRORS)
            .map(|error| {
                let pointer = error.instance_path().as_str();
                let pointer = if pointer.is_empty() { "/" } else { pointer };
                bounded(format_args!("{pointer}: {error}"))
            })
            .collect();
        if messages.is_empty() {
            // is_valid and iter_errors disagree; never report success on an invalid instance.
            return Err(vec!["/: instance does not match the schema".to_owned()]);
        }
        Err(messages)
    }

    /// Whether `instance` is valid, without building messages.
    ///
    /// Example: [the module's](crate::server::validation).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }
}

/// Checks a tool's `inputSchema`: a JSON object with `"type": "object"` that compiles.
///
/// Example: [the module's](crate::server::validation).
pub fn check_input_schema(schema: &Value) -> Result<(), SchemaError> {
    compile_input_schema(schema).map(drop)
}

/// Checks a tool's `inputSchema` as [`check_input_schema`] does and returns it compiled.
pub(crate) fn compile_input_schema(schema: &Value) -> Result<SchemaValidator, SchemaError> {
    let Value::Object(map) = schema else {
        return Err(SchemaError::NotAnObject);
    };
    if map.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotTypeObject);
    }
    SchemaValidator::new(schema)
}

/// A retriever that refuses every document, so only references inside the schema resolve.
struct NoExternalRefs;

impl jsonschema::Retrieve for NoExternalRefs {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {} is not resolved", uri.as_str()).into())
    }
}

/// Writes `message` up to [`MAX_MESSAGE_CHARS`] characters and stops there, so a message
/// that quotes a huge value is never built whole.
fn bounded(message: std::fmt::Arguments<'_>) -> String {
    struct Bounded {
        out: String,
        left: usize,
        cut: bool,
    }
    impl std::fmt::Write for Bounded {
        fn write_str(&mut self, text: &str) -> std::fmt::Result {
            for c in text.chars() {
                if self.left == 0 {
                    self.cut = true;
                    // Stops the formatting: nothing more is produced.
                    return Err(std::fmt::Error);
                }
                self.out.push(c);
                self.left -= 1;
            }
            Ok(())
        }
    }
    let mut bounded = Bounded {
        out: String::new(),
        left: MAX_MESSAGE_CHARS,
        cut: false,
    };
    let _ = std::fmt::Write::write_fmt(&mut bounded, message);
    if bounded.cut {
        bounded.out.push('…');
    }
    bounded.out
}

/// Cuts `message` to [`MAX_MESSAGE_CHARS`] characters. Messages quote the offending value,
/// which may be large.
fn shorten(mut message: String) -> String {
    if let Some((at, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(at);
        message.push('…');
    }
    message
}
