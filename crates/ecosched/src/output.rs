//! What the commands print: the human-readable tables, and the JSON shapes
//! of the listings (`scenarios --json`, `policies --json`, `validate
//! --json`). Run reports are printed as the engine's own serde types.
//! Every function returns the text; `main` writes it.

use crate::settings::params_label;
use crate::table::{count, num, opt, opt_count, ratio, short, Align, Table};
use ecosched_engine::bench::BenchReport;
use ecosched_engine::compare::CompareReport;
use ecosched_engine::normalise::Normalisation;
use ecosched_engine::report::SimReport;
use ecosched_engine::validate::{Check, RowKind};
use ecosched_model::Meter;
use ecosched_policy::Params;
use serde::Serialize;

/// One line of `scenarios --json`.
#[derive(Debug, Serialize)]
pub struct ScenarioEntry {
    /// Name.
    pub name: String,
    /// One line.
    pub description: String,
}

/// `validate --json`.
#[derive(Debug, Serialize)]
pub struct ValidateReport<'a> {
    /// What the policies were shown.
    pub observe: ecosched_sim::Observe,
    /// Every check.
    pub checks: &'a [Check],
    /// Per paper, then `all`: rows, predicted rows, worst relative error.
    pub summary: Vec<ecosched_engine::fidelity::PaperSummary>,
    /// `--perturb`: the rows each moved parameter flips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturbation: Option<&'a [ecosched_engine::fidelity::KnobFlips]>,
    /// `--reseed`: the rows each reseeded pass flips.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reseeding: Option<&'a [ecosched_engine::fidelity::SeedFlips]>,
}

/// `validate --reseed N`: the rows whose verdict changes on other seeds,
/// with on how many of the passes.
pub fn reseeding(passes: &[ecosched_engine::fidelity::SeedFlips], rows: usize) -> String {
    let shifts = passes
        .iter()
        .map(|p| p.shift.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = format!("\nseed robustness: every run's seed moved by {shifts}\n");
    let fragile = ecosched_engine::fidelity::seed_fragile_rows(passes);
    for (name, n) in &fragile {
        out.push_str(&format!("  flips on {n} of {}: {name}\n", passes.len()));
    }
    for p in passes {
        for r in &p.flipped {
            out.push_str(&format!("  +{}: {r}\n", p.shift));
        }
    }
    out.push_str(&format!(
        "{} of {rows} rows change verdict on at least one other seed\n",
        fragile.len()
    ));
    out
}

/// `validate --perturb PCT`: per calibrated parameter, the rows whose
/// verdict flips when it moves down or up by PCT %.
pub fn perturbation(pct: f64, flips: &[ecosched_engine::fidelity::KnobFlips]) -> String {
    let mut out = format!("\nsensitivity: each calibrated parameter moved by ±{pct} %\n");
    for k in flips {
        if k.lowered.is_empty() && k.raised.is_empty() {
            out.push_str(&format!("  {}: no row flips\n", k.knob));
            continue;
        }
        for (dir, rows) in [("−", &k.lowered), ("+", &k.raised)] {
            for r in rows.iter() {
                out.push_str(&format!("  {} {dir}{pct} %: {r}\n", k.knob));
            }
        }
    }
    let fragile = flips
        .iter()
        .filter(|k| !k.lowered.is_empty() || !k.raised.is_empty())
        .count();
    out.push_str(&format!(
        "{fragile} of {} parameters flip at least one row\n",
        flips.len()
    ));
    out
}

/// Pretty JSON with a final newline.
pub fn json<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    Ok(s)
}

/// `scenarios`.
pub fn scenarios(list: &[ScenarioEntry]) -> String {
    let mut t = Table::new(&["scenario", "description"], &[]);
    for s in list {
        t.row([s.name.as_str(), s.description.as_str()]);
    }
    t.render()
}

pub fn meter_name(m: Meter) -> &'static str {
    match m {
        Meter::Package => "package",
        Meter::System => "system",
    }
}

