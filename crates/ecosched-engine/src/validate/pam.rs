//! Banikazemi, Poff, Abali: *PAM: A Novel Performance/Power Aware
//! Meta-scheduler for Multi-core Systems* (SC'08), on the two-socket Xeon
//! E5345 (`xeon-e5345` preset): the CPI model PAM predicts with (eq. 14),
//! the cache occupancies it reads (eq. 6), the gain of separating
//! cache-sensitive from streaming benchmarks, and the power cap. The
//! measurement rows open PAM's counters beside the run ([`measurement`]),
//! as an experimenter runs `perf stat -e` beside a workload.
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | eq. 14, §IV-C | CPI model on bzip2 + libquantum counters: mean \|relative error\| | 0 (at most 0.10) | calibrated |
//! | §IV-C | bzip2's, libquantum's occupancy of a shared L2 | 0.15, 0.85 | calibrated |
//! | Fig. 4, §V-B/C, abstract | 4 libquantum + 4 xalancbmk: system gain over Linux | 0.125 ("roughly 10–15 %") | calibrated |
//! | §V-C, abstract | the same: largest single-benchmark run-time reduction | 0.33 | calibrated |
//! | Fig. 6, §V-C | the same: PAM moves the processes more often than Linux | holds | predicted |
//! | Figs. 4–5, §V-B | 4 libquantum + 4 mcf: PAM improves the system | holds | predicted |
//! | Figs. 4–5, §V-B | the same: libquantum itself runs longer under PAM | holds | predicted |
//! | Fig. 5, §V-B | the same: a 95 % degradation limit shrinks libquantum's loss and the system gain | holds | predicted |
//! | Fig. 4, abstract | Fig. 4's other libquantum mixes gain at most the paper's best, 14 % | holds | predicted |
//! | Figs. 8–9, §V-E | 3 + 2 + 3 and 3 + 3 + 3 mixes: PAM improves the system | holds | predicted |
//! | Figs. 11–12, §V-G | CINT2006-like suite under a 260 W cap: four or five CPUs in most intervals | holds | calibrated |

use crate::compare::{compare, CompareReport};
use crate::experiment::{simulate_traced, SimOptions};
use crate::validate::check::Check;
use crate::validate::runs::mean;
use crate::EngineError;
use ecosched_model::Trace;
use ecosched_policy::pam::model::CpiModel;
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};
use std::collections::BTreeMap;

const PAM_MODEL: &str = "Banikazemi et al. (PAM) §IV-C, eq. 14";
const PAM_OCC: &str = "Banikazemi et al. (PAM) §IV-C";
const PAM_GAIN: &str = "Banikazemi et al. (PAM) §V-B/C, Figs. 4, 6, abstract";
const PAM_CAP: &str = "Banikazemi et al. (PAM) §V-G, Figs. 11–12";
const PAM_LIMIT: &str = "Banikazemi et al. (PAM) §V-B, Figs. 4–5";
const PAM_MIX: &str = "Banikazemi et al. (PAM) §V-E, Figs. 8–9";

/// One task over one interval, as PAM's counters see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Task name.
    pub name: String,
    /// L1D miss ratio.
    pub m1: f64,
    /// Shared-cache miss ratio.
    pub m2: f64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Lines brought into the shared cache.
    pub lines: f64,
}

/// Per-task samples of every interval of a trace (after the first, which
/// carries start-up), skipping intervals a task barely ran in.
pub fn samples(trace: &Trace) -> Vec<Vec<Sample>> {
    trace
        .steps
        .iter()
        .skip(1)
        .map(|step| {
            step.snapshot
                .live_managed()
                .filter_map(|t| {
                    let c = &t.counters;
                    let instructions = c.instructions.filter(|&i| i > 1_000_000)? as f64;
                    let ratio = |a: Option<u64>, b: Option<u64>| {
                        Some(a? as f64 / b.filter(|&b| b > 0)? as f64)
                    };
                    Some(Sample {
                        name: t.name.clone(),
                        m1: ratio(c.l1d_misses, c.l1d_references)?,
                        m2: ratio(c.llc_misses, c.llc_references)?,
                        cpi: c.cycles? as f64 / instructions,
                        lines: c.lines_in? as f64,
                    })
                })
                .collect()
        })
        .collect()
}

