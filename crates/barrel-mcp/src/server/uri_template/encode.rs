//! Percent-encoding and the expansion algorithm of RFC 6570 (its Appendix A).

use super::{Operator, TemplateValue, VarSpec, Variables};

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// ALPHA / DIGIT / "-" / "." / "_" / "~".
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// gen-delims and sub-delims of RFC 3986.
fn is_reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

/// True when `bytes[i..]` starts with `%` and two hex digits.
pub(super) fn is_pct_triplet(bytes: &[u8], i: usize) -> bool {
    bytes.get(i) == Some(&b'%')
        && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
        && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
}

/// Appends `value`, percent-encoding every byte outside the allowed set. With
/// `allow_reserved`, reserved characters and existing `%XX` triplets are kept.
fn encode_into(out: &mut String, value: &str, allow_reserved: bool) {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if is_unreserved(b) || (allow_reserved && is_reserved(b)) {
            out.push(char::from(b));
        } else if allow_reserved && is_pct_triplet(bytes, i) {
            out.push_str(&value[i..i + 3]);
            i += 3;
            continue;
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0F)]));
        }
        i += 1;
    }
}

/// A template literal as it appears in an expansion: URI characters are copied, anything else
/// (spaces, quotes, non-ASCII, a stray `%`) is percent-encoded.
pub(super) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    encode_into(&mut out, text, true);
    out
}

/// Percent-decodes `text`; `None` when the bytes are not UTF-8. A `%` not followed by two hex
/// digits is kept as it is.
pub(super) fn decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if is_pct_triplet(bytes, i) {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether a value counts as defined (RFC 6570 §2.3: empty lists and maps do not).
fn is_defined(value: &TemplateValue) -> bool {
    match value {
        TemplateValue::String(_) => true,
        TemplateValue::List(items) => !items.is_empty(),
        TemplateValue::Map(pairs) => !pairs.is_empty(),
    }
}

/// Expands one expression into `out`.
pub(super) fn expand_expr(out: &mut String, op: Operator, specs: &[VarSpec], vars: &Variables) {
    let reserved = op.allows_reserved();
    let mut first = true;
    for spec in specs {
        let Some(value) = vars.get(&spec.name).filter(|v| is_defined(v)) else {
            continue;
        };
        if first {
            out.push_str(op.first());
            first = false;
        } else {
            out.push(op.sep());
        }
        match value {
            TemplateValue::String(s) => {
                if op.named() {
                    push_name(out, op, &spec.name, s.is_empty());
                }
                let s = match spec.prefix {
                    Some(n) => s.char_indices().nth(n).map_or(s.as_str(), |(i, _)| &s[..i]),
                    None => s.as_str(),
                };
                encode_into(out, s, reserved);
            }
            TemplateValue::List(items) if spec.explode => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(op.sep());
                    }
                    if op.named() {
                        push_name(out, op, &spec.name, item.is_empty());
                    }
                    encode_into(out, item, reserved);
                }
            }
            TemplateValue::Map(pairs) if spec.explode => {
                for (i, (key, val)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(op.sep());
                    }
                    encode_into(out, key, reserved);
                    if op.named() && val.is_empty() {
                        out.push_str(op.if_empty());
                    } else {
                        out.push('=');
                        encode_into(out, val, reserved);
                    }
                }
            }
            TemplateValue::List(items) => {
                if op.named() {
                    push_name(out, op, &spec.name, false);
                }
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    encode_into(out, item, reserved);
                }
            }
            TemplateValue::Map(pairs) => {
                if op.named() {
                    push_name(out, op, &spec.name, false);
                }
                for (i, (key, val)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    encode_into(out, key, reserved);
                    out.push(',');
                    encode_into(out, val, reserved);
                }
            }
        }
    }
}

/// Writes `name=` (or `name` plus the operator's empty marker when the value is empty).
fn push_name(out: &mut String, op: Operator, name: &str, empty: bool) {
    out.push_str(name);
    if empty {
        out.push_str(op.if_empty());
    } else {
        out.push('=');
    }
}
