//! Hands `symbol-order.txt` (written by `scripts/symbol-order`) to the linker for the
//! examples, so the code the benchmark's servers run sits side by side in the binary: the
//! kernel maps code into a process in blocks around each page touched, and an idle
//! `http_echo` held 4.9 MiB of its text resident in the compiler's order, 1.9 MiB in this one
//! (docs/ARCHITECTURE.md, "The binaries' code layout").
//!
//! Only where the linker is known to be lld, which takes `--symbol-ordering-file`: Rust's own
//! (`rust-lld`, the default on `x86_64-unknown-linux-gnu` since Rust 1.90), with no linker or
//! linker flavour chosen by the user. Elsewhere the examples link as they would without this.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=symbol-order.txt");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let order = Path::new(&env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("symbol-order.txt");
    if linker_is_rust_lld() && order.is_file() {
        println!(
            "cargo::rustc-link-arg-examples=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // A name the build no longer defines (renamed, or a new compiler's hash) is skipped.
        println!("cargo::rustc-link-arg-examples=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the examples link with `rust-lld` as rustc picks it by default.
fn linker_is_rust_lld() -> bool {
    let target = env::var("TARGET").unwrap_or_default();
    let chosen_linker = env::var_os("RUSTC_LINKER").is_some();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let chosen_flavour = flags.contains("linker") || flags.contains("link-self-contained");
    target == "x86_64-unknown-linux-gnu"
        && !chosen_linker
        && !chosen_flavour
        && rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc that builds this (`rustc -vV`, line `release: 1.M.P`).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let output = Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let release = text.lines().find_map(|line| line.strip_prefix("release: "))?;
    release.split('.').nth(1)?.parse().ok()
}
