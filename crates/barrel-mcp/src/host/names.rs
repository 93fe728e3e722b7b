//! Exposed names: what models and downstream clients call the tools and prompts of many
//! servers, as a table (never a split on a separator).
//!
//! The rules:
//! - A server's **prefix** is its policy's, or its id sanitized: lower case `[a-z0-9_-]`,
//!   starting with a letter (else `s` is put in front), no `__` inside, at most 20 characters
//!   (a configured prefix may have 32).
//! - A raw name's **base** is the name with every character outside `[A-Za-z0-9_-]` replaced
//!   by `_` (an empty one becomes `tool`).
//! - The **exposed name** is the policy's rename for that raw name, else `prefix__base` (or
//!   `base` alone with [`PrefixMode::Never`], or when unique with [`PrefixMode::OnCollision`]).
//! - A name longer than the limit (default 64), and every name that collides with another one
//!   after sanitizing (`a.b` and `a_b`), is cut and given a stable suffix: `_` and the first 12
//!   hex digits of SHA-256 of the server id, a NUL and the raw name. No entry is ever dropped.
//!
//! Every exposed name matches `^[A-Za-z][A-Za-z0-9_-]{0,63}$` (shorter with a lower limit):
//! valid at once for Anthropic, OpenAI Chat Completions, OpenAI Responses and Gemini. A name
//! depends only on its server id, its raw name, the server's policy and whether its base
//! collides, so adding an unrelated server renames nothing. The table resolves exposed names
//! back to `(server, raw name)` exactly.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use crate::Error;

/// The longest exposed name by default: the intersection of the providers' limits.
pub const DEFAULT_MAX_LEN: usize = 64;

/// The shortest limit accepted (room for a hash suffix and a few characters).
pub const MIN_MAX_LEN: usize = 20;

const SUFFIX_LEN: usize = 13; // "_" + 12 hex digits

/// When the server prefix is put in front of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrefixMode {
    /// Always: `prefix__name`. Two servers never collide. The default.
    #[default]
    Always,
    /// Only when another server has a tool of the same (sanitized) name; unique names stay
    /// bare. Adding a server may then rename a tool of another one.
    OnCollision,
    /// Never: a collision between servers is an error when the table is built.
    Never,
}

/// How one server's names are exposed.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct NamePolicy {
    /// The prefix (validated: `[a-z0-9_-]`, starting with a letter, no `__`, at most 32).
    pub prefix: Option<String>,
    /// When the prefix is used.
    pub mode: PrefixMode,
    /// Exposed names chosen for raw names (validated like exposed names, unique).
    pub renames: BTreeMap<String, String>,
    /// Patterns of raw tool names to expose (`*` stands for any run of characters); `None`
    /// exposes every tool not denied, an empty list none.
    pub allow: Option<Vec<String>>,
    /// Patterns of raw tool names never exposed (a deny wins over an allow). A hidden tool is
    /// not in the catalog, and a call to it is answered as one to an unknown tool.
    pub deny: Vec<String>,
}

impl NamePolicy {
    /// The default policy: the sanitized server id as prefix, always used.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `prefix` instead of the sanitized server id.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Sets when the prefix is used.
    #[must_use]
    pub fn mode(mut self, mode: PrefixMode) -> Self {
        self.mode = mode;
        self
    }

    /// Exposes the raw name `raw` as `exposed`.
    #[must_use]
    pub fn rename(mut self, raw: impl Into<String>, exposed: impl Into<String>) -> Self {
        self.renames.insert(raw.into(), exposed.into());
        self
    }

    /// Exposes only the tools whose raw name matches one of the `allow` patterns (added to
    /// those already given).
    #[must_use]
    pub fn allow<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.allow
            .get_or_insert_with(Vec::new)
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Hides the tools whose raw name matches one of the `deny` patterns.
    #[must_use]
    pub fn deny<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.deny.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Whether the tool named `raw` is exposed under this policy.
    pub fn exposes_tool(&self, raw: &str) -> bool {
        let any = |patterns: &[String]| patterns.iter().any(|p| glob_matches(p, raw));
        self.allow.as_deref().is_none_or(any) && !any(&self.deny)
    }

