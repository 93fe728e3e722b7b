//! The YAML front matter of a `SKILL.md`, read by a small strict parser.
//!
//! The front matter is the block between a first line `---` and the next line `---`. The Agent
//! Skills format uses a small part of YAML, and this parser reads exactly that part: block
//! mappings (nested by indentation), block sequences and flow sequences of scalars, the empty
//! flow collections `[]` and `{}`, plain scalars (typed as the YAML 1.2 core schema types them:
//! null, booleans, integers, floats, else strings, and continued on more-indented lines),
//! single- and double-quoted scalars, and `|` / `>` block scalars with `-` or `+` chomping.
//! Anything else (anchors, aliases, tags, complex keys, duplicate keys, tabs in indentation,
//! `.inf`/`.nan`) is refused with the line it is on, rather than read differently from a full
//! YAML parser. The server and the client use the same parser, so what one publishes the
//! other reads back identically.

use std::fmt;

use barrel_mcp_types::JsonObject;
use serde_json::{Map, Number, Value};

/// Why a front matter could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    /// The 1-based line of the `SKILL.md` (0 when the problem is not on one line).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for FrontmatterError {}

fn error<T>(line: usize, message: impl Into<String>) -> Result<T, FrontmatterError> {
    Err(FrontmatterError {
        line,
        message: message.into(),
    })
}

/// Splits a `SKILL.md` into its front matter (the YAML text, without the `---` lines) and
/// the 1-based line number where the YAML starts. A leading byte order mark is skipped.
pub fn split(text: &str) -> Option<(&str, usize)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" && bare.starts_with("---") {
            let yaml = &rest[..offset];
            let yaml = yaml
                .strip_suffix('\n')
                .map(|y| y.strip_suffix('\r').unwrap_or(y))
                .unwrap_or(yaml);
            return Some((yaml, 2));
        }
        offset += line.len();
    }
    None
}

/// Reads the front matter of a `SKILL.md` into a JSON object.
pub fn parse(text: &str) -> Result<JsonObject, FrontmatterError> {
    let Some((yaml, first_line)) = split(text) else {
        return error(
            1,
            "SKILL.md does not begin with a front matter block between two `---` lines",
        );
    };
    parse_yaml(yaml, first_line)
}

/// One line of the YAML text.
struct Line<'a> {
    number: usize,
    indent: usize,
    /// The line without its indentation.
    text: &'a str,
    /// The whole line (trailing whitespace removed).
    raw: &'a str,
}

impl Line<'_> {
    fn is_blank_or_comment(&self) -> bool {
        self.text.is_empty() || self.text.starts_with('#')
    }
}

/// Parses the YAML of a front matter whose first line is line `first_line` of the file.
pub fn parse_yaml(yaml: &str, first_line: usize) -> Result<JsonObject, FrontmatterError> {
    let mut lines = Vec::new();
    for (i, raw) in yaml.lines().enumerate() {
        let number = first_line + i;
        let raw = raw.trim_end_matches([' ', '\t', '\r']);
        let text = raw.trim_start_matches(' ');
        if text.starts_with('\t') {
            return error(number, "a tab in the indentation");
        }
        lines.push(Line {
            number,
            indent: raw.len() - text.len(),
            text,
            raw,
        });
    }
    let mut parser = Parser { lines, at: 0 };
    parser.skip_blank();
    let Some(first) = parser.peek() else {
        return Ok(JsonObject::new());
    };
    if first.indent != 0 {
        return error(first.number, "the front matter is indented");
    }
    let object = parser.mapping(0)?;
    if let Some(line) = parser.peek() {
        return error(line.number, "unexpected text after the front matter");
    }
    Ok(object)
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
}

