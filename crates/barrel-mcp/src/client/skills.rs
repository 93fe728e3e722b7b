//! The skills extension from the client's side: list, get, load, and read a loaded skill's
//! files, verifying everything against the skill's entry.
//!
//! Nothing of a skill is fetched before it is loaded: listing reads only the listing, and
//! loading fetches the `SKILL.md` alone. A supporting file is fetched when
//! [`LoadedSkill::read`] asks for it. Every file read is checked against the entry the skill
//! was loaded from: its size, then its SHA-256 digest, and for the `SKILL.md` its front matter,
//! field by field. A file the entry does not list is never fetched. Any mismatch is
//! [`Error::Verification`] and the content is not returned.

use barrel_mcp_types::skills::{
    DIRECTORY_READ_SETTING, GetSkillParams, GetSkillResult, ListSkillsParams, ListSkillsResult,
    RESOURCES_DIRECTORY_READ, ReadDirectoryParams, ReadDirectoryResult, SKILLS_EXTENSION,
    SKILLS_GET, SKILLS_LIST, SkillEntry, SkillFile, SkillResources,
};
use barrel_mcp_types::{JsonObject, ReadResourceParams};

use super::Client;
use super::options::CallOptions;
use crate::skills::SkillPolicy;
use crate::skills::verify;
use crate::{Error, Result};

impl Client {
    /// True when the server declares the skills extension.
    ///
    /// Example: [`LoadedSkill`].
    pub fn supports_skills(&self) -> bool {
        self.skills_settings().is_some()
    }

    fn skills_settings(&self) -> Option<serde_json::Value> {
        self.capabilities()
            .extensions
            .as_ref()
            .and_then(|e| e.get(SKILLS_EXTENSION))
            .cloned()
    }

    fn require_skills(&self) -> Result<()> {
        if self.supports_skills() {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "the server does not declare the {SKILLS_EXTENSION} extension"
            )))
        }
    }

    /// `skills/list`: one page of skill entries.
    ///
    /// Example: [`LoadedSkill`].
    pub async fn list_skills(&self, cursor: Option<String>) -> Result<ListSkillsResult> {
        self.require_skills()?;
        let params = serde_json::to_value(ListSkillsParams { cursor, meta: None })?;
        self.call_method(SKILLS_LIST, Some(params), &CallOptions::new())
            .await
    }

    /// Every skill entry, following `nextCursor` up to
    /// [`ClientConfig::max_pages`](super::ClientConfig::max_pages); a repeated cursor is an
    /// error. The listing may be partial: a skill missing from it can still be had with
    /// [`Client::get_skill`].
    ///
    /// Example: [`LoadedSkill`].
    pub async fn list_all_skills(&self) -> Result<Vec<SkillEntry>> {
        let mut skills = Vec::new();
        let mut cursor = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..self.config().max_pages.max(1) {
            let page = self.list_skills(cursor.take()).await?;
            skills.extend(page.skills);
            match page.next_cursor {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.clone()) {
                        return Err(Error::Protocol(format!(
                            "{SKILLS_LIST} repeated the cursor {next:?}"
                        )));
                    }
                    cursor = Some(next);
                }
                _ => return Ok(skills),
            }
        }
        Err(Error::Protocol(format!(
            "{SKILLS_LIST} has more than {} pages (ClientConfig::max_pages)",
            self.config().max_pages
        )))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`, listed or not.
    ///
    /// Example: [`LoadedSkill`].
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry> {
        self.require_skills()?;
        let params = serde_json::to_value(GetSkillParams {
            uri: uri.to_owned(),
            meta: None,
        })?;
        let result: GetSkillResult = self
            .call_method(SKILLS_GET, Some(params), &CallOptions::new())
            .await?;
        Ok(result.skill)
    }

    /// `resources/directory/read`: one page of a directory's direct children. Refused before
    /// sending unless the server declares `directoryRead: true`.
    ///
    /// Example: [`LoadedSkill`].
    pub async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<String>,
    ) -> Result<ReadDirectoryResult> {
        let declared = self
            .skills_settings()
            .as_ref()
            .and_then(|s| s.get(DIRECTORY_READ_SETTING))
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        if !declared {
            return Err(Error::Unsupported(format!(
                "the server does not declare directoryRead, so {RESOURCES_DIRECTORY_READ} is not served"
            )));
        }
        let params = serde_json::to_value(ReadDirectoryParams {
            uri: uri.to_owned(),
            cursor,
            meta: None,
        })?;
        self.call_method(RESOURCES_DIRECTORY_READ, Some(params), &CallOptions::new())
            .await
    }

    /// Loads the skill `entry` describes, with the default [`SkillPolicy`].
    ///
    /// Example: [`LoadedSkill`].
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill> {
        self.load_skill_with(entry, SkillPolicy::default()).await
    }

    /// Loads a skill: checks the entry (its shape, completeness and the policy's limits), then
    /// fetches its `SKILL.md` alone and verifies its size, digest and front matter against the
    /// entry. Any mismatch is [`Error::Verification`], and nothing is returned.
    ///
    /// Example: [`LoadedSkill`].
    pub async fn load_skill_with(
        &self,
        entry: &SkillEntry,
        policy: SkillPolicy,
    ) -> Result<LoadedSkill> {
        verify::check_entry(entry, &policy)?;
        let bytes = self.read_skill_bytes(entry, &entry.uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| {
            Error::Verification(format!("{}: SKILL.md is not UTF-8 text", entry.uri))
        })?;
        let frontmatter = verify::check_frontmatter(entry, &text)?;
        let read = text.len() as u64;
        Ok(LoadedSkill {
            client: self.clone(),
            entry: entry.clone(),
            policy,
            skill_md: text,
            frontmatter,
            dynamic_bytes: std::sync::atomic::AtomicU64::new(read),
        })
    }

    /// Reads the file `uri` of `entry` and verifies it when the entry lists it.
    async fn read_skill_bytes(&self, entry: &SkillEntry, uri: &str) -> Result<Vec<u8>> {
        let result = self.read_resource(ReadResourceParams::new(uri)).await?;
        let bytes = verify::bytes_of(&result, uri)?;
        if let SkillResources::Files(files) = &entry.resources {
            let Some(file) = files.iter().find(|f| f.uri == uri) else {
                return Err(Error::Verification(format!(
                    "{uri} is not listed in the skill's entry"
                )));
            };
            verify::check_file(file, &bytes)?;
        }
        Ok(bytes)
    }
}

/// A skill loaded and verified: its entry, its `SKILL.md`, and a way to read its other files.
///
/// # Example
///
/// ```no_run
/// use barrel_mcp::client::Client;
///
/// # async fn run(client: Client) -> barrel_mcp::Result<()> {
/// if !client.supports_skills() {
///     return Ok(());
/// }
/// for entry in client.list_all_skills().await? {
///     let skill = client.load_skill(&entry).await?;
///     println!("{}: {} bytes of instructions", skill.name(), skill.body().len());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct LoadedSkill {
    client: Client,
    entry: SkillEntry,
    policy: SkillPolicy,
    skill_md: String,
    frontmatter: JsonObject,
    /// For a dynamic skill: the bytes read so far, capped by the policy.
    dynamic_bytes: std::sync::atomic::AtomicU64,
}