fn trace_of(
    o: &SimOptions,
    scenario: &str,
    policy: &str,
    params: Params,
) -> Result<Trace, EngineError> {
    let s = Scenario::load(scenario)?;
    Ok(simulate_traced(&s, policy, &params, o)?.1)
}

/// The counters PAM's measurement rows read (eqs. 5–14), opened beside
/// whatever the run's policy needs, as an experimenter runs `perf stat -e`
/// beside a workload. Under `--observe linux` they are multiplexed.
pub fn measurement(o: Observe) -> SimOptions {
    use ecosched_model::CounterKind as K;
    SimOptions {
        extra_counters: [
            K::Instructions,
            K::Cycles,
            K::LlcReferences,
            K::LlcMisses,
            K::L1dReferences,
            K::L1dMisses,
            K::LinesIn,
        ]
        .into(),
        ..SimOptions::observing(o)
    }
}

/// Mean relative error of eq. 14 on samples whose name starts with one of
/// `prefixes`.
pub fn eq14_error(samples: &[Vec<Sample>], prefixes: &[&str]) -> f64 {
    let model = CpiModel::PAPER;
    mean(
        samples
            .iter()
            .flatten()
            .filter(|s| prefixes.iter().any(|p| s.name.starts_with(p)))
            .map(|s| (model.cpi(s.m1, s.m2) - s.cpi).abs() / s.cpi),
    )
}

/// PAM's validation rows (Banikazemi, Poff and Abali, SC '08): the CPI
/// fit, the occupancies of bzip2 and libquantum sharing an L2, and the gain
/// of separating cache-sensitive from streaming tasks.
pub fn checks(o: Observe) -> Result<Vec<Check>, EngineError> {
    // bzip2 and libquantum confined to the two CPUs of one L2.
    let measure = measurement(o);
    let shared = samples(&trace_of(
        &measure,
        "pam-bzip2-libq",
        "static",
        Params::default().with("cpus", "0-1"),
    )?);
    let occupancy = |who: &str| {
        // Only intervals in which both ran (one finishes before the other).
        mean(
            shared
                .iter()
                .filter(|step| step.len() == 2)
                .filter_map(|step| {
                    let total: f64 = step.iter().map(|s| s.lines).sum();
                    let mine = step.iter().find(|s| s.name.starts_with(who))?;
                    (total > 0.0).then(|| mine.lines / total)
                }),
        )
    };
    // The paper fitted eq. 14 on the two benchmarks' counters: here each
    // alone on the machine, and the two together in one L2.
    let mut fit = shared.clone();
    let pair = Scenario::load("pam-bzip2-libq")?;
    for name in ["bzip2", "libquantum"] {
        if let Some(alone) = pair.alone(name) {
            let (_, trace) = simulate_traced(&alone, "ondemand", &Params::default(), &measure)?;
            fit.extend(samples(&trace));
        }
    }
    let fit_error = eq14_error(&fit, &["bzip2", "libquantum"]);
    // Separating xalancbmk from libquantum: PAM against the kernel's own
    // placement under ondemand.
    let (report, gain) = against_linux(o, "pam-libq-xalancbmk", Params::default())?;
    let base = &report.results[0];
    let pam = &report.results[1];
    let moves =
        |m: &crate::report::SimReport| -> u64 { m.tasks.iter().filter_map(|t| t.migrations).sum() };
    let best_single = pam
        .tasks
        .iter()
        .filter_map(|t| {
            let b = base.tasks.iter().find(|b| b.name == t.name)?;
            Some(1.0 - t.runtime_s / b.runtime_s)
        })
        .fold(f64::NAN, f64::max);
    Ok(vec![
        Check::new(
            "eq. 14 CPI model on simulated bzip2 + libquantum counters: mean |relative error|",
            PAM_MODEL,
            0.0,
            fit_error,
            0.10,
            "CPI = 0.733 + 3.43·m1 + 110·m1·m2 evaluated on every per-interval sample of bzip2 and libquantum, each alone and the two together in one L2. Calibrated, true by construction: both profiles' cpi_core, api and memory term were derived from eq. 14 itself (profiles.toml), so the row checks that derivation, not a prediction",
        ),
        Check::new(
            "bzip2 occupancy beside libquantum in one L2",
            PAM_OCC,
            0.15,
            occupancy("bzip2"),
            0.0225,
            "O = lines in / lines in of the L2 (eq. 6), mean over intervals; both confined to CPUs 0-1. Calibrated: libquantum's prefetch coverage was set so that it holds ≈ 0.85 here",
        ),
        Check::new(
            "libquantum occupancy beside bzip2 in one L2",
            PAM_OCC,
            0.85,
            occupancy("libquantum"),
            0.05,
            "as above; libquantum streams and takes most of the cache (calibrated with the row above)",
        ),
        Check::new(
            "4 libquantum + 4 xalancbmk: system gain of PAM over Linux (geomean speedup − 1)",
            PAM_GAIN,
            0.125,
            gain,
            0.018,
            "the paper's system-wide gains for this mix, roughly 10–15 % (its best system-wide figure is 14 %), read as 0.125; 0.107–0.143 accepted (15 %). \
             Calibrated with the row below: xalancbmk's and libquantum's miss curves were set from the two (profiles.toml)",
        ),
        Check::new(
            "4 libquantum + 4 xalancbmk: largest single-benchmark run-time reduction",
            PAM_GAIN,
            0.33,
            best_single,
            0.049,
            "the paper: 'as much as 33 % for individual threads'; 0.28–0.38 accepted (15 %). Calibrated with the row above: the two figures together say that libquantum loses when paired with itself ('Libq suffers a bit', §V-C; ≈ 15 % if both come from this mix), which the model gives by libquantum's miss curve",
        ),
        Check::ordering(
            "4 libquantum + 4 xalancbmk: PAM moves the processes more often than Linux (1 = holds)",
            PAM_GAIN,
            moves(pam) > moves(base),
            &format!(
                "§V-C, Fig. 6: without PAM a process, once placed, is rarely moved; with PAM there are more changes. \
                 CPU migrations over the run: Linux {}, PAM {}. Predicted: nothing was set from them",
                moves(base),
                moves(pam)
            ),
        )
        .predicted(),
    ])
}

