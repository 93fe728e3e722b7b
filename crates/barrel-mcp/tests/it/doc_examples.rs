//! Every public item of the `server` and `client` modules has a doc example, or a link to one:
//! the item's doc comment holds a code block, or a line starting `Example:` (or `Examples:`)
//! with a link to an item (or an example program) that shows it. A `pub mod` is checked by its
//! file's `//!` header. Trait methods are shown by their trait's example.

use std::path::Path;

use crate::source_rules::{library_part, rust_files};

/// Files left out, each with the reason.
const LEFT_OUT: [(&str, &str); 0] = [];

/// What a public item's declaration starts with, after `pub `.
const KINDS: [&str; 9] = [
    "fn ",
    "async fn ",
    "const fn ",
    "struct ",
    "enum ",
    "trait ",
    "type ",
    "const ",
    "mod ",
];

/// True when `doc` (the item's doc lines, without `///`) shows an example or links to one.
fn shows_an_example(doc: &[&str]) -> bool {
    doc.iter().any(|line| line.trim_start().starts_with("```"))
        || doc.iter().any(|line| {
            let line = line.trim_start();
            (line.starts_with("Example: ") || line.starts_with("Examples: ")) && line.contains('[')
        })
}

/// The doc lines right above line `index` (attributes between them skipped).
fn doc_above<'a>(lines: &[&'a str], index: usize) -> Vec<&'a str> {
    let mut doc = Vec::new();
    for line in lines[..index].iter().rev() {
        let line = line.trim_start();
        if let Some(text) = line.strip_prefix("///") {
            doc.push(text);
        } else if line.starts_with("#[") || line.starts_with("#![") {
            continue;
        } else {
            break;
        }
    }
    doc.reverse();
    doc
}

/// The `//!` header of a module file.
fn module_doc(text: &str) -> Vec<&str> {
    text.lines()
        .map_while(|line| line.strip_prefix("//!"))
        .collect()
}

#[test]
fn every_public_server_and_client_item_shows_an_example() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for module in ["server", "client"] {
        files.push(src.join(format!("{module}.rs")));
        rust_files(&src.join(module), &mut files);
    }
    assert!(
        files.len() > 40,
        "the walk found the source ({})",
        files.len()
    );
    let mut missing = Vec::new();
    for path in files {
        let relative = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if LEFT_OUT.iter().any(|(file, _)| *file == relative) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let lines: Vec<&str> = library_part(&text).lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("pub ") else {
                continue;
            };
            let Some(kind) = KINDS.iter().find(|kind| rest.starts_with(**kind)) else {
                continue;
            };
            let doc = if *kind == "mod " {
                let name = rest[kind.len()..].trim_end_matches(';').trim();
                let file = path.with_extension("").join(format!("{name}.rs"));
                let file = if file.exists() {
                    file
                } else {
                    path.with_file_name(format!("{name}.rs"))
                };
                let module = std::fs::read_to_string(&file).expect("the module's file");
                if shows_an_example(&module_doc(&module)) {
                    continue;
                }
                Vec::new()
            } else {
                doc_above(&lines, index)
            };
            if !shows_an_example(&doc) {
                missing.push(format!("{relative}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} public items without a doc example or a link to one:\n{}",
        missing.len(),
        missing.join("\n")
    );
}
