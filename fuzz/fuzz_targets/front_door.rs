//! libFuzzer entry for the `front_door` target (its body: `barrel_mcp::fuzzing::front_door`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    barrel_mcp_fuzz::target("front_door").expect("a known target")(data);
});
