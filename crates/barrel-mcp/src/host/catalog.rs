//! [`Catalog`]: one snapshot of what every connected server offers, under exposed names.
//!
//! A catalog is immutable: a rebuild makes a new one with a higher generation, so a call
//! resolved against one snapshot is never affected by a rebuild halfway. Tools and prompts are
//! named by a [`NameTable`] each (`prefix__name`) and sorted by exposed name (byte-stable
//! lists for prompt caches); resources and templates carry exposed URIs (`prefix+uri`, see
//! [`super::uri`]). A server that is down contributes nothing: its items leave the catalog and
//! come back when it reconnects.

use std::collections::{BTreeMap, HashMap};

use barrel_mcp_types::{Prompt, Resource, ResourceTemplate, Tool};

use super::format::ToolSpec;
use super::names::{NamePolicy, NameTable};
use crate::Error;
use crate::server::validation::SchemaValidator;

/// One tool in a catalog.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogTool {
    /// The name models and downstream clients see.
    pub exposed: String,
    /// The server it comes from.
    pub server: String,
    /// Its definition, as that server gave it (under its own name).
    pub tool: Tool,
    /// Its input schema as one JSON value, for mending a model's arguments on every call.
    pub(crate) schema: serde_json::Value,
}

impl CatalogTool {
    /// The tool as a model sees it: the exposed name, the description (else the title), the
    /// input schema.
    pub fn spec(&self) -> ToolSpec {
        let description = self
            .tool
            .description
            .clone()
            .or_else(|| self.tool.title.clone());
        ToolSpec::new(
            self.exposed.clone(),
            description,
            serde_json::Value::Object(self.tool.input_schema.clone()),
        )
    }
}

/// One prompt in a catalog.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogPrompt {
    /// The name downstream sees.
    pub exposed: String,
    /// The server it comes from.
    pub server: String,
    /// Its definition, as that server gave it (under its own name).
    pub prompt: Prompt,
}

/// One resource (or resource template) in a catalog: its definition with the exposed URI.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CatalogResource<T> {
    /// The server it comes from.
    pub server: String,
    /// Its definition, with `uri` (or `uriTemplate`) in the exposed form `prefix+uri`.
    pub item: T,
}

/// What one server offers, as listed (every page).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ServerItems {
    /// Its tools.
    pub tools: Vec<Tool>,
    /// Its prompts.
    pub prompts: Vec<Prompt>,
    /// Its resources.
    pub resources: Vec<Resource>,
    /// Its resource templates.
    pub templates: Vec<ResourceTemplate>,
    /// Its instructions for the model.
    pub instructions: Option<String>,
}

/// What every connected server offers, under exposed names: immutable, a new one (a higher
/// generation) per rebuild, sorted.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Rises with every rebuild.
    pub generation: u64,
    tools: Vec<CatalogTool>,
    by_exposed: HashMap<String, usize>,
    prompts: Vec<CatalogPrompt>,
    prompts_by_exposed: HashMap<String, usize>,
    resources: Vec<CatalogResource<Resource>>,
    templates: Vec<CatalogResource<ResourceTemplate>>,
    /// Each server's URI prefix (as written in URIs) to the server.
    uri_prefixes: HashMap<String, String>,
    /// Each tool's input schema compiled, by exposed name (a schema that does not compile has
    /// none): arguments it accepts go upstream untouched.
    checks: Checks,
    instructions: Vec<(String, String)>,
}

