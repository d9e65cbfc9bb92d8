//! `ecosched ab` for real: paired runs of a small C build under `hilo`
//! and the baseline with intervals for time; the energy ratio and its
//! interval from a recorded RAPL tree whose counters each run advances by
//! a known amount (`--meter-root`, the arm and pair from the variables
//! `ab` sets); and its HTML report in headless Chromium. Runs need root
//! (cgroups). The machine CI shares is seldom idle, so the runs do not
//! wait for it (`--idle-below 100`).

use super::report_browser::{assert_renders, assert_self_contained};
use crate::support::ecosched;
use serde_json::Value;
use std::path::Path;

/// A C project of four objects and a program, with `clean`.
fn c_project(dir: &Path) {
    for i in 1..=4 {
        std::fs::write(
            dir.join(format!("f{i}.c")),
            format!("int f{i}(int n) {{ int s = 0; for (int i = 0; i < n; i++) s += i * {i}; return s; }}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("main.c"),
        "int f1(int), f2(int), f3(int), f4(int);\n\
         int main(void) { return f1(3) + f2(3) + f3(3) + f4(3) == 0; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("Makefile"),
        "OBJS = main.o f1.o f2.o f3.o f4.o\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\
         %.o: %.c\n\t$(CC) -O2 -c $<\nclean:\n\trm -f prog $(OBJS)\n",
    )
    .unwrap();
}

#[test]
#[ignore = "live: root (cgroups), make and a C compiler"]
fn ab_on_a_make_build_prints_every_pair_and_time_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    c_project(&project);
    let build = format!(
        "make -s -C {0} clean && make -s -C {0} -j2",
        project.display()
    );
    let out = ecosched()
        .args([
            "ab",
            "--policy",
            "hilo",
            "--runs",
            "3",
            "--idle-below",
            "100",
        ])
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--", "sh", "-c", &build])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    // The build's own output went to stderr, not into the table.
    assert!(
        text.starts_with("policy hilo against baseline none: 3 pair(s)"),
        "{text}"
    );
    // A warm-up under each arm, then 3 pairs in ABBA order, every run counted.
    let runs: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() > 3 && w[0].parse::<u32>().is_ok())
        .collect();
    let arms: Vec<(&str, &str)> = runs.iter().map(|w| (w[1], w[2])).collect();
    assert_eq!(
        arms,
        [
            ("warm-up", "-"),
            ("warm-up", "-"),
            ("baseline", "1"),
            ("policy", "1"),
            ("policy", "2"),
            ("baseline", "2"),
            ("baseline", "3"),
            ("policy", "3"),
        ],
        "{text}"
    );
    assert!(runs[2..].iter().all(|w| w.last() == Some(&"yes")), "{text}");
    for figure in ["wall time (s)", "CPU time (s)"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(figure))
            .unwrap_or_else(|| panic!("no {figure} ratio in\n{text}"));
        let w: Vec<&str> = line[figure.len()..].split_whitespace().collect();
        // baseline mean, policy mean, ratio, low – high, verdict.
        let (ratio, low, high): (f64, f64, f64) = (
            w[2].parse().unwrap(),
            w[3].parse().unwrap(),
            w[5].parse().unwrap(),
        );
        assert!(low <= ratio && ratio <= high && low > 0.0, "{line}");
        let spans_1 = low <= 1.0 && 1.0 <= high;
        assert_eq!(
            line.contains("no significant difference"),
            spans_1,
            "{line}"
        );
    }
    // This VM has no power meter: energy is not compared, and says why.
    if !Path::new("/sys/class/powercap/intel-rapl:0").exists() {
        assert!(!text.lines().any(|l| l.starts_with("energy (J)")), "{text}");
        assert!(text.contains("energy cannot be compared here"), "{text}");
    }
}

