//! The exports of `sim` and `sweep`, end to end through the binary: the
//! Perfetto trace (`--trace F.perfetto.json`) against golden files, the
//! per-CPU CSV time series (`--timeseries`), the sweep's table and page,
//! and the report path checked before the run. Golden files are
//! regenerated only by an explicit `ECOSCHED_BLESS=1`, never silently.

use crate::support::ecosched;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The golden file `name` in the repository's test data.
fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(name)
}

/// Run `sim` with `args` writing a Perfetto trace; compare with the golden
/// file `name`, and check the trace's structure.
fn perfetto_case(name: &str, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.perfetto.json");
    ecosched()
        .arg("sim")
        .args(args)
        .arg("--trace")
        .arg(&path)
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    let want = golden(name);
    if std::env::var_os("ECOSCHED_BLESS").is_some() {
        std::fs::write(&want, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&want)
        .unwrap_or_else(|e| panic!("{}: {e} (ECOSCHED_BLESS=1 writes it)", want.display()));
    assert_eq!(
        text,
        expected,
        "the trace differs from {} (ECOSCHED_BLESS=1 to accept)",
        want.display()
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    // Slices on one CPU track never overlap and have a length.
    let mut by_cpu: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
            assert!(dur > 0.0, "{e}");
            by_cpu
                .entry(e["tid"].as_u64().unwrap())
                .or_default()
                .push((ts, ts + dur));
        }
    }
    for slices in by_cpu.values_mut() {
        slices.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in slices.windows(2) {
            assert!(w[0].1 <= w[1].0 + 1e-6, "{w:?}");
        }
    }
    v
}

/// The trace events of phase `ph` (`X` slices, `i` instants, `C`
/// counters, `M` metadata).
fn events<'a>(v: &'a Value, ph: &str) -> Vec<&'a Value> {
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == ph)
        .collect()
}

#[test]
fn perfetto_placed_streams_has_cpu_slices_and_decisions() {
    let v = perfetto_case(
        "placed-2-stream-apart.perfetto.json",
        &[
            "--scenario",
            "merkel-2-stream-apart",
            "--policy",
            "placed",
            "--param",
            "map=stream#0@0,stream#1@1",
        ],
    );
    let decisions = events(&v, "i");
    assert!(decisions.iter().any(|d| d["args"]["notes"]
        .to_string()
        .contains("stream#1 (pid 1001) on CPUs 1")));
    let names: Vec<&str> = events(&v, "M")
        .iter()
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.contains(&"CPU 3"), "{names:?}");
    assert!(events(&v, "C").iter().any(|c| c["name"] == "package W"));
}

#[test]
fn perfetto_fixed_frequency_has_mhz_counter_and_initial_plan() {
    let v = perfetto_case(
        "fixed-1600-aluadd.perfetto.json",
        &[
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600",
        ],
    );
    let mhz: Vec<u64> = events(&v, "C")
        .iter()
        .filter(|c| c["name"] == "domain 0 MHz")
        .map(|c| c["args"]["MHz"].as_u64().unwrap())
        .collect();
    assert_eq!(mhz.last(), Some(&1600), "{mhz:?}");
    assert!(events(&v, "i").iter().any(
        |e| e["name"] == "initial plan" && e["args"]["notes"].to_string().contains("1600 MHz")
    ));
}

/// One row per step and CPU; the watts average back to the run's power.
#[test]
fn timeseries_has_a_row_per_interval_and_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ts.csv");
    let jsonl = dir.path().join("run.jsonl");
    let out = ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600",
            "--json",
            "--trace",
        ])
        .arg(&jsonl)
        .arg("--timeseries")
        .arg(&csv)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&out).unwrap();
    let steps = std::fs::read_to_string(&jsonl).unwrap().lines().count() - 1;
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time_s,cpu,mhz,utilisation,watts,tasks"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), steps * 4, "q6600 has 4 CPUs");
    assert!(rows.iter().all(|r| r.len() == 6 && r[2] == "1600"));
    assert!(rows.iter().any(|r| r[5] == "aluadd"), "{rows:?}");
    // Each step's watts × its interval sum to the run's energy.
    let mut energy = 0.0;
    let mut last_t = 0.0;
    for r in rows.iter().filter(|r| r[1] == "0") {
        let t: f64 = r[0].parse().unwrap();
        energy += r[4].parse::<f64>().unwrap() * (t - last_t);
        last_t = t;
    }
    let want = report["energy_j"].as_f64().unwrap();
    assert!((energy - want).abs() / want < 0.01, "{energy} vs {want}");
}

/// `sweep` runs the policy at each value and reports per unit of work; a
/// value the policy refuses stops it with the policy's reason.
#[test]
fn sweep_tabulates_and_plots_against_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("sweep.html");
    let out = ecosched()
        .args([
            "sweep",
            "--scenario",
            "merkel-2hmmer-2soplex",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600..2400:800",
            "--json",
            "--report",
        ])
        .arg(&page)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0]["value"], "1600");
    assert_eq!(v["normalisation"], "per_giga_instruction");
    // Slower clock, less work in the fixed duration: more J per 1e9 ins.
    let j = |i: usize| points[i]["work"]["energy_per_unit_j"].as_f64().unwrap();
    assert!(j(0) > j(1), "{v}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(!html.contains("<script"));
    ecosched()
        .args([
            "sweep",
            "--scenario",
            "merkel-2hmmer-2soplex",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600..2400:200",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a P-state"));
    ecosched()
        .args([
            "sweep",
            "--scenario",
            "merkel-4hmmer",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=2400..1600:800",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("below the start"));
}

#[test]
fn report_path_is_checked_before_the_run() {
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "performance",
            "--report",
            "/nonexistent-dir/r.html",
        ])
        .assert()
        .failure()
        .stderr(predicates::str::contains("cannot create the report file"));
}
