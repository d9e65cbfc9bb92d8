//! How fast each running task goes, given who else is running
//! (`docs/design/simulator.md`, "How fast a task runs"). One solve covers the
//! whole machine for one configuration of running tasks and frequencies:
//!
//! ```text
//! time per instruction  tpi_i = cpi_i / f_i + api_i · m_i(S_i) · (1 − c_i) · L_d / mlp_i     (ns)
//! shared-cache share    S_i   = C · w_i / Σ_{j in i's cache} w_j,  w = api·m / tpi  (insertions/ns)
//! (c = prefetch coverage: prefetched lines are inserted and fetched but do not stall)
//! memory domain d       ρ_d   = Σ traffic / B_sat,   L_d = L0 · (1 + ½ · ρ/(1 − ρ)),  ρ ≤ rho_max (per machine),
//!                       and a hard cap: if traffic still exceeds B_sat, L_d rises until it fits.
//! ```
//!
//! The shares and miss ratios are found by damped fixed-point iteration —
//! the same shape as PAM's Algorithm 1 — and for fixed miss ratios each
//! memory domain's latency is found exactly by regula falsi in a bracket
//! (traffic falls monotonically as latency rises, so the root is unique;
//! `rising_root`).

use crate::machine::Machine;
use crate::profile::Phase;
use kinds::{groups, DomainTraffic, Kinds, TrafficTerms};
use std::cell::Cell;

mod kinds;

/// Convergence tolerance on cache shares, as a fraction of the cache size
/// (PAM's Algorithm 1 uses 0.001 on occupancies; we are tighter because
/// the result feeds counters directly).
pub const SHARE_TOLERANCE: f64 = 1e-4;
/// Iteration cap; a solve that hits it is counted as not converged.
pub const MAX_ITERATIONS: usize = 300;
/// Fraction of the working set over which the miss ratio blends from the
/// curve to the floor, keeping m(S) continuous so the iteration settles.
pub const FIT_BLEND: f64 = 0.1;

/// One running task, as the solver needs it.
#[derive(Debug, Clone, Copy)]
pub struct Demand<'a> {
    /// Its current phase.
    pub phase: &'a Phase,
    /// Its CPU (dense index).
    pub cpu: usize,
    /// Effective frequency of the CPU, GHz.
    pub freq_ghz: f64,
    /// Multiplier on `cpi_core` (SMT sibling busy).
    pub cpi_factor: f64,
}

/// How a running task fares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Time per instruction, ns.
    pub tpi_ns: f64,
    /// Lines brought into the shared cache per access (demand misses and
    /// prefetched lines).
    pub miss_ratio: f64,
    /// Shared-cache share, KiB.
    pub share_kib: f64,
    /// Fraction of its time spent computing rather than waiting on memory.
    pub compute_fraction: f64,
    /// Memory traffic, bytes per ns (= GB/s).
    pub bytes_per_ns: f64,
}

/// A solve's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// Per demand, in order.
    pub outcomes: Vec<Outcome>,
    /// Memory latency per memory domain, ns.
    pub latency_ns: Vec<f64>,
    /// Whether the share iteration converged within [`MAX_ITERATIONS`].
    pub converged: bool,
}

/// A memory domain's traffic, bytes per ns, as a function of its latency
/// (ns), monotonically falling: what [`memory_latency`] finds the latency
/// of. Any `Fn(f64) -> f64` is one.
pub trait Traffic {
    /// The traffic at latency `l`.
    fn at(&self, l: f64) -> f64;

    /// The traffic at latencies `a` and `b`, each exactly as `at` gives
    /// it; an implementation may find both in one pass.
    fn at_two(&self, a: f64, b: f64) -> (f64, f64) {
        (self.at(a), self.at(b))
    }
}

impl<F: Fn(f64) -> f64> Traffic for F {
    fn at(&self, l: f64) -> f64 {
        self(l)
    }
}

