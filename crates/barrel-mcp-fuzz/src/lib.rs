//! The fuzz targets of barrel-mcp, by name: what `fuzz/fuzz_targets/*.rs` hand to libFuzzer
//! (`scripts/fuzz TARGET SECONDS`), and what `cargo test` runs over the committed corpus in
//! `fuzz/corpus/TARGET/` on every change. The bodies live in `barrel_mcp::fuzzing`, next to
//! the crate-private parsers they reach; each panics when one of its oracles breaks.

/// A target's body: one input, a panic when an oracle breaks.
pub type Body = fn(&[u8]);

/// Every target: its name (the corpus folder and the `cargo fuzz` target) and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("framing", barrel_mcp::fuzzing::framing),
    ("security_parsers", barrel_mcp::fuzzing::security_parsers),
    ("uri_template", barrel_mcp::fuzzing::uri_template),
    ("peer", barrel_mcp::fuzzing::peer),
    ("front_door", barrel_mcp::fuzzing::front_door),
];

/// The body of the target `name`.
pub fn target(name: &str) -> Option<Body> {
    TARGETS
        .iter()
        .find(|(target, _)| *target == name)
        .map(|(_, body)| *body)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::TARGETS;

    fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            .collect();
        entries.sort();
        entries
            .into_iter()
            .map(|path| {
                let bytes = std::fs::read(&path).unwrap_or_default();
                (path, bytes)
            })
            .collect()
    }

    #[test]
    fn every_target_survives_its_corpus() {
        for (name, body) in TARGETS {
            let inputs = corpus(name);
            assert!(!inputs.is_empty(), "{name} has no corpus");
            for (path, bytes) in inputs {
                let outcome = std::panic::catch_unwind(|| body(&bytes));
                assert!(outcome.is_ok(), "{name} failed on {}", path.display());
            }
        }
    }

    #[test]
    fn every_target_survives_the_edges() {
        for (_, body) in TARGETS {
            for input in [&b""[..], b"\0", b"\n\n\n", &[0xff; 64], b"{", b"[]"] {
                body(input);
            }
        }
    }

    #[test]
    fn targets_are_found_by_name() {
        assert!(super::target("framing").is_some());
        assert!(super::target("nope").is_none());
    }
}
