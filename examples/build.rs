//! Hands `symbol-order.txt` (written by `scripts/symbol-order`) to the linker for the
//! examples' release builds, so the code the benchmark's servers run sits together in the
//! binary: the kernel maps code into a process in blocks around each page touched, and an
//! idle `http_echo` held 4.9 MiB of its text resident in the compiler's layout, 1.4 MiB in
//! this one (docs/ARCHITECTURE.md, "The binaries' code layout").
//!
//! Only where the linker is known to take `--symbol-ordering-file`: Rust's own lld, the
//! default on `x86_64-unknown-linux-gnu` since Rust 1.90 in the toolchains that ship it (its
//! `gcc-ld` wrapper is in the sysroot), with no linker or linker flags chosen by the user
//! (mold, GNU ld and gold do not take the option). A release build that cannot have it says
//! so in a warning and links as it would without this.
//!
//! With the same linker, and when the glibc of the machine that builds them is 2.36 or later,
//! the examples' relative relocations are packed (`-z pack-relative-relocs`, DT_RELR): the
//! dynamic loader reads a table of a few KiB at start-up instead of one entry of 24 bytes
//! per pointer to patch (14,700 of them, 346 KiB, in `http_echo`), which an idle server kept
//! resident. A binary linked so needs glibc 2.36 where it runs; the examples run where they
//! are built, and an older glibc there leaves them unpacked.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target whose default linker this knows.
const TARGET: &str = "x86_64-unknown-linux-gnu";

fn main() {
    println!("cargo::rerun-if-changed=symbol-order.txt");
    if env::var("PROFILE").as_deref() != Ok("release")
        || env::var("TARGET").as_deref() != Ok(TARGET)
    {
        // Debug builds' names carry other hashes: the list would match nothing.
        return;
    }
    let order =
        Path::new(&env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default()).join("symbol-order.txt");
    match why_not_rust_lld() {
        None if order.is_file() => {
            println!(
                "cargo::rustc-link-arg-examples=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            // A name the build no longer defines (renamed, or a new compiler's hash) is
            // skipped.
            println!("cargo::rustc-link-arg-examples=-Wl,--no-warn-symbol-ordering");
            pack_relocations();
        }
        None => pack_relocations(),
        Some(why) => {
            println!("cargo::warning=examples linked in the compiler's code layout: {why}");
        }
    }
}

/// Packs the relative relocations where the examples will run: a build for this machine
/// whose glibc reads packed ones (2.36 and later).
fn pack_relocations() {
    if env::var("HOST").ok() != env::var("TARGET").ok() {
        return;
    }
    let version = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok());
    if version
        .as_deref()
        .and_then(glibc_minor)
        .is_some_and(|minor| minor >= 36)
    {
        println!("cargo::rustc-link-arg-examples=-Wl,-z,pack-relative-relocs");
    }
}

/// The minor version in `getconf GNU_LIBC_VERSION`'s `glibc 2.M` (2.x only).
fn glibc_minor(text: &str) -> Option<u32> {
    let version = text.trim().strip_prefix("glibc 2.")?;
    version.split('.').next()?.parse().ok()
}

/// Why the examples may not link with Rust's own lld as rustc picks it by default, if so.
fn why_not_rust_lld() -> Option<&'static str> {
    if env::var_os("RUSTC_LINKER").is_some() {
        return Some("a linker is chosen (RUSTC_LINKER)");
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "link-arg", "fuse-ld"]
        .iter()
        .any(|flag| flags.contains(flag))
    {
        return Some("linker flags are chosen (RUSTFLAGS)");
    }
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let minor = rustc_output(&rustc, "-vV").and_then(|text| release_minor(&text));
    if minor.is_none_or(|minor| minor < 90) {
        return Some("rustc before 1.90 links with the system's linker");
    }
    let sysroot = rustc_output(&rustc, "--print=sysroot").map(|text| PathBuf::from(text.trim()));
    let wrapper = sysroot.map(|root| {
        root.join("lib/rustlib")
            .join(TARGET)
            .join("bin/gcc-ld/ld.lld")
    });
    if !wrapper.is_some_and(|wrapper| wrapper.is_file()) {
        return Some("this toolchain ships no rust-lld");
    }
    None
}

/// What `rustc ARG` prints, when it runs.
fn rustc_output(rustc: &std::ffi::OsStr, arg: &str) -> Option<String> {
    let output = Command::new(rustc).arg(arg).output().ok()?;
    String::from_utf8(output.stdout).ok()
}

/// The minor version in `rustc -vV`'s `release: 1.M.P` line.
fn release_minor(text: &str) -> Option<u32> {
    let release = text
        .lines()
        .find_map(|line| line.strip_prefix("release: "))?;
    release.split('.').nth(1)?.parse().ok()
}
