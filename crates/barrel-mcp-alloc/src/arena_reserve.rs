//! Sets mimalloc's arena reservation to [`ARENA_RESERVE_KIB`] before the first allocation,
//! from an `.init_array` entry (a constructor the system runs before `main`), unless the
//! environment names a size other than mimalloc's default.

use libmimalloc_sys as ffi;

use crate::ARENA_RESERVE_KIB;

/// mimalloc's `mi_option_arena_reserve`: its place in `mi_option_e` (`mimalloc.h` of the v3
/// sources that `libmimalloc-sys` 0.1.49 builds; that crate names only some options).
const MI_OPTION_ARENA_RESERVE: ffi::mi_option_t = 23;

/// mimalloc's default for it (`MI_DEFAULT_ARENA_RESERVE`, in KiB).
const MIMALLOC_DEFAULT_KIB: std::ffi::c_long = if cfg!(target_pointer_width = "64") {
    1024 * 1024
} else {
    128 * 1024
};

/// Sets [`ARENA_RESERVE_KIB`] when the option still holds mimalloc's default.
///
/// Reading the option makes mimalloc read `MIMALLOC_ARENA_RESERVE` (in any case, as it does)
/// if its own constructor has not yet: which of the two constructors runs first depends on the
/// C compiler (clang gives mimalloc's priority 101, gcc none) and the link order, and this
/// works in either order. A size set in the environment stays, unless it is mimalloc's
/// default exactly (`1G`, `1024M`), which this cannot tell from no setting, or a value
/// mimalloc cannot parse (it warns and keeps its default). Nothing here allocates, so no
/// arena is reserved before the option is set.
#[allow(unsafe_code)]
extern "C" fn set_arena_reserve() {
    // SAFETY: a valid option index; mimalloc's options are plain words, read and written
    // without locks by design.
    let reserve = unsafe { ffi::mi_option_get(MI_OPTION_ARENA_RESERVE) };
    if reserve == MIMALLOC_DEFAULT_KIB {
        // SAFETY: as above; the value is a size in KiB, as the option takes.
        unsafe { ffi::mi_option_set(MI_OPTION_ARENA_RESERVE, ARENA_RESERVE_KIB) };
    }
}

// SAFETY: an `.init_array` entry is a pointer to a C-ABI function taking and returning
// nothing, run once by the loader before `main`; `set_arena_reserve` is one, and it neither
// panics nor allocates, and needs nothing of Rust's runtime.
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static SET_ARENA_RESERVE: extern "C" fn() = set_arena_reserve;

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    #[test]
    fn arenas_are_reserved_64_mib_at_a_time() {
        // Options on either side hold mimalloc's distinctive defaults, so the index names the
        // option meant: `deprecated_max_segment_reclaim` (21) is 10, `retry_on_oom` (27) 400.
        // SAFETY: reading options.
        let (before, after) = unsafe { (ffi::mi_option_get(21), ffi::mi_option_get(27)) };
        assert_eq!((before, after), (10, 400), "mi_option_e moved");
        // SAFETY: as above.
        let reserve = unsafe { ffi::mi_option_get(MI_OPTION_ARENA_RESERVE) };
        let named = std::env::vars_os().any(|(name, _)| {
            name.to_str()
                .is_some_and(|name| name.eq_ignore_ascii_case("MIMALLOC_ARENA_RESERVE"))
        });
        if !named {
            assert_eq!(reserve, ARENA_RESERVE_KIB);
        }
    }

    /// The variable a run of this test binary started by the test below carries.
    const CHILD: &str = "BARREL_MCP_ALLOC_TEST_CHILD";

    #[test]
    fn a_size_named_in_the_environment_stays() {
        // SAFETY: reading an option.
        let reserve = unsafe { ffi::mi_option_get(MI_OPTION_ARENA_RESERVE) };
        if std::env::var_os(CHILD).is_some() {
            println!("child read {reserve}");
            assert_eq!(reserve, 32 * 1024, "the environment's 32M");
            return;
        }
        // This binary again, this test alone, with the size named in lower case (mimalloc
        // reads names in any case).
        let exe = std::env::current_exe().expect("the test binary");
        let output = std::process::Command::new(exe)
            .args([
                "--exact",
                "arena_reserve::tests::a_size_named_in_the_environment_stays",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env(CHILD, "1")
            .env("mimalloc_arena_reserve", "32M")
            .output()
            .expect("the child runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        assert!(
            stdout.contains("child read 32768"),
            "the child ran the test: {stdout}"
        );
    }
}