/// How an observation model is named in tables: truth is flagged, so that
/// nobody mistakes it for what a machine could measure.
pub fn observe_label(o: ecosched_sim::Observe) -> String {
    match o {
        ecosched_sim::Observe::Linux => "linux (what a Linux machine could read)".into(),
        ecosched_sim::Observe::Full => {
            "FULL: simulator truth, not what a real machine shows".into()
        }
    }
}

/// `sim`: the summary, then one row per task.
pub fn sim(r: &SimReport) -> String {
    let mut summary = Table::plain(&[Align::Left, Align::Left]);
    let migrations = match (r.migrations, r.migrations_per_s) {
        (None, _) => "-".to_string(),
        (Some(m), None) => count(m),
        (Some(m), Some(rate)) => format!("{} ({} /s)", count(m), short(rate)),
    };
    let energy = match r.energy_j {
        Some(e) => format!("{} ({} meter)", num(e), meter_name(r.energy_meter)),
        None => format!("- ({} meter unavailable)", meter_name(r.energy_meter)),
    };
    // Simulator truth, so labelled: perf on a machine counts only the total.
    let causes = r.migrations_by_cause.map_or("-".into(), |m| {
        format!(
            "wake-up {}, balance {}, idle pull {}, affinity {} (SIMULATOR TRUTH)",
            count(m.wake_up),
            count(m.balance),
            count(m.idle_pull),
            count(m.affinity)
        )
    });
    let rows: [(&str, String); 13] = [
        ("scenario", r.scenario.clone()),
        ("machine", r.machine.clone()),
        ("policy", r.policy.clone()),
        ("seed", r.seed.to_string()),
        ("observed", r.observe.map_or("-".into(), observe_label)),
        ("simulated (s)", num(r.simulated_s)),
        ("makespan (s)", num(r.makespan_s)),
        ("energy (J)", energy),
        ("avg power (W)", opt(r.avg_power_w)),
        ("EDP (J·s)", opt(r.edp_js)),
        ("instructions", opt_count(r.instructions)),
        ("migrations", migrations),
        ("  by cause", causes),
    ];
    for (k, v) in rows {
        summary.row([k.to_string(), v]);
    }
    let mut tasks = Table::new(
        &[
            "task",
            "runtime (s)",
            "completions",
            "instructions",
            "migrations",
            "energy (J)",
        ],
        &[
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
        ],
    );
    for t in &r.tasks {
        tasks.row([
            t.name.clone(),
            num(t.runtime_s),
            t.completions.to_string(),
            opt_count(t.instructions),
            opt_count(t.migrations),
            opt(t.energy_j),
        ]);
    }
    format!("{}\n{}", summary.render(), tasks.render())
}

/// `compare`: one row per policy with its figures and its ratios to the
/// baseline. `policies` are the settings' policies, for their parameters.
/// A fixed-duration scenario in which a run stopped with work left is shown
/// per unit of work (`work_view`), never as total energy.
pub fn compare(r: &CompareReport, policies: &[(String, Params)]) -> String {
    let label = |i: usize| {
        let Some(run) = r.results.get(i) else {
            return String::new();
        };
        let label = match policies.get(i) {
            Some((name, params)) if name == &run.policy && params.iter().next().is_some() => {
                format!("{name} ({})", params_label(params))
            }
            _ => run.policy.clone(),
        };
        if run.policy == r.baseline {
            format!("{label} *")
        } else {
            label
        }
    };
    let table = if r.normalisation == Normalisation::Total {
        totals_table(r, &label)
    } else {
        crate::work_view::table(r, &label)
    };
    let meter = r.results.first().map_or("", |x| meter_name(x.energy_meter));
    crate::table::fit_lines(&format!(
        "scenario {}, baseline {} (*); energy from the {meter} meter; × = ratio to the baseline\nnormalisation: {}\nobserved: {}\n\n{}\n{}",
        r.scenario,
        r.baseline,
        r.normalisation.describe(),
        observe_label(r.observe),
        table + &crate::work_view::oracle_table(r),
        patel_table(r),
    ))
}

