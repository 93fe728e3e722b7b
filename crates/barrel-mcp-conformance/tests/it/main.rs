//! The conformance crate's tests, in one binary: the fixture, and the OAuth client against the
//! test authorization server and a protected barrel-mcp server.

mod fixture;
mod oauth;
