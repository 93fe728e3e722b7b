//! Scalars and flow collections of the front matter: plain values typed as the YAML 1.2 core
//! schema types them, quoted values with their escapes, and flow sequences of scalars.

use serde_json::{Map, Number, Value};

use super::{FrontmatterError, error};

/// Removes a ` #` comment from a plain value (not from inside quotes: callers handle those).
pub(super) fn strip_comment(text: &str) -> &str {
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #") {
        Some(i) if !text.starts_with('"') && !text.starts_with('\'') => text[..i].trim_end(),
        _ => text,
    }
}

/// The text of a plain scalar, refusing what YAML would read as something else.
pub(super) fn plain_text(text: &str, number: usize) -> Result<&str, FrontmatterError> {
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
pub(super) fn quoted_end(text: &str, number: usize) -> Result<usize, FrontmatterError> {
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
pub(super) fn quoted(text: &str, number: usize) -> Result<String, FrontmatterError> {
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
pub(super) fn flow(text: &str, number: usize) -> Result<Value, FrontmatterError> {
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
pub(super) fn typed(text: &str, number: usize) -> Result<Value, FrontmatterError> {
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
