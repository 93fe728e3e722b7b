//! Sets two of mimalloc's options to this crate's defaults before the first allocation, from
//! an `.init_array` entry (a constructor the system runs before `main`): the arena
//! reservation ([`ARENA_RESERVE_KIB`]) and the purge delay ([`PURGE_DELAY_MS`]), each unless
//! the environment names a value other than mimalloc's default.

use std::ffi::c_long;

use libmimalloc_sys as ffi;

use crate::{ARENA_RESERVE_KIB, PURGE_DELAY_MS};

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_e` (`mimalloc.h` of the v3
/// sources that `libmimalloc-sys` 0.1.49 builds; that crate names only some options).
const MI_OPTION_PURGE_DELAY: ffi::mi_option_t = 15;

/// mimalloc's `mi_option_arena_reserve`, as above.
const MI_OPTION_ARENA_RESERVE: ffi::mi_option_t = 23;

/// One option this crate sets: where it is, mimalloc's default, and ours.
struct Choice {
    option: ffi::mi_option_t,
    mimalloc: c_long,
    ours: c_long,
}

/// The options set, with mimalloc's v3 defaults: an arena reservation of 1 GiB (128 MiB on
/// 32-bit targets, `MI_DEFAULT_ARENA_RESERVE`, in KiB) and a purge delay of 1 s.
const CHOICES: [Choice; 2] = [
    Choice {
        option: MI_OPTION_ARENA_RESERVE,
        mimalloc: if cfg!(target_pointer_width = "64") {
            1024 * 1024
        } else {
            128 * 1024
        },
        ours: ARENA_RESERVE_KIB,
    },
    Choice {
        option: MI_OPTION_PURGE_DELAY,
        mimalloc: 1000,
        ours: PURGE_DELAY_MS,
    },
];

/// Sets each option of [`CHOICES`] that still holds mimalloc's default.
///
/// Reading an option makes mimalloc read its variable (`MIMALLOC_ARENA_RESERVE`,
/// `MIMALLOC_PURGE_DELAY`, in any case, as it does) if its own constructor has not yet: which
/// of the two constructors runs first depends on the C compiler (clang gives mimalloc's
/// priority 101, gcc none) and the link order, and this works in either order. A value set in
/// the environment stays, unless it is mimalloc's default exactly (`1G`, `1000`), which this
/// cannot tell from no setting, or a value mimalloc cannot parse (it warns and keeps its
/// default). Nothing here allocates, so no arena is reserved before the options are set.
#[allow(unsafe_code)]
extern "C" fn set_choices() {
    for choice in &CHOICES {
        // SAFETY: a valid option index; mimalloc's options are plain words, read and written
        // without locks by design.
        let value = unsafe { ffi::mi_option_get(choice.option) };
        if value == choice.mimalloc {
            // SAFETY: as above; the value is in the option's unit (KiB, milliseconds).
            unsafe { ffi::mi_option_set(choice.option, choice.ours) };
        }
    }
}

// SAFETY: an `.init_array` entry is a pointer to a C-ABI function taking and returning
// nothing, run once by the loader before `main`; `set_choices` is one, and it neither panics
// nor allocates, and needs nothing of Rust's runtime.
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static SET_CHOICES: extern "C" fn() = set_choices;

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    use crate::child_process::{is_child, run_child};

    /// Whether the environment names mimalloc's variable `name` (in any case).
    fn named(name: &str) -> bool {
        std::env::vars_os().any(|(key, _)| {
            key.to_str()
                .is_some_and(|key| key.eq_ignore_ascii_case(name))
        })
    }

    #[test]
    fn the_options_are_the_ones_meant_and_hold_our_defaults() {
        // Options beside each one hold mimalloc's distinctive defaults, so the indexes name
        // the options meant: `deprecated_eager_commit_delay` (14) is 1 and `os_tag` (18)
        // 100; `deprecated_max_segment_reclaim` (21) is 10, `retry_on_oom` (27) 400.
        // SAFETY: reading options.
        let neighbours = unsafe { [14, 18, 21, 27].map(|option| ffi::mi_option_get(option)) };
        assert_eq!(neighbours, [1, 100, 10, 400], "mi_option_e moved");
        // SAFETY: as above.
        let (reserve, delay) = unsafe {
            (
                ffi::mi_option_get(MI_OPTION_ARENA_RESERVE),
                ffi::mi_option_get(MI_OPTION_PURGE_DELAY),
            )
        };
        if !named("MIMALLOC_ARENA_RESERVE") {
            assert_eq!(reserve, ARENA_RESERVE_KIB);
        }
        if !named("MIMALLOC_PURGE_DELAY") {
            assert_eq!(delay, PURGE_DELAY_MS);
        }
    }

    #[test]
    fn values_named_in_the_environment_stay() {
        // SAFETY: reading options.
        let (reserve, delay) = unsafe {
            (
                ffi::mi_option_get(MI_OPTION_ARENA_RESERVE),
                ffi::mi_option_get(MI_OPTION_PURGE_DELAY),
            )
        };
        if is_child() {
            println!("child read {reserve} {delay}");
            return;
        }
        // Named in lower case: mimalloc reads names in any case.
        let stdout = run_child(
            "options::tests::values_named_in_the_environment_stay",
            &[
                ("mimalloc_arena_reserve", "32M"),
                ("mimalloc_purge_delay", "250"),
            ],
        );
        assert!(stdout.contains("child read 32768 250"), "{stdout}");
    }
}
