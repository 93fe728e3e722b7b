//! The front matter parser against the YAML it reads and the YAML it refuses.

use super::*;
use serde_json::json;

fn read(yaml: &str) -> Value {
    Value::Object(parse(&format!("---\n{yaml}\n---\nbody\n")).unwrap())
}

fn refused(yaml: &str) -> FrontmatterError {
    parse(&format!("---\n{yaml}\n---\n")).unwrap_err()
}

#[test]
fn reads_the_agent_skills_fields() {
    let value = read(
        "name: pdf-processing\n\
         description: Extract, fill, and assemble PDF documents\n\
         license: Apache-2.0\n\
         allowed-tools: Bash(git:*) Read\n\
         metadata:\n  version: \"2.1.0\"\n  author: 'O''Brien'\n  # a comment\n  pages: 12\n",
    );
    assert_eq!(
        value,
        json!({
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents",
            "license": "Apache-2.0",
            "allowed-tools": "Bash(git:*) Read",
            "metadata": {"version": "2.1.0", "author": "O'Brien", "pages": 12}
        })
    );
}

#[test]
fn types_plain_scalars_like_yaml() {
    let value = read("a: true\nb: ~\nc: 1.5\nd: -3\ne: 0x1f\nf: 1e3\ng: 1.2.3\nh:\ni: yes");
    assert_eq!(
        value,
        json!({"a": true, "b": null, "c": 1.5, "d": -3, "e": 31, "f": 1000.0,
               "g": "1.2.3", "h": null, "i": "yes"})
    );
}

#[test]
fn reads_block_scalars_sequences_and_continued_lines() {
    let value = read(
        "literal: |\n  one\n  two\n\nfolded: >-\n  one\n  two\n\n  three\nlist:\n  - a\n  - \"b c\"\nflow: [x, 'y', 2]\nempty: []\n\
         long: first part\n  second part",
    );
    assert_eq!(
        value,
        json!({
            "literal": "one\ntwo\n",
            "folded": "one two\nthree",
            "list": ["a", "b c"],
            "flow": ["x", "y", 2],
            "empty": [],
            "long": "first part second part"
        })
    );
}

#[test]
fn refuses_what_it_does_not_read_exactly() {
    assert!(refused("a: &x 1").message.contains("anchor"));
    assert!(refused("a: *x").message.contains("anchor"));
    assert!(refused("a: !tag x").message.contains("tag"));
    assert!(refused("a: 1\na: 2").message.contains("twice"));
    assert!(refused("a: b: c").message.contains("quote"));
    assert!(refused("a: {b: 1}").message.contains("flow"));
    assert!(refused("a: .inf").message.contains("NaN"));
    assert_eq!(refused("a: 1\n\tb: 2").line, 3);
    assert!(parse("no front matter").is_err());
    assert!(
        parse("---\nname: x\n").is_err(),
        "an unclosed block is refused"
    );
}

#[test]
fn splits_like_the_agent_skills_format() {
    assert_eq!(
        split("\u{feff}---\nname: a\n---\nbody"),
        Some(("name: a", 2))
    );
    assert_eq!(split("---\r\nname: a\r\n---  \r\n"), Some(("name: a", 2)));
    assert_eq!(split("---\n---\n"), Some(("", 2)));
    assert_eq!(split("text\n---\nname: a\n---\n"), None);
}