impl LoadedSkill {
    /// The entry the skill was loaded from (what every read is verified against).
    ///
    /// Example: [`LoadedSkill`].
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The skill's name.
    ///
    /// Example: [`LoadedSkill`].
    pub fn name(&self) -> &str {
        self.entry.name().unwrap_or_default()
    }

    /// The verified `SKILL.md`, front matter included.
    ///
    /// Example: [`LoadedSkill`].
    pub fn skill_md(&self) -> &str {
        &self.skill_md
    }

    /// The `SKILL.md` after its front matter.
    ///
    /// Example: [`LoadedSkill`].
    pub fn body(&self) -> &str {
        body_of(&self.skill_md)
    }

    /// The front matter, as read from the `SKILL.md` (equal to the entry's).
    ///
    /// Example: [`LoadedSkill`].
    pub fn frontmatter(&self) -> &JsonObject {
        &self.frontmatter
    }

    /// The files the entry lists (none for a dynamic skill).
    ///
    /// Example: [`LoadedSkill`].
    pub fn files(&self) -> &[SkillFile] {
        self.entry.resources.files()
    }

    /// Reads a file of the skill, named by its path relative to the skill's root
    /// (`references/FORMS.md`) or by its full URI, and verifies it. A file the entry does not
    /// list is [`Error::Verification`] without being fetched.
    ///
    /// Example: [`LoadedSkill`].
    pub async fn read(&self, path: &str) -> Result<Vec<u8>> {
        let root = self.entry.root().unwrap_or_default();
        let uri = if path.contains("://") {
            path.to_owned()
        } else {
            let path = path.trim_start_matches('/');
            let plain = format!("{root}/{path}");
            // The entry's URIs are percent-encoded: `my notes.md` is listed as `my%20notes.md`.
            let encoded = format!("{root}/{}", crate::skills::encode_path(path));
            if self.files().iter().any(|f| f.uri == encoded) {
                encoded
            } else {
                plain
            }
        };
        let dynamic = matches!(self.entry.resources, SkillResources::Dynamic);
        if !dynamic && !self.files().iter().any(|f| f.uri == uri) {
            return Err(Error::Verification(format!(
                "{uri} is not listed in the entry of the skill {}",
                self.entry.uri
            )));
        }
        if dynamic && !uri.starts_with(&format!("{root}/")) {
            return Err(Error::Verification(format!(
                "{uri} is not a file of the skill {}",
                self.entry.uri
            )));
        }
        let bytes = self.client.read_skill_bytes(&self.entry, &uri).await?;
        if dynamic {
            let total = self
                .dynamic_bytes
                .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed)
                + bytes.len() as u64;
            if total > self.policy.max_bytes {
                return Err(Error::Verification(format!(
                    "the dynamic skill {} has read more than {} bytes (SkillPolicy::max_bytes)",
                    self.entry.uri, self.policy.max_bytes
                )));
            }
        }
        Ok(bytes)
    }
}

/// The text after the front matter block.
fn body_of(text: &str) -> &str {
    let Some((yaml, _)) = crate::skills::frontmatter::split(text) else {
        return text;
    };
    // The YAML is a slice of `text`: the body starts after the closing `---` line.
    let start = yaml.as_ptr() as usize - text.as_ptr() as usize + yaml.len();
    let rest = &text[start..];
    let rest = rest.trim_start_matches(['\r', '\n']);
    let rest = rest.strip_prefix("---").unwrap_or(rest);
    match rest.find('\n') {
        Some(i) => &rest[i + 1..],
        None => "",
    }
}
