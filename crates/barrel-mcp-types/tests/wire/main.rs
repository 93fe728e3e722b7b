//! Wire tests: the spec's 2026-07-28 examples round-tripped through the typed model, and
//! `jsonrpc::decode` over raw-JSON tables.
//!
//! The examples are copies of the schema repository's `examples/` folders, kept in
//! `tests/fixtures/<TypeName>/` so the tests need nothing outside this crate.

mod decode;
mod examples;
mod hostile;
