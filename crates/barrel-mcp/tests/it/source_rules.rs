//! The libraries' own source (`barrel-mcp` and `barrel-mcp-types`), walked: no `unwrap`,
//! `expect` or panicking macro outside tests,
//! except where an invariant the code itself upholds (never anything a peer sent) makes it
//! unreachable. Each such place is in [`ALLOWED`] with the invariant; a new one fails here until
//! it is removed or argued for in that list.

use std::path::{Path, PathBuf};

/// What may panic.
const PATTERNS: [&str; 6] = [
    ".unwrap()",
    ".expect(",
    "panic!(",
    "unreachable!(",
    "todo!(",
    "unimplemented!(",
];

/// (file under `src/`, the text on the line, the invariant that keeps it from panicking).
const ALLOWED: [(&str, &str, &str); 4] = [
    (
        "auth/server/api_key.rs",
        r#".expect("HMAC takes a key of any length")"#,
        "HMAC-SHA-256 accepts keys of every length (RFC 2104); the pepper is ours, not a peer's",
    ),
    (
        "http/listener.rs",
        r#"slot.expect("the semaphore is never closed")"#,
        "the listener owns the connection semaphore and never closes it",
    ),
    (
        "server/request_state.rs",
        r#".expect("a RequestState always serialises")"#,
        "a RequestState holds strings, integers and a string-keyed JSON map, which serde_json \
         always serializes; the state is the server's own, sealed before any peer sees it",
    ),
    (
        "http/session.rs",
        r#".expect("a fresh stream takes a fresh reader")"#,
        "attach fails only when a reader is already attached; the stream was made on the line before",
    ),
];

/// Files that are test harnesses, where a panic is the point.
const HARNESSES: [&str; 1] = [
    // The fuzz targets: their oracles panic when an invariant breaks.
    "fuzzing.rs",
];

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            // Test modules kept in directories of their own.
            if path.file_name().is_some_and(|n| n == "tests") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// The file without its in-file test module (`#[cfg(test)]` then `mod ... {`, always last).
/// An out-of-line `mod tests;` is no such module: the library code after it is kept.
pub(crate) fn library_part(text: &str) -> &str {
    let mut offset = 0;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                next.trim_start().starts_with("mod ") && next.trim_end().ends_with('{')
            })
        {
            return &text[..offset];
        }
        offset += line.len() + 1;
    }
    text
}

#[test]
fn nothing_outside_tests_unwraps_or_panics_but_the_argued_places() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_owned();
    let mut files = Vec::new();
    for library in ["barrel-mcp", "barrel-mcp-types"] {
        let src = crates.join(library).join("src");
        let mut found = Vec::new();
        rust_files(&src, &mut found);
        files.extend(found.into_iter().map(|path| (src.clone(), path)));
    }
    assert!(
        files.len() > 120,
        "the walk found the source ({})",
        files.len()
    );
    let mut found = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for (src, path) in files {
        let relative = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if HARNESSES.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        for (number, line) in library_part(&text).lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if !PATTERNS.iter().any(|p| code.contains(p)) {
                continue;
            }
            match ALLOWED
                .iter()
                .position(|(file, snippet, _)| *file == relative && code.contains(snippet))
            {
                Some(i) => used[i] = true,
                None => found.push(format!("{relative}:{}: {code}", number + 1)),
            }
        }
    }
    assert!(
        found.is_empty(),
        "panicking calls outside tests (remove them, or argue for them in ALLOWED):\n{}",
        found.join("\n")
    );
    let stale: Vec<&str> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|((file, _, _), _)| *file)
        .collect();
    assert!(
        stale.is_empty(),
        "ALLOWED entries no longer needed: {stale:?}"
    );
}
