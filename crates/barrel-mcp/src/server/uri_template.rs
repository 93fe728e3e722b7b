//! RFC 6570 URI templates: parsing, Level 1–4 expansion, and matching a URI back to variables.
//!
//! Resource templates (`resources/templates/list`) are URI templates. The server expands them
//! for completions and, above all, matches each `resources/read` URI against them to find the
//! handler and its arguments. Matching works on untrusted input, so a template is compiled once,
//! at parse time, into a single anchored [`regex::Regex`]. The regex crate's engine runs in time
//! linear in the input, so no URI can make matching backtrack catastrophically.
//!
//! Matched values are percent-decoded: `{name}` matched against `a%2Fb` gives `a/b`, and
//! `..%2F..%2Fetc%2Fpasswd` gives `../../etc/passwd`. A handler that turns a value into a path,
//! a query or a command must check it as the untrusted input it is.
//!
//! Limits: a template is at most [`MAX_TEMPLATE_LEN`] bytes with at most [`MAX_EXPRESSIONS`]
//! expressions and variable names of at most [`MAX_VARNAME_LEN`] bytes; [`UriTemplate::matches`]
//! refuses URIs longer than [`MAX_URI_LEN`] bytes.
//!
//! ```
//! use barrel_mcp::server::uri_template::{UriTemplate, Variables};
//!
//! let template = UriTemplate::parse("file:///{+path}{?rev}").expect("a valid template");
//! assert_eq!(template.variable_names(), ["path", "rev"]);
//! let found = template.matches("file:///docs/a%20b.md?rev=3").expect("it matches");
//! assert_eq!(found["path"], "docs/a b.md");
//! assert_eq!(found["rev"], "3");
//! let mut variables = Variables::new();
//! variables.insert("path".to_owned(), "docs/x.md".into());
//! assert_eq!(template.expand(&variables), "file:///docs/x.md");
//! ```

mod encode;
mod matcher;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use matcher::Matcher;

/// The longest template [`UriTemplate::parse`] accepts, in bytes.
///
/// Example: [the module's](crate::server::uri_template).
pub const MAX_TEMPLATE_LEN: usize = 8 * 1024;
/// The most `{…}` expressions one template may hold.
///
/// Example: [the module's](crate::server::uri_template).
pub const MAX_EXPRESSIONS: usize = 256;
/// The longest variable name, in bytes.
///
/// Example: [the module's](crate::server::uri_template).
pub const MAX_VARNAME_LEN: usize = 128;
/// The longest URI [`UriTemplate::matches`] looks at, in bytes; longer URIs never match.
///
/// Example: [the module's](crate::server::uri_template).
pub const MAX_URI_LEN: usize = 64 * 1024;

/// The value of one template variable.
///
/// Example: [the module's](crate::server::uri_template).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateValue {
    /// A single string.
    String(String),
    /// An ordered list of strings. An empty list counts as undefined.
    List(Vec<String>),
    /// An ordered associative array. An empty one counts as undefined.
    Map(Vec<(String, String)>),
}

impl From<&str> for TemplateValue {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl From<String> for TemplateValue {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

/// Variables for [`UriTemplate::expand`], by name. A missing name is undefined.
///
/// Example: [the module's](crate::server::uri_template).
pub type Variables = BTreeMap<String, TemplateValue>;

/// Why a template was refused.
///
/// Example: [the module's](crate::server::uri_template).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UriTemplateError {
    /// The template is longer than [`MAX_TEMPLATE_LEN`].
    #[error("URI template is {len} bytes long; the limit is {MAX_TEMPLATE_LEN}")]
    TooLong {
        /// The template's length in bytes.
        len: usize,
    },
    /// The template has more than [`MAX_EXPRESSIONS`] expressions.
    #[error("URI template has more than {MAX_EXPRESSIONS} expressions")]
    TooManyExpressions,
    /// A `{` has no matching `}`.
    #[error("unclosed '{{' at byte {at} of the URI template")]
    Unclosed {
        /// Byte offset of the `{`.
        at: usize,
    },
    /// A `}` has no matching `{`.
    #[error("unmatched '}}' at byte {at} of the URI template")]
    Unmatched {
        /// Byte offset of the `}`.
        at: usize,
    },
    /// An operator RFC 6570 reserves for future use (`=`, `,`, `!`, `@`, `|`).
    #[error("reserved operator '{op}' at byte {at} of the URI template")]
    ReservedOperator {
        /// The operator.
        op: char,
        /// Byte offset of the operator.
        at: usize,
    },
    /// An empty variable name, a character not allowed in one, or a bad `.`.
    #[error("invalid variable name at byte {at} of the URI template")]
    InvalidVarName {
        /// Byte offset of the expression.
        at: usize,
    },
    /// A variable name longer than [`MAX_VARNAME_LEN`].
    #[error("variable name at byte {at} is longer than {MAX_VARNAME_LEN} bytes")]
    VarNameTooLong {
        /// Byte offset of the expression.
        at: usize,
    },
    /// A `:` prefix length that is not 1 to 9999.
    #[error("invalid prefix length at byte {at} of the URI template")]
    InvalidPrefix {
        /// Byte offset of the expression.
        at: usize,
    },
    /// The template could not be compiled into a matcher.
    #[error("URI template is too complex to match")]
    TooComplex,
}

/// An expression's operator (RFC 6570 §3.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryCont,
}

