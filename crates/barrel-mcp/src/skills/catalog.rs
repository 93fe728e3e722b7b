//! The catalog: the skills found in a source, checked once, with everything a request needs
//! precomputed (entries with digests and sizes, the resources and their contents, the
//! children of every directory).
//!
//! A skill is a directory holding a `SKILL.md`. Its path is the directory's path under the
//! source's root; its name (the last segment) must equal the front matter's `name` and follow the
//! naming rules; its files are every file under its directory, nested skills' included. A
//! broken skill refuses the whole catalog, with an error naming the file and the rule: a server
//! never starts serving half of what its author meant.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use barrel_mcp_types::skills::{
    DIRECTORY_MIME_TYPE, RESERVED_METADATA_PREFIX, SKILL_MD, SkillEntry, SkillFile, SkillResources,
    validate_skill_name,
};
use barrel_mcp_types::{JsonObject, Resource};
use serde_json::Value;

use super::digest::digest;
use super::frontmatter;
use super::source::{SkillsConfig, SkillsSource, SourceFile};
use super::uri::{mime_type, skill_uri};
use crate::Error;

/// One served file: its resource and its bytes.
pub(crate) struct ServedFile {
    pub(crate) resource: Resource,
    pub(crate) bytes: Arc<[u8]>,
    /// The bytes are UTF-8 (served as text, else as a blob).
    pub(crate) text: bool,
}

/// Everything a skills server serves.
pub(crate) struct Catalog {
    /// The skills, ordered by URI.
    pub(crate) entries: Vec<SkillEntry>,
    /// The index of each skill's entry, by the URI of its `SKILL.md`.
    pub(crate) by_uri: HashMap<String, usize>,
    /// The files, by URI.
    pub(crate) files: BTreeMap<String, ServedFile>,
    /// The direct children of each directory at or under a skill's root, by directory URI.
    pub(crate) directories: HashMap<String, Vec<Resource>>,
    /// A number that changes whenever the content does (folded into cursors).
    pub(crate) fingerprint: u64,
    pub(crate) config: SkillsConfig,
}

fn refused(message: String) -> Error {
    Error::Definition(format!("skills: {message}"))
}

impl Catalog {
    /// Reads and checks a source.
    pub(crate) fn load(source: &SkillsSource) -> Result<Self, Error> {
        let files = source.read()?;
        Self::build(files, source.config.clone())
    }

    fn build(files: Vec<SourceFile>, config: SkillsConfig) -> Result<Self, Error> {
        let roots: BTreeSet<String> = files
            .iter()
            .filter_map(|f| {
                if f.path == SKILL_MD {
                    return Some(String::new());
                }
                f.path
                    .strip_suffix(&format!("/{SKILL_MD}"))
                    .map(str::to_owned)
            })
            .collect();
        if roots.contains("") {
            return Err(refused(
                "SKILL.md at the root of the source: a skill is a directory with a SKILL.md in it"
                    .into(),
            ));
        }
        if roots.len() > config.max_skills {
            return Err(refused(format!(
                "{} skills, more than the limit of {} (SkillsConfig::max_skills)",
                roots.len(),
                config.max_skills
            )));
        }
        let by_path: BTreeMap<&str, &SourceFile> =
            files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut entries = Vec::new();
        let mut frontmatters = HashMap::new();
        for root in &roots {
            let (entry, frontmatter) = skill_entry(root, &files, &by_path, &config)?;
            frontmatters.insert(root.clone(), frontmatter);
            entries.push(entry);
        }
        entries.sort_by(|a, b| a.uri.cmp(&b.uri));
        let by_uri = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.uri.clone(), i))
            .collect();

        // Serve every file under some skill; a file outside every skill is not a skill file.
        let in_skill = |path: &str| {
            roots
                .iter()
                .any(|root| path.starts_with(root.as_str()) && path[root.len()..].starts_with('/'))
        };
        let mut served = BTreeMap::new();
        let mut directories: HashMap<String, BTreeMap<String, Resource>> = HashMap::new();
        for file in files.iter().filter(|f| in_skill(&f.path)) {
            let uri = skill_uri(&file.path);
            let text = std::str::from_utf8(&file.bytes).is_ok();
            let (parent, name) = file.path.rsplit_once('/').unwrap_or(("", &file.path));
            let mut resource =
                Resource::new(uri.clone(), name).with_mime_type(mime_type(name, text));
            resource.size = Some(file.bytes.len() as u64);
            if name == SKILL_MD
                && let Some(frontmatter) = frontmatters.get(parent)
            {
                // A skill's SKILL.md is named and described by its front matter.
                if let Some(Value::String(n)) = frontmatter.get("name") {
                    resource.name = n.clone();
                }
                if let Some(Value::String(d)) = frontmatter.get("description") {
                    resource.description = Some(d.clone());
                }
            }
            add_to_directories(&mut directories, &roots, &file.path, &resource);
            served.insert(
                uri,
                ServedFile {
                    resource,
                    bytes: Arc::from(file.bytes.as_slice()),
                    text,
                },
            );
        }
        let directories = directories
            .into_iter()
            .map(|(uri, children)| (uri, children.into_values().collect()))
            .collect();
        let fingerprint = fingerprint(&entries);
        Ok(Self {
            entries,
            by_uri,
            files: served,
            directories,
            fingerprint,
            config,
        })
    }
}

