//! Property tests for every parser of text the kernel (or a killed
//! ecosched) wrote: kernel bitmaps and cpulists, cgroup and mount files,
//! `/proc` files, hint files. Whatever the input, they return a value or
//! an error; they never panic. Bitmaps also round-trip: a set printed the
//! way the kernel prints it (`%*pb`: 32-bit words, most significant first,
//! the first word only as wide as the CPU count needs) reads back equal,
//! at any width. The journal parser has its own in `crate::journal::file`.

#![allow(clippy::unwrap_used)]

use crate::topology::masks::{parse_cpumask, parse_size_kib};
use crate::{cgroup, cpufreq, cpustat, hints, procfs};
use ecosched_model::{CpuId, CpuSet};
use proptest::prelude::*;

/// `set` as the kernel prints a mask of `nbits` CPUs.
fn kernel_mask(set: &CpuSet, nbits: u32) -> String {
    let nwords = nbits.div_ceil(32).max(1);
    let mut words = Vec::new();
    for w in (0..nwords).rev() {
        let mut v = 0u32;
        for b in 0..32 {
            if set.contains(CpuId(w * 32 + b)) {
                v |= 1 << b;
            }
        }
        let digits = if w == nwords - 1 && !nbits.is_multiple_of(32) {
            (nbits % 32).div_ceil(4) as usize
        } else {
            8
        };
        words.push(format!("{v:0digits$x}"));
    }
    words.join(",")
}

/// Text that looks a little like kernel files: digits, hex, separators,
/// words and noise, so that parsers get past their first check.
fn kernelish() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,200}",
        "[0-9a-fA-F,:\\- \n()/]{0,200}",
        "([a-z_]{1,12}[:\t ]+[0-9 -]{0,30}\n){0,12}",
    ]
}

proptest! {
    #[test]
    fn masks_of_any_width_round_trip(
        cpus in proptest::collection::btree_set(0u32..1024, 0..64),
        extra_bits in 0u32..96,
    ) {
        let set: CpuSet = cpus.iter().map(|c| CpuId(*c)).collect();
        let nbits = set.iter().last().map_or(1, |c| c.0 + 1) + extra_bits;
        let text = kernel_mask(&set, nbits);
        prop_assert_eq!(parse_cpumask(&text), Some(set.clone()), "{}", text);
        prop_assert_eq!(parse_cpumask(&format!("{text}\n")), Some(set));
    }

    #[test]
    fn text_parsers_never_panic(text in kernelish()) {
        let _ = parse_cpumask(&text);
        let _ = parse_size_kib(&text);
        let _ = CpuSet::parse_list(&text);
        let _ = cpufreq::parse_cpu_words(&text);
        let mounts = crate::mounts::MountTable::parse(&text);
        let _ = crate::journal::trust::AllowedPaths::from_mounts(&mounts);
        let root = crate::FsRoot::recorded("/nonexistent");
        let _ = cgroup::membership_dir(&root, "proc/1/cgroup", &text, Some("cpuset"), "sys/fs/cgroup/cpuset");
        let _ = cgroup::membership_dir(&root, "proc/1/cgroup", &text, None, "sys/fs/cgroup");
        let _ = cpustat::parse(&text);
        let _ = hints::parse(&text);
        let _ = procfs::stat::parse(&text);
        let _ = procfs::status::parse(&text);
        let _ = procfs::schedstat::parse(&text);
        let _ = procfs::loadavg::parse(&text);
        let _ = procfs::cpuinfo::parse_cpuid(&text);
        let _ = procfs::parse_btime(&text);
    }

    #[test]
    fn a_stat_line_with_any_command_name_parses(comm in "\\PC{0,20}", ticks in 0u64..u64::MAX) {
        // The name may hold spaces and parentheses; the fields after the
        // last `)` are what count.
        let line = format!(
            "42 ({comm}) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 {ticks} 1000 100 \
             18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
        );
        let stat = procfs::stat::parse(&line).unwrap();
        prop_assert_eq!(stat.start_ticks, ticks);
    }
}

#[test]
fn masks_wider_than_the_models_cpus_are_refused_not_allocated() {
    // 70,000 words: CPU numbers beyond MAX_CPU_ID.
    let mut words = vec!["00000000"; 70_000];
    assert_eq!(parse_cpumask(&words.join(",")), Some(CpuSet::new()));
    words[0] = "00000001";
    assert_eq!(parse_cpumask(&words.join(",")), None);
    assert_eq!(
        parse_cpumask("00000000,00000000,ffffffff,ffffffff").map(|s| s.to_list()),
        Some("0-63".to_string())
    );
    assert_eq!(parse_cpumask("ff,ffffffff").map(|s| s.len()), Some(40));
}