impl Operator {
    fn from_char(c: char) -> Option<Self> {
        Some(match c {
            '+' => Self::Reserved,
            '#' => Self::Fragment,
            '.' => Self::Label,
            '/' => Self::Path,
            ';' => Self::PathParam,
            '?' => Self::Query,
            '&' => Self::QueryCont,
            _ => return None,
        })
    }

    /// The text put before the first defined variable.
    fn first(self) -> &'static str {
        match self {
            Self::Simple | Self::Reserved => "",
            Self::Fragment => "#",
            Self::Label => ".",
            Self::Path => "/",
            Self::PathParam => ";",
            Self::Query => "?",
            Self::QueryCont => "&",
        }
    }

    /// The text between two defined variables (and between exploded items).
    fn sep(self) -> char {
        match self {
            Self::Simple | Self::Reserved | Self::Fragment => ',',
            Self::Label => '.',
            Self::Path => '/',
            Self::PathParam => ';',
            Self::Query | Self::QueryCont => '&',
        }
    }

    /// Whether values are written as `name=value`.
    fn named(self) -> bool {
        matches!(self, Self::PathParam | Self::Query | Self::QueryCont)
    }

    /// What a named empty value becomes: `;x` but `?x=`.
    fn if_empty(self) -> &'static str {
        match self {
            Self::Query | Self::QueryCont => "=",
            _ => "",
        }
    }

    /// Whether reserved characters and pct-encoded triplets pass through unencoded.
    fn allows_reserved(self) -> bool {
        matches!(self, Self::Reserved | Self::Fragment)
    }
}

/// One variable of an expression: `name`, `name:3` or `name*`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    prefix: Option<usize>,
    explode: bool,
}

/// A piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Literal text, already encoded as it appears in an expanded URI.
    Literal(String),
    /// A `{…}` expression.
    Expr { op: Operator, vars: Vec<VarSpec> },
}

/// A parsed RFC 6570 URI template, ready to expand and to match.
///
/// Example: [the module's](crate::server::uri_template).
#[derive(Clone)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    matcher: Option<Matcher>,
}

impl UriTemplate {
    /// Parses a template, checking its syntax and the limits listed in the module docs.
    ///
    /// Example: [the module's](crate::server::uri_template).
    pub fn parse(template: &str) -> Result<Self, UriTemplateError> {
        if template.len() > MAX_TEMPLATE_LEN {
            return Err(UriTemplateError::TooLong {
                len: template.len(),
            });
        }
        let parts = parse_parts(template)?;
        let matcher = Matcher::build(&parts)?;
        Ok(Self {
            source: template.to_owned(),
            parts,
            matcher,
        })
    }

    /// The template as written.
    ///
    /// Example: [the module's](crate::server::uri_template).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of the template's variables, each once, in order of first appearance.
    ///
    /// Example: [the module's](crate::server::uri_template).
    pub fn variable_names(&self) -> Vec<&str> {
        let mut seen = std::collections::BTreeSet::new();
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Expr { vars, .. } => Some(vars),
                Part::Literal(_) => None,
            })
            .flatten()
            .map(|var| var.name.as_str())
            .filter(|name| seen.insert(*name))
            .collect()
    }

    /// Expands the template with `vars` (RFC 6570 Level 4). Undefined variables expand to
    /// nothing; prefix modifiers apply to string values only, as the RFC says.
    ///
    /// Example: [the module's](crate::server::uri_template).
    pub fn expand(&self, vars: &Variables) -> String {
        let mut out = String::with_capacity(self.source.len());
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Expr { op, vars: specs } => encode::expand_expr(&mut out, *op, specs, vars),
            }
        }
        out
    }

    /// Matches `uri` against the template and returns the variables, percent-decoded.
    ///
    /// Returns `None` when the URI does not match, is longer than [`MAX_URI_LEN`], or a captured
    /// value does not decode to UTF-8. The rules, by operator:
    ///
    /// - `{var}` matches one non-empty run without `/`, `?`, `#` or `,`; `{var*}` matches a
    ///   `,`-separated list, returned as written (`a,b`).
    /// - `{+var}` matches a non-empty run that may hold `/` and other reserved characters, but
    ///   not `#`, and not `?` when the template has a query part. `{#var}` matches everything after
    ///   a `#`.
    /// - `{/var}` and `{.var}` match one segment or label; `{/var*}` and `{.var*}` match one or
    ///   more, returned joined with `/` (or `.`), each decoded on its own. An expression with a
    ///   leading character (`/`, `.`, `;`, `#`) may be absent altogether; its variables are then
    ///   missing from the result.
    /// - In a multi-variable expression the values are assigned in order; later ones are
    ///   optional. Values may not contain the expression's separator.
    /// - `{?a,b}` and `{&c}` match query parameters in any order; every one is optional, and
    ///   parameters the template does not name are ignored. An exploded `{?list*}` returns every
    ///   value of the parameter joined with `,`. A fixed parameter written in the template
    ///   (`?v=1{&x}`) must be present with that value. With a query part, any `#fragment` is
    ///   ignored.
    /// - Where a split is ambiguous, earlier variables take as little as they can: `{name}{.ext}`
    ///   splits `a.b.md` into `a.b` and `md`, and `{a}-{b}` splits `x-y-z` into `x` and `y-z`.
    /// - Prefix modifiers (`{var:3}`) are not enforced. When a variable appears twice, an
    ///   unprefixed capture wins, and two unprefixed captures must agree.
    ///
    /// Exploded associative arrays (`{;keys*}`, `{?keys*}`) cannot be told apart from other
    /// parameters, so they are not matched back into pairs.
    ///
    /// A template whose query part holds anything else (say `{/x}` after `{?q}`) never matches.
    ///
    /// Example: [the module's](crate::server::uri_template).
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        if uri.len() > MAX_URI_LEN {
            return None;
        }
        self.matcher.as_ref()?.matches(uri)
    }
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UriTemplate").field(&self.source).finish()
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl PartialEq for UriTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for UriTemplate {}