/// Whether any compared policy is one of Patel's, whose own metrics then
/// follow the comparison (for the others they are noise).
fn has_patel(r: &CompareReport) -> bool {
    r.results.iter().any(|run| {
        ecosched_policy::find(&run.policy).is_ok_and(|(family, _)| family.name == "patel")
    })
}

/// The headline table when every run did all its work: totals compare.
fn totals_table(r: &CompareReport, label: &dyn Fn(usize) -> String) -> String {
    let any_aw = r.ratios.values().any(|x| x.aw_perf_per_w.is_some());
    let mut header = vec![
        "policy",
        "makespan (s)",
        "energy (J)",
        "avg power (W)",
        "EDP (J·s)",
        "× makespan",
        "× energy",
        "× EDP",
        "× avg power",
        "speedup (geomean)",
    ];
    if any_aw {
        header.push("AW perf/W");
    }
    let mut align = vec![Align::Left];
    align.resize(header.len(), Align::Right);
    let mut t = Table::new(&header, &align);
    for (i, run) in r.results.iter().enumerate() {
        let rat = r.ratios.get(&run.policy);
        let mut row = vec![
            label(i),
            num(run.makespan_s),
            opt(run.energy_j),
            opt(run.avg_power_w),
            opt(run.edp_js),
            ratio(rat.map(|x| x.makespan)),
            ratio(rat.and_then(|x| x.energy)),
            ratio(rat.and_then(|x| x.edp)),
            ratio(rat.and_then(|x| x.avg_power)),
            ratio(rat.and_then(|x| x.speedup_geomean)),
        ];
        if any_aw {
            row.push(ratio(rat.and_then(|x| x.aw_perf_per_w)));
        }
        t.row(row);
    }
    t.render()
}

/// Patel's ch. 9 figures (thesis §5.2 step 9): (a) mean instructions/s per
/// process per average watt, (b) mean completion time × average watts, and
/// the percentages of his Table 4 against the baseline.
fn patel_table(r: &CompareReport) -> String {
    if !has_patel(r) {
        return String::new();
    }
    let header = [
        "policy",
        "avg ins/s (1e9)",
        "(a) ins/s/W (1e6)",
        "(b) time·W (1e3 s·W)",
        "power savings %",
        "loaded power savings %",
        "performance %",
        "perf/W %",
        "time·W %",
    ];
    let mut align = vec![Align::Left];
    align.resize(header.len(), Align::Right);
    let mut t = Table::new(&header, &align);
    let scaled = |x: Option<f64>, by: f64| opt(x.map(|v| v / by));
    let pct = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:+.2}"));
    for run in &r.results {
        let p = r.ratios.get(&run.policy).map(|c| &c.patel);
        t.row([
            run.policy.clone(),
            scaled(run.patel.mean_ips, 1e9),
            scaled(run.patel.ips_per_w, 1e6),
            scaled(run.patel.time_w, 1e3),
            pct(p.and_then(|c| c.power_savings_pct)),
            pct(p.and_then(|c| c.loaded_power_savings_pct)),
            pct(p.and_then(|c| c.performance_improvement_pct)),
            pct(p.and_then(|c| c.perf_per_w_improvement_pct)),
            pct(p.and_then(|c| c.time_w_improvement_pct)),
        ]);
    }
    format!(
        "Patel ch. 9 metrics (per program: all its runs; % against the baseline as his Table 4 computes them, the difference over the larger of the two, positive = better; loaded = while every program still runs)\n\n{}",
        t.render()
    )
}

