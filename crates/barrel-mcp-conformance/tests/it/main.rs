//! The conformance crate's tests, in one binary: the fixture; the OAuth client against the
//! test authorization server and a protected barrel-mcp server; the round-robin proxy; and two
//! nodes of one service behind it.
//! The failures of two node processes on one Redis behind the proxy (`faults`).

mod faults;
mod fixture;
mod nodes;
mod oauth;
mod rr_proxy;