impl std::str::FromStr for UriTemplate {
    type Err = UriTemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Splits a template into literals and expressions.
fn parse_parts(template: &str) -> Result<Vec<Part>, UriTemplateError> {
    let mut parts = Vec::new();
    let mut expressions = 0usize;
    let mut rest = template;
    let mut offset = 0usize;
    while !rest.is_empty() {
        let open = rest.find('{');
        let close = rest.find('}');
        match (open, close) {
            (_, Some(c)) if open.is_none_or(|o| c < o) => {
                return Err(UriTemplateError::Unmatched { at: offset + c });
            }
            (None, _) => {
                parts.push(Part::Literal(encode::literal(rest)));
                break;
            }
            (Some(o), close) => {
                if o > 0 {
                    parts.push(Part::Literal(encode::literal(&rest[..o])));
                }
                let Some(c) = close else {
                    return Err(UriTemplateError::Unclosed { at: offset + o });
                };
                expressions += 1;
                if expressions > MAX_EXPRESSIONS {
                    return Err(UriTemplateError::TooManyExpressions);
                }
                parts.push(parse_expression(&rest[o + 1..c], offset + o)?);
                offset += c + 1;
                rest = &rest[c + 1..];
            }
        }
    }
    Ok(parts)
}

/// Parses the inside of one `{…}`; `at` is the byte offset of its `{`.
fn parse_expression(body: &str, at: usize) -> Result<Part, UriTemplateError> {
    let mut chars = body.chars();
    let (op, list) = match chars.next() {
        Some(c @ ('=' | ',' | '!' | '@' | '|')) => {
            return Err(UriTemplateError::ReservedOperator { op: c, at: at + 1 });
        }
        Some(c) => match Operator::from_char(c) {
            Some(op) => (op, &body[c.len_utf8()..]),
            None => (Operator::Simple, body),
        },
        None => return Err(UriTemplateError::InvalidVarName { at }),
    };
    let vars = list
        .split(',')
        .map(|spec| parse_varspec(spec, at))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Part::Expr { op, vars })
}

/// Parses `name`, `name*` or `name:N`.
fn parse_varspec(spec: &str, at: usize) -> Result<VarSpec, UriTemplateError> {
    let (name, prefix, explode) = if let Some(name) = spec.strip_suffix('*') {
        (name, None, true)
    } else if let Some((name, len)) = spec.split_once(':') {
        let valid = !len.is_empty()
            && len.len() <= 4
            && len.bytes().all(|b| b.is_ascii_digit())
            && !len.starts_with('0');
        let n = len
            .parse::<usize>()
            .ok()
            .filter(|_| valid)
            .ok_or(UriTemplateError::InvalidPrefix { at })?;
        (name, Some(n), false)
    } else {
        (spec, None, false)
    };
    if name.len() > MAX_VARNAME_LEN {
        return Err(UriTemplateError::VarNameTooLong { at });
    }
    if !is_varname(name) {
        return Err(UriTemplateError::InvalidVarName { at });
    }
    Ok(VarSpec {
        name: name.to_owned(),
        prefix,
        explode,
    })
}

/// `varname = varchar *( ["."] varchar )`, `varchar = ALPHA / DIGIT / "_" / pct-encoded`.
fn is_varname(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes[0] == b'.' || bytes[bytes.len() - 1] == b'.' {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => i += 1,
            b'.' if bytes[i - 1] != b'.' => i += 1,
            b'%' if encode::is_pct_triplet(bytes, i) => i += 3,
            _ => return false,
        }
    }
    true
}
