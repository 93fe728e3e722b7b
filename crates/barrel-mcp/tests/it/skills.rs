//! The skills extension (SEP-2640) end to end: a server built from skills in memory or in a
//! folder, and the client listing (page by page), getting, loading and reading them, verified.
//! Tampered content is refused by the client; broken folders (traversal, links out, limits,
//! names) are refused when the server is built; custom requests and declared extensions are
//! the plumbing underneath.

use barrel_mcp::Error;
use barrel_mcp::client::Client;
use barrel_mcp::server::{Ctx, Server};
use barrel_mcp::skills::{SkillPolicy, SkillsConfig, SkillsSource};
use barrel_mcp::types::skills::{
    DIRECTORY_MIME_TYPE, SKILLS_EXTENSION, SkillEntry, SkillResources,
};
use barrel_mcp::types::{ErrorObject, ProtocolVersion, ReadResourceParams, ResourceContents};
use serde_json::{Value, json};

use crate::client::{builder, connect_to};

const PDF_SKILL: &str = "---\nname: pdf-processing\ndescription: Extract text from PDF files\nmetadata:\n  version: \"2.1\"\n---\n\nRead `references/FORMS.md` first.\n";
const FORMS: &str = "# Forms\n\nText fields take a string.\n";
const LOGO: &[u8] = &[0x89, b'P', b'N', b'G', 0, 0xff, 0xfe];

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\nDo the {name} thing.\n")
}

/// `pdf-processing` (with a reference and a binary asset) and `acme/billing/refunds`.
fn source() -> SkillsSource {
    SkillsSource::files()
        .file("pdf-processing/SKILL.md", PDF_SKILL)
        .file("pdf-processing/references/FORMS.md", FORMS)
        .file("pdf-processing/assets/logo.png", LOGO)
        .file(
            "acme/billing/refunds/SKILL.md",
            skill_md("refunds", "Process refund requests"),
        )
}

fn server(source: SkillsSource) -> Server {
    Server::builder()
        .name("skills", "1.0.0")
        .skills(source)
        .build()
        .expect("the skills server builds")
}

async fn client(server: &Server) -> Client {
    connect_to(server, builder(None)).await
}

fn build_error(source: SkillsSource) -> String {
    match Server::builder().skills(source).build() {
        Ok(_) => panic!("the server was built"),
        Err(e) => e.to_string(),
    }
}

fn rpc_code(error: &Error) -> Option<i32> {
    error.as_rpc().map(|e| e.code.0)
}

#[tokio::test]
async fn the_extension_is_declared_with_directory_read_in_2026_only() {
    let server = server(source());
    let modern = client(&server).await;
    let capabilities = modern.capabilities();
    let settings = &capabilities.extensions.as_ref().expect("extensions")[SKILLS_EXTENSION];
    assert_eq!(settings, &json!({ "directoryRead": true }));
    assert!(modern.capabilities().resources.is_some());

    // 2025-11-25 has no capabilities.extensions: nothing is declared, so the client does not
    // call skills/list.
    let old = connect_to(&server, builder(Some(ProtocolVersion::V2025_11_25))).await;
    assert!(!old.supports_skills());
    assert!(old.list_all_skills().await.unwrap_err().is_unsupported());

    let without = server_with(SkillsConfig {
        directory_read: false,
        ..SkillsConfig::default()
    });
    let client = client(&without).await;
    assert_eq!(
        client
            .capabilities()
            .extensions
            .as_ref()
            .expect("extensions")[SKILLS_EXTENSION],
        json!({})
    );
    let refused = client.read_directory("skill://pdf-processing", None).await;
    assert!(refused.unwrap_err().is_unsupported());
}

fn server_with(config: SkillsConfig) -> Server {
    server(source().config(config))
}

