//! Tests of exposed names: globs and filters, the servers file, collisions, prefix modes,
//! renames, length limits and prefix sanitizing.

use super::*;

#[test]
fn globs_match_runs_of_any_characters() {
    for (pattern, name) in [
        ("*", ""),
        ("*", "anything"),
        ("echo", "echo"),
        ("trigger-*", "trigger-long-running"),
        ("*_read_*", "fs_read_file"),
        ("a*b*c", "aXXbYYc"),
        ("a*a", "aaa"),
        ("**", "x"),
    ] {
        assert!(glob_matches(pattern, name), "{pattern} ~ {name}");
    }
    for (pattern, name) in [
        ("echo", "echo2"),
        ("echo", "ech"),
        ("trigger-*", "trigger"),
        ("a*b*c", "aXXbYY"),
        ("", "x"),
    ] {
        assert!(!glob_matches(pattern, name), "{pattern} !~ {name}");
    }
    // Many stars against a long near-miss stay fast (no exponential backtracking).
    let name = "a".repeat(2_000);
    assert!(!glob_matches(&format!("{}b", "*a".repeat(50)), &name));
}

#[test]
fn a_deny_wins_and_an_allow_list_admits_only_its_own() {
    let open = NamePolicy::new();
    assert!(open.exposes_tool("anything"));
    let policy = NamePolicy::new()
        .allow(["fs_*", "echo"])
        .deny(["fs_write*"]);
    assert!(policy.exposes_tool("fs_read"));
    assert!(policy.exposes_tool("echo"));
    assert!(!policy.exposes_tool("fs_write_file"));
    assert!(!policy.exposes_tool("shell"));
}

#[test]
fn a_servers_file_entry_gives_its_policy_and_bad_keys_are_named() {
    let entry = serde_json::json!({
        "command": "x", "prefix": "gh",
        "tools": {"allow": ["*"], "deny": ["delete_*"], "rename": {"search": "find"}}
    });
    let policy = NamePolicy::from_entry(&entry).unwrap();
    assert_eq!(policy.prefix.as_deref(), Some("gh"));
    assert_eq!(policy.allow.as_deref(), Some(&["*".to_owned()][..]));
    assert_eq!(policy.deny, ["delete_*"]);
    assert_eq!(policy.renames["search"], "find");
    let plain = NamePolicy::from_entry(&serde_json::json!({"command": "x"})).unwrap();
    assert!(plain.prefix.is_none() && plain.allow.is_none() && plain.deny.is_empty());
    // The list shape of other hosts: the tools to allow; `[]` allows none.
    let listed = NamePolicy::from_entry(&serde_json::json!({"tools": ["get_*"]})).unwrap();
    assert!(listed.exposes_tool("get_issue") && !listed.exposes_tool("delete_issue"));
    let none = NamePolicy::from_entry(&serde_json::json!({"tools": []})).unwrap();
    assert!(!none.exposes_tool("get_issue"));
    for (bad, key) in [
        (serde_json::json!({"prefix": 3}), "prefix"),
        (serde_json::json!({"tools": 3}), "tools"),
        (serde_json::json!({"tools": [1]}), "tools"),
        (serde_json::json!({"tools": {"deny": "x"}}), "tools.deny"),
        (serde_json::json!({"tools": {"allow": [1]}}), "tools.allow"),
        (
            serde_json::json!({"tools": {"rename": {"a": 1}}}),
            "tools.rename.a",
        ),
    ] {
        let error = NamePolicy::from_entry(&bad).unwrap_err().to_string();
        assert!(error.contains(key), "{error}");
    }
}

fn table(entries: &[(&str, &str)]) -> NameTable {
    NameTable::build(entries.iter().copied(), &HashMap::new(), DEFAULT_MAX_LEN).unwrap()
}

const HOSTILE: [&str; 9] = [
    "search",
    "search.code",
    "search_code",
    "weather:get",
    "日本語のツール",
    "",
    "__init__",
    "9lives",
    "a-very-long-name-that-goes-on-and-on-and-on-well-past-what-any-provider-accepts-for-a-tool-name-at-all-really-it-does",
];

#[test]
fn every_name_is_valid_for_every_provider_and_reversible() {
    let mut entries: Vec<(&str, &str)> = HOSTILE.iter().map(|n| ("github", *n)).collect();
    entries.extend(HOSTILE.iter().map(|n| ("My Server.v2", *n)));
    let names = table(&entries);
    assert_eq!(names.len(), entries.len(), "nothing dropped");
    for (server, raw) in &entries {
        let exposed = names.exposed(server, raw).unwrap();
        assert!(is_valid(exposed, 64), "{exposed}");
        assert_eq!(names.resolve(exposed), Some((*server, *raw)));
    }
    assert_eq!(names.exposed("github", "search"), Some("github__search"));
    assert_eq!(
        names.exposed("My Server.v2", "search"),
        Some("my_server_v2__search")
    );
}

