//! The conformance crate's tests, in one binary: the fixture; the OAuth client against the
//! test authorization server and a protected barrel-mcp server; and the round-robin proxy.

mod fixture;
mod oauth;
mod rr_proxy;