#[tokio::test]
async fn skills_list_pages_whole_entries_in_uri_order() {
    let mut many = SkillsSource::files().config(SkillsConfig {
        page_size: 2,
        ..SkillsConfig::default()
    });
    for i in 0..5 {
        let name = format!("skill-{i}");
        many = many.file(format!("{name}/SKILL.md"), skill_md(&name, "A skill"));
    }
    let server = server(many);
    let client = client(&server).await;
    let mut sizes = Vec::new();
    let mut cursor = None;
    loop {
        let page = client.list_skills(cursor).await.expect("a page");
        sizes.push(page.skills.len());
        assert!(page.ttl_ms.is_some() && page.cache_scope.is_some());
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(sizes, [2, 2, 1]);
    let names: Vec<_> = client
        .list_all_skills()
        .await
        .expect("all skills")
        .iter()
        .map(|e| e.name().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        names,
        ["skill-0", "skill-1", "skill-2", "skill-3", "skill-4"]
    );
    let forged = client.list_skills(Some("forged".into())).await.unwrap_err();
    assert_eq!(rpc_code(&forged), Some(-32602));
}

#[tokio::test]
async fn an_entry_lists_every_file_with_digest_and_size_and_get_returns_it() {
    let server = server(source());
    let client = client(&server).await;
    let entries = client.list_all_skills().await.expect("skills");
    let uris: Vec<_> = entries.iter().map(|e| e.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://pdf-processing/SKILL.md"
        ]
    );
    let pdf = &entries[1];
    assert_eq!(
        Value::Object(pdf.frontmatter.clone()),
        json!({"name": "pdf-processing", "description": "Extract text from PDF files",
               "metadata": {"version": "2.1"}})
    );
    let SkillResources::Files(files) = &pdf.resources else {
        panic!("a folder skill has a manifest")
    };
    let listed: Vec<_> = files.iter().map(|f| (f.uri.as_str(), f.size)).collect();
    assert_eq!(
        listed,
        [
            ("skill://pdf-processing/SKILL.md", PDF_SKILL.len() as u64),
            ("skill://pdf-processing/assets/logo.png", LOGO.len() as u64),
            (
                "skill://pdf-processing/references/FORMS.md",
                FORMS.len() as u64
            ),
        ]
    );
    assert_eq!(
        files[2].digest,
        barrel_mcp::skills::digest(FORMS.as_bytes())
    );

    let got = client.get_skill(&pdf.uri).await.expect("skills/get");
    assert_eq!(&got, pdf);
    for unknown in [
        "skill://mcp-nonexistent/SKILL.md",
        "skill://pdf-processing/references/FORMS.md",
        "skill://acme/billing/../../pdf-processing/SKILL.md",
    ] {
        let error = client.get_skill(unknown).await.unwrap_err();
        assert_eq!(rpc_code(&error), Some(-32602), "{unknown}");
    }

    // The SKILL.md resource carries the front matter's name and description.
    let resources = client.list_all_resources().await.expect("resources");
    let skill_md = resources
        .iter()
        .find(|r| r.uri == pdf.uri)
        .expect("SKILL.md is listed");
    assert_eq!(skill_md.name, "pdf-processing");
    assert_eq!(
        skill_md.description.as_deref(),
        Some("Extract text from PDF files")
    );
    assert_eq!(skill_md.mime_type.as_deref(), Some("text/markdown"));
}

#[tokio::test]
async fn loading_fetches_only_skill_md_and_reads_are_verified() {
    let server = server(source());
    let client = client(&server).await;
    let entries = client.list_all_skills().await.expect("skills");
    let skill = client.load_skill(&entries[1]).await.expect("loads");
    assert_eq!(skill.name(), "pdf-processing");
    assert_eq!(skill.skill_md(), PDF_SKILL);
    assert_eq!(skill.body(), "\nRead `references/FORMS.md` first.\n");
    assert_eq!(
        skill
            .read("references/FORMS.md")
            .await
            .expect("a reference"),
        FORMS.as_bytes()
    );
    // A binary file travels as a blob and comes back byte for byte.
    assert_eq!(skill.read("assets/logo.png").await.expect("an asset"), LOGO);
    // A file the entry does not list is refused without being fetched.
    let unlisted = skill.read("references/OTHER.md").await.unwrap_err();
    assert!(unlisted.is_verification(), "{unlisted}");
    let escaped = skill.read("../refunds/SKILL.md").await.unwrap_err();
    assert!(escaped.is_verification(), "{escaped}");
}

/// The entries of `source()` as the honest server lists them.
async fn honest_entries() -> Vec<SkillEntry> {
    client(&server(source()))
        .await
        .list_all_skills()
        .await
        .expect("skills")
}

