//! Scenario and machine input: every built-in loads, and every bad file
//! (one per case under `tests/data/invalid_scenarios/`) is refused with
//! the file, the place and the key.

use crate::support::data_file;
use ecosched_sim::scenario::{builtin_scenarios, PRESETS};
use ecosched_sim::{Scenario, SimError};
use proptest::prelude::*;

fn load_err(file: &str) -> String {
    match Scenario::load(&data_file(&format!("invalid_scenarios/{file}"))) {
        Ok(_) => panic!("{file} should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn every_builtin_scenario_and_preset_loads() {
    for (name, _) in builtin_scenarios() {
        Scenario::load(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for (name, _) in PRESETS {
        ecosched_sim::scenario::preset(name)
            .unwrap()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn type_error_names_file_line_column_and_key() {
    let e = load_err("syntax-error.toml");
    assert!(e.contains("syntax-error.toml:7:9"), "{e}");
    assert!(e.contains("tasks.count"), "{e}");
}

#[test]
fn unknown_key_is_refused() {
    let e = load_err("unknown-key.toml");
    assert!(e.contains("lenght_s") && e.contains(":7"), "{e}");
}

#[test]
fn unknown_profile_lists_known_ones() {
    let e = load_err("unknown-profile.toml");
    assert!(
        e.contains("tasks[0].profile") && e.contains("libquantum") && e.contains(":6"),
        "{e}"
    );
}

#[test]
fn missing_length_is_refused() {
    assert!(load_err("no-length.toml").contains("length_s"));
}

/// Lengths the simulator cannot represent are refused where they are
/// written: file:line:column and the key.
#[test]
fn unrepresentable_lengths_are_refused_with_their_place() {
    for (file, place, key, what) in [
        (
            "huge-length.toml",
            ":7:1",
            "tasks[0].length_s",
            "longer than",
        ),
        ("huge-duration.toml", ":4:1", "duration_s", "longer than"),
        (
            "huge-instructions.toml",
            ":7:1",
            "tasks[0].instructions",
            "64-bit",
        ),
        (
            "nan-instructions.toml",
            ":7:1",
            "tasks[0].instructions",
            "finite",
        ),
        (
            "negative-length.toml",
            ":7:1",
            "tasks[0].length_s",
            "positive",
        ),
        (
            "huge-stagger.toml",
            ":9:1",
            "tasks[0].stagger_s",
            "longer than",
        ),
    ] {
        let e = load_err(file);
        assert!(e.contains(&format!("{file}{place}")), "{e}");
        assert!(e.contains(&format!("`{key}`")), "{e}");
        assert!(e.contains(what), "{e}");
    }
}

#[test]
fn bad_jobgraph_names_the_key_and_line() {
    let e = load_err("bad-jobgraph.toml");
    assert!(
        e.contains("jobgraph.parallelism") && e.contains(":7"),
        "{e}"
    );
}

#[test]
fn invalid_machines_are_refused() {
    let e = load_err("bad-machine.toml");
    assert!(e.contains("voltages must not fall"), "{e}");
    let path = data_file("valid_scenarios/custom-machine.toml");
    let e = Scenario::load(&path).err().unwrap().to_string();
    assert!(e.contains("zero cores"), "{e}");
}

/// A machine file names one of the model's PMU tables, or writes its own
/// PMU inline; an unknown table name is refused where it is written.
#[test]
fn a_machine_names_a_pmu_table_or_writes_its_own() {
    use ecosched_model::{CounterKind, PmuTable};
    use ecosched_sim::scenario::parse_toml;
    use ecosched_sim::MachineSpec;
    let q6600 = include_str!("../../machines/q6600.toml");
    let named: MachineSpec = parse_toml("q6600.toml", q6600).unwrap();
    let core2 = PmuTable::builtin("core2").unwrap().spec(None);
    assert_eq!(named.pmu, Some(core2));
    let (line, _) = q6600
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("pmu = "))
        .unwrap();
    let without: Vec<&str> = q6600
        .lines()
        .enumerate()
        .filter(|&(i, _)| i != line)
        .map(|(_, l)| l)
        .collect();
    let inline = format!(
        "{}\n[pmu]\ncounters = 4\nevents = [{{ kind = \"lines_in\", name = \"X\", raw = 0x10 }}]\n",
        without.join("\n")
    );
    let own: MachineSpec = parse_toml("own.toml", &inline).unwrap();
    let pmu = own.pmu.unwrap();
    assert_eq!(pmu.counters, 4);
    assert_eq!(pmu.event(CounterKind::LinesIn).unwrap().raw, Some(0x10));
    let unknown = q6600.replace("pmu = \"core2\"", "pmu = \"core3\"");
    let e = parse_toml::<MachineSpec>("m.toml", &unknown)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("m.toml:{}:", line + 1)) && e.contains("core3") && e.contains("core2"),
        "{e}"
    );
}

#[test]
fn unknown_scenario_lists_builtins() {
    let e = Scenario::load("no-such-scenario").err().unwrap();
    assert!(matches!(e, SimError::UnknownScenario { .. }));
    assert!(e.to_string().contains("merkel-4-stream"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Arbitrary edits of a valid scenario never panic the loader.
    #[test]
    fn loader_never_panics(cut in 0usize..400, insert in "[a-z0-9=\\[\\]\" .\n-]{0,12}") {
        let base = include_str!("../../scenarios/merkel-2hmmer-2soplex.toml");
        let cut = cut.min(base.len());
        let cut = (0..=cut).rev().find(|&i| base.is_char_boundary(i)).unwrap_or(0);
        let text = format!("{}{}{}", &base[..cut], insert, &base[cut..]);
        let _ = Scenario::from_toml("fuzz.toml", &text, None);
    }

    /// Arbitrary numbers in a machine never panic the builder.
    #[test]
    fn machine_builder_never_panics(p in 0u32..3, d in 0u32..3, c in 0u32..5, t in 0u32..3, mhz in 0u64..4000, mv in 0u32..2000, bw in -1.0f64..20.0) {
        let text = include_str!("../../machines/q6600.toml")
            .replace("packages = 1", &format!("packages = {p}"))
            .replace("dies_per_package = 2", &format!("dies_per_package = {d}"))
            .replace("cores_per_die = 2", &format!("cores_per_die = {c}\nthreads_per_core = {t}"))
            .replace("{ mhz = 1600, mv = 1130 }", &format!("{{ mhz = {mhz}, mv = {mv} }}"))
            .replace("bandwidth_gbs = 3.9", &format!("bandwidth_gbs = {bw}"));
        if let Ok(spec) = ecosched_sim::scenario::parse_toml::<ecosched_sim::MachineSpec>("m.toml", &text) {
            let _ = ecosched_sim::Machine::build(spec);
        }
    }
}

/// Every input that would make a simulation run for an unbounded time (or
/// hold unbounded memory) is refused when the scenario loads, with the
/// key that is too large.
#[test]
fn inputs_that_would_run_unboundedly_are_refused_at_load_naming_the_key() {
    let head = "name = \"huge\"\ndescription = \"d\"\nmachine = \"q6600\"\n";
    let graph = |extra: &str| format!("{head}[jobgraph]\njobs = 40\nparallelism = 2\n{extra}\n");
    let task = |extra: &str| format!("{head}[[tasks]]\nprofile = \"stream\"\n{extra}\n");
    let cases = [
        (graph("work_ms = [1e9, 1e9]"), "jobgraph.work_ms"),
        (graph("work_ms = [50, 1e9]"), "jobgraph.work_ms"),
        (graph("link_ms = [1e9, 1e9]"), "jobgraph.link_ms"),
        (graph("link_ms = [50, 1e9]"), "jobgraph.link_ms"),
        (graph("make_ms = 1e9"), "jobgraph.make_ms"),
        (
            graph("helper_share = 0.5\nhelper_burst_ms = 1e-9"),
            "jobgraph.helper_burst_ms",
        ),
        (
            format!("{head}[jobgraph]\njobs = 100000\nparallelism = 1\nwork_ms = [3e5, 3e5]\n"),
            "jobgraph",
        ),
        (
            task("length_s = 1\ncompletions = 100000000"),
            "tasks[0].completions",
        ),
        (
            task("length_s = 1e-6\ncount = 10000\ncompletions = 10000"),
            "tasks[0].completions",
        ),
        (task("length_s = 1e8"), "tasks[0].length_s"),
        (task("instructions = 1e18"), "tasks[0].instructions"),
        (
            format!("{head}duration_s = 1e8\n[[tasks]]\nprofile = \"stream\"\nlength_s = 1\n"),
            "duration_s",
        ),
        (
            format!(
                "{}[transients]\ncount = 1000\nperiod_ms = 1e-6\nrun_ms = 1e-7\n",
                task("length_s = 1")
            ),
            "transients",
        ),
    ];
    for (text, key) in &cases {
        let started = std::time::Instant::now();
        let e = match Scenario::from_toml("huge.toml", text, None) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains(&format!("`{key}`")) && e.contains("huge.toml"),
            "{key}: {e}\n{text}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{key}"
        );
    }
}