/// PAM (with `params`) against the kernel's placement under ondemand on
/// `scenario`: the comparison, and the system gain (geomean speedup − 1).
fn against_linux(
    o: Observe,
    scenario: &str,
    params: Params,
) -> Result<(CompareReport, f64), EngineError> {
    let scenario = Scenario::load(scenario)?;
    let report = compare(
        &scenario,
        &[
            ("ondemand".into(), Params::default()),
            ("pam".into(), params),
        ],
        "ondemand",
        &SimOptions::observing(o),
        &mut |_, _| {},
    )?;
    let gain = report
        .ratios
        .get("pam")
        .and_then(|r| r.speedup_geomean)
        .unwrap_or(f64::NAN)
        - 1.0;
    Ok((report, gain))
}

/// PAM against the kernel's placement under ondemand on `scenario`, with
/// PAM's `params`: the system gain (geomean speedup − 1) and each
/// benchmark's mean run-time ratio PAM/Linux (instances grouped by the
/// profile their name starts with).
fn pam_vs_linux(
    o: Observe,
    scenario: &str,
    params: Params,
) -> Result<(f64, BTreeMap<String, f64>), EngineError> {
    let (report, gain) = against_linux(o, scenario, params)?;
    let (base, pam) = (&report.results[0], &report.results[1]);
    let mut ratios: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in &pam.tasks {
        if let Some(b) = base.tasks.iter().find(|b| b.name == t.name) {
            let bench = t.name.split('#').next().unwrap_or(&t.name);
            ratios
                .entry(bench.to_string())
                .or_default()
                .push(t.runtime_s / b.runtime_s);
        }
    }
    let means = ratios
        .into_iter()
        .map(|(k, v)| (k, mean(v.into_iter())))
        .collect();
    Ok((gain, means))
}

