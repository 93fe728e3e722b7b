//! Tests that need a process of their own (an environment variable read before `main`, or a
//! resident size no other test moves) run this test binary again, that test alone.

/// The variable a run of this test binary started by [`run_child`] carries.
const CHILD: &str = "BARREL_MCP_ALLOC_TEST_CHILD";

/// Whether this process is such a run.
pub(crate) fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// This binary again, the test `name` alone, with `vars` set: its standard output, once it
/// passed.
pub(crate) fn run_child(name: &str, vars: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let output = std::process::Command::new(exe)
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .envs(vars.iter().copied())
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}
