//! Tests that need a process of their own (an environment variable read before `main`, or a
//! resident size no other test moves) run this test binary again, that test alone.

/// The variable a run of this test binary started by [`run_child`] carries.
const CHILD: &str = "BARREL_MCP_ALLOC_TEST_CHILD";

/// Whether this process is such a run.
pub(crate) fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// This binary again, the test `name` alone, with `vars` set and no other of mimalloc's
/// variables (`MIMALLOC_*`, in any case, which mimalloc reads: the first of a name wins): its
/// standard output, once it passed.
pub(crate) fn run_child(name: &str, vars: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = std::process::Command::new(exe);
    child.args(["--exact", name, "--nocapture", "--test-threads", "1"]);
    for (key, _) in std::env::vars_os() {
        let is_mimalloc = key.to_str().is_some_and(|key| {
            key.get(..9)
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case("mimalloc_"))
        });
        if is_mimalloc {
            child.env_remove(key);
        }
    }
    let output = child
        .env(CHILD, "1")
        .envs(vars.iter().copied())
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}