/// `validate`: checks grouped by source, failures' notes, then the tally.
pub fn validate(observe: ecosched_sim::Observe, checks: &[Check]) -> String {
    let mut t = Table::new(
        &[
            "check",
            "kind",
            "paper",
            "simulated",
            "tolerance",
            "rel err",
            "result",
        ],
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    let mut source: Option<&str> = None;
    for c in checks {
        if source != Some(c.source.as_str()) {
            t.section(format!("[{}]", c.source));
            source = Some(c.source.as_str());
        }
        t.row([
            format!("  {}", c.name),
            match c.kind {
                RowKind::Calibrated => "calibrated",
                RowKind::Predicted => "predicted",
            }
            .to_string(),
            num(c.paper),
            num(c.simulated),
            format!("±{}", short(c.tolerance)),
            pct(c.rel_error),
            match (c.pass, c.known_miss) {
                (true, _) => "PASS",
                (false, true) => "MISS (known)",
                (false, false) => "FAIL",
            }
            .to_string(),
        ]);
    }
    let mut out = format!("observed: {}\n{}", observe_label(observe), t.render());
    // Known misses are listed with the failures, their reason in the note.
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.pass).collect();
    let misses = failed.iter().filter(|c| c.known_miss).count();
    if !failed.is_empty() {
        out.push_str("\nfailed or known misses:\n");
        for c in &failed {
            let text = format!(
                "{} ({}): paper {}, simulated {}, tolerance ±{}; {}",
                c.name,
                c.source,
                num(c.paper),
                num(c.simulated),
                short(c.tolerance),
                c.note
            );
            crate::table::block(&mut out, "  - ", 4, &text);
        }
    }
    out.push_str(&format!("\n{}", validate_summary(checks)));
    out.push_str(&format!(
        "\n{} passed, {} failed, {} known misses\n",
        checks.len() - failed.len(),
        failed.len() - misses,
        misses
    ));
    out
}

/// A relative error in percent; `-` for ordering rows and absolute bounds.
fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{:.1} %", x * 100.0))
}

