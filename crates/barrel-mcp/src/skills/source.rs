//! Where skills come from: a folder on disk, or files given in memory, and the limits that
//! bound reading them.
//!
//! A folder is read once, when the server is built, into memory: what a client is sent is
//! exactly what was hashed, and no request ever touches the file system. Reading it is
//! defensive: hidden entries (names starting with `.`) are skipped; a symbolic link is
//! followed only to a regular file inside the folder (a link out of the folder, or to a
//! directory, is refused); anything that is neither a file nor a directory (a socket, a FIFO, a
//! device) is refused; and every size, count and depth is capped by [`SkillsConfig`].

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::Error;

/// The limits and options of a skills source. Every field has a documented default.
#[derive(Debug, Clone)]
pub struct SkillsConfig {
    /// The most files one skill may have, its `SKILL.md` included. Default 512, the
    /// extension's limit; a skill with more is refused.
    pub max_files_per_skill: usize,
    /// The largest total size of one skill's files, in bytes. Default 16 MiB, the extension's
    /// limit; a larger skill is refused.
    pub max_skill_bytes: u64,
    /// The largest single file, in bytes. Default 16 MiB.
    pub max_file_bytes: u64,
    /// The largest total size of everything read from the source (it is held in memory), in
    /// bytes. Default 64 MiB.
    pub max_total_bytes: u64,
    /// The most files read from the source; directories count too while a folder is walked.
    /// Default 8192.
    pub max_files: usize,
    /// The most skills served. Default 1024.
    pub max_skills: usize,
    /// The deepest directory nesting read under the folder. Default 16.
    pub max_depth: usize,
    /// Entries per page of `skills/list` and `resources/directory/read`. Default 50. Zero
    /// means one page with everything.
    pub page_size: usize,
    /// Serve `resources/directory/read` and declare `directoryRead: true`. Default true.
    pub directory_read: bool,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            max_files_per_skill: barrel_mcp_types::skills::MAX_SKILL_FILES,
            max_skill_bytes: barrel_mcp_types::skills::MAX_SKILL_BYTES,
            max_file_bytes: 16 * 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
            max_files: 8192,
            max_skills: 1024,
            max_depth: 16,
            page_size: 50,
            directory_read: true,
        }
    }
}

/// Where a server's skills come from: each skill is a directory holding a `SKILL.md` (whose
/// front matter names and describes it) and any other files. Skills may be grouped in
/// directories (`acme/billing/refunds/SKILL.md` is the skill `refunds` at the path
/// `acme/billing/refunds`) and may nest.
///
/// ```
/// use barrel_mcp::skills::SkillsSource;
///
/// let source = SkillsSource::files().file(
///     "git-workflow/SKILL.md",
///     "---\nname: git-workflow\ndescription: Our Git conventions\n---\n\nBranch from main.\n",
/// );
/// let server = barrel_mcp::server::Server::builder().skills(source).build();
/// assert!(server.is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct SkillsSource {
    folder: Option<PathBuf>,
    files: Vec<(String, Vec<u8>)>,
    pub(crate) config: SkillsConfig,
}

/// One file read from a source: its `/`-separated path relative to the source's root.
pub(crate) struct SourceFile {
    pub(crate) path: String,
    pub(crate) bytes: Vec<u8>,
}

impl SkillsSource {
    /// The skills in the folder `path` (read when the server is built). A file outside every
    /// skill directory (a `README.md` at the top) is not served.
    pub fn folder(path: impl Into<PathBuf>) -> Self {
        Self {
            folder: Some(path.into()),
            files: Vec::new(),
            config: SkillsConfig::default(),
        }
    }

    /// Skills given file by file with [`SkillsSource::file`] (embedded in the binary, generated).
    pub fn files() -> Self {
        Self {
            folder: None,
            files: Vec::new(),
            config: SkillsConfig::default(),
        }
    }

    /// Adds a file at the `/`-separated `path` (`git-workflow/SKILL.md`), besides the folder's
    /// files if this source has a folder (a path both give is refused).
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), bytes.into()));
        self
    }

    /// Sets the limits and options.
    pub fn config(mut self, config: SkillsConfig) -> Self {
        self.config = config;
        self
    }

    /// Reads every file of the source, checking paths and limits.
    pub(crate) fn read(&self) -> Result<Vec<SourceFile>, Error> {
        let mut reader = Reader {
            config: &self.config,
            files: Vec::new(),
            total: 0,
            directories: 0,
        };
        if let Some(folder) = &self.folder {
            reader.folder(folder)?;
        }
        for (path, bytes) in &self.files {
            check_path(path)?;
            reader.add(path.clone(), bytes.clone())?;
        }
        reader.files.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(pair) = reader.files.windows(2).find(|w| w[0].path == w[1].path) {
            return Err(refused(format!("the file {} is given twice", pair[0].path)));
        }
        Ok(reader.files)
    }
}

fn refused(message: String) -> Error {
    Error::Definition(format!("skills: {message}"))
}

/// Checks a relative path given in memory: `/`-separated, no empty, `.` or `..` segment, no
/// backslash or control character, no leading `/`.
fn check_path(path: &str) -> Result<(), Error> {
    let bad = path.is_empty()
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
        || path.chars().any(|c| c == '\\' || c.is_control());
    if bad {
        return Err(refused(format!(
            "the path {path:?} is not a relative path of plain segments"
        )));
    }
    Ok(())
}

