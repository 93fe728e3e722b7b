//! libFuzzer entry for the `security_parsers` target (its body: `barrel_mcp::fuzzing::security_parsers`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    barrel_mcp_fuzz::target("security_parsers").expect("a known target")(data);
});
