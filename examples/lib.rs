//! Examples live beside this file; see `stdio_server.rs`.