impl<'a> Parser<'a> {
    fn skip_blank(&mut self) {
        while self
            .lines
            .get(self.at)
            .is_some_and(Line::is_blank_or_comment)
        {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<&Line<'a>> {
        self.lines.get(self.at)
    }

    /// A block mapping whose keys are at `indent`.
    fn mapping(&mut self, indent: usize) -> Result<JsonObject, FrontmatterError> {
        let mut object = Map::new();
        loop {
            self.skip_blank();
            let Some(line) = self.peek() else { break };
            if line.indent < indent {
                break;
            }
            let (number, text) = (line.number, line.text);
            if line.indent > indent {
                return error(number, "unexpected indentation");
            }
            if text == "-" || text.starts_with("- ") {
                return error(number, "a sequence item where a key was expected");
            }
            let (key, rest) = key_and_rest(text, number)?;
            if object.contains_key(&key) {
                return error(number, format!("the key {key:?} appears twice"));
            }
            self.at += 1;
            let value = self.value_after_key(indent, rest, number)?;
            object.insert(key, value);
        }
        Ok(object)
    }

    /// The value of a key at `indent` whose line continues with `rest`.
    fn value_after_key(
        &mut self,
        indent: usize,
        rest: &'a str,
        number: usize,
    ) -> Result<Value, FrontmatterError> {
        let rest = strip_comment(rest);
        if rest.is_empty() {
            self.skip_blank();
            return match self.peek() {
                Some(next) if next.indent > indent => {
                    let child = next.indent;
                    if next.text == "-" || next.text.starts_with("- ") {
                        self.sequence(child).map(Value::Array)
                    } else {
                        self.mapping(child).map(Value::Object)
                    }
                }
                Some(next)
                    if next.indent == indent
                        && (next.text == "-" || next.text.starts_with("- ")) =>
                {
                    self.sequence(indent).map(Value::Array)
                }
                _ => Ok(Value::Null),
            };
        }
        if let Some(header) = rest.strip_prefix(['|', '>']) {
            let folded = rest.starts_with('>');
            return self
                .block_scalar(indent, folded, header, number)
                .map(Value::String);
        }
        if rest.starts_with('"') || rest.starts_with('\'') {
            return quoted(rest, number).map(Value::String);
        }
        if rest.starts_with('[') || rest.starts_with('{') {
            return flow(rest, number);
        }
        let mut text = plain_text(rest, number)?.to_owned();
        // A plain scalar continues on more-indented lines, folded with single spaces.
        let mut continued = false;
        while let Some(next) = self.peek() {
            if next.text.is_empty() || next.indent <= indent || next.text.starts_with('#') {
                break;
            }
            let more = plain_text(next.text, next.number)?;
            text.push(' ');
            text.push_str(more);
            continued = true;
            self.at += 1;
        }
        if continued {
            return Ok(Value::String(text));
        }
        typed(&text, number)
    }

    /// A block sequence whose `-` are at `indent`.
    fn sequence(&mut self, indent: usize) -> Result<Vec<Value>, FrontmatterError> {
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.peek() else { break };
            if line.indent != indent || !(line.text == "-" || line.text.starts_with("- ")) {
                if line.indent > indent {
                    return error(line.number, "unexpected indentation");
                }
                break;
            }
            let number = line.number;
            let item = strip_comment(line.text[1..].trim_start());
            self.at += 1;
            if item.is_empty() {
                return error(number, "an empty or nested sequence item is not supported");
            }
            let value = if item.starts_with('"') || item.starts_with('\'') {
                Value::String(quoted(item, number)?)
            } else if item.starts_with('[') || item.starts_with('{') || item.starts_with(['|', '>'])
            {
                return error(number, "only scalars are supported as sequence items");
            } else {
                if key_and_rest(item, number).is_ok_and(|(_, rest)| !rest.is_empty())
                    || item.ends_with(':')
                {
                    return error(number, "mappings inside sequences are not supported");
                }
                typed(plain_text(item, number)?, number)?
            };
            items.push(value);
        }
        Ok(items)
    }

