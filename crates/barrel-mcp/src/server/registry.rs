//! The registry: what the server offers, in a deterministic order, with a version per list.
//!
//! Each list is kept sorted by its key (tool name, resource URI, template, prompt name), so
//! `*/list` answers are the same on every connection and every node. Each list counts its changes;
//! the count is folded into pagination cursors so a cursor from before a change is refused.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use barrel_mcp_types::header_params::{HeaderParam, header_params};
use barrel_mcp_types::{
    JsonObject, Prompt, PromptsCapability, Resource, ResourceTemplate, ResourcesCapability,
    ServerCapabilities, Tool, ToolsCapability, validate_tool_name,
};

use super::completion::Completer;
use super::custom::CustomRequests;
use super::handler::{PromptHandler, ResourceHandler, ToolHandler};
use super::initialize_cache::InitializeCache;
use super::uri_template::UriTemplate;
use super::validation::{SchemaValidator, compile_input_schema};
use crate::Error;

/// An entry with a key that orders and identifies it.
pub(crate) trait Keyed {
    fn key(&self) -> &str;
}

impl<T: Keyed> Keyed for Arc<T> {
    fn key(&self) -> &str {
        T::key(self)
    }
}

/// One ordered list of entries and the count of its changes.
pub(crate) struct Collection<E> {
    items: BTreeMap<String, E>,
    version: u64,
}

impl<E> Default for Collection<E> {
    fn default() -> Self {
        Self {
            items: BTreeMap::new(),
            version: 0,
        }
    }
}

impl<E: Keyed> Collection<E> {
    pub(crate) fn insert(&mut self, entry: E) {
        self.items.insert(entry.key().to_owned(), entry);
        self.version += 1;
    }

    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let removed = self.items.remove(key).is_some();
        if removed {
            self.version += 1;
        }
        removed
    }

    pub(crate) fn get(&self, key: &str) -> Option<&E> {
        self.items.get(key)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.items.values()
    }

    pub(crate) fn version(&self) -> u64 {
        self.version
    }
}

/// A tool with its handler and its compiled schemas.
pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) handler: ToolHandler,
    pub(crate) input: SchemaValidator,
    pub(crate) output: Option<SchemaValidator>,
    /// Arguments mirrored into `Mcp-Param-*` headers (`x-mcp-header`).
    pub(crate) header_params: Vec<HeaderParam>,
}

impl ToolEntry {
    /// Checks the definition (name, `inputSchema`, `outputSchema`) and compiles its schemas.
    pub(crate) fn new(tool: Tool, handler: ToolHandler) -> Result<Self, Error> {
        let invalid = |what: String| Error::Definition(format!("tool {:?}: {what}", tool.name));
        validate_tool_name(&tool.name).map_err(|e| invalid(e.to_string()))?;
        let input_value = serde_json::Value::Object(tool.input_schema.clone());
        let input =
            compile_input_schema(&input_value).map_err(|e| invalid(format!("inputSchema: {e}")))?;
        let header_params = header_params(&tool.input_schema).map_err(invalid)?;
        let output = match &tool.output_schema {
            Some(schema) => Some(
                SchemaValidator::new(&serde_json::Value::Object(schema.clone()))
                    .map_err(|e| invalid(format!("outputSchema: {e}")))?,
            ),
            None => None,
        };
        Ok(Self {
            tool,
            handler,
            input,
            output,
            header_params,
        })
    }
}

impl Keyed for ToolEntry {
    fn key(&self) -> &str {
        &self.tool.name
    }
}

/// A fixed resource with its reader.
pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: ResourceHandler,
}

impl Keyed for ResourceEntry {
    fn key(&self) -> &str {
        &self.resource.uri
    }
}

/// A resource template with its parsed URI template and its reader.
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) handler: ResourceHandler,
}

impl TemplateEntry {
    pub(crate) fn new(template: ResourceTemplate, handler: ResourceHandler) -> Result<Self, Error> {
        let parsed = UriTemplate::parse(&template.uri_template).map_err(|e| {
            Error::Definition(format!(
                "resource template {:?}: {e}",
                template.uri_template
            ))
        })?;
        Ok(Self {
            template,
            parsed,
            handler,
        })
    }
}

impl Keyed for TemplateEntry {
    fn key(&self) -> &str {
        &self.template.uri_template
    }
}

/// A prompt with its handler.
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptHandler,
}

impl Keyed for PromptEntry {
    fn key(&self) -> &str {
        &self.prompt.name
    }
}

/// Everything the server offers.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Collection<Arc<ToolEntry>>,
    pub(crate) resources: Collection<ResourceEntry>,
    pub(crate) templates: Collection<TemplateEntry>,
    pub(crate) prompts: Collection<PromptEntry>,
    /// Completers keyed by (prompt name, argument name).
    pub(crate) prompt_completers: HashMap<(String, String), Completer>,
    /// Completers keyed by (URI template, variable name).
    pub(crate) template_completers: HashMap<(String, String), Completer>,
    /// Tools whose 2026-07-28 task starts in their handler (`Ctx::start_task`).
    pub(crate) deferred_tasks: HashSet<String>,
    /// Custom requests and declared extensions.
    pub(crate) custom: CustomRequests,
    /// The `initialize` answers made of this registry, emptied on every write.
    pub(crate) initialize: InitializeCache,
}

impl Registry {
    /// The capabilities this server advertises. Every list can change at run time, so
    /// `listChanged` is always on; subscriptions, completions and logging are always served.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let takes_tasks = self.tools.iter().any(|entry| {
            super::tasks::support(&entry.tool) != super::tasks::TaskSupport::Forbidden
        });
        ServerCapabilities {
            tools: Some(ToolsCapability {
                list_changed: Some(true),
            }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            prompts: Some(PromptsCapability {
                list_changed: Some(true),
            }),
            completions: Some(JsonObject::new()),
            logging: Some(JsonObject::new()),
            // The 2025-11-25 core tasks and the 2026-07-28 tasks extension, when a tool takes
            // tasks (each revision keeps only its own).
            tasks: takes_tasks.then(|| {
                serde_json::json!({
                    "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}
                })
            }),
            extensions: {
                let mut extensions = self.custom.extensions().unwrap_or_default();
                if takes_tasks {
                    extensions.insert(crate::task::EXTENSION.to_owned(), serde_json::json!({}));
                }
                (!extensions.is_empty()).then_some(extensions)
            },
            ..ServerCapabilities::default()
        }
    }

    /// Finds the fixed resource at `uri`, else the first template (in order) that matches it.
    pub(crate) fn find_resource(
        &self,
        uri: &str,
    ) -> Option<(ResourceHandler, BTreeMap<String, String>)> {
        if let Some(entry) = self.resources.get(uri) {
            return Some((entry.handler.clone(), BTreeMap::new()));
        }
        self.templates.iter().find_map(|entry| {
            entry
                .parsed
                .matches(uri)
                .map(|vars| (entry.handler.clone(), vars))
        })
    }
}
