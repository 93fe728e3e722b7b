//! libFuzzer entry for the `uri_template` target (its body: `barrel_mcp::fuzzing::uri_template`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    barrel_mcp_fuzz::target("uri_template").expect("a known target")(data);
});