    /// A `|` or `>` block scalar of a key at `indent`; `header` is what follows the indicator.
    fn block_scalar(
        &mut self,
        indent: usize,
        folded: bool,
        header: &str,
        number: usize,
    ) -> Result<String, FrontmatterError> {
        let chomp = match strip_comment(header) {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            _ => return error(number, "unsupported block scalar header"),
        };
        let mut body: Vec<&str> = Vec::new();
        let mut block_indent = None;
        while let Some(line) = self.peek() {
            if line.text.is_empty() {
                body.push("");
                self.at += 1;
                continue;
            }
            if line.indent <= indent {
                break;
            }
            let at = *block_indent.get_or_insert(line.indent);
            if line.indent < at {
                return error(
                    line.number,
                    "a block scalar line indented less than its first",
                );
            }
            if folded && line.indent > at {
                return error(
                    line.number,
                    "a more-indented line in a folded (`>`) block scalar is not supported",
                );
            }
            // A literal scalar keeps the extra indentation of more-indented lines.
            body.push(&line.raw[at..]);
            self.at += 1;
        }
        // Trailing blank lines belong to the chomping, not to the text.
        let trailing = body.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &body[..body.len() - trailing];
        let mut text = if folded {
            fold(content)
        } else {
            content.join("\n")
        };
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip if !content.is_empty() => text.push('\n'),
            Chomp::Clip => {}
            Chomp::Keep => {
                if !content.is_empty() {
                    text.push('\n');
                }
                text.push_str(&"\n".repeat(trailing));
            }
        }
        Ok(text)
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// Folds the lines of a `>` scalar: lines of one paragraph joined by spaces, an empty line a
/// line break.
fn fold(lines: &[&str]) -> String {
    let mut text = String::new();
    let mut previous_empty = true;
    for (i, line) in lines.iter().enumerate() {
        if line.is_empty() {
            text.push('\n');
            previous_empty = true;
            continue;
        }
        if i > 0 && !previous_empty {
            text.push(' ');
        }
        text.push_str(line);
        previous_empty = false;
    }
    text
}

/// Splits `key: rest` (or `key:` at the end of the line).
fn key_and_rest(text: &str, number: usize) -> Result<(String, &str), FrontmatterError> {
    if text.starts_with('"') || text.starts_with('\'') {
        let end = quoted_end(text, number)?;
        let key = quoted(&text[..end], number)?;
        let rest = &text[end..];
        let Some(rest) = rest.strip_prefix(':') else {
            return error(number, "a quoted key not followed by `:`");
        };
        if !(rest.is_empty() || rest.starts_with(' ')) {
            return error(number, "a key's `:` must be followed by a space");
        }
        return Ok((key, rest.trim_start()));
    }
    if text.starts_with(['?', '&', '*', '!', '|', '>', '%', '@', '`', '[', '{', '#']) {
        return error(number, "unsupported YAML syntax where a key was expected");
    }
    let split = text
        .match_indices(':')
        .find(|(i, _)| text[i + 1..].is_empty() || text[i + 1..].starts_with(' '));
    let Some((i, _)) = split else {
        return error(number, "expected `key: value`");
    };
    let key = text[..i].trim_end();
    if key.is_empty() {
        return error(number, "an empty key");
    }
    Ok((key.to_owned(), text[i + 1..].trim_start()))
}

/// Removes a ` #` comment from a plain value (not from inside quotes: callers handle those).
fn strip_comment(text: &str) -> &str {
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #") {
        Some(i) if !text.starts_with('"') && !text.starts_with('\'') => text[..i].trim_end(),
        _ => text,
    }
}

/// The text of a plain scalar, refusing what YAML would read as something else.
fn plain_text(text: &str, number: usize) -> Result<&str, FrontmatterError> {
    let text = strip_comment(text);
    if text.starts_with([
        '&', '*', '!', '%', '@', '`', '|', '>', '[', ']', '{', '}', ',',
    ]) {
        return error(
            number,
            "unsupported YAML syntax (anchor, alias, tag or indicator)",
        );
    }
    if text.starts_with("- ") || text.starts_with("? ") {
        return error(number, "unsupported YAML syntax");
    }
    if text.contains(": ") || text.ends_with(':') {
        return error(
            number,
            "a plain value containing `: ` (quote it to use it as text)",
        );
    }
    Ok(text)
}