/// Records `resource` (at `path`) as a child of its directory, and each directory between it
/// and the skill roots as a child of its own parent.
fn add_to_directories(
    directories: &mut HashMap<String, BTreeMap<String, Resource>>,
    roots: &BTreeSet<String>,
    path: &str,
    resource: &Resource,
) {
    let mut child_path = path.to_owned();
    let mut child = resource.clone();
    while let Some((parent, _)) = child_path.rsplit_once('/') {
        let parent = parent.to_owned();
        let under_a_root = roots
            .iter()
            .any(|root| parent == *root || parent.starts_with(&format!("{root}/")));
        if !under_a_root {
            break;
        }
        let siblings = directories.entry(skill_uri(&parent)).or_default();
        siblings.insert(child.uri.clone(), child);
        let name = parent.rsplit_once('/').map_or(parent.as_str(), |(_, n)| n);
        child = Resource::new(skill_uri(&parent), name).with_mime_type(DIRECTORY_MIME_TYPE);
        child_path = parent;
    }
}

/// The entry of the skill whose directory is `root`, and its front matter.
fn skill_entry(
    root: &str,
    files: &[SourceFile],
    by_path: &BTreeMap<&str, &SourceFile>,
    config: &SkillsConfig,
) -> Result<(SkillEntry, JsonObject), Error> {
    let skill_md_path = format!("{root}/{SKILL_MD}");
    let Some(skill_md) = by_path.get(skill_md_path.as_str()) else {
        return Err(refused(format!("{skill_md_path} is missing")));
    };
    let text = std::str::from_utf8(&skill_md.bytes)
        .map_err(|_| refused(format!("{skill_md_path} is not UTF-8 text")))?;
    let frontmatter = frontmatter::parse(text)
        .map_err(|e| refused(format!("{skill_md_path}: front matter {e}")))?;
    check_frontmatter(root, &skill_md_path, &frontmatter)?;

    let prefix = format!("{root}/");
    let mut resources = vec![SkillFile {
        uri: skill_uri(&skill_md_path),
        digest: digest(&skill_md.bytes),
        size: skill_md.bytes.len() as u64,
    }];
    let mut total = skill_md.bytes.len() as u64;
    for file in files
        .iter()
        .filter(|f| f.path.starts_with(&prefix) && f.path != skill_md_path)
    {
        total += file.bytes.len() as u64;
        resources.push(SkillFile {
            uri: skill_uri(&file.path),
            digest: digest(&file.bytes),
            size: file.bytes.len() as u64,
        });
    }
    if resources.len() > config.max_files_per_skill {
        return Err(refused(format!(
            "the skill {root} has {} files, more than the limit of {} \
             (SkillsConfig::max_files_per_skill)",
            resources.len(),
            config.max_files_per_skill
        )));
    }
    if total > config.max_skill_bytes {
        return Err(refused(format!(
            "the skill {root} has {total} bytes of files, more than the limit of {} \
             (SkillsConfig::max_skill_bytes)",
            config.max_skill_bytes
        )));
    }
    let entry = SkillEntry {
        uri: skill_uri(&skill_md_path),
        frontmatter: frontmatter.clone(),
        resources: SkillResources::Files(resources),
    };
    Ok((entry, frontmatter))
}

/// The front matter rules: `name` a valid skill name equal to the directory's name,
/// `description` a non-empty string, no `metadata` key under the reserved prefix.
fn check_frontmatter(root: &str, path: &str, frontmatter: &JsonObject) -> Result<(), Error> {
    let directory = root.rsplit_once('/').map_or(root, |(_, n)| n);
    let Some(Value::String(name)) = frontmatter.get("name") else {
        return Err(refused(format!(
            "{path}: the front matter has no `name` string"
        )));
    };
    validate_skill_name(name).map_err(|e| refused(format!("{path}: name {name:?}: {e}")))?;
    if name != directory {
        return Err(refused(format!(
            "{path}: the name {name:?} differs from the skill's directory {directory:?}"
        )));
    }
    match frontmatter.get("description") {
        Some(Value::String(d)) if !d.trim().is_empty() => {}
        _ => {
            return Err(refused(format!(
                "{path}: the front matter has no non-empty `description` string"
            )));
        }
    }
    if let Some(Value::Object(metadata)) = frontmatter.get("metadata")
        && let Some(key) = metadata
            .keys()
            .find(|k| k.starts_with(RESERVED_METADATA_PREFIX))
    {
        return Err(refused(format!(
            "{path}: the metadata key {key:?} uses the prefix {RESERVED_METADATA_PREFIX}, \
             reserved for MCP extensions"
        )));
    }
    Ok(())
}

/// FNV-1a over every entry's URI and digests: a cursor from another content is refused.
fn fingerprint(entries: &[SkillEntry]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for entry in entries {
        feed(entry.uri.as_bytes());
        for file in entry.resources.files() {
            feed(file.digest.as_bytes());
        }
    }
    hash
}