/// The laptop tree with RAPL package-0 and psys (the compared meter).
fn thinkpad_copy(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data/power-thinkpad-t480-i7-8650u");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(from.join("sys"))
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// `ab` with the meter read from a copy of the recorded laptop, each run
/// adding to psys: 100 J under the baseline; 80, 90 and 85 J under the
/// policy in pairs 1, 2 and 3 (each warm-up 1 J). Written through a rename,
/// so the meter never reads half a file.
fn ab_with_driven_meter(dir: &Path, extra: &[&str]) -> Value {
    let meter = dir.join("meter");
    std::fs::create_dir(&meter).unwrap();
    thinkpad_copy(&meter);
    let psys = meter.join("sys/class/powercap/intel-rapl:1/energy_uj");
    let script = format!(
        "f={}; case $ECOSCHED_AB_ARM/$ECOSCHED_AB_PAIR in \
         baseline/*) d=100;; policy/1) d=80;; policy/2) d=90;; policy/3) d=85;; *) d=1;; esac; \
         echo $(( $(cat $f) + d * 1000000 )) > $f.new && mv $f.new $f",
        psys.display()
    );
    let out = ecosched()
        .args([
            "ab",
            "--policy",
            "hilo",
            "--runs",
            "3",
            "--idle-below",
            "100",
            "--json",
        ])
        .arg("--meter-root")
        .arg(&meter)
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(extra)
        .args(["--", "sh", "-c", &script])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Three pairs: every resampled ratio lies between the lowest and the
/// highest pair's (0.8 and 0.9), and each of those is drawn three times
/// running with probability 1/27 > 2.5 %, so they are the interval.
#[test]
#[ignore = "live: root (cgroups)"]
fn the_energy_ratio_and_its_interval_from_a_recorded_meter_are_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let v = ab_with_driven_meter(dir.path(), &[]);
    assert_eq!(v["energy_measured"], true, "{v}");
    assert_eq!(
        v["meter"],
        "measured: RAPL package-0 (+core, dram, uncore); system: RAPL psys"
    );
    for w in v["warm_ups"].as_array().unwrap() {
        assert_eq!(w["energy_j"], 1.0, "{v}");
    }
    let energies: Vec<(String, f64)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["arm"].as_str().unwrap().to_string(),
                r["energy_j"].as_f64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("baseline", 100.0),
        ("policy", 80.0),
        ("policy", 90.0),
        ("baseline", 100.0),
        ("baseline", 100.0),
        ("policy", 85.0),
    ];
    for ((arm, j), (want_arm, want_j)) in energies.iter().zip(want) {
        assert_eq!(arm, want_arm, "{v}");
        assert!((j - want_j).abs() < 1e-9, "{v}");
    }
    assert_eq!(v["pairs_used"], 3);
    let energy = v["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "energy_j")
        .unwrap();
    let i = &energy["interval"];
    assert!(
        (i["ratio"].as_f64().unwrap() - 0.85).abs() < 1e-12,
        "{energy}"
    );
    assert!((i["low"].as_f64().unwrap() - 0.8).abs() < 1e-12, "{energy}");
    assert!(
        (i["high"].as_f64().unwrap() - 0.9).abs() < 1e-12,
        "{energy}"
    );
    assert_eq!(energy["verdict"], "lower under the policy");
    let metrics: Vec<&str> = v["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["energy_j", "wall_s", "cpu_s", "edp_js"]);
}

#[test]
#[ignore = "live: root (cgroups), chromium"]
fn the_ab_report_shows_the_runs_and_the_intervals_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ab.html");
    let report = path.to_str().unwrap().to_string();
    ab_with_driven_meter(dir.path(), &["--report", &report]);
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    for part in [
        "<table id=\"runs\">",
        "<table id=\"ratios\">",
        "<td>warm-up</td>",
        "<td>0.850</td>",
        "<td>0.800 – 0.900</td>",
        "lower under the policy",
        "ratio policy/baseline (1 = no difference)",
    ] {
        assert!(html.contains(part), "the report lacks {part:?}");
    }
    // The two warm-ups and six runs, each a row of the runs table.
    let runs = &html[html.find("<table id=\"runs\">").unwrap()..];
    let runs = &runs[..runs.find("</table>").unwrap()];
    assert_eq!(runs.matches("<tr").count(), 1 + 8);
    // The forest plot draws.
    assert_renders(&html, dir.path(), 1);
}