/// Miss ratio with a continuous blend to the floor near the working set.
fn miss_ratio(phase: &Phase, share_kib: f64) -> f64 {
    let c = &phase.miss;
    let edge = c.ws_kib * (1.0 - FIT_BLEND);
    if share_kib <= edge {
        return c.ratio(share_kib);
    }
    if share_kib >= c.ws_kib {
        return c.m_floor;
    }
    let t = (share_kib - edge) / (c.ws_kib - edge);
    let at_edge = c.ratio(edge);
    at_edge + (c.m_floor - at_edge) * t
}

/// Solve the whole machine for one set of running tasks.
pub fn solve(machine: &Machine, demands: &[Demand<'_>]) -> Solution {
    let mem = &machine.spec.memory;
    let line = f64::from(mem.line_bytes);
    let l0 = mem.latency_ns;
    let bandwidth = mem.bandwidth_gbs; // GB/s = bytes/ns
    let kinds = Kinds::of(machine, demands);
    let n = kinds.len();
    // Who shares which memory domain and which cache does not change
    // within a solve: list them once.
    let mem_members = groups(&kinds, &kinds.mem, machine.mem_domains);
    let llc_members = groups(&kinds, &kinds.llc, machine.llc.len());
    let compute_ns = &kinds.compute_ns;
    // An even split of each cache to start from.
    let mut share: Vec<f64> = (0..n)
        .map(|k| {
            let c = kinds.llc[k];
            machine.llc[c].0 / llc_members[c].order.len() as f64
        })
        .collect();
    let mut miss = vec![0.0; n];
    let mut latency = vec![l0; machine.mem_domains];
    let mut step: f64 = 0.5;
    let mut last_residual = f64::INFINITY;
    let mut converged = false;
    let tpi = |k: usize, m: f64, lat: &[f64]| {
        let p = kinds.phase[k];
        compute_ns[k] + p.api * m * (1.0 - p.prefetch_coverage) * lat[kinds.mem[k]] / p.mlp
    };
    let mut terms = TrafficTerms::new(n);
    let mut target = share.clone();
    let mut w = vec![0.0; n];
    for _ in 0..MAX_ITERATIONS {
        for k in 0..n {
            miss[k] = miss_ratio(kinds.phase[k], share[k]);
        }
        for (lat, members) in latency.iter_mut().zip(&mem_members) {
            for &k in &members.kinds {
                let p = kinds.phase[k];
                let per_instr = p.api * miss[k];
                terms.line_rate[k] = per_instr * line;
                terms.compute[k] = compute_ns[k];
                terms.stall[k] = per_instr * (1.0 - p.prefetch_coverage);
                terms.mlp[k] = p.mlp;
            }
            let traffic = DomainTraffic {
                terms: &terms,
                members,
            };
            *lat = memory_latency(l0, bandwidth, mem.rho_max, traffic);
        }
        // New shares from insertion rates, per cache instance.
        for (k, w) in w.iter_mut().enumerate() {
            *w = kinds.phase[k].api * miss[k] / tpi(k, miss[k], &latency);
        }
        let mut residual: f64 = 0.0;
        for (members, (size, _)) in llc_members.iter().zip(&machine.llc) {
            let total: f64 = members.order.iter().map(|&k| w[k]).sum();
            let count = members.order.len();
            for &k in &members.kinds {
                target[k] = if count == 1 {
                    *size
                } else if total > 0.0 {
                    size * w[k] / total
                } else {
                    size / count as f64
                };
                residual = residual.max((target[k] - share[k]).abs() / size);
            }
        }
        if residual <= SHARE_TOLERANCE {
            converged = true;
            break;
        }
        // Shrink the step when the iteration starts to oscillate.
        if residual > last_residual {
            step = (step * 0.7).max(0.02);
        }
        last_residual = residual;
        for k in 0..n {
            share[k] += step * (target[k] - share[k]);
        }
    }
    let by_kind: Vec<Outcome> = (0..n)
        .map(|k| {
            let t = tpi(k, miss[k], &latency);
            let p = kinds.phase[k];
            Outcome {
                tpi_ns: t,
                miss_ratio: miss[k],
                share_kib: share[k],
                compute_fraction: (compute_ns[k] / t).clamp(0.0, 1.0),
                bytes_per_ns: p.api * miss[k] * line / t,
            }
        })
        .collect();
    Solution {
        outcomes: kinds.of.iter().map(|&k| by_kind[k]).collect(),
        latency_ns: latency,
        converged,
    }
}

/// Steps in which a cold task's occupancy is followed up to its share:
/// each warm-up stage grows it by at most this fraction of the share, at
/// the stage's mean miss ratio. Not a physical parameter (no result
/// depends on it beyond the shape of the slowdown inside a warm-up: every
/// stage keeps the exact count of accesses and lines of the curve), only
/// the resolution of a piecewise-constant rate; 8 steps cost eight events
/// per cold start.
pub const WARMUP_STAGES: f64 = 8.0;

/// Simpson intervals per warm-up stage for `∫ ds / m(s)`.
const WARMUP_SIMPSON: usize = 8;

/// A task refilling a shared cache it has just arrived in, for one stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warming {
    /// How it fares during the stage: the steady outcome with the stage's
    /// mean miss ratio and the stalls those extra misses add.
    pub outcome: Outcome,
    /// Occupancy at which the stage ends, KiB.
    pub until_kib: f64,
}