/// The per-paper summary under `validate`'s table.
fn validate_summary(checks: &[Check]) -> String {
    let mut t = Table::new(
        &[
            "paper",
            "rows",
            "predicted",
            "pass",
            "miss",
            "fail",
            "worst rel err",
            "worst row",
        ],
        &[
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for s in ecosched_engine::fidelity::summarize(checks) {
        t.row([
            s.paper,
            s.rows.to_string(),
            s.predicted.to_string(),
            s.passed.to_string(),
            s.known_misses.to_string(),
            s.failed.to_string(),
            pct(s.worst_rel_error),
            s.worst_row.unwrap_or_default(),
        ]);
    }
    t.render()
}

/// `bench sim`.
pub fn bench(b: &BenchReport) -> String {
    crate::table::fit_lines(&format!(
        "{}: {} simulated s in {} s wall = {}× real time (tick {} ms; {} events, {} solves, memo hit rate {}, {} cold starts)\n",
        b.scenario,
        num(b.simulated_s),
        num(b.wall_s),
        num(b.realtime_factor),
        b.tick_ms,
        b.events,
        b.solves,
        num(b.memo_hit_rate),
        b.cold_starts
    ))
}

/// `compare --seeds N`: each policy's mean ± standard deviation over the
/// seeds, and the run-time standard deviation across them (Dhiman Table 2).
pub fn compare_seeds(r: &ecosched_engine::seeds::SeedsReport) -> String {
    use ecosched_engine::seeds::Spread;
    let pm = |s: Option<Spread>, digits: usize| {
        s.map_or_else(
            || "–".to_string(),
            |s| format!("{:.digits$} ± {:.digits$}", s.mean, s.std),
        )
    };
    let header = [
        "policy",
        "makespan (s)",
        "avg power (W)",
        "migrations/s",
        "run-time std-dev (%)",
        "AW perf/W",
    ];
    let mut align = vec![Align::Left];
    align.resize(header.len(), Align::Right);
    let mut t = Table::new(&header, &align);
    for p in &r.policies {
        let label = if p.policy == r.baseline {
            format!("{} *", p.policy)
        } else {
            p.policy.clone()
        };
        t.row(vec![
            label,
            pm(p.makespan_s, 1),
            pm(p.avg_power_w, 1),
            pm(p.migrations_per_s, 3),
            p.runtime_std_pct
                .map_or_else(|| "–".to_string(), |v| format!("{v:.2}")),
            pm(p.aw_perf_per_w, 3),
        ]);
    }
    let seeds = match (r.seeds.first(), r.seeds.last()) {
        (Some(a), Some(b)) => format!("seeds {a}–{b} ({} runs each)", r.seeds.len()),
        _ => "no seeds".to_string(),
    };
    crate::table::fit_lines(&format!(
        "scenario {}, baseline {} (*), {seeds}; mean ± standard deviation over the seeds\nobserved: {}\n\n{}",
        r.scenario,
        r.baseline,
        observe_label(r.observe),
        t.render()
    ))
}

/// `ecosched calibrate av`: the measurements, then the result as the TOML
/// to put under a machine's `[calibration]` table.
pub fn calibrate_av(run: &ecosched_engine::calibrate::AvCalibrationRun) -> String {
    let mut out = format!(
        "activity-vector calibration of {} ({})\n\n",
        run.machine, run.measured_on
    );
    out.push_str("benchmark      MHz     bus    cache   core\n");
    for m in &run.measured {
        out.push_str(&format!(
            "{:<12} {:>5}  {:>6.3}  {:>6.3}  {:>5.3}\n",
            m.benchmark,
            m.freq_khz / 1000,
            m.vector[0],
            m.vector[1],
            m.vector[2]
        ));
    }
    let a = &run.activity;
    out.push_str("\ntranslation vectors (factor to the highest P-state):\n");
    out.push_str("  MHz     bus    cache   core\n");
    for t in &a.translation {
        out.push_str(&format!(
            "{:>5}  {:>6.4}  {:>6.4}  {:>6.4}\n",
            t.freq_khz / 1000,
            t.bus,
            t.cache,
            t.core
        ));
    }
    out.push_str("\n# under [calibration]:\n[calibration.activity]\n");
    out.push_str(&format!("peak_mem_per_s = {:.1}\n", a.peak_mem_per_s));
    if let Some(peak) = a.peak_mem_transactions_per_s {
        out.push_str(&format!("peak_mem_transactions_per_s = {peak:.1}\n"));
    }
    out.push_str(&format!(
        "peak_cache_per_cycle = {}\ntranslation = [\n",
        a.peak_cache_per_cycle
    ));
    for t in &a.translation {
        out.push_str(&format!(
            "  {{ freq_khz = {}, bus = {}, cache = {}, core = {} }},\n",
            t.freq_khz, t.bus, t.cache, t.core
        ));
    }
    out.push_str("]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, pass: bool) -> Check {
        Check {
            kind: RowKind::Calibrated,
            name: name.into(),
            source: "Paper §1".into(),
            paper: 1.0,
            simulated: if pass { 1.01 } else { 2.0 },
            tolerance: 0.05,
            pass,
            note: "why".into(),
            known_miss: false,
            rel_error: Some(if pass { 0.01 } else { 1.0 }),
        }
    }

    #[test]
    fn validate_tallies() {
        let text = validate(
            ecosched_sim::Observe::Linux,
            &[check("a", true), check("b", false)],
        );
        assert!(text.contains("[Paper §1]"), "{text}");
        assert!(text.contains("FAIL"), "{text}");
        // The relative error per row, and the per-paper summary.
        assert!(text.contains("100.0 %"), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("Paper ")
                && l.split_whitespace().take(7).collect::<Vec<_>>()
                    == ["Paper", "2", "0", "1", "0", "1", "100.0"]),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == "1 passed, 1 failed, 0 known misses"),
            "{text}"
        );
    }

    #[test]
    fn bench_line() {
        let b = BenchReport {
            scenario: "bench-8c24t".into(),
            simulated_s: 600.0,
            wall_s: 2.0,
            realtime_factor: 300.0,
            tick_ms: 1.0,
            events: 1200,
            solves: 30,
            memo_hit_rate: 0.975,
            cold_starts: 24,
        };
        let text = bench(&b);
        // Wrapped to fit the terminal, the words unchanged.
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert_eq!(
            text.split_whitespace().collect::<Vec<_>>().join(" "),
            "bench-8c24t: 600.0 simulated s in 2.000 s wall = 300.0× real time (tick 1 ms; 1200 events, 30 solves, memo hit rate 0.9750, 24 cold starts)"
        );
    }
}
