//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`): `skills/list`,
//! `skills/get` and `resources/directory/read`, the skill entry they carry, and the naming rules
//! and limits the extension fixes.
//!
//! A skill is a directory of files, minimally a `SKILL.md` whose YAML front matter names and
//! describes it; each file is an ordinary resource (`skill://<skill-path>/<file-path>`). An entry
//! describes one skill: the URI of its `SKILL.md`, its front matter as JSON, and its files with a
//! SHA-256 digest and a size each, or `"dynamic"` when the server cannot publish them.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::{CacheScope, Feature, JsonObject, Meta, ProtocolVersion, Resource, Shape};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The extension setting that says `resources/directory/read` is served.
pub const DIRECTORY_READ_SETTING: &str = "directoryRead";

/// `skills/list`.
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get`.
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read`.
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// The conventional URI scheme of skill resources (`skill://`).
pub const SKILL_SCHEME: &str = "skill";

/// The most files one skill may have (its `SKILL.md` included) for every host to load it.
pub const MAX_SKILL_FILES: usize = 512;

/// The largest total size of one skill's files, in bytes (16 MiB), for every host to load it.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// The front matter `metadata` key prefix reserved for MCP extensions.
pub const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// One file of a skill: its URI, the SHA-256 digest of its raw bytes (`sha256:` and 64
/// lowercase hex digits) and its length in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{hex}` of the file's raw bytes.
    pub digest: String,
    /// The file's length in bytes (the bytes the digest covers).
    pub size: u64,
}

/// A skill's files: the complete list, or `"dynamic"` when the server generates them and
/// publishes no digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill, each once, `SKILL.md` included.
    Files(Vec<SkillFile>),
    /// The skill's content is generated; nothing can be verified.
    Dynamic,
}

impl SkillResources {
    /// The listed files (none for a dynamic skill).
    pub fn files(&self) -> &[SkillFile] {
        match self {
            Self::Files(files) => files,
            Self::Dynamic => &[],
        }
    }
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Files(files) => files.serialize(serializer),
            Self::Dynamic => serializer.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(s) if s == "dynamic" => Ok(Self::Dynamic),
            value @ serde_json::Value::Array(_) => serde_json::from_value(value)
                .map(Self::Files)
                .map_err(de::Error::custom),
            other => Err(de::Error::custom(format!(
                "resources must be an array of files or \"dynamic\", not {other}"
            ))),
        }
    }
}

/// One skill: the URI of its `SKILL.md`, its front matter rendered as JSON, and its files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The resource URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` front matter, every field as written (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// The skill's files, or `"dynamic"`.
    pub resources: SkillResources,
}

impl SkillEntry {
    /// `frontmatter.name`, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(|v| v.as_str())
    }

    /// `frontmatter.description`, when it is a string.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(|v| v.as_str())
    }

    /// The skill's root directory URI: its `uri` without the final `/SKILL.md`.
    pub fn root(&self) -> Option<&str> {
        skill_root(&self.uri)
    }
}

/// The root directory URI of a skill whose `SKILL.md` is at `uri` (`None` when `uri` does not
/// end in `/SKILL.md` after a skill path).
pub fn skill_root(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix(SKILL_MD)?.strip_suffix('/')?;
    let (_, path) = root.split_once("://")?;
    (!path.is_empty() && !path.ends_with('/')).then_some(root)
}

/// Params of `skills/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListSkillsParams {
    /// The `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Metadata (the per-request envelope in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Result of `skills/list`: one page of entries (an entry is never split across pages).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills of this page.
    pub skills: Vec<SkillEntry>,
    /// Where the next page starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the listing stays fresh, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the listing (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `skills/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// Metadata (the per-request envelope in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Result of `skills/get`: the entry of one skill, as `skills/list` would list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The skill.
    pub skill: SkillEntry,
    /// How long the entry stays fresh, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may cache the entry (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `resources/directory/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReadDirectoryParams {
    /// The directory's URI (no trailing slash).
    pub uri: String,
    /// The `nextCursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Metadata (the per-request envelope in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Result of `resources/directory/read`: the directory's direct children, subdirectories with