/// How a task fares while its lines come back into a cache it has just
/// arrived in (moved from a CPU behind another last-level cache, or run
/// for the first time), given how it fares there in steady state
/// (`steady`, from [`solve`]), the memory latency its misses see
/// (`latency_ns`, its memory domain's in the same solve) and the KiB of
/// its lines already there (`occupancy_kib`); `None` once it is warm.
///
/// The physics (`docs/design/simulator.md`, "Cache warm-up"):
/// - its occupancy starts at zero and grows by one line for every line it
///   brings in (every miss and prefetched line: `miss_ratio` counts both),
///   until it reaches the share the steady-state solve gives it, capped at
///   its working set (a task never holds more lines than it touches);
/// - meanwhile its miss ratio is the curve's at its occupancy, `m(S)`
///   (`miss_ratio`), above the steady `m(S*)`, and every extra miss
///   stalls it `(1 − c) · L_d / mlp` like any other, so it runs slower and
///   its counters show the extra references' misses;
/// - no new parameter: lines come in at its own insertion rate
///   (`api · m(S)` per instruction), so how long a warm-up lasts follows
///   from the curve, the share and the task's speed. A task with a flat
///   curve (streaming, α ≈ 0) misses as much cold as warm and pays
///   nothing.
///
/// Simplifications, all second order at the migration rates the papers
/// saw (≈ 1 per second per task against warm-ups of milliseconds): its
/// own lines are not evicted while it is below its share (in steady state
/// insertions balance evictions; below it, it mostly takes other tasks'
/// lines); its neighbours keep their steady outcome (they do not gain the
/// lines it has not claimed yet), and its extra memory traffic does not
/// raise the memory latency the others see.
///
/// Within a stage `[S_a, S_b]` the miss ratio is constant at the mean that
/// keeps the curve's counts exactly: `lines = (S_b − S_a) / line` and
/// `accesses = ∫ ds / (m(s) · line)`, so `m̄ = (S_b − S_a) / ∫ ds / m(s)`.
pub fn warming(
    phase: &Phase,
    steady: &Outcome,
    latency_ns: f64,
    occupancy_kib: f64,
    line_bytes: u32,
) -> Option<Warming> {
    let target = steady.share_kib.min(phase.miss.ws_kib);
    let m_steady = steady.miss_ratio;
    if occupancy_kib >= target * (1.0 - 1e-3)
        || miss_ratio(phase, occupancy_kib) <= m_steady * (1.0 + 1e-3) + 1e-9
    {
        return None;
    }
    let until = target.min(occupancy_kib + target / WARMUP_STAGES);
    // ∫ ds / m(s), split where the curve blends into its floor (a kink).
    let simpson = |a: f64, b: f64| {
        if b <= a {
            return 0.0;
        }
        let h = (b - a) / WARMUP_SIMPSON as f64;
        let inverse = |k: usize| 1.0 / miss_ratio(phase, a + h * k as f64).max(1e-9);
        let mut sum = inverse(0) + inverse(WARMUP_SIMPSON);
        for k in 1..WARMUP_SIMPSON {
            sum += if k % 2 == 1 { 4.0 } else { 2.0 } * inverse(k);
        }
        sum * h / 3.0
    };
    // In the blend m(s) is linear, so its part is a logarithm.
    let blend = |a: f64, b: f64| {
        if b <= a {
            return 0.0;
        }
        let (ma, mb) = (
            miss_ratio(phase, a).max(1e-9),
            miss_ratio(phase, b).max(1e-9),
        );
        if (ma - mb).abs() <= 1e-12 * ma {
            (b - a) / ma
        } else {
            (b - a) * (ma / mb).ln() / (ma - mb)
        }
    };
    let edge = (phase.miss.ws_kib * (1.0 - FIT_BLEND)).clamp(occupancy_kib, until);
    let integral = simpson(occupancy_kib, edge) + blend(edge, until);
    let m_bar = ((until - occupancy_kib) / integral).max(m_steady);
    let extra_ns =
        phase.api * (m_bar - m_steady) * (1.0 - phase.prefetch_coverage) * latency_ns / phase.mlp;
    let tpi_ns = steady.tpi_ns + extra_ns;
    Some(Warming {
        outcome: Outcome {
            tpi_ns,
            miss_ratio: m_bar,
            share_kib: occupancy_kib,
            compute_fraction: steady.compute_fraction * steady.tpi_ns / tpi_ns,
            bytes_per_ns: phase.api * m_bar * f64::from(line_bytes) / tpi_ns,
        },
        until_kib: until,
    })
}