#[tokio::test]
async fn a_tampered_file_is_refused() {
    let entries = honest_entries().await;
    let pdf = &entries[1];

    // Same size, one byte changed: the digest differs.
    let same_size = PDF_SKILL.replace("first", "FIRST");
    let tampered = server(
        SkillsSource::files()
            .file("pdf-processing/SKILL.md", same_size)
            .file("pdf-processing/references/FORMS.md", FORMS)
            .file("pdf-processing/assets/logo.png", LOGO),
    );
    let error = client(&tampered).await.load_skill(pdf).await.unwrap_err();
    assert!(error.is_verification(), "{error}");
    assert!(error.to_string().contains("digest"), "{error}");

    // Extra bytes: the size differs.
    let longer = format!("{PDF_SKILL}extra\n");
    let tampered = server(SkillsSource::files().file("pdf-processing/SKILL.md", longer));
    let error = client(&tampered).await.load_skill(pdf).await.unwrap_err();
    assert!(error.to_string().contains("bytes"), "{error}");

    // A supporting file changed after loading: refused when read.
    let forms = server(
        SkillsSource::files()
            .file("pdf-processing/SKILL.md", PDF_SKILL)
            .file(
                "pdf-processing/references/FORMS.md",
                FORMS.replace("string", "STRING"),
            ),
    );
    let skill = client(&forms)
        .await
        .load_skill(pdf)
        .await
        .expect("SKILL.md is intact");
    let error = skill.read("references/FORMS.md").await.unwrap_err();
    assert!(error.is_verification(), "{error}");
}

#[tokio::test]
async fn a_front_matter_that_differs_from_the_entry_is_refused() {
    let server = server(source());
    let client = client(&server).await;
    let mut entry = client.list_all_skills().await.expect("skills").remove(1);
    entry
        .frontmatter
        .insert("description".into(), json!("Something else"));
    let error = client.load_skill(&entry).await.unwrap_err();
    assert!(error.is_verification(), "{error}");
    assert!(error.to_string().contains("description"), "{error}");

    let mut dynamic = client.list_all_skills().await.expect("skills").remove(1);
    dynamic.resources = SkillResources::Dynamic;
    assert!(
        client
            .load_skill(&dynamic)
            .await
            .unwrap_err()
            .is_verification()
    );
    let policy = SkillPolicy {
        allow_dynamic: true,
        ..SkillPolicy::default()
    };
    let loaded = client
        .load_skill_with(&dynamic, policy)
        .await
        .expect("allowed");
    assert_eq!(
        loaded.read("references/FORMS.md").await.expect("read"),
        FORMS.as_bytes()
    );
}

#[tokio::test]
async fn an_entry_over_the_limits_is_refused_before_anything_is_read() {
    let entries = honest_entries().await;
    let client = client(&server(source())).await;
    let policy = SkillPolicy {
        max_files: 2,
        ..SkillPolicy::default()
    };
    let error = client
        .load_skill_with(&entries[1], policy)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("max_files"), "{error}");
    let policy = SkillPolicy {
        max_bytes: 10,
        ..SkillPolicy::default()
    };
    let error = client
        .load_skill_with(&entries[1], policy)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("max_bytes"), "{error}");
}

#[tokio::test]
async fn directories_list_their_direct_children() {
    let server = server(source());
    let client = client(&server).await;
    let root = client
        .read_directory("skill://pdf-processing", None)
        .await
        .expect("the skill's root");
    let children: Vec<_> = root
        .resources
        .iter()
        .map(|r| (r.uri.as_str(), r.mime_type.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        children,
        [
            ("skill://pdf-processing/SKILL.md", "text/markdown"),
            ("skill://pdf-processing/assets", DIRECTORY_MIME_TYPE),
            ("skill://pdf-processing/references", DIRECTORY_MIME_TYPE),
        ]
    );
    let references = client
        .read_directory("skill://pdf-processing/references", None)
        .await
        .expect("a subdirectory");
    assert_eq!(references.resources.len(), 1);
    for not_a_directory in [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/nothing",
        "skill://acme",
    ] {
        let error = client
            .read_directory(not_a_directory, None)
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&error), Some(-32602), "{not_a_directory}");
    }
}

#[tokio::test]
async fn reads_outside_the_served_files_find_nothing() {
    let server = server(source());
    let client = client(&server).await;
    for uri in [
        "skill://pdf-processing/../../../etc/passwd",
        "skill://pdf-processing/references/../../pdf-processing/SKILL.md",
        "skill://pdf-processing",
    ] {
        let error = client
            .read_resource(ReadResourceParams::new(uri))
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&error), Some(-32602), "{uri}");
    }
    let read = client
        .read_resource(ReadResourceParams::new("skill://pdf-processing/SKILL.md"))
        .await
        .expect("read");
    let ResourceContents::Text(text) = &read.contents[0] else {
        panic!("SKILL.md is text")
    };
    assert_eq!(text.text, PDF_SKILL);
}