#[test]
fn sanitized_collisions_get_a_suffix_each() {
    let names = table(&[("gh", "search.code"), ("gh", "search_code")]);
    let a = names.exposed("gh", "search.code").unwrap();
    let b = names.exposed("gh", "search_code").unwrap();
    assert_ne!(a, b);
    assert!(a.starts_with("gh__search_code_") && b.starts_with("gh__search_code_"));
    assert_eq!(a.len(), "gh__search_code".len() + SUFFIX_LEN);
}

#[test]
fn names_do_not_move_when_servers_are_added_or_reordered() {
    let first = table(&[("a", "x"), ("b", "y"), ("a", "long.name")]);
    let second = table(&[("c", "x"), ("a", "long.name"), ("b", "y"), ("a", "x")]);
    for (server, raw) in [("a", "x"), ("b", "y"), ("a", "long.name")] {
        assert_eq!(first.exposed(server, raw), second.exposed(server, raw));
    }
}

#[test]
fn prefix_modes_and_renames() {
    let mut policies = HashMap::new();
    policies.insert(
        "weather".to_owned(),
        NamePolicy::new().mode(PrefixMode::OnCollision),
    );
    policies.insert(
        "files".to_owned(),
        NamePolicy::new()
            .prefix("fs")
            .rename("read_file", "open_document"),
    );
    let names = NameTable::build(
        [
            ("weather", "forecast"),
            ("weather", "search"),
            ("files", "read_file"),
            ("files", "search"),
        ],
        &policies,
        64,
    )
    .unwrap();
    assert_eq!(names.exposed("weather", "forecast"), Some("forecast"));
    assert_eq!(names.exposed("weather", "search"), Some("weather__search"));
    assert_eq!(names.exposed("files", "read_file"), Some("open_document"));
    assert_eq!(names.exposed("files", "search"), Some("fs__search"));
    // Never: a collision between servers is an error naming both.
    let mut never = HashMap::new();
    never.insert("a".to_owned(), NamePolicy::new().mode(PrefixMode::Never));
    never.insert("b".to_owned(), NamePolicy::new().mode(PrefixMode::Never));
    let error = NameTable::build([("a", "x"), ("b", "x")], &never, 64).unwrap_err();
    assert!(error.to_string().contains("\"a\"") && error.to_string().contains("\"b\""));
    // A bad prefix or rename is refused.
    let mut bad = HashMap::new();
    bad.insert("a".to_owned(), NamePolicy::new().prefix("Bad__Prefix"));
    assert!(NameTable::build([("a", "x")], &bad, 64).is_err());
    let mut bad = HashMap::new();
    bad.insert("a".to_owned(), NamePolicy::new().rename("x", "no spaces"));
    assert!(NameTable::build([("a", "x")], &bad, 64).is_err());
}

#[test]
fn a_lower_limit_is_kept() {
    let names = NameTable::build(
        [("server", "a_name_of_forty_characters_or_so_0123456")],
        &HashMap::new(),
        32,
    )
    .unwrap();
    let exposed = names
        .exposed("server", "a_name_of_forty_characters_or_so_0123456")
        .unwrap();
    assert!(exposed.len() <= 32 && is_valid(exposed, 32), "{exposed}");
}

#[test]
fn hostile_sets_are_named_or_refused_clearly() {
    // The same entry twice is one entry.
    let names = table(&[("a", "x"), ("a", "x")]);
    assert_eq!(names.len(), 1);
    // A raw name made to look like another's suffixed name does not take it.
    let suffix_of = table(&[("gh", "a.b"), ("gh", "a_b")]);
    let taken = suffix_of.exposed("gh", "a.b").unwrap()["gh__".len()..].to_owned();
    let names = table(&[("gh", "a.b"), ("gh", "a_b"), ("gh", taken.as_str())]);
    assert_eq!(names.len(), 3);
    let all: std::collections::HashSet<&str> = names.iter().map(|(e, _, _)| e).collect();
    assert_eq!(all.len(), 3);
    // Two servers with one prefix, and two renames to one name, are refused.
    let shared = NameTable::build([("GitHub", "x"), ("github", "y")], &HashMap::new(), 64);
    assert!(shared.unwrap_err().to_string().contains("prefix"));
    let uri_clash = NameTable::build([("a_b", "x"), ("a-b", "y")], &HashMap::new(), 64);
    assert!(uri_clash.is_err());
    let mut policies = HashMap::new();
    policies.insert(
        "a".to_owned(),
        NamePolicy::new().rename("x", "same").rename("y", "same"),
    );
    let renamed = NameTable::build([("a", "x"), ("a", "y")], &policies, 64);
    assert!(renamed.unwrap_err().to_string().contains("renamed"));
}

#[test]
fn prefixes_are_sanitized() {
    assert_eq!(sanitize_prefix("GitHub"), "github");
    assert_eq!(sanitize_prefix("my.server__v2"), "my_server_v2");
    assert_eq!(sanitize_prefix("42"), "s42");
    assert_eq!(sanitize_prefix(""), "s");
    assert_eq!(
        sanitize_prefix("a-very-long-server-identifier"),
        "a-very-long-server-i"
    );
}
