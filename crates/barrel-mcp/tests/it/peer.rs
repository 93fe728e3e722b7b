//! The JSON-RPC peer: raw wire behaviour over newline-delimited JSON, inbound dispatch
//! (duplicates, panics, cancellation, limits, ordering), and outbound requests (timeouts,
//! progress, cancellation, connection loss) against a raw in-memory end.

mod inbound;
mod outbound;
mod wire;
