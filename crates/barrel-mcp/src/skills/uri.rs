//! Skill resource URIs: `skill://<skill-path>/<file-path>`, each path segment percent-encoded
//! where RFC 3986 does not allow it as is, and the MIME type of a file from its extension.

/// Bytes kept as they are in a segment: RFC 3986 unreserved characters and sub-delimiters
/// (so the first segment is a valid `reg-name`), plus `@` and `:` elsewhere.
fn keep(byte: u8, authority: bool) -> bool {
    byte.is_ascii_alphanumeric()
        || matches!(
            byte,
            b'-' | b'.'
                | b'_'
                | b'~'
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
        || (!authority && matches!(byte, b'@' | b':'))
}

/// Percent-encodes one path segment.
fn encode_segment(segment: &str, authority: bool, out: &mut String) {
    for &byte in segment.as_bytes() {
        if keep(byte, authority) {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(byte >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(byte & 0x0f)]));
        }
    }
}

/// The URI of the `/`-separated relative `path` under `skill://`.
pub(crate) fn skill_uri(path: &str) -> String {
    let mut uri = String::from("skill://");
    encode_segments(path, true, &mut uri);
    uri
}

/// A `/`-separated path with each segment percent-encoded, for use after a skill's root.
pub(crate) fn encode_path(path: &str) -> String {
    let mut out = String::new();
    encode_segments(path, false, &mut out);
    out
}

fn encode_segments(path: &str, first_is_authority: bool, out: &mut String) {
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        encode_segment(segment, first_is_authority && i == 0, out);
    }
}

/// The MIME type of a file, from its extension; `text` says whether its bytes are UTF-8.
pub(crate) fn mime_type(name: &str, text: bool) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "rs" => "text/x-rust",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "pdf" => "application/pdf",
        _ if text => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_what_a_uri_cannot_carry() {
        assert_eq!(
            skill_uri("pdf-processing/references/FORMS.md"),
            "skill://pdf-processing/references/FORMS.md"
        );
        assert_eq!(skill_uri("a b/c@d:e.md"), "skill://a%20b/c@d:e.md");
        assert_eq!(skill_uri("x@y/z"), "skill://x%40y/z");
        assert_eq!(skill_uri("é/f"), "skill://%C3%A9/f");
    }

    #[test]
    fn knows_common_types() {
        assert_eq!(mime_type("SKILL.md", true), "text/markdown");
        assert_eq!(mime_type("extract.py", true), "text/x-python");
        assert_eq!(mime_type("data.bin", false), "application/octet-stream");
        assert_eq!(mime_type("NOTES", true), "text/plain");
    }
}
