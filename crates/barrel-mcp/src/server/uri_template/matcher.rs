//! Matching a URI against a template: one anchored regex for the path, a parser for the query.
//!
//! The template is cut where its query starts: at the first `{?…}`/`{&…}` expression or the
//! first literal `?`. Everything before becomes one regex, built once at parse time; the regex
//! crate's engine is linear in the input, so a hostile URI cannot make matching slow. The query
//! part is matched by name, in any order, without a regex.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};

use super::encode::decode;
use super::{Operator, Part, UriTemplateError, VarSpec};

/// The most memory the compiled path regex may take.
const REGEX_SIZE_LIMIT: usize = 4 * 1024 * 1024;

/// A compiled matcher for one template.
#[derive(Debug, Clone)]
pub(super) struct Matcher {
    /// Anchored regex over the part of the URI before the query (the whole URI when the
    /// template has no query part).
    path: Regex,
    /// What capture group `i + 1` of `path` holds.
    captures: Vec<Capture>,
    /// The query part, when the template has one.
    query: Option<QuerySpec>,
}

/// One capture group of the path regex.
#[derive(Debug, Clone)]
struct Capture {
    name: String,
    op: Operator,
    explode: bool,
    prefixed: bool,
}

/// The query part of a template.
#[derive(Debug, Clone, Default)]
struct QuerySpec {
    /// Parameters written literally in the template (`?v=1`), decoded; they must be present.
    fixed: Vec<(String, String)>,
    /// `(name, explode, prefixed)` of every variable of the `?`/`&` expressions.
    vars: Vec<(String, bool, bool)>,
}

impl Matcher {
    /// Compiles `parts`; `Ok(None)` when the template's query part is not matchable.
    pub(super) fn build(parts: &[Part]) -> Result<Option<Self>, UriTemplateError> {
        let Some((path_parts, query)) = split_query(parts) else {
            return Ok(None);
        };
        let query_mode = query.is_some();
        let mut pattern = String::from("^");
        let mut captures = Vec::new();
        for part in &path_parts {
            match part {
                Part::Literal(text) => pattern.push_str(&regex::escape(text)),
                Part::Expr { op, vars } => {
                    push_expr(&mut pattern, &mut captures, *op, vars, query_mode);
                }
            }
        }
        pattern.push('$');
        let path = RegexBuilder::new(&pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|_| UriTemplateError::TooComplex)?;
        Ok(Some(Self {
            path,
            captures,
            query,
        }))
    }

    /// Matches a URI already checked against the length limit.
    pub(super) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let (path, query) = match &self.query {
            Some(_) => match uri.split_once('?') {
                Some((path, rest)) => (path, rest.split('#').next().unwrap_or_default()),
                None => (uri, ""),
            },
            None => (uri, ""),
        };
        let caps = self.path.captures(path)?;
        let mut found = Found::default();
        for (i, capture) in self.captures.iter().enumerate() {
            if let Some(m) = caps.get(i + 1) {
                let value = capture.value(m.as_str())?;
                found.insert(&capture.name, value, capture.prefixed)?;
            }
        }
        if let Some(spec) = &self.query {
            spec.matches(query, &mut found)?;
        }
        Some(found.values.into_iter().map(|(k, (v, _))| (k, v)).collect())
    }
}

/// Variables found so far, each with whether it came from a prefixed (`:n`) varspec.
#[derive(Default)]
struct Found {
    values: BTreeMap<String, (String, bool)>,
}

impl Found {
    /// Records a capture; `None` when two unprefixed captures of one variable disagree.
    fn insert(&mut self, name: &str, value: String, prefixed: bool) -> Option<()> {
        match self.values.get(name) {
            None => {}
            Some((_, true)) if !prefixed => {}
            Some((old, false)) if !prefixed => return (*old == value).then_some(()),
            Some(_) => return Some(()),
        }
        self.values.insert(name.to_owned(), (value, prefixed));
        Some(())
    }
}

impl Capture {
    /// Turns the captured text into the variable's value.
    fn value(&self, raw: &str) -> Option<String> {
        let strip = |item: &str| -> String {
            if !self.op.named() {
                return item.to_owned();
            }
            let rest = item.strip_prefix(self.name.as_str()).unwrap_or(item);
            rest.strip_prefix('=').unwrap_or(rest).to_owned()
        };
        if !self.explode {
            return decode(&strip(raw));
        }
        let join = match self.op {
            Operator::Path => "/",
            Operator::Label => ".",
            _ => ",",
        };
        let items = raw
            .split(self.op.sep())
            .map(|item| decode(&strip(item)))
            .collect::<Option<Vec<_>>>()?;
        Some(items.join(join))
    }
}

