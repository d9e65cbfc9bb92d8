//! Topology discovery on the machine running the tests, against Debian's
//! `hwloc` package (`hwloc-ls`, installed by `.ci/run`): packages, cores,
//! PUs, NUMA nodes and every cache with its CPU set must agree, both with
//! hwloc's XML export and with its `-v` text.

use crate::support::live_turn;
use crate::support::lstopo::{compare, parse_console, parse_xml};
use ecosched_linux::topology;
use ecosched_linux::FsRoot;
use std::process::Command;

/// Run `hwloc-ls` with `args` and return its output; fail clearly when it
/// is missing.
fn hwloc_ls(args: &[&str]) -> String {
    let out = Command::new("hwloc-ls")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run hwloc-ls ({e}); install Debian's hwloc package (apt-get install hwloc)"
            )
        });
    assert!(
        out.status.success(),
        "hwloc-ls {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[ignore = "live: hwloc-ls (Debian's hwloc package)"]
fn this_machine_agrees_with_hwloc_ls() {
    let _turn = live_turn();
    let found = topology::discover(&FsRoot::live()).unwrap();
    // hwloc would otherwise hide the CPUs this test process may not use;
    // lstopo's defaults match our restriction to the allowed set.
    let xml = parse_xml(&hwloc_ls(&["--of", "xml", "-"]));
    let errs = compare("", &found, &xml, &|_| false);
    assert!(
        errs.is_empty(),
        "hwloc-ls --of xml disagrees:\n{}",
        errs.join("\n")
    );
    let text = parse_console(&hwloc_ls(&["-v", "--of", "console", "-"]));
    let errs = compare("", &found, &text, &|_| false);
    assert!(
        errs.is_empty(),
        "hwloc-ls -v disagrees:\n{}",
        errs.join("\n")
    );
    let pus = xml.objs.iter().filter(|o| o.kind == "PU").count();
    assert_eq!(
        pus,
        found
            .topology
            .online_cpus()
            .intersection(&found.allowed)
            .len()
    );
    println!(
        "{}: {pus} PUs, {} caches agree with hwloc-ls",
        found.machine_name,
        found.topology.caches.len()
    );
}