/// The Fig. 4 mixes (4 libquantum beside 4 of one CINT2006 benchmark)
/// besides xalancbmk (calibrated) and mcf (its own rows).
const PAM_FIG4_OTHERS: [&str; 6] = ["bzip2", "gcc", "hmmer", "omnetpp", "perlbench", "sjeng"];

/// Predicted PAM rows: effects the paper states in its text
/// for mixes nothing in the model was set from (the profiles of mcf,
/// omnetpp and the three-benchmark mixes are representative values; only
/// libquantum, bzip2 and xalancbmk were fitted, on the calibrated rows).
pub fn predicted(o: Observe) -> Result<Vec<Check>, EngineError> {
    let (gain, ratio) = pam_vs_linux(o, "pam-libq-mcf", Params::default())?;
    let mut best_other = gain;
    let (gain95, ratio95) = pam_vs_linux(
        o,
        "pam-libq-mcf",
        Params::default().with("max_degradation", 0.95),
    )?;
    let mut others = Vec::new();
    for mix in PAM_FIG4_OTHERS {
        let (g, _) = pam_vs_linux(o, &format!("pam-libq-{mix}"), Params::default())?;
        others.push(format!("{mix} {g:.3}"));
        best_other = best_other.max(g);
    }
    let (gain323, _) = pam_vs_linux(o, "pam-mix-323", Params::default())?;
    let (gain333, _) = pam_vs_linux(o, "pam-mix-333", Params::default())?;
    let libq = |r: &BTreeMap<String, f64>| r.get("libquantum").copied().unwrap_or(f64::NAN);
    let mcf = ratio.get("mcf").copied().unwrap_or(f64::NAN);
    Ok(vec![
        Check::ordering(
            "4 libquantum + 4 mcf: PAM improves the system (1 = holds)",
            PAM_LIMIT,
            gain > 0.0,
            &format!("§V-B: 'even though the overall performance is improved'; simulated gain {gain:.3}"),
        )
        .predicted(),
        Check::ordering(
            "4 libquantum + 4 mcf: libquantum itself runs longer under PAM (1 = holds)",
            PAM_LIMIT,
            libq(&ratio) > 1.0,
            &format!(
                "§V-B: 'the performance of Libq itself degrades significantly'; run-time ratio PAM/Linux: libquantum {:.3}, mcf {mcf:.3} (Fig. 4's bars are not in the text)",
                libq(&ratio)
            ),
        )
        .predicted(),
        Check::ordering(
            "4 libquantum + 4 mcf: a 95 % degradation limit shrinks libquantum's loss (1 = holds)",
            PAM_LIMIT,
            libq(&ratio95) < libq(&ratio),
            &format!(
                "Fig. 5: 'when this limit is set to 95%, Libq degradation is reduced substantially'; libquantum's run-time ratio {:.3} with max_degradation 0.95, {:.3} with the default 0.10",
                libq(&ratio95),
                libq(&ratio)
            ),
        )
        .predicted(),
        Check::ordering(
            "4 libquantum + 4 mcf: a 95 % degradation limit shrinks the system gain (1 = holds)",
            PAM_LIMIT,
            gain95 < gain,
            &format!(
                "Fig. 5: '… and overall performance improvement decreases'; gain {gain95:.3} with the limit, {gain:.3} without"
            ),
        )
        .predicted(),
        Check::ordering(
            "Fig. 4's other libquantum mixes: none gains more than the paper's best system-wide figure, 14 % (1 = holds)",
            PAM_GAIN,
            best_other <= 0.14,
            &format!(
                "abstract: 'the overall system performance can be improved by as much as 14%'; PAM's system gain over Linux with 4 libquantum beside 4 of each: mcf {gain:.3}, {}",
                others.join(", ")
            ),
        )
        .predicted(),
        Check::ordering(
            "3 + 2 + 3 and 3 + 3 + 3 mixes: PAM improves the system in both (1 = holds)",
            PAM_MIX,
            gain323 > 0.0 && gain333 > 0.0,
            &format!(
                "§V-E: 'in most cases using PAM leads to a better performance', also with more threads than CPUs; the figures' benchmarks are not in the text (stand-ins, see the scenarios); simulated gain {gain323:.3} (3 + 2 + 3), {gain333:.3} (3 + 3 + 3)"
            ),
        )
        .predicted(),
    ])
}

