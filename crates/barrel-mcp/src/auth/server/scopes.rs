//! [`ScopePolicy`]: the scopes each operation needs, and which scopes imply others.
//!
//! An operation is a JSON-RPC request: its method, and for `tools/call`, `prompts/get` and
//! `resources/read` / `resources/subscribe` the tool, prompt or resource it names. What it needs
//! is the union of the server-wide scopes, the method's, and the named item's. A caller lacking
//! any of them is refused with every scope the operation needs in one challenge (the spec asks
//! for all of them at once, so a client re-authorizes once).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::Error;
use crate::server::uri_template::UriTemplate;

/// The scopes each operation needs.
///
/// ```
/// use barrel_mcp::auth::server::ScopePolicy;
///
/// let policy = ScopePolicy::new()
///     .require(["mcp:read"])
///     .tool("delete_file", ["mcp:write"])
///     .resource("file:///private/{path}", ["files:private"])
///     .unwrap()
///     .implies("mcp:admin", ["mcp:read", "mcp:write"]);
/// # drop(policy);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScopePolicy {
    required: Vec<String>,
    methods: BTreeMap<String, Vec<String>>,
    tools: BTreeMap<String, Vec<String>>,
    prompts: BTreeMap<String, Vec<String>>,
    /// Exact resource URIs.
    resources: BTreeMap<String, Vec<String>>,
    /// Resource templates, matched in the order they were added.
    templates: Vec<(UriTemplate, Vec<String>)>,
    implies: BTreeMap<String, Vec<String>>,
}

fn owned<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Vec<String> {
    scopes.into_iter().map(Into::into).collect()
}