impl Catalog {
    /// A catalog of what each server offers, named by `policies` within `max_len`.
    pub fn build(
        generation: u64,
        servers: &BTreeMap<String, ServerItems>,
        policies: &HashMap<String, NamePolicy>,
        max_len: usize,
    ) -> Result<Self, Error> {
        let default_policy = NamePolicy::default();
        let policy_of = |server: &str| policies.get(server).unwrap_or(&default_policy);
        let exposes_tool = |server: &str, tool: &Tool| policy_of(server).exposes_tool(&tool.name);
        let (tools, by_exposed) = name_all(
            servers,
            policies,
            max_len,
            |s| &s.tools,
            |t| &t.name,
            exposes_tool,
        )
        .map(|(placed, index)| {
            let tools: Vec<CatalogTool> = placed
                .into_iter()
                .map(|(exposed, server, tool)| CatalogTool {
                    exposed,
                    server,
                    schema: serde_json::Value::Object(tool.input_schema.clone()),
                    tool: tool.clone(),
                })
                .collect();
            (tools, index)
        })?;
        // Renames and filters are for tools; prompts keep the prefix and mode only.
        let prompt_policies: HashMap<String, NamePolicy> = policies
            .iter()
            .map(|(server, policy)| {
                let mut policy = policy.clone();
                policy.renames.clear();
                (server.clone(), policy)
            })
            .collect();
        let (prompts, prompts_by_exposed) = name_all(
            servers,
            &prompt_policies,
            max_len,
            |s| &s.prompts,
            |p| &p.name,
            |_, _| true,
        )
        .map(|(placed, index)| {
            let prompts = placed
                .into_iter()
                .map(|(exposed, server, prompt)| CatalogPrompt {
                    exposed,
                    server,
                    prompt: prompt.clone(),
                })
                .collect();
            (prompts, index)
        })?;
        let mut uri_prefixes = HashMap::new();
        let mut resources = Vec::new();
        let mut templates = Vec::new();
        let mut instructions = Vec::new();
        for (server, items) in servers {
            let policy = policy_of(server);
            let prefix = super::names::prefix_for(server, policy)?;
            if let Some(other) =
                uri_prefixes.insert(super::uri::scheme_prefix(&prefix), server.clone())
            {
                return Err(Error::Definition(format!(
                    "servers {other:?} and {server:?} have one URI prefix ({prefix:?})"
                )));
            }
            for resource in &items.resources {
                let mut item = resource.clone();
                item.uri = super::uri::expose(&prefix, &resource.uri);
                resources.push(CatalogResource {
                    server: server.clone(),
                    item,
                });
            }
            for template in &items.templates {
                let mut item = template.clone();
                item.uri_template = super::uri::expose(&prefix, &template.uri_template);
                templates.push(CatalogResource {
                    server: server.clone(),
                    item,
                });
            }
            if let Some(text) = items
                .instructions
                .as_deref()
                .filter(|t| !t.trim().is_empty())
            {
                instructions.push((server.clone(), text.to_owned()));
            }
        }
        let checks = Checks(
            tools
                .iter()
                .filter_map(|t| {
                    SchemaValidator::new(&t.schema)
                        .ok()
                        .map(|v| (t.exposed.clone(), v))
                })
                .collect(),
        );
        resources.sort_by(|a, b| a.item.uri.cmp(&b.item.uri));
        templates.sort_by(|a, b| a.item.uri_template.cmp(&b.item.uri_template));
        Ok(Self {
            generation,
            tools,
            by_exposed,
            prompts,
            prompts_by_exposed,
            resources,
            templates,
            uri_prefixes,
            checks,
            instructions,
        })
    }

    /// `arguments` for the tool exposed as `name`, as its own input schema expects them:
    /// untouched when that schema accepts them, otherwise mended back from a provider's shaped
    /// form of it ([`restore`](super::format::schema::restore)).
    pub(crate) fn mend(
        &self,
        tool: &CatalogTool,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut value = serde_json::Value::Object(arguments);
        let accepted = self
            .checks
            .0
            .get(&tool.exposed)
            .is_some_and(|check| check.is_valid(&value));
        if !accepted {
            super::format::schema::restore_in_place(&tool.schema, &mut value);
        }
        match value {
            serde_json::Value::Object(arguments) => arguments,
            _ => serde_json::Map::new(),
        }
    }

    /// The prompts, sorted by exposed name.
    pub fn prompts(&self) -> &[CatalogPrompt] {
        &self.prompts
    }

    /// The prompt exposed as `name`.
    pub fn prompt(&self, name: &str) -> Option<&CatalogPrompt> {
        self.prompts_by_exposed.get(name).map(|&i| &self.prompts[i])
    }

    /// The resources, with exposed URIs, sorted by them.
    pub fn resources(&self) -> &[CatalogResource<Resource>] {
        &self.resources
    }

