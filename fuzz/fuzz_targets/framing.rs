//! libFuzzer entry for the `framing` target (its body: `barrel_mcp::fuzzing::framing`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    barrel_mcp_fuzz::target("framing").expect("a known target")(data);
});
