//! libFuzzer entry for the `peer` target (its body: `barrel_mcp::fuzzing::peer`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    barrel_mcp_fuzz::target("peer").expect("a known target")(data);
});