/// the MIME type [`DIRECTORY_MIME_TYPE`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The children of this page.
    pub resources: Vec<Resource>,
    /// Where the next page starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Shape for ListSkillsResult {
    /// Drops the cache hints where the revision lacks them.
    fn shape(&mut self, version: ProtocolVersion) {
        if !version.supports(Feature::CacheHints) {
            self.ttl_ms = None;
            self.cache_scope = None;
        }
    }
}

impl Shape for GetSkillResult {
    /// Drops the cache hints where the revision lacks them.
    fn shape(&mut self, version: ProtocolVersion) {
        if !version.supports(Feature::CacheHints) {
            self.ttl_ms = None;
            self.cache_scope = None;
        }
    }
}

impl Shape for ReadDirectoryResult {
    /// Shapes each child as `resources/list` would.
    fn shape(&mut self, version: ProtocolVersion) {
        self.resources.shape(version);
    }
}

/// Why a skill name breaks the Agent Skills naming rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillNameError {
    /// Empty, or longer than 64 characters.
    #[error("a skill name has 1 to 64 characters, this one has {0}")]
    Length(usize),
    /// A character other than a lowercase ASCII letter, a digit or `-`.
    #[error("a skill name has only lowercase letters, digits and hyphens, not {0:?}")]
    Character(char),
    /// A hyphen at the start or the end, or two in a row.
    #[error("a skill name neither starts nor ends with a hyphen, nor has two in a row")]
    Hyphen,
}

/// Checks a skill name: 1 to 64 characters, lowercase ASCII letters, digits and hyphens, no
/// hyphen first, last or doubled.
pub fn validate_skill_name(name: &str) -> Result<(), SkillNameError> {
    let length = name.chars().count();
    if length == 0 || length > 64 {
        return Err(SkillNameError::Length(length));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(SkillNameError::Character(c));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(SkillNameError::Hyphen);
    }
    Ok(())
}

/// True when `digest` has the form `sha256:` and 64 lowercase hex digits.
pub fn is_valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_agent_skills_rules() {
        assert!(validate_skill_name("pdf-processing").is_ok());
        assert!(validate_skill_name("a").is_ok());
        assert!(validate_skill_name(&"a".repeat(64)).is_ok());
        assert_eq!(
            validate_skill_name(&"a".repeat(65)),
            Err(SkillNameError::Length(65))
        );
        assert_eq!(validate_skill_name(""), Err(SkillNameError::Length(0)));
        assert_eq!(
            validate_skill_name("Pdf"),
            Err(SkillNameError::Character('P'))
        );
        assert_eq!(validate_skill_name("-a"), Err(SkillNameError::Hyphen));
        assert_eq!(validate_skill_name("a-"), Err(SkillNameError::Hyphen));
        assert_eq!(validate_skill_name("a--b"), Err(SkillNameError::Hyphen));
    }

    #[test]
    fn resources_are_an_array_or_dynamic_and_nothing_else() {
        let files: SkillResources = serde_json::from_value(
            json!([{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 3}]),
        )
        .unwrap();
        assert_eq!(files.files().len(), 1);
        let dynamic: SkillResources = serde_json::from_value(json!("dynamic")).unwrap();
        assert_eq!(dynamic, SkillResources::Dynamic);
        assert_eq!(serde_json::to_value(&dynamic).unwrap(), json!("dynamic"));
        assert!(serde_json::from_value::<SkillResources>(json!("static")).is_err());
        assert!(serde_json::from_value::<SkillResources>(json!(null)).is_err());
        let entry: Result<SkillEntry, _> =
            serde_json::from_value(json!({"uri": "skill://a/SKILL.md", "frontmatter": {}}));
        assert!(entry.is_err(), "an entry without resources is invalid");
    }

    #[test]
    fn the_root_of_a_skill_is_its_uri_without_skill_md() {
        assert_eq!(
            skill_root("skill://acme/billing/refunds/SKILL.md"),
            Some("skill://acme/billing/refunds")
        );
        assert_eq!(skill_root("skill://SKILL.md"), None);
        assert_eq!(skill_root("skill://a/README.md"), None);
    }

    #[test]
    fn digests_are_sha256_and_lowercase_hex() {
        assert!(is_valid_digest(&format!("sha256:{}", "0a".repeat(32))));
        assert!(!is_valid_digest(&format!("sha256:{}", "0A".repeat(32))));
        assert!(!is_valid_digest("sha256:00"));
        assert!(!is_valid_digest(&format!("md5:{}", "0a".repeat(32))));
    }
}