#[test]
fn broken_skills_are_refused_at_build_with_the_rule_they_break() {
    let one = |path: &str, text: &str| SkillsSource::files().file(path, text.to_owned());
    let cases = [
        (one("../evil/SKILL.md", PDF_SKILL), "relative path"),
        (one("a//SKILL.md", PDF_SKILL), "relative path"),
        (one("SKILL.md", PDF_SKILL), "root"),
        (
            one("other-name/SKILL.md", PDF_SKILL),
            "differs from the skill's directory",
        ),
        (
            one("Bad_Name/SKILL.md", &skill_md("Bad_Name", "x")),
            "lowercase",
        ),
        (one("no-fm/SKILL.md", "# no front matter\n"), "front matter"),
        (
            one("no-desc/SKILL.md", "---\nname: no-desc\n---\n"),
            "description",
        ),
        (
            one(
                "reserved/SKILL.md",
                "---\nname: reserved\ndescription: x\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n",
            ),
            "reserved",
        ),
    ];
    for (source, expected) in cases {
        let error = build_error(source);
        assert!(error.contains(expected), "{expected:?} not in {error:?}");
    }
}

#[test]
fn the_limits_of_a_skill_and_of_a_source_are_enforced() {
    let mut crowded = SkillsSource::files().file("crowded/SKILL.md", skill_md("crowded", "x"));
    for i in 0..512 {
        crowded = crowded.file(format!("crowded/f{i}.txt"), "x");
    }
    assert!(build_error(crowded).contains("max_files_per_skill"));

    let big = SkillsSource::files()
        .file("big/SKILL.md", skill_md("big", "x"))
        .file("big/blob.bin", vec![0u8; 2048])
        .config(SkillsConfig {
            max_file_bytes: 1024,
            ..SkillsConfig::default()
        });
    assert!(build_error(big).contains("max_file_bytes"));

    let heavy = SkillsSource::files()
        .file("heavy/SKILL.md", skill_md("heavy", "x"))
        .file("heavy/a.bin", vec![0u8; 600])
        .file("heavy/b.bin", vec![0u8; 600])
        .config(SkillsConfig {
            max_skill_bytes: 1024,
            ..SkillsConfig::default()
        });
    assert!(build_error(heavy).contains("max_skill_bytes"));
}

/// A fresh folder under the test target's scratch directory.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("skills-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("skills/git-workflow/notes")).expect("scratch dir");
    std::fs::write(
        dir.join("skills/git-workflow/SKILL.md"),
        skill_md("git-workflow", "Our Git conventions"),
    )
    .expect("SKILL.md");
    std::fs::write(
        dir.join("skills/git-workflow/notes/branches.md"),
        "main only\n",
    )
    .expect("a note");
    std::fs::write(dir.join("skills/git-workflow/.hidden"), "skipped").expect("hidden");
    dir
}

