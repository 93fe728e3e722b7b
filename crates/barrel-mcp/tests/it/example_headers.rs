//! The example programs (`examples/`, the `barrel-mcp-examples` crate): each one declared in
//! its `Cargo.toml` opens with a `//!` header that says how to run it.

use std::path::Path;

#[test]
fn every_example_says_how_to_run_it() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let manifest = std::fs::read_to_string(examples.join("Cargo.toml")).expect("the manifest");
    let names: Vec<&str> = manifest
        .lines()
        .filter_map(|line| line.trim().strip_prefix("name = \""))
        .filter_map(|rest| rest.strip_suffix('"'))
        .filter(|name| *name != "barrel-mcp-examples")
        .collect();
    assert!(names.len() >= 3, "the examples are declared: {names:?}");
    for name in names {
        let text = std::fs::read_to_string(examples.join(format!("{name}.rs")))
            .unwrap_or_else(|e| panic!("examples/{name}.rs: {e}"));
        let header: String = text
            .lines()
            .map_while(|line| line.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let command = format!("cargo run -p barrel-mcp-examples --example {name}");
        assert!(
            header.contains(&command),
            "examples/{name}.rs: the header does not say `{command}`"
        );
    }
}
