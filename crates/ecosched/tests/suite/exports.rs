//! The exports of `sim` and `sweep`, end to end through the binary: the
//! Perfetto trace (`--trace F.perfetto.json`) against golden files and
//! against the simulated schedule, `--trace-format`, the per-CPU CSV time
//! series (`--timeseries`) read back by a CSV reader, the sweep's table
//! and page, and the report path checked before the run. Golden files are
//! regenerated only by an explicit `ECOSCHED_BLESS=1`, never silently.

use crate::support::{ecosched, trace_slices};
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

/// The task names a hand-written CSV would break: a comma and a quote, a
/// line break, and non-ASCII letters.
pub const ODD_NAMES: [&str; 3] = ["st,re\"ss", "two\nlines", "café ü"];

/// A scenario file in `dir` whose three tasks bear [`ODD_NAMES`], each
/// alone on a CPU of a four-CPU machine for two seconds.
pub fn odd_names_scenario(dir: &std::path::Path) -> PathBuf {
    let mut text = String::from(
        "name = \"odd-names\"\ndescription = \"task names a CSV must quote\"\n\
         source = \"ecosched's tests\"\nmachine = \"q6600\"\nmeter = \"package\"\n",
    );
    for name in ODD_NAMES {
        let quoted = toml::Value::String(name.to_string()).to_string();
        text.push_str(&format!(
            "[[tasks]]\nname = {quoted}\nprofile = \"aluadd\"\nlength_s = 2\n"
        ));
    }
    let path = dir.join("odd-names.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `sim --timeseries` with [`odd_names_scenario`] into `dir`: the CSV's path.
pub fn odd_names_timeseries(dir: &std::path::Path) -> PathBuf {
    let scenario = odd_names_scenario(dir);
    let csv = dir.join("ts.csv");
    ecosched()
        .args(["sim", "--policy", "performance", "--scenario"])
        .arg(&scenario)
        .arg("--timeseries")
        .arg(&csv)
        .assert()
        .success();
    csv
}

/// Names with commas, quotes, line breaks and non-ASCII letters come back
/// whole from a CSV reader, each row with its six fields.
#[test]
fn timeseries_task_names_round_trip_through_a_csv_reader() {
    let dir = tempfile::tempdir().unwrap();
    let csv_path = odd_names_timeseries(dir.path());
    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    assert_eq!(
        reader.headers().unwrap(),
        vec!["time_s", "cpu", "mhz", "utilisation", "watts", "tasks"]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert!(rows.iter().all(|r| r.len() == 6), "{rows:?}");
    let seen: std::collections::BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r[5].split(';'))
        .filter(|t| !t.is_empty())
        .collect();
    let want: std::collections::BTreeSet<&str> = ODD_NAMES.into_iter().collect();
    assert_eq!(seen, want);
}

/// A `.json` name means Perfetto unless `--trace-format` says otherwise.
#[test]
fn trace_format_overrides_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let sim = |format: Option<&str>| {
        let mut cmd = ecosched();
        cmd.args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "performance",
        ])
        .arg("--trace")
        .arg(&path);
        if let Some(f) = format {
            cmd.args(["--trace-format", f]);
        }
        cmd.assert().success();
        std::fs::read_to_string(&path).unwrap()
    };
    let perfetto: Value = serde_json::from_str(&sim(None)).unwrap();
    assert!(perfetto["traceEvents"].is_array());
    let lines = sim(Some("jsonl"));
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["header"]["policy"], "performance");
    assert!(lines.lines().count() > 2);
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "performance",
        ])
        .args(["--trace-format", "perfetto"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--trace"));
}

/// Six tasks on four CPUs: the kernel model time-shares them in slices of
/// a few ticks, and the trace shows every one of them, not one slice per
/// control interval. No task overlaps itself; tasks overlap each other on
/// different CPUs; each task's slices add up to the run's length at most.
#[test]
fn perfetto_slices_follow_the_simulated_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("six.toml");
    std::fs::write(
        &scenario,
        "name = \"six\"\ndescription = \"six tasks on four CPUs\"\nsource = \"ecosched's tests\"\n\
         machine = \"q6600\"\nmeter = \"package\"\n[[tasks]]\nprofile = \"aluadd\"\ncount = 6\nlength_s = 0.5\n",
    )
    .unwrap();
    let trace = dir.path().join("six.json");
    ecosched()
        .args(["sim", "--policy", "performance", "--scenario"])
        .arg(&scenario)
        .arg("--trace")
        .arg(&trace)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    // (pid, cpu track, start, end) per slice.
    let slices = trace_slices(&v, |_| true);
    let pids: std::collections::BTreeSet<u64> = slices.iter().map(|s| s.0).collect();
    assert_eq!(pids.len(), 6, "{pids:?}");
    // The default control interval is 100 ms; CFS slices here are ticks.
    let short = slices.iter().filter(|s| s.3 - s.2 < 50_000.0).count();
    assert!(
        short > slices.len() / 2,
        "{short} of {} slices are short",
        slices.len()
    );
    let overlap = |a: &(u64, u64, f64, f64), b: &(u64, u64, f64, f64)| a.2 < b.3 && b.2 < a.3;
    for (i, a) in slices.iter().enumerate() {
        for b in &slices[i + 1..] {
            if a.0 == b.0 {
                assert!(
                    !overlap(a, b),
                    "task {} on two CPUs at once: {a:?} {b:?}",
                    a.0
                );
            }
        }
    }
    assert!(slices.iter().any(|a| slices
        .iter()
        .any(|b| a.0 != b.0 && a.1 != b.1 && overlap(a, b))));
    let schedule = events(&v, "i")
        .into_iter()
        .find(|e| e["name"] == "schedule")
        .unwrap();
    assert!(schedule["args"]["source"]
        .as_str()
        .unwrap()
        .contains("kernel model"));
}