/// The power cap of §V-G: the CINT2006-like suite under 260 W keeps 4–5
/// CPUs in use.
pub fn power_cap(o: Observe) -> Result<Vec<Check>, EngineError> {
    let trace = trace_of(
        &SimOptions::observing(o),
        "pam-powercap",
        "pam",
        Params::default()
            .with("goal", "power-cap")
            .with("power_cap_w", 260),
    )?;
    let cap = cap_figures(&trace, 260.0);
    let intervals: usize = cap.intervals_by_cpus.iter().sum();
    let four_or_five = cap.intervals_by_cpus.iter().skip(4).take(2).sum::<usize>() as f64
        / intervals.max(1) as f64;
    let counts = cap
        .intervals_by_cpus
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} CPUs: {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(vec![Check::ordering(
        "CINT2006-like suite under a 260 W cap: four or five CPUs in use in most intervals (1 = holds)",
        PAM_CAP,
        four_or_five > 0.5,
        &format!(
            "§V-G: 'in most cases four or five CPUs are used' (no mean is given, so the row \
             counts the intervals with four or five); CPUs allowed by the cap per interval: \
             {counts} ({:.0} % with four or five; mean {:.2})",
            four_or_five * 100.0,
            cap.mean_cpus
        ),
    )])
}

/// How well a run held a power cap.
#[derive(Debug, Clone, PartialEq)]
pub struct CapFigures {
    /// Fraction of intervals whose mean power exceeded the cap.
    pub fraction_above: f64,
    /// Worst interval's power above the cap, W (0 if never above).
    pub worst_overshoot_w: f64,
    /// The same from the second interval on: the first one runs before the
    /// policy has measured anything, so nothing can hold it.
    pub worst_overshoot_after_first_w: f64,
    /// Mean power, W.
    pub mean_power_w: f64,
    /// Mean number of CPUs the managed tasks were allowed, over intervals.
    pub mean_cpus: f64,
    /// Intervals by the number of CPUs the managed tasks were allowed:
    /// `intervals_by_cpus[k]` counts the intervals with `k` CPUs.
    pub intervals_by_cpus: Vec<usize>,
}

/// Cap-holding figures from a trace (system meter, or package if absent).
pub fn cap_figures(trace: &Trace, cap_w: f64) -> CapFigures {
    let all = trace.header.topology.online_cpus().len() as f64;
    let mut allowed = trace
        .initial_plan
        .managed_cpus
        .as_ref()
        .map_or(all, |s| s.len() as f64);
    let (mut above, mut n, mut worst, mut power_sum, mut cpu_sum) =
        (0usize, 0usize, 0.0f64, 0.0, 0.0);
    let mut worst_later = 0.0f64;
    let mut intervals_by_cpus = vec![0; all as usize + 1];
    for step in &trace.steps {
        let p = &step.snapshot.power;
        if let Some(j) = p.system_j.or(p.package_j) {
            let w = j / step.snapshot.interval_s.max(1e-9);
            n += 1;
            power_sum += w;
            cpu_sum += allowed;
            intervals_by_cpus[(allowed as usize).min(all as usize)] += 1;
            if w > cap_w {
                above += 1;
                worst = worst.max(w - cap_w);
                if n > 1 {
                    worst_later = worst_later.max(w - cap_w);
                }
            }
        }
        if let Some(set) = &step.plan.managed_cpus {
            allowed = set.len() as f64;
        }
    }
    let n_f = n.max(1) as f64;
    CapFigures {
        fraction_above: above as f64 / n_f,
        worst_overshoot_w: worst,
        worst_overshoot_after_first_w: worst_later,
        mean_power_w: power_sum / n_f,
        mean_cpus: cpu_sum / n_f,
        intervals_by_cpus,
    }
}