impl ScopePolicy {
    /// A policy that needs nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Scopes every operation needs (`initialize` and `ping` included).
    #[must_use]
    pub fn require<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.required.extend(owned(scopes));
        self
    }

    /// Scopes a method needs (`tools/list`, `resources/read`, …).
    #[must_use]
    pub fn method<S: Into<String>>(
        mut self,
        method: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.methods
            .entry(method.into())
            .or_default()
            .extend(owned(scopes));
        self
    }

    /// Scopes calling the tool `name` needs.
    #[must_use]
    pub fn tool<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.tools
            .entry(name.into())
            .or_default()
            .extend(owned(scopes));
        self
    }

    /// Scopes getting the prompt `name` needs.
    #[must_use]
    pub fn prompt<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.prompts
            .entry(name.into())
            .or_default()
            .extend(owned(scopes));
        self
    }

    /// Scopes reading (or subscribing to) a resource needs: `uri` is an exact URI, or an RFC
    /// 6570 template (`file:///{path}`) matched against the URI asked for. Fails when a
    /// template does not parse.
    pub fn resource<S: Into<String>>(
        mut self,
        uri: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<Self, Error> {
        let uri = uri.into();
        let scopes = owned(scopes);
        if uri.contains('{') {
            let template = UriTemplate::parse(&uri)
                .map_err(|e| Error::Definition(format!("scope template {uri:?}: {e}")))?;
            self.templates.push((template, scopes));
        } else {
            self.resources.entry(uri).or_default().extend(scopes);
        }
        Ok(self)
    }

    /// A granted `scope` also grants `implied` (and what they imply in turn): a hierarchy such
    /// as `admin` ⊃ `write` ⊃ `read`.
    #[must_use]
    pub fn implies<S: Into<String>>(
        mut self,
        scope: impl Into<String>,
        implied: impl IntoIterator<Item = S>,
    ) -> Self {
        self.implies
            .entry(scope.into())
            .or_default()
            .extend(owned(implied));
        self
    }

    /// The scopes every operation needs.
    pub fn required(&self) -> &[String] {
        &self.required
    }

    /// True when no operation needs any scope.
    pub fn is_empty(&self) -> bool {
        self.required.is_empty()
            && self.methods.is_empty()
            && self.tools.is_empty()
            && self.prompts.is_empty()
            && self.resources.is_empty()
            && self.templates.is_empty()
    }

    /// Every scope the request `method` with `params` needs, in a stable order without
    /// duplicates.
    pub fn needed(&self, method: &str, params: Option<&Value>) -> Vec<String> {
        let mut needed: Vec<String> = Vec::new();
        let mut add = |scopes: &[String]| {
            for scope in scopes {
                if !needed.contains(scope) {
                    needed.push(scope.clone());
                }
            }
        };
        add(&self.required);
        if let Some(scopes) = self.methods.get(method) {
            add(scopes);
        }
        let named = |field: &str| params.and_then(|p| p.get(field)).and_then(Value::as_str);
        match method {
            "tools/call" => {
                if let Some(scopes) = named("name").and_then(|name| self.tools.get(name)) {
                    add(scopes);
                }
            }
            "prompts/get" => {
                if let Some(scopes) = named("name").and_then(|name| self.prompts.get(name)) {
                    add(scopes);
                }
            }
            "resources/read" | "resources/subscribe" => {
                if let Some(uri) = named("uri") {
                    if let Some(scopes) = self.resources.get(uri) {
                        add(scopes);
                    }
                    for (template, scopes) in &self.templates {
                        if template.matches(uri).is_some() {
                            add(scopes);
                        }
                    }
                }
            }
            _ => {}
        }
        needed
    }

    /// The scopes `granted` stands for once implications are followed.
    pub fn expand<'a>(&'a self, granted: &'a [String]) -> BTreeSet<&'a str> {
        let mut all: BTreeSet<&str> = BTreeSet::new();
        let mut todo: Vec<&str> = granted.iter().map(String::as_str).collect();
        while let Some(scope) = todo.pop() {
            if all.insert(scope)
                && let Some(implied) = self.implies.get(scope)
            {
                todo.extend(implied.iter().map(String::as_str));
            }
        }
        all
    }

    /// `None` when `granted` covers what the operation needs; otherwise every scope it needs
    /// (not only the missing ones: a client asks for all of them at once).
    pub fn check(
        &self,
        granted: &[String],
        method: &str,
        params: Option<&Value>,
    ) -> Option<Vec<String>> {
        let needed = self.needed(method, params);
        if needed.is_empty() {
            return None;
        }
        let held = self.expand(granted);
        if needed.iter().all(|scope| held.contains(scope.as_str())) {
            None
        } else {
            Some(needed)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn granted(scopes: &[&str]) -> Vec<String> {
        scopes.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn an_operation_needs_the_union_of_its_scopes() {
        let policy = ScopePolicy::new()
            .require(["base"])
            .method("tools/call", ["call"])
            .tool("delete", ["write", "base"]);
        let params = json!({"name": "delete"});
        assert_eq!(
            policy.needed("tools/call", Some(&params)),
            ["base", "call", "write"]
        );
        assert_eq!(policy.needed("tools/list", None), ["base"]);
        assert_eq!(
            policy.check(&granted(&["base", "call"]), "tools/call", Some(&params)),
            Some(granted(&["base", "call", "write"]))
        );
        assert_eq!(
            policy.check(
                &granted(&["base", "call", "write"]),
                "tools/call",
                Some(&params)
            ),
            None
        );
    }

    #[test]
    fn resources_match_exactly_or_by_template() {
        let policy = ScopePolicy::new()
            .resource("file:///public.txt", ["read"])
            .unwrap()
            .resource("file:///private/{name}", ["secret"])
            .unwrap();
        let read = |uri: &str| policy.needed("resources/read", Some(&json!({ "uri": uri })));
        assert_eq!(read("file:///public.txt"), ["read"]);
        assert_eq!(read("file:///private/a"), ["secret"]);
        assert!(read("file:///other").is_empty());
        assert_eq!(
            policy.needed(
                "resources/subscribe",
                Some(&json!({"uri": "file:///private/b"}))
            ),
            ["secret"]
        );
        assert!(ScopePolicy::new().resource("x://{", ["a"]).is_err());
    }

    #[test]
    fn hierarchies_grant_what_they_imply() {
        let policy = ScopePolicy::new()
            .tool("t", ["read"])
            .implies("admin", ["write"])
            .implies("write", ["read"]);
        let params = json!({"name": "t"});
        assert_eq!(
            policy.check(&granted(&["admin"]), "tools/call", Some(&params)),
            None
        );
        assert!(
            policy
                .check(&granted(&["other"]), "tools/call", Some(&params))
                .is_some()
        );
        // A cycle ends.
        let cyclic = ScopePolicy::new().implies("a", ["b"]).implies("b", ["a"]);
        assert_eq!(cyclic.expand(&granted(&["a"])).len(), 2);
    }
}
