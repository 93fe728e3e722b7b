//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`): serving a folder of
//! Agent Skills over MCP, and loading them, verified, from a server.
//!
//! A skill is a directory with a `SKILL.md` (YAML front matter with `name` and `description`,
//! then instructions) and any supporting files. Each file is a resource at
//! `skill://<skill-path>/<file-path>`; `skills/list` and `skills/get` describe each skill by the
//! URI of its `SKILL.md`, its front matter, and every file with a SHA-256 digest and a size.
//!
//! **Serving.** [`ServerBuilder::skills`](crate::server::ServerBuilder::skills) takes a
//! [`SkillsSource`] (a folder, or files in memory), reads and checks it once, and serves it:
//!
//! ```no_run
//! use barrel_mcp::server::Server;
//! use barrel_mcp::skills::SkillsSource;
//!
//! # async fn run() -> barrel_mcp::Result<()> {
//! let server = Server::builder()
//!     .name("skills-demo", "1.0")
//!     .skills(SkillsSource::folder("./skills"))
//!     .build()?;
//! server.serve_stdio().await
//! # }
//! ```
//!
//! **Loading.** [`Client::list_all_skills`](crate::client::Client::list_all_skills) reads the
//! listing only; [`Client::load_skill`](crate::client::Client::load_skill) fetches the skill's
//! `SKILL.md` and verifies it against the entry; [`LoadedSkill::read`] fetches and verifies a
//! supporting file when it is needed. A mismatch is [`Error::Verification`](crate::Error).

mod catalog;
mod digest;
pub mod frontmatter;
mod serve;
mod source;
mod uri;
pub(crate) mod verify;

pub use crate::client::LoadedSkill;
pub use digest::digest;
pub use source::{SkillsConfig, SkillsSource};
pub(crate) use uri::encode_path;
pub use verify::SkillPolicy;