/// Where a quoted scalar that starts `text` ends (the byte after its closing quote).
fn quoted_end(text: &str, number: usize) -> Result<usize, FrontmatterError> {
    let quote = text.as_bytes()[0];
    let bytes = text.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return Ok(i + 1),
            _ => i += 1,
        }
    }
    error(
        number,
        "an unterminated quoted value (multi-line quotes are not supported)",
    )
}

/// A single- or double-quoted scalar taking the whole of `text` (a comment may follow).
fn quoted(text: &str, number: usize) -> Result<String, FrontmatterError> {
    let end = quoted_end(text, number)?;
    let after = text[end..].trim_start();
    if !(after.is_empty() || after.starts_with('#')) {
        return error(number, "text after a quoted value");
    }
    let inner = &text[1..end - 1];
    if text.starts_with('\'') {
        return Ok(inner.replace("''", "'"));
    }
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next() {
            Some('\\') => '\\',
            Some('"') => '"',
            Some('/') => '/',
            Some('n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some('0') => '\0',
            Some(' ') => ' ',
            Some(kind @ ('x' | 'u' | 'U')) => {
                let digits = match kind {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.by_ref().take(digits).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == digits);
                match code.and_then(char::from_u32) {
                    Some(c) => c,
                    None => return error(number, format!("an invalid escape \\{kind}{hex}")),
                }
            }
            other => {
                return error(
                    number,
                    format!("an unsupported escape \\{}", other.unwrap_or(' ')),
                );
            }
        };
        out.push(escaped);
    }
    Ok(out)
}

/// A flow collection: `[]`, `{}`, or a flow sequence of scalars.
fn flow(text: &str, number: usize) -> Result<Value, FrontmatterError> {
    let text = strip_flow_comment(text);
    if text == "{}" {
        return Ok(Value::Object(Map::new()));
    }
    let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else {
        return error(
            number,
            "only `[]`, `{}` and flow sequences of scalars are supported",
        );
    };
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (item, after) = if rest.starts_with('"') || rest.starts_with('\'') {
            let end = quoted_end(rest, number)?;
            (Value::String(quoted(&rest[..end], number)?), &rest[end..])
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let plain = rest[..end].trim();
            if plain.is_empty() || plain.contains(['[', ']', '{', '}']) {
                return error(number, "only scalars are supported in a flow sequence");
            }
            (typed(plain_text(plain, number)?, number)?, &rest[end..])
        };
        items.push(item);
        let after = after.trim_start();
        rest = match after.strip_prefix(',') {
            Some(more) => more.trim_start(),
            None if after.is_empty() => after,
            None => return error(number, "expected `,` in a flow sequence"),
        };
    }
    Ok(Value::Array(items))
}

/// A flow collection with any trailing ` # comment` removed.
fn strip_flow_comment(text: &str) -> &str {
    let close = text.rfind([']', '}']).map_or(text.len(), |i| i + 1);
    let after = text[close..].trim_start();
    if after.is_empty() || after.starts_with('#') {
        &text[..close]
    } else {
        text
    }
}

/// Types a plain scalar as the YAML 1.2 core schema does.
fn typed(text: &str, number: usize) -> Result<Value, FrontmatterError> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let lower = text.to_ascii_lowercase();
    if matches!(lower.trim_start_matches(['+', '-']), ".inf" | ".nan") {
        return error(number, "infinity and NaN have no JSON form");
    }
    if let Some(hex) = text.strip_prefix("0x")
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return integer(i64::from_str_radix(hex, 16).ok(), number);
    }
    if let Some(octal) = text.strip_prefix("0o")
        && !octal.is_empty()
        && octal.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return integer(i64::from_str_radix(octal, 8).ok(), number);
    }
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return integer(text.parse::<i64>().ok(), number);
    }
    if is_float(digits) {
        return match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => error(number, "a number out of range"),
        };
    }
    Ok(Value::String(text.to_owned()))
}