/// Memory latency for a domain whose traffic at latency `l` is `traffic(l)`
/// (monotonically falling): the queueing fixed point, then the hard cap.
///
/// The traffic is most of a solve's time, so it is evaluated once per
/// latency: the bracket's two ends together (`Traffic::at_two`), and the
/// root's traffic, which the cap check and the cap's bracket need again,
/// recalled (it is the same function of the same latency, so recalling it
/// changes no bit).
pub fn memory_latency(l0: f64, bandwidth: f64, rho_max: f64, traffic: impl Traffic) -> f64 {
    // The traffic at the last latency where g was found ≥ 0 (the root
    // finder's upper end, which it returns) and at the last two latencies
    // evaluated.
    let upper: Cell<Option<(f64, f64)>> = Cell::new(None);
    let recent: Cell<[Option<(f64, f64)>; 2]> = Cell::new([None; 2]);
    let remember = |l: f64, t: f64| {
        let r = recent.get();
        recent.set([Some((l, t)), r[0]]);
    };
    let traffic_at = |l: f64| {
        let [a, b] = recent.get();
        let known = [upper.get(), a, b];
        if let Some((_, t)) = known
            .into_iter()
            .flatten()
            .find(|(x, _)| x.to_bits() == l.to_bits())
        {
            return t;
        }
        let t = traffic.at(l);
        remember(l, t);
        t
    };
    let queue = |rho: f64| l0 * (1.0 + 0.5 * rho / (1.0 - rho));
    // g(l) = l − queue(ρ(l)) rises with l: its root lies between L0 and
    // the clamp.
    let g_of = |l: f64, t: f64| {
        let g = l - queue((t / bandwidth).min(rho_max));
        if g >= 0.0 {
            upper.set(Some((l, t)));
        }
        g
    };
    let (lo, hi) = (l0, queue(rho_max));
    let (t_lo, t_hi) = traffic.at_two(lo, hi);
    remember(lo, t_lo);
    remember(hi, t_hi);
    let g_lo = g_of(lo, t_lo);
    if g_lo >= 0.0 {
        return lo;
    }
    let g_hi = g_of(hi, t_hi);
    let mut l = rising_root(lo, g_lo, hi, g_hi, |l| g_of(l, traffic_at(l)));
    if traffic_at(l) > bandwidth {
        // Hard cap: raise latency until demand fits the bandwidth.
        let spare = |l: f64| bandwidth - traffic_at(l);
        let (mut lo, mut hi) = (l, l * 2.0);
        while spare(hi) < 0.0 && hi < 1e12 {
            lo = hi;
            hi *= 2.0;
        }
        l = rising_root(lo, spare(lo), hi, spare(hi), spare);
    }
    l
}

