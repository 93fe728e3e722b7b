//! The README's "A server in a few lines": the code review's server (a typed tool, a
//! resource, a template and a prompt) in at most 30 non-blank lines, written with the typed
//! prompt and template forms. (The doctests compile and check the code itself.)

/// The most non-blank lines the example may take.
const MAX_LINES: usize = 30;

/// The Rust block of the README section `heading`.
fn rust_block<'a>(readme: &'a str, heading: &str) -> Vec<&'a str> {
    readme
        .lines()
        .skip_while(|line| line.trim() != heading)
        .skip_while(|line| !line.starts_with("```rust"))
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .collect()
}

#[test]
fn the_readme_server_is_short_and_typed() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(path).expect("the README");
    let block = rust_block(&readme, "## A server in a few lines");
    let code: Vec<&str> = block.into_iter().filter(|l| !l.trim().is_empty()).collect();
    assert!(!code.is_empty(), "the section and its Rust block exist");
    assert!(
        code.len() <= MAX_LINES,
        "{} non-blank lines, at most {MAX_LINES}",
        code.len()
    );
    let text = code.join("\n");
    for form in [
        ".tool(",
        ".text_resource(",
        ".typed_template(",
        ".typed_prompt(",
    ] {
        assert!(text.contains(form), "the example uses {form}");
    }
}