#[tokio::test]
async fn a_folder_is_served_and_hidden_files_are_skipped() {
    let dir = scratch("folder");
    std::fs::write(dir.join("skills/git-workflow/notes/my notes.md"), "mine\n").expect("a note");
    std::fs::write(dir.join("skills/README.md"), "not a skill file").expect("readme");
    // Files given in memory join the folder's.
    let source = SkillsSource::folder(dir.join("skills"))
        .file("extra/SKILL.md", skill_md("extra", "Given in memory"));
    let server = server(source);
    let client = client(&server).await;
    let entries = client.list_all_skills().await.expect("skills");
    let names: Vec<_> = entries.iter().filter_map(SkillEntry::name).collect();
    assert_eq!(names, ["extra", "git-workflow"]);
    let files: Vec<_> = entries[1]
        .resources
        .files()
        .iter()
        .map(|f| f.uri.as_str())
        .collect();
    assert_eq!(
        files,
        [
            "skill://git-workflow/SKILL.md",
            "skill://git-workflow/notes/branches.md",
            "skill://git-workflow/notes/my%20notes.md"
        ]
    );
    let skill = client.load_skill(&entries[1]).await.expect("loads");
    assert_eq!(
        skill.read("notes/branches.md").await.expect("note"),
        b"main only\n"
    );
    assert_eq!(
        skill.read("notes/my notes.md").await.expect("note"),
        b"mine\n"
    );
    let resources = client.list_all_resources().await.expect("resources");
    assert!(resources.iter().all(|r| !r.uri.contains("README")));
    // Walking counts directories as well as files against the cap.
    let capped = SkillsSource::folder(dir.join("skills")).config(SkillsConfig {
        max_files: 3,
        ..SkillsConfig::default()
    });
    assert!(build_error(capped).contains("max_files"));
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(unix)]
#[test]
fn symbolic_links_out_of_the_folder_are_refused() {
    let dir = scratch("links");
    std::fs::write(dir.join("secret.txt"), "outside").expect("outside file");
    let link = dir.join("skills/git-workflow/secret.txt");
    std::os::unix::fs::symlink(dir.join("secret.txt"), &link).expect("link");
    let error = build_error(SkillsSource::folder(dir.join("skills")));
    assert!(error.contains("outside the skills folder"), "{error}");

    // A link to a file inside the folder is followed; a link to a directory is not.
    std::fs::remove_file(&link).expect("unlink");
    std::os::unix::fs::symlink(dir.join("skills/git-workflow/notes/branches.md"), &link)
        .expect("inner link");
    assert!(
        Server::builder()
            .skills(SkillsSource::folder(dir.join("skills")))
            .build()
            .is_ok()
    );
    std::fs::remove_file(&link).expect("unlink");
    std::os::unix::fs::symlink(dir.join("skills/git-workflow/notes"), &link).expect("dir link");
    let error = build_error(SkillsSource::folder(dir.join("skills")));
    assert!(error.contains("regular file"), "{error}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn custom_requests_answer_after_every_spec_method() {
    let refused = Server::builder()
        .request("tools/call", |_: Ctx, _: Value| async { Ok(json!({})) })
        .build();
    assert!(refused.unwrap_err().to_string().contains("specification"));

    let server = Server::builder()
        .extension("com.example/echo", serde_json::Map::new())
        .request("com.example/echo", |ctx: Ctx, params: Value| async move {
            if params.get("fail").is_some() {
                return Err(ErrorObject::invalid_params("asked to fail"));
            }
            Ok(json!({ "echo": params["text"], "version": ctx.protocol_version().as_str() }))
        })
        .build()
        .expect("server");
    for version in [None, Some(ProtocolVersion::V2025_11_25)] {
        let client = connect_to(&server, builder(version)).await;
        let expected = client.protocol_version().as_str();
        let answer = client
            .custom_request("com.example/echo", json!({ "text": "hi" }))
            .await
            .expect("echo");
        assert_eq!(answer["echo"], "hi");
        assert_eq!(answer["version"], expected);
        let failed = client
            .custom_request("com.example/echo", json!({ "fail": true }))
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&failed), Some(-32602));
        let unknown = client
            .custom_request("com.example/none", ())
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&unknown), Some(-32601));
        // The declaration rides on the capabilities only where the revision has extensions.
        let declared = client.capabilities().extensions.clone().unwrap_or_default();
        assert_eq!(
            declared.get("com.example/echo"),
            version.is_none().then_some(&json!({}))
        );
    }
}

#[tokio::test]
async fn a_nested_skill_is_listed_flat_and_its_files_belong_to_the_enclosing_one_too() {
    let source = SkillsSource::files()
        .file("outer/SKILL.md", skill_md("outer", "The enclosing skill"))
        .file("outer/inner/SKILL.md", skill_md("inner", "A nested skill"))
        .file("outer/inner/notes.md", "nested\n");
    let client = client(&server(source)).await;
    let entries = client.list_all_skills().await.expect("skills");
    let uris: Vec<_> = entries.iter().map(|e| e.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["skill://outer/SKILL.md", "skill://outer/inner/SKILL.md"]
    );
    let outer: Vec<_> = entries[0]
        .resources
        .files()
        .iter()
        .map(|f| f.uri.as_str())
        .collect();
    assert_eq!(
        outer,
        [
            "skill://outer/SKILL.md",
            "skill://outer/inner/SKILL.md",
            "skill://outer/inner/notes.md"
        ]
    );
    assert_eq!(entries[1].resources.files().len(), 2);
}
