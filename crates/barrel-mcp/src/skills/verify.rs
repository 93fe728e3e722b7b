//! Checking what a server sent against the entry that describes it: an entry's own shape and
//! limits before anything is fetched, each file's size and digest when it is read, and the
//! front matter of a `SKILL.md` against the entry's.

use barrel_mcp_types::skills::{
    SkillEntry, SkillFile, SkillResources, is_valid_digest, skill_root, validate_skill_name,
};
use barrel_mcp_types::{JsonObject, ReadResourceResult, ResourceContents};
use base64::Engine as _;

use super::digest::digest;
use super::frontmatter;
use crate::Error;

/// What a client accepts when it loads a skill. Every field has a documented default.
#[derive(Debug, Clone)]
pub struct SkillPolicy {
    /// The most files a skill may list, its `SKILL.md` included. Default 512, the extension's
    /// limit (a host must load skills up to it and may go beyond).
    pub max_files: usize,
    /// The largest total size of a skill's files, in bytes. Default 16 MiB, the extension's
    /// limit. For a dynamic skill, it caps what is read.
    pub max_bytes: u64,
    /// Load skills whose `resources` is `"dynamic"` (no digests, nothing can be verified but
    /// the front matter). Default false.
    pub allow_dynamic: bool,
}

impl Default for SkillPolicy {
    fn default() -> Self {
        Self {
            max_files: barrel_mcp_types::skills::MAX_SKILL_FILES,
            max_bytes: barrel_mcp_types::skills::MAX_SKILL_BYTES,
            allow_dynamic: false,
        }
    }
}

fn failed(message: String) -> Error {
    Error::Verification(message)
}

/// Checks an entry before anything of it is fetched: a `SKILL.md` URI ending in the skill's
/// name, a valid name, `resources` complete (the `SKILL.md` listed once, every file under the
/// skill's root, each once, well-formed digests) and within `policy`.
pub(crate) fn check_entry(entry: &SkillEntry, policy: &SkillPolicy) -> Result<(), Error> {
    let uri = &entry.uri;
    let Some(root) = skill_root(uri) else {
        return Err(failed(format!("{uri} is not the URI of a SKILL.md")));
    };
    let segment = root.rsplit('/').next().unwrap_or_default();
    match entry.name() {
        Some(name) if name == segment => {}
        Some(name) => {
            return Err(failed(format!(
                "{uri}: the entry's name {name:?} is not the last segment of its URI"
            )));
        }
        None => {
            return Err(failed(format!(
                "{uri}: the entry's front matter has no name"
            )));
        }
    }
    validate_skill_name(segment).map_err(|e| failed(format!("{uri}: {e}")))?;
    let files = match &entry.resources {
        SkillResources::Dynamic if policy.allow_dynamic => return Ok(()),
        SkillResources::Dynamic => {
            return Err(failed(format!(
                "{uri}: the skill's resources are dynamic, so its content cannot be verified \
                 (SkillPolicy::allow_dynamic)"
            )));
        }
        SkillResources::Files(files) => files,
    };
    if files.len() > policy.max_files {
        return Err(failed(format!(
            "{uri}: the skill lists {} files, more than the limit of {} (SkillPolicy::max_files)",
            files.len(),
            policy.max_files
        )));
    }
    let total: u64 = files.iter().map(|f| f.size).fold(0, u64::saturating_add);
    if total > policy.max_bytes {
        return Err(failed(format!(
            "{uri}: the skill's files add up to {total} bytes, more than the limit of {} \
             (SkillPolicy::max_bytes)",
            policy.max_bytes
        )));
    }
    let inside = format!("{root}/");
    let mut seen = std::collections::HashSet::new();
    for file in files {
        if !seen.insert(file.uri.as_str()) {
            return Err(failed(format!("{uri}: {} is listed twice", file.uri)));
        }
        if !file.uri.starts_with(&inside) || file.uri.contains("/../") || file.uri.ends_with("/..")
        {
            return Err(failed(format!(
                "{uri}: {} is not a file of the skill",
                file.uri
            )));
        }
        if !is_valid_digest(&file.digest) {
            return Err(failed(format!(
                "{uri}: the digest of {} is not sha256 in lowercase hex",
                file.uri
            )));
        }
    }
    if !seen.contains(uri.as_str()) {
        return Err(failed(format!(
            "{uri}: the entry does not list its SKILL.md"
        )));
    }
    Ok(())
}

/// The raw bytes of the file `uri` in a `resources/read` result.
pub(crate) fn bytes_of(result: &ReadResourceResult, uri: &str) -> Result<Vec<u8>, Error> {
    let mut matching = result.contents.iter().filter(|c| c.uri() == uri);
    let (Some(contents), None) = (matching.next(), matching.next()) else {
        return Err(failed(format!(
            "reading {uri} did not return exactly one content for it"
        )));
    };
    match contents {
        ResourceContents::Text(text) => Ok(text.text.as_bytes().to_vec()),
        ResourceContents::Blob(blob) => base64::engine::general_purpose::STANDARD
            .decode(&blob.blob)
            .map_err(|e| failed(format!("{uri}: the blob is not base64: {e}"))),
    }
}

/// Checks bytes read for `file`: the size first, then the digest.
pub(crate) fn check_file(file: &SkillFile, bytes: &[u8]) -> Result<(), Error> {
    if bytes.len() as u64 != file.size {
        return Err(failed(format!(
            "{} is {} bytes, but the skill's entry says {}",
            file.uri,
            bytes.len(),
            file.size
        )));
    }
    let actual = digest(bytes);
    if actual != file.digest {
        return Err(failed(format!(
            "{} has the digest {actual}, but the skill's entry says {}",
            file.uri, file.digest
        )));
    }
    Ok(())
}

/// JSON equality where numbers compare by value: `1000` and `1000.0` are the same number (a
/// YAML `1e3` is one or the other depending on the server's JSON encoder).
fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// Parses a `SKILL.md` and compares its front matter with the entry's, field by field.
pub(crate) fn check_frontmatter(entry: &SkillEntry, text: &str) -> Result<JsonObject, Error> {
    let parsed =
        frontmatter::parse(text).map_err(|e| failed(format!("{}: front matter {e}", entry.uri)))?;
    let keys: std::collections::BTreeSet<&String> =
        parsed.keys().chain(entry.frontmatter.keys()).collect();
    for key in keys {
        let same = match (parsed.get(key), entry.frontmatter.get(key)) {
            (Some(a), Some(b)) => same_value(a, b),
            (a, b) => a == b,
        };
        if !same {
            return Err(failed(format!(
                "{}: the front matter field {key:?} differs from the skill's entry",
                entry.uri
            )));
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_everything_else_exactly() {
        assert!(same_value(&json!(1000), &json!(1000.0)));
        assert!(same_value(
            &json!({"a": [1, 2.5]}),
            &json!({"a": [1.0, 2.5]})
        ));
        assert!(!same_value(&json!(1), &json!("1")));
        assert!(!same_value(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!same_value(&json!([1]), &json!([1, 1])));
    }
}