struct Reader<'a> {
    config: &'a SkillsConfig,
    files: Vec<SourceFile>,
    total: u64,
    /// Directories walked so far (they count against `max_files` with the files).
    directories: usize,
}

impl Reader<'_> {
    fn add(&mut self, path: String, bytes: Vec<u8>) -> Result<(), Error> {
        let size = bytes.len() as u64;
        if size > self.config.max_file_bytes {
            return Err(refused(format!(
                "{path} is {size} bytes, more than the limit of {} (SkillsConfig::max_file_bytes)",
                self.config.max_file_bytes
            )));
        }
        self.total += size;
        if self.total > self.config.max_total_bytes {
            return Err(refused(format!(
                "the files add up to more than {} bytes (SkillsConfig::max_total_bytes)",
                self.config.max_total_bytes
            )));
        }
        if self.files.len() + self.directories >= self.config.max_files {
            return Err(refused(format!(
                "more than {} files (SkillsConfig::max_files)",
                self.config.max_files
            )));
        }
        self.files.push(SourceFile { path, bytes });
        Ok(())
    }

    fn folder(&mut self, path: &Path) -> Result<(), Error> {
        let root = fs::canonicalize(path)
            .map_err(|e| refused(format!("cannot open the folder {}: {e}", path.display())))?;
        if !root.is_dir() {
            return Err(refused(format!("{} is not a folder", path.display())));
        }
        self.directory(&root, &root, "", 0)
    }

    fn directory(
        &mut self,
        root: &Path,
        dir: &Path,
        prefix: &str,
        depth: usize,
    ) -> Result<(), Error> {
        if depth > self.config.max_depth {
            return Err(refused(format!(
                "{prefix} is nested more than {} directories deep (SkillsConfig::max_depth)",
                self.config.max_depth
            )));
        }
        let read = fs::read_dir(dir)
            .map_err(|e| refused(format!("cannot read {}: {e}", dir.display())))?;
        for entry in read {
            let entry =
                entry.map_err(|e| refused(format!("cannot read {}: {e}", dir.display())))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(refused(format!(
                    "a file name in {} is not UTF-8",
                    dir.display()
                )));
            };
            if name.starts_with('.') {
                continue;
            }
            let relative = if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("{prefix}/{name}")
            };
            check_path(&relative)?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| refused(format!("cannot stat {relative}: {e}")))?;
            if kind.is_dir() {
                self.directories += 1;
                if self.files.len() + self.directories > self.config.max_files {
                    return Err(refused(format!(
                        "more than {} files and directories (SkillsConfig::max_files)",
                        self.config.max_files
                    )));
                }
                self.directory(root, &path, &relative, depth + 1)?;
            } else if kind.is_file() {
                let (bytes, opened) = self.read_file(&path, &relative)?;
                // The entry was a regular file when listed: refuse one swapped for a link (or
                // anything else) before it was opened.
                same_file(&entry, &opened, &relative)?;
                self.add(relative, bytes)?;
            } else if kind.is_symlink() {
                let target = fs::canonicalize(&path).map_err(|e| {
                    refused(format!(
                        "the symbolic link {relative} cannot be followed: {e}"
                    ))
                })?;
                if !target.starts_with(root) {
                    return Err(refused(format!(
                        "the symbolic link {relative} points outside the skills folder"
                    )));
                }
                if !target.is_file() {
                    return Err(refused(format!(
                        "the symbolic link {relative} does not point to a regular file"
                    )));
                }
                let (bytes, _) = self.read_file(&target, &relative)?;
                self.add(relative, bytes)?;
            } else {
                return Err(refused(format!(
                    "{relative} is neither a file nor a directory"
                )));
            }
        }
        Ok(())
    }

    /// Reads a regular file, never more than the limit (a file growing while read is caught),
    /// and returns what was read with the metadata of the file actually opened.
    fn read_file(&self, path: &Path, relative: &str) -> Result<(Vec<u8>, fs::Metadata), Error> {
        let limit = self.config.max_file_bytes;
        let file =
            fs::File::open(path).map_err(|e| refused(format!("cannot open {relative}: {e}")))?;
        let metadata = file
            .metadata()
            .map_err(|e| refused(format!("cannot stat {relative}: {e}")))?;
        if !metadata.is_file() {
            return Err(refused(format!("{relative} is not a regular file")));
        }
        let length = metadata.len();
        if length > limit {
            return Err(refused(format!(
                "{relative} is {length} bytes, more than the limit of {limit} (SkillsConfig::max_file_bytes)"
            )));
        }
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| refused(format!("cannot read {relative}: {e}")))?;
        Ok((bytes, metadata))
    }
}

/// Checks that the file opened is the one `entry` listed (same device and inode), so a file
/// swapped for a symbolic link between the listing and the opening is refused.
#[cfg(unix)]
fn same_file(entry: &fs::DirEntry, opened: &fs::Metadata, relative: &str) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt as _;
    let listed = entry
        .metadata()
        .map_err(|e| refused(format!("cannot stat {relative}: {e}")))?;
    if (listed.dev(), listed.ino()) != (opened.dev(), opened.ino()) {
        return Err(refused(format!(
            "{relative} changed while the folder was read"
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn same_file(_: &fs::DirEntry, _: &fs::Metadata, _: &str) -> Result<(), Error> {
    Ok(())
}
