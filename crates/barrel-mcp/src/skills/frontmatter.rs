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

mod scalar;

use std::fmt;

use barrel_mcp_types::JsonObject;
use serde_json::{Map, Value};

use scalar::{flow, plain_text, quoted, quoted_end, strip_comment, typed};

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

#[cfg(test)]
mod tests;
