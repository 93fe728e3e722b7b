//! `skills` and `skill`: the skills extension (SEP-2640) from the command line.
//!
//! `skills` lists the server's skills from `skills/list` alone (nothing is fetched); `skill
//! NAME` loads one skill (its `SKILL.md`, verified against its entry: size, digest, front
//! matter) and prints it, with `--file PATH` printing supporting files, each verified too. A
//! verification failure exits 1 and prints nothing of the content.

use barrel_mcp::client::Client;
use barrel_mcp::types::skills::SkillEntry;

use crate::client_commands::{fail, out, print_json};

/// `skills`: one line per skill (name, description), or the entries as JSON.
pub(crate) async fn list(client: &Client, json: bool) -> anyhow::Result<()> {
    let skills = client.list_all_skills().await?;
    if json {
        return print_json(&serde_json::json!({ "skills": skills }));
    }
    for skill in skills {
        out!(
            "{:<16} {:<3} {}",
            skill.name().unwrap_or("?"),
            file_count(&skill),
            skill.description().unwrap_or_default()
        );
    }
    Ok(())
}

fn file_count(skill: &SkillEntry) -> String {
    match &skill.resources {
        barrel_mcp::types::skills::SkillResources::Files(files) => files.len().to_string(),
        barrel_mcp::types::skills::SkillResources::Dynamic => "dyn".into(),
    }
}

/// The entry named `name`: a `SKILL.md` URI (looked up with `skills/get`), else a skill name
/// from the listing (one match only).
async fn find(client: &Client, name: &str) -> anyhow::Result<SkillEntry> {
    if name.contains("://") {
        return Ok(client.get_skill(name).await?);
    }
    let mut matches: Vec<SkillEntry> = client
        .list_all_skills()
        .await?
        .into_iter()
        .filter(|s| s.name() == Some(name))
        .collect();
    match matches.len() {
        0 => Err(fail(
            1,
            format!("no skill named {name:?} in the server's listing"),
        )),
        1 => Ok(matches.remove(0)),
        _ => {
            let uris: Vec<&str> = matches.iter().map(|s| s.uri.as_str()).collect();
            Err(fail(
                1,
                format!(
                    "{} skills are named {name:?}; give one URI: {}",
                    matches.len(),
                    uris.join(", ")
                ),
            ))
        }
    }
}

/// `skill NAME [--file PATH]...`: loads the skill, verified, and prints its `SKILL.md` and the
/// files asked for.
pub(crate) async fn load(
    client: &Client,
    name: &str,
    files: &[String],
    json: bool,
) -> anyhow::Result<()> {
    let entry = find(client, name).await?;
    let skill = client.load_skill(&entry).await?;
    let mut read = Vec::new();
    for path in files {
        let bytes = skill.read(path).await?;
        read.push((path.clone(), bytes));
    }
    if json {
        let files: Vec<serde_json::Value> = read
            .iter()
            .map(|(path, bytes)| {
                serde_json::json!({ "path": path, "text": String::from_utf8_lossy(bytes) })
            })
            .collect();
        return print_json(&serde_json::json!({
            "skill": skill.entry(),
            "skillMd": skill.skill_md(),
            "files": files,
        }));
    }
    out!("# {} ({}), verified", skill.name(), entry.uri);
    let width = skill.files().iter().map(|f| f.uri.len()).max().unwrap_or(0);
    for file in skill.files() {
        out!("#   {:<width$}  {:>8} bytes", file.uri, file.size);
    }
    out!("{}", skill.skill_md());
    for (path, bytes) in read {
        out!("# --- {path}");
        match String::from_utf8(bytes) {
            Ok(text) => out!("{text}"),
            Err(e) => out!("[{} bytes of binary data]", e.as_bytes().len()),
        }
    }
    Ok(())
}