    /// The policy an entry of a servers file asks for, from its optional host keys:
    /// `"prefix"`, and `"tools"`: an object with `"allow"` and `"deny"` (lists of patterns)
    /// and `"rename"` (an object from raw to exposed names), or a list of patterns to allow
    /// (the shape other hosts write: `["*"]` every tool, `[]` none). Other keys are the
    /// client's.
    pub fn from_entry(entry: &serde_json::Value) -> Result<Self, Error> {
        use serde_json::Value;
        let mut policy = Self::new();
        if let Some(prefix) = entry.get("prefix") {
            let prefix = prefix
                .as_str()
                .ok_or_else(|| Error::Definition("\"prefix\" must be a string".into()))?;
            policy = policy.prefix(prefix);
        }
        let tools = match entry.get("tools") {
            None => return Ok(policy),
            Some(Value::Array(patterns)) => {
                let patterns: Option<Vec<&str>> = patterns.iter().map(Value::as_str).collect();
                let patterns = patterns.ok_or_else(|| {
                    Error::Definition("\"tools\" as a list must list strings".into())
                })?;
                return Ok(policy.allow(patterns));
            }
            Some(Value::Object(tools)) => tools,
            Some(_) => {
                return Err(Error::Definition(
                    "\"tools\" must be an object or a list of patterns".into(),
                ));
            }
        };
        let patterns = |key: &str| -> Result<Option<Vec<String>>, Error> {
            match tools.get(key) {
                None => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| {
                        item.as_str().map(str::to_owned).ok_or_else(|| {
                            Error::Definition(format!("\"tools.{key}\" must list strings"))
                        })
                    })
                    .collect::<Result<Vec<String>, Error>>()
                    .map(Some),
                Some(_) => Err(Error::Definition(format!(
                    "\"tools.{key}\" must be a list of patterns"
                ))),
            }
        };
        if let Some(allow) = patterns("allow")? {
            policy = policy.allow(allow);
        }
        if let Some(deny) = patterns("deny")? {
            policy = policy.deny(deny);
        }
        if let Some(renames) = tools.get("rename") {
            let renames = renames
                .as_object()
                .ok_or_else(|| Error::Definition("\"tools.rename\" must be an object".into()))?;
            for (raw, exposed) in renames {
                let exposed = exposed.as_str().ok_or_else(|| {
                    Error::Definition(format!("\"tools.rename.{raw}\" must be a string"))
                })?;
                policy = policy.rename(raw, exposed);
            }
        }
        Ok(policy)
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters (none
/// included) and every other character for itself. At worst the product of the lengths (no
/// exponential backtracking on patterns with many stars).
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), name.chars().collect());
    let (mut p, mut n) = (0, 0);
    // The last star seen, and where in `name` its run would end if the rest fails.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, n));
            p += 1;
        } else if p < pattern.len() && pattern[p] == name[n] {
            p += 1;
            n += 1;
        } else if let Some((star_at, run_end)) = star {
            p = star_at + 1;
            n = run_end + 1;
            star = Some((star_at, run_end + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// A server's prefix: the configured one (checked) or its id sanitized.
pub fn prefix_for(server_id: &str, policy: &NamePolicy) -> Result<String, Error> {
    match &policy.prefix {
        Some(prefix) => {
            let valid = prefix
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase())
                && prefix.len() <= 32
                && !prefix.contains("__")
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
            if valid {
                Ok(prefix.clone())
            } else {
                Err(Error::Definition(format!(
                    "server {server_id:?}: prefix {prefix:?} must be [a-z0-9_-], start with a \
                     letter, hold no \"__\" and have at most 32 characters"
                )))
            }
        }
        None => Ok(sanitize_prefix(server_id)),
    }
}

/// A server id as a prefix (see the module docs).
pub fn sanitize_prefix(server_id: &str) -> String {
    let mut out = String::new();
    for c in server_id.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            c
        } else {
            '_'
        };
        // No "__" inside: that is the separator's look.
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let mut out = out.trim_matches('_').to_owned();
    if !out.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
        out.insert(0, 's');
    }
    out.truncate(20);
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// A raw name's base (see the module docs).
pub fn sanitize(raw: &str) -> String {
    let base: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() { "tool".into() } else { base }
}

/// True when `name` is valid for every provider within `max_len`.
pub fn is_valid(name: &str, max_len: usize) -> bool {
    name.len() <= max_len
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `name` cut to leave room for the stable suffix of `(server, raw)` (drawn again for a
/// non-zero `round`).
fn suffixed(name: &str, server_id: &str, raw: &str, round: u32, max_len: usize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server_id.as_bytes());
    hasher.update([0]);
    hasher.update(raw.as_bytes());
    if round > 0 {
        hasher.update([0]);
        hasher.update(round.to_be_bytes());
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    let keep = max_len.saturating_sub(SUFFIX_LEN);
    let mut cut: String = name.chars().take(keep).collect();
    while cut.ends_with('_') || cut.ends_with('-') {
        cut.pop();
    }
    if cut.is_empty() {
        cut.push('t');
    }
    format!("{cut}_{hex}")
}

/// The exposed names of a set of `(server, raw name)` entries, both ways.
#[derive(Debug, Clone, Default)]
pub struct NameTable {
    by_exposed: BTreeMap<String, (String, String)>,
    by_raw: HashMap<(String, String), String>,
}

impl NameTable {
    /// Names every entry. `policies` gives each server's policy (a missing one is the
    /// default); `max_len` is at least [`MIN_MAX_LEN`] and at most 64.
    pub fn build<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
        policies: &HashMap<String, NamePolicy>,
        max_len: usize,
    ) -> Result<Self, Error> {
        let max_len = max_len.clamp(MIN_MAX_LEN, DEFAULT_MAX_LEN);
        let default = NamePolicy::default();
        // The same (server, raw name) twice is one entry.
        let mut entries: Vec<(&str, &str)> = entries.into_iter().collect();
        let mut seen = std::collections::HashSet::new();
        entries.retain(|entry| seen.insert(*entry));
        // One prefix per server: two servers sharing one could take each other's names and
        // URIs, so that is a configuration error (give one of them a prefix).
        // (Compared in their URI form, where `_` is `-`: see `host::uri`.)
        let mut owner_of_prefix: HashMap<String, &str> = HashMap::new();
        for (server, _) in &entries {
            let prefix = prefix_for(server, policies.get(*server).unwrap_or(&default))?;
            let prefix = crate::host::uri::scheme_prefix(&prefix);
            match owner_of_prefix.get(&prefix) {
                Some(other) if other != server => {
                    return Err(Error::Definition(format!(
                        "servers {other:?} and {server:?} both have the prefix {prefix:?}: \
                         give one of them another prefix"
                    )));
                }
                _ => {
                    owner_of_prefix.insert(prefix, server);
                }
            }
        }
        // Bases, to know which collide between servers (OnCollision) or after sanitizing.
        let mut servers_of_base: HashMap<String, Vec<&str>> = HashMap::new();
        for (server, raw) in &entries {
            let list = servers_of_base.entry(sanitize(raw)).or_default();
            if !list.contains(server) {
                list.push(server);
            }
        }
        let mut candidates: Vec<(String, &str, &str)> = Vec::with_capacity(entries.len());
        for (server, raw) in &entries {
            let policy = policies.get(*server).unwrap_or(&default);
            let name = match policy.renames.get(*raw) {
                Some(renamed) => {
                    if !is_valid(renamed, max_len) {
                        return Err(Error::Definition(format!(
                            "server {server:?}: the rename of {raw:?} to {renamed:?} is not a \
                             valid tool name (letters, digits, _ and -, starting with a letter, \
                             at most {max_len})"
                        )));
                    }
                    renamed.clone()
                }
                None => {
                    let base = sanitize(raw);
                    let shared = servers_of_base.get(&base).is_some_and(|s| s.len() > 1);
                    let bare = match policy.mode {
                        PrefixMode::Always => false,
                        PrefixMode::OnCollision => !shared,
                        PrefixMode::Never => true,
                    };
                    if bare {
                        base
                    } else {
                        format!("{}__{base}", prefix_for(server, policy)?)
                    }
                }
            };
            candidates.push((name, server, raw));
        }
        // Two renames to one name are a configuration error.
        let mut renamed: HashMap<&str, (&str, &str)> = HashMap::new();
        for (name, server, raw) in &candidates {
            let policy = policies.get(*server).unwrap_or(&default);
            if policy.renames.contains_key(*raw)
                && let Some((other_server, other_raw)) =
                    renamed.insert(name.as_str(), (server, raw))
            {
                return Err(Error::Definition(format!(
                    "{other_server:?}/{other_raw:?} and {server:?}/{raw:?} are both renamed \
                     to {name:?}"
                )));
            }
        }
        // Names that are too long, start badly or collide are suffixed, every one of them.
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (name, _, _) in &candidates {
            *count.entry(name.as_str()).or_default() += 1;
        }
        let mut table = Self::default();
        for (name, server, raw) in &candidates {
            let collides = count.get(name.as_str()).copied().unwrap_or(0) > 1;
            let policy = policies.get(*server).unwrap_or(&default);
            if collides && policy.mode == PrefixMode::Never && !policy.renames.contains_key(*raw) {
                let others: Vec<&str> = candidates
                    .iter()
                    .filter(|(n, s, _)| n == name && s != server)
                    .map(|(_, s, _)| *s)
                    .collect();
                if !others.is_empty() {
                    return Err(Error::Definition(format!(
                        "servers {server:?} and {:?} both expose {name:?}: give a prefix mode \
                         other than never, or rename one",
                        others[0]
                    )));
                }
            }
            let mut start = name.clone();
            if !start
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
            {
                start.insert(0, 't');
            }
            let mut exposed = if collides || !is_valid(name, max_len) {
                suffixed(&start, server, raw, 0, max_len)
            } else {
                name.clone()
            };
            // A suffixed name may still meet another entry's own name (a raw name chosen to
            // look like one): the suffix is drawn again, deterministically, until it is free.
            let mut round = 0;
            while table.by_exposed.contains_key(&exposed)
                || (exposed != *name && count.contains_key(exposed.as_str()))
            {
                round += 1;
                if round > 16 {
                    return Err(Error::Definition(format!(
                        "server {server:?}: no free name for {raw:?}"
                    )));
                }
                exposed = suffixed(&start, server, raw, round, max_len);
            }
            table
                .by_exposed
                .insert(exposed.clone(), ((*server).to_owned(), (*raw).to_owned()));
            table
                .by_raw
                .insert(((*server).to_owned(), (*raw).to_owned()), exposed);
        }
        Ok(table)
    }

    /// The exposed name of `raw` on `server`.
    pub fn exposed(&self, server: &str, raw: &str) -> Option<&str> {
        self.by_raw
            .get(&(server.to_owned(), raw.to_owned()))
            .map(String::as_str)
    }

    /// The server and raw name behind `exposed`.
    pub fn resolve(&self, exposed: &str) -> Option<(&str, &str)> {
        self.by_exposed
            .get(exposed)
            .map(|(server, raw)| (server.as_str(), raw.as_str()))
    }

    /// Every exposed name, sorted, with its server and raw name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.by_exposed
            .iter()
            .map(|(exposed, (server, raw))| (exposed.as_str(), server.as_str(), raw.as_str()))
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.by_exposed.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.by_exposed.is_empty()
    }
}

#[cfg(test)]
mod tests;