    /// The resource templates, with exposed URI templates, sorted by them.
    pub fn templates(&self) -> &[CatalogResource<ResourceTemplate>] {
        &self.templates
    }

    /// The server and raw URI behind an exposed URI: the prefix alone routes it, so a URI no
    /// listing showed (one a template makes) resolves too.
    pub fn resolve_uri<'a>(&self, exposed: &'a str) -> Option<(&str, &'a str)> {
        let (prefix, raw) = super::uri::resolve(exposed)?;
        let server = self.uri_prefixes.get(prefix)?;
        Some((server.as_str(), raw))
    }

    /// [`Catalog::resolve_uri`], or the error a caller gets for a URI no server has.
    pub(crate) fn route_uri<'a>(&self, exposed: &'a str) -> Result<(&str, &'a str), Error> {
        self.resolve_uri(exposed).ok_or_else(|| {
            Error::Rpc(barrel_mcp_types::ErrorObject::invalid_params(format!(
                "no server has the URI {exposed:?}"
            )))
        })
    }

    /// The exposed form of `uri` on `server`, if the server is in the catalog.
    pub fn expose_uri(&self, server: &str, uri: &str) -> Option<String> {
        self.uri_prefixes
            .iter()
            .find(|(_, s)| s.as_str() == server)
            .map(|(prefix, _)| format!("{prefix}+{uri}"))
    }

    /// Every server's instructions, one section each (`## server`), in server order; `None`
    /// when no server gave any.
    pub fn instructions(&self) -> Option<String> {
        if self.instructions.is_empty() {
            return None;
        }
        let sections: Vec<String> = self
            .instructions
            .iter()
            .map(|(server, text)| format!("## {server}\n\n{}", text.trim()))
            .collect();
        Some(sections.join("\n\n"))
    }
}

/// Names the items `list` picks out of each server (tools, or prompts) and `keep` admits
/// with one table: the items placed (exposed name, server, item; a name a server lists twice,
/// once), sorted by exposed name, and their index. An item not kept takes no name, so hiding
/// one never renames another.
#[allow(clippy::type_complexity)]
fn name_all<'a, T>(
    servers: &'a BTreeMap<String, ServerItems>,
    policies: &HashMap<String, NamePolicy>,
    max_len: usize,
    list: impl Fn(&'a ServerItems) -> &'a Vec<T>,
    name: impl Fn(&'a T) -> &'a str,
    keep: impl Fn(&str, &T) -> bool,
) -> Result<(Vec<(String, String, &'a T)>, HashMap<String, usize>), Error> {
    let (list, name, keep) = (&list, &name, &keep);
    let entries = servers.iter().flat_map(|(server, items)| {
        list(items)
            .iter()
            .filter(move |t| keep(server, t))
            .map(move |t| (server.as_str(), name(t)))
    });
    let names = NameTable::build(entries, policies, max_len)?;
    let mut placed: Vec<(String, String, &'a T)> = Vec::with_capacity(names.len());
    let mut seen = std::collections::HashSet::new();
    for (server, items) in servers {
        for item in list(items).iter().filter(|t| keep(server, t)) {
            if let Some(exposed) = names.exposed(server, name(item))
                && seen.insert(exposed)
            {
                placed.push((exposed.to_owned(), server.clone(), item));
            }
        }
    }
    placed.sort_by(|a, b| a.0.cmp(&b.0));
    let index = placed
        .iter()
        .enumerate()
        .map(|(i, (exposed, _, _))| (exposed.clone(), i))
        .collect();
    Ok((placed, index))
}

impl Catalog {
    /// Every tool, sorted by exposed name.
    pub fn tools(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// The tool exposed as `name`.
    pub fn tool(&self, name: &str) -> Option<&CatalogTool> {
        self.by_exposed.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool as a model sees it, for [`format::tools`](super::format::tools).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(CatalogTool::spec).collect()
    }
}

/// Compiled input schemas, by exposed tool name.
#[derive(Clone, Default)]
struct Checks(HashMap<String, SchemaValidator>);

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} compiled schemas", self.0.len())
    }
}
