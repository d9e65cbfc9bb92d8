//! What the task readers' unit tests share: a recorded `/proc` with a
//! small process tree, host facts for it, and readers over it.

#![allow(clippy::unwrap_used)]

use crate::fsroot::FsRoot;
use crate::perf::{Event, FakePerf};
use crate::tasks::{HostFacts, TaskReader};

/// A recorded `/proc` with one process 100 (start 500) with threads 100
/// and 101, and its child 200 (start 900).
pub(super) fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let line = |pid: u32, comm: &str, ppid: u32, start: u64, cpu: u32| {
        format!("{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194304 98 0 0 0 7 3 0 0 20 -5 2 0 {start} 5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0 1 1 1 1 1 1 1 0\n")
    };
    let status = |tgid: u32, ppid: u32, v: u64| {
        format!("Name:\tx\nTgid:\t{tgid}\nPPid:\t{ppid}\nCpus_allowed_list:\t0-3\nvoluntary_ctxt_switches:\t{v}\nnonvoluntary_ctxt_switches:\t1\n")
    };
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("proc/stat", "cpu 1 2 3\nbtime 1700000000\n");
    write("proc/loadavg", "0.50 0.25 0.10 2/80 300\n");
    write("proc/1/schedstat", "1 2 3\n");
    write("proc/1/stat", &line(1, "init", 0, 1, 0));
    write("proc/100/stat", &line(100, "my app", 1, 500, 2));
    write("proc/200/stat", &line(200, "child (x)", 100, 900, 3));
    for (tgid, tid, start, ppid) in [(100, 100, 500, 1), (100, 101, 510, 1), (200, 200, 900, 100)] {
        let d = format!("proc/{tgid}/task/{tid}");
        write(&format!("{d}/stat"), &line(tid, "t", ppid, start, 1));
        write(&format!("{d}/schedstat"), "1000 200 3\n");
        write(&format!("{d}/status"), &status(tgid, ppid, 10));
        write(&format!("proc/{tid}/status"), &status(tgid, ppid, 10));
    }
    write("proc/1/task/1/stat", &line(1, "init", 0, 1, 0));
    dir
}

pub(super) fn host() -> HostFacts {
    HostFacts {
        ticks_per_s: 100,
        boot_time_s: 1_700_000_000,
    }
}

/// A reader of the recorded tree in `dir`, counting with `perf`.
pub(super) fn reader_with(dir: &tempfile::TempDir, perf: &FakePerf) -> TaskReader {
    TaskReader::new(FsRoot::recorded(dir.path()), Box::new(perf.clone()), host())
}

/// A reader of the recorded tree in `dir`, with no perf counts.
pub(super) fn recorded_reader(dir: &tempfile::TempDir) -> TaskReader {
    reader_with(dir, &FakePerf::new())
}

/// Fake perf without a PMU, and without software events unless
/// `software`.
pub(super) fn fake_perf(software: bool) -> FakePerf {
    let fake = FakePerf::new().without_pmu();
    if !software {
        for event in Event::SOFTWARE {
            fake.set_unavailable(event, nix::libc::ENOENT);
        }
    }
    fake
}