impl QuerySpec {
    /// Checks the fixed parameters and records the template's variables found in `query`.
    fn matches(&self, query: &str, found: &mut Found) -> Option<()> {
        let pairs: Vec<(&str, &str)> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
            .collect();
        let key_is = |key: &str, name: &str| key == name || decode(key).is_some_and(|k| k == name);
        for (name, value) in &self.fixed {
            let present = pairs
                .iter()
                .any(|(k, v)| key_is(k, name) && decode(v).as_ref() == Some(value));
            if !present {
                return None;
            }
        }
        for (name, explode, prefixed) in &self.vars {
            let mut values = pairs
                .iter()
                .filter(|(k, _)| key_is(k, name))
                .map(|(_, v)| decode(v));
            let value = if *explode {
                let all = values.collect::<Option<Vec<_>>>()?;
                if all.is_empty() {
                    continue;
                }
                all.join(",")
            } else {
                match values.next() {
                    Some(value) => value?,
                    None => continue,
                }
            };
            found.insert(name, value, *prefixed)?;
        }
        Some(())
    }
}

/// Cuts the template where its query starts and returns the path parts and the query spec.
/// When the query part holds other expressions (`?q={q}`), the whole template is one regex
/// with no query spec; if it also holds `?`/`&` expressions, the template is not matchable
/// and the answer is `None`.
fn split_query(parts: &[Part]) -> Option<(Vec<Part>, Option<QuerySpec>)> {
    let is_query_expr = |p: &Part| {
        matches!(
            p,
            Part::Expr {
                op: Operator::Query | Operator::QueryCont,
                ..
            }
        )
    };
    let start = parts.iter().position(|p| match p {
        Part::Literal(text) => text.contains('?'),
        expr => is_query_expr(expr),
    });
    let Some(start) = start else {
        return Some((parts.to_vec(), None));
    };
    let mut path = parts[..start].to_vec();
    let mut tail: Vec<Part> = parts[start..].to_vec();
    if let Some(Part::Literal(text)) = tail.first_mut() {
        let q = text.find('?').unwrap_or_default();
        if q > 0 {
            path.push(Part::Literal(text[..q].to_owned()));
        }
        *text = text[q..].to_owned();
    }
    let mut spec = QuerySpec::default();
    for part in &tail {
        match part {
            Part::Literal(text) if !text.contains('#') => {
                for pair in text.split(['?', '&']).filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    spec.fixed.push((decode(k)?, decode(v)?));
                }
            }
            Part::Expr { vars, .. } if is_query_expr(part) => spec.vars.extend(
                vars.iter()
                    .map(|v| (v.name.clone(), v.explode, v.prefix.is_some())),
            ),
            _ => {
                // A query part with other expressions: match the whole URI with one regex,
                // unless the template also has `?`/`&` expressions, which a regex cannot
                // match in any order.
                return if parts.iter().any(is_query_expr) {
                    None
                } else {
                    Some((parts.to_vec(), None))
                };
            }
        }
    }
    Some((path, Some(spec)))
}

/// The regex class of one value character for `op`. `multi` excludes the separator.
fn value_class(op: Operator, multi: bool, query_mode: bool) -> &'static str {
    match op {
        Operator::Simple => "[^/?#,]",
        Operator::Reserved => match (multi, query_mode) {
            (false, false) => "[^#]",
            (false, true) => "[^?#]",
            (true, false) => "[^#,]",
            (true, true) => "[^?#,]",
        },
        Operator::Fragment if multi => "[^,]",
        Operator::Fragment => "(?s:.)",
        Operator::Label => "[^/?#.]",
        Operator::Path => "[^/?#]",
        Operator::PathParam => "[^/?#;]",
        // Unreachable in a path regex; kept total for safety.
        Operator::Query | Operator::QueryCont => "[^&#]",
    }
}

/// Appends the regex for one expression and records its capture groups.
fn push_expr(
    pattern: &mut String,
    captures: &mut Vec<Capture>,
    op: Operator,
    vars: &[VarSpec],
    query_mode: bool,
) {
    let class = value_class(op, vars.len() > 1, query_mode);
    let sep = regex::escape(&op.sep().to_string());
    let optional = !op.first().is_empty();
    if optional {
        pattern.push_str("(?:");
        pattern.push_str(&regex::escape(op.first()));
    }
    for (i, var) in vars.iter().enumerate() {
        if i > 0 {
            pattern.push_str("(?:");
            pattern.push_str(&sep);
        }
        let item = if op.named() {
            format!("{}(?:={class}*?)?", regex::escape(&var.name))
        } else {
            format!("{class}+?")
        };
        if var.explode {
            pattern.push_str(&format!("({item}(?:{sep}{item})*?)"));
        } else {
            pattern.push_str(&format!("({item})"));
        }
        if i > 0 {
            pattern.push_str(")?");
        }
        captures.push(Capture {
            name: var.name.clone(),
            op,
            explode: var.explode,
            prefixed: var.prefix.is_some(),
        });
    }
    if optional {
        pattern.push_str(")?");
    }
}