/// The root of a rising `f` with `f(lo) = f_lo < 0 ≤ f(hi) = f_hi`, to a
/// few units in the last place: the bracket's upper end once it is that
/// narrow (so `f` there is ≥ 0, as bisection would leave it).
///
/// Why not bisection: the solver finds a latency in every one of its
/// share iterations, and this is most of a simulation's time; the
/// Illinois variant of regula falsi (Dowell and Jarratt, BIT 11, 1971)
/// keeps bisection's bracket but converges superlinearly: on the loads of
/// `the_latency_root_is_bisections`, 8–16 evaluations of the traffic where
/// bisection made 61, and about 50 where the root sits at the kink of
/// ρ's clamp. A step the secant would place outside the bracket bisects
/// instead.
fn rising_root(
    mut lo: f64,
    mut f_lo: f64,
    mut hi: f64,
    mut f_hi: f64,
    f: impl Fn(f64) -> f64,
) -> f64 {
    // Which end moved last: the other end's value is halved when the same
    // end moves twice running (Illinois), so neither end stalls.
    let mut last_low = None;
    for _ in 0..200 {
        if hi - lo <= 4.0 * f64::EPSILON * hi.abs() {
            break;
        }
        let secant = (lo * f_hi - hi * f_lo) / (f_hi - f_lo);
        let x = if secant > lo && secant < hi {
            secant
        } else {
            0.5 * (lo + hi)
        };
        let f_x = f(x);
        if f_x < 0.0 {
            (lo, f_lo) = (x, f_x);
            if last_low == Some(true) {
                f_hi *= 0.5;
            }
            last_low = Some(true);
        } else {
            (hi, f_hi) = (x, f_x);
            if f_x == 0.0 {
                break;
            }
            if last_low == Some(false) {
                f_lo *= 0.5;
            }
            last_low = Some(false);
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_unloaded_without_traffic() {
        assert_eq!(memory_latency(80.0, 8.0, 0.95, |_| 0.0), 80.0);
    }

    #[test]
    fn latency_solves_the_queueing_equation() {
        // traffic = 12 / (1 + l/80): rho = traffic / 8.
        let traffic = |l: f64| 12.0 / (1.0 + l / 80.0);
        let l = memory_latency(80.0, 8.0, 0.95, traffic);
        let rho = (traffic(l) / 8.0).min(0.95);
        assert!(
            (l - 80.0 * (1.0 + 0.5 * rho / (1.0 - rho))).abs() < 1e-6,
            "{l}"
        );
        assert!(traffic(l) <= 8.0 + 1e-9);
    }

    /// Memory latency is in nanoseconds and does not follow the core clock
    /// (`docs/design/simulator.md`, "How fast a task runs"): on the Q6600, one
    /// stream instance at 1.6 GHz instead of 2.4 GHz loses under 10 % while a
    /// compute-only task loses the full 1.5×, and the memory latency each sees
    /// is the same. Nothing was calibrated on a single instance at 1.6 GHz.
    #[test]
    fn a_memory_bound_task_depends_only_weakly_on_frequency() {
        let machine = crate::scenario::preset("q6600").unwrap().unwrap();
        let profiles = crate::scenario::builtin_profiles().unwrap();
        let run = |name: &str, ghz: f64| {
            let demand = Demand {
                phase: &profiles[name].phases[0],
                cpu: 0,
                freq_ghz: ghz,
                cpi_factor: 1.0,
            };
            solve(&machine, &[demand])
        };
        let (stream_lo, stream_hi) = (run("stream", 1.6), run("stream", 2.4));
        let slowdown = stream_lo.outcomes[0].tpi_ns / stream_hi.outcomes[0].tpi_ns;
        assert!((1.0..1.1).contains(&slowdown), "stream {slowdown}");
        assert!(
            (stream_lo.latency_ns[0] / stream_hi.latency_ns[0] - 1.0).abs() < 0.1,
            "{:?} {:?}",
            stream_lo.latency_ns,
            stream_hi.latency_ns
        );
        let alu = run("aluadd", 1.6).outcomes[0].tpi_ns / run("aluadd", 2.4).outcomes[0].tpi_ns;
        assert!((alu - 1.5).abs() < 1e-9, "aluadd {alu}");
    }

    /// Grouping demands into kinds changes no bit: on the two-socket EPYC
    /// (two memory domains, 24 caches), a mix where many demands share a
    /// phase, frequency and CPI factor solves to exactly what the same
    /// demands give when every one has its own copy of its phase (so each
    /// is a kind of its own).
    #[test]
    fn kinds_solve_to_the_same_bits_as_one_demand_at_a_time() {
        let machine = crate::scenario::preset("epyc-9654-2s").unwrap().unwrap();
        let profiles = crate::scenario::builtin_profiles().unwrap();
        let names = ["libquantum", "mcf", "xalancbmk", "hmmer", "omnetpp"];
        let phases: Vec<Phase> = names
            .iter()
            .map(|n| profiles[*n].phases[0].clone())
            .collect();
        let pick = |c: usize| (c / 32) % names.len();
        let cpus: Vec<usize> = (0..machine.cpus()).step_by(2).chain([1, 3, 201]).collect();
        let demand = |c: usize, phase: &'static Phase| Demand {
            phase,
            cpu: c,
            freq_ghz: if c % 128 < 16 { 2.0 } else { 2.4 },
            cpi_factor: if c % 160 < 8 { 1.25 } else { 1.0 },
        };
        let shared: &'static [Phase] = Box::leak(phases.into_boxed_slice());
        let grouped: Vec<Demand<'_>> = cpus.iter().map(|&c| demand(c, &shared[pick(c)])).collect();
        let alone: Vec<Demand<'_>> = cpus
            .iter()
            .map(|&c| demand(c, Box::leak(Box::new(shared[pick(c)].clone()))))
            .collect();
        assert!(Kinds::of(&machine, &grouped).len() < cpus.len() / 2);
        assert_eq!(Kinds::of(&machine, &alone).len(), cpus.len());
        let (a, b) = (solve(&machine, &grouped), solve(&machine, &alone));
        let bits = |s: &Solution| -> Vec<u64> {
            s.outcomes
                .iter()
                .flat_map(|o| {
                    [
                        o.tpi_ns,
                        o.miss_ratio,
                        o.share_kib,
                        o.compute_fraction,
                        o.bytes_per_ns,
                    ]
                })
                .chain(s.latency_ns.iter().copied())
                .map(f64::to_bits)
                .collect()
        };
        assert!(a.converged && b.converged);
        assert_eq!(bits(&a), bits(&b));
    }

    /// One stream-fit1 instance alone on the Q6600: its steady outcome.
    fn fit1_alone() -> (crate::profile::Profile, Outcome, f64) {
        let machine = crate::scenario::preset("q6600").unwrap().unwrap();
        let profiles = crate::scenario::builtin_profiles().unwrap();
        let p = profiles["stream-fit1"].clone();
        let demand = Demand {
            phase: &p.phases[0],
            cpu: 0,
            freq_ghz: 2.4,
            cpi_factor: 1.0,
        };
        let s = solve(&machine, &[demand]);
        (p, s.outcomes[0], s.latency_ns[0])
    }

    /// A warm-up stage keeps the curve's counts: its mean miss ratio
    /// brings in the stage's lines over exactly the accesses the curve
    /// takes to bring them in (checked against a fine Riemann sum), it
    /// is above the steady ratio and slows the task, and stages end at
    /// the working set, where the task is warm.
    #[test]
    fn warm_up_stages_keep_the_curve_counts_and_end_warm() {
        let (p, steady, solution_latency) = fit1_alone();
        let phase = &p.phases[0];
        let mut occupancy = 0.0;
        let mut stages = 0;
        while let Some(w) = warming(phase, &steady, solution_latency, occupancy, 64) {
            let (a, b) = (occupancy, w.until_kib);
            let n = 100_000;
            let h = (b - a) / n as f64;
            let accesses: f64 = (0..n)
                .map(|k| h / miss_ratio(phase, a + h * (k as f64 + 0.5)))
                .sum();
            let expected = (b - a) / accesses;
            let m = w.outcome.miss_ratio;
            assert!(
                (m / expected - 1.0).abs() < 1e-3,
                "stage {stages}: {m} vs {expected}"
            );
            assert!(m > steady.miss_ratio && w.outcome.tpi_ns > steady.tpi_ns);
            occupancy = b;
            stages += 1;
        }
        assert!((occupancy - phase.miss.ws_kib).abs() < 1e-6, "{occupancy}");
        assert!((1..=8).contains(&stages), "{stages}");
    }

    /// A flat curve (streaming, α = 0) has nothing to warm up.
    #[test]
    fn a_flat_curve_needs_no_warm_up() {
        let machine = crate::scenario::preset("q6600").unwrap().unwrap();
        let profiles = crate::scenario::builtin_profiles().unwrap();
        let phase = &profiles["stream"].phases[0];
        let demand = Demand {
            phase,
            cpu: 0,
            freq_ghz: 2.4,
            cpi_factor: 1.0,
        };
        let steady = solve(&machine, &[demand]).outcomes[0];
        assert_eq!(warming(phase, &steady, 80.0, 0.0, 64), None);
    }

    /// The latency found is bisection's, to a few units in the last
    /// place, over loads from idle to past the hard cap: the queueing
    /// root, the kink where ρ reaches its clamp, and the cap.
    #[test]
    fn the_latency_root_is_bisections() {
        let bisect = |mut lo: f64, mut hi: f64, f: &dyn Fn(f64) -> f64| {
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if f(mid) < 0.0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            hi
        };
        let (l0, bandwidth) = (80.0, 8.0);
        for rho_max in [0.6, 0.95] {
            for demand in [0.5, 50.0, 400.0, 640.0, 700.0, 2000.0, 1e5] {
                let traffic = |l: f64| demand / (10.0 + l) + 0.1 * demand / (40.0 + 0.5 * l);
                let queue = |rho: f64| l0 * (1.0 + 0.5 * rho / (1.0 - rho));
                let g = |l: f64| l - queue((traffic(l) / bandwidth).min(rho_max));
                let mut want = if g(l0) >= 0.0 {
                    l0
                } else {
                    bisect(l0, queue(rho_max), &g)
                };
                if traffic(want) > bandwidth {
                    want = bisect(want, 1e12, &|l| bandwidth - traffic(l));
                }
                let got = memory_latency(l0, bandwidth, rho_max, traffic);
                assert!(
                    (got - want).abs() <= 1e-12 * want,
                    "ρ_max {rho_max}, demand {demand}: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn hard_cap_bounds_traffic() {
        let traffic = |l: f64| 1000.0 / l;
        let l = memory_latency(10.0, 1.0, 0.95, traffic);
        assert!((traffic(l) - 1.0).abs() < 1e-6, "traffic {}", traffic(l));
    }
}