fn integer(value: Option<i64>, number: usize) -> Result<Value, FrontmatterError> {
    match value {
        Some(n) => Ok(Value::Number(n.into())),
        None => error(number, "an integer out of range"),
    }
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, the core schema's float form.
fn is_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.bytes().all(|b| b.is_ascii_digit())
                && !(whole.is_empty() && fraction.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exponent_ok && (mantissa.contains('.') || exponent.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(yaml: &str) -> Value {
        Value::Object(parse(&format!("---\n{yaml}\n---\nbody\n")).unwrap())
    }

    fn refused(yaml: &str) -> FrontmatterError {
        parse(&format!("---\n{yaml}\n---\n")).unwrap_err()
    }

    #[test]
    fn reads_the_agent_skills_fields() {
        let value = read(
            "name: pdf-processing\n\
             description: Extract, fill, and assemble PDF documents\n\
             license: Apache-2.0\n\
             allowed-tools: Bash(git:*) Read\n\
             metadata:\n  version: \"2.1.0\"\n  author: 'O''Brien'\n  # a comment\n  pages: 12\n",
        );
        assert_eq!(
            value,
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "allowed-tools": "Bash(git:*) Read",
                "metadata": {"version": "2.1.0", "author": "O'Brien", "pages": 12}
            })
        );
    }

    #[test]
    fn types_plain_scalars_like_yaml() {
        let value = read("a: true\nb: ~\nc: 1.5\nd: -3\ne: 0x1f\nf: 1e3\ng: 1.2.3\nh:\ni: yes");
        assert_eq!(
            value,
            json!({"a": true, "b": null, "c": 1.5, "d": -3, "e": 31, "f": 1000.0,
                   "g": "1.2.3", "h": null, "i": "yes"})
        );
    }

    #[test]
    fn reads_block_scalars_sequences_and_continued_lines() {
        let value = read(
            "literal: |\n  one\n  two\n\nfolded: >-\n  one\n  two\n\n  three\nlist:\n  - a\n  - \"b c\"\nflow: [x, 'y', 2]\nempty: []\n\
             long: first part\n  second part",
        );
        assert_eq!(
            value,
            json!({
                "literal": "one\ntwo\n",
                "folded": "one two\nthree",
                "list": ["a", "b c"],
                "flow": ["x", "y", 2],
                "empty": [],
                "long": "first part second part"
            })
        );
    }

    #[test]
    fn refuses_what_it_does_not_read_exactly() {
        assert!(refused("a: &x 1").message.contains("anchor"));
        assert!(refused("a: *x").message.contains("anchor"));
        assert!(refused("a: !tag x").message.contains("tag"));
        assert!(refused("a: 1\na: 2").message.contains("twice"));
        assert!(refused("a: b: c").message.contains("quote"));
        assert!(refused("a: {b: 1}").message.contains("flow"));
        assert!(refused("a: .inf").message.contains("NaN"));
        assert_eq!(refused("a: 1\n\tb: 2").line, 3);
        assert!(parse("no front matter").is_err());
        assert!(
            parse("---\nname: x\n").is_err(),
            "an unclosed block is refused"
        );
    }

    #[test]
    fn splits_like_the_agent_skills_format() {
        assert_eq!(
            split("\u{feff}---\nname: a\n---\nbody"),
            Some(("name: a", 2))
        );
        assert_eq!(split("---\r\nname: a\r\n---  \r\n"), Some(("name: a", 2)));
        assert_eq!(split("---\n---\n"), Some(("", 2)));
        assert_eq!(split("text\n---\nname: a\n---\n"), None);
    }
}
