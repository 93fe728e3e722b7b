//! [`Catalog`]: one snapshot of the tools of every connected server, under exposed names.
//!
//! A catalog is immutable: a rebuild makes a new one with a higher generation, so a call
//! resolved against one snapshot is never affected by a rebuild halfway. Tools are sorted by
//! exposed name (a byte-stable list for prompt caches). A server that is down contributes
//! nothing: its tools leave the catalog and come back when it reconnects.

use std::collections::{BTreeMap, HashMap};

use barrel_mcp_types::Tool;

use super::format::ToolSpec;
use super::names::{NamePolicy, NameTable};
use crate::Error;

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

/// The tools of every connected server, under exposed names: immutable, a new one (a higher
/// generation) per rebuild, sorted by exposed name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Rises with every rebuild.
    pub generation: u64,
    tools: Vec<CatalogTool>,
    by_exposed: HashMap<String, usize>,
}

impl Catalog {
    /// A catalog of `lists` (each server's tools), named by `policies` within `max_len`.
    pub fn build(
        generation: u64,
        lists: &BTreeMap<String, Vec<Tool>>,
        policies: &HashMap<String, NamePolicy>,
        max_len: usize,
    ) -> Result<Self, Error> {
        let entries = lists.iter().flat_map(|(server, tools)| {
            tools
                .iter()
                .map(move |t| (server.as_str(), t.name.as_str()))
        });
        let names = NameTable::build(entries, policies, max_len)?;
        let mut tools: Vec<CatalogTool> = Vec::with_capacity(names.len());
        let mut placed = std::collections::HashSet::new();
        for (server, list) in lists {
            for tool in list {
                // A tool a server lists twice is there once.
                if let Some(exposed) = names.exposed(server, &tool.name)
                    && placed.insert(exposed)
                {
                    tools.push(CatalogTool {
                        exposed: exposed.to_owned(),
                        server: server.clone(),
                        tool: tool.clone(),
                    });
                }
            }
        }
        tools.sort_by(|a, b| a.exposed.cmp(&b.exposed));
        let by_exposed = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.exposed.clone(), i))
            .collect();
        Ok(Self {
            generation,
            tools,
            by_exposed,
        })
    }

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
