//! Task profiles: how a program uses a core, the shared cache and memory
//! (`docs/design/simulator.md`, "How fast a task runs"). The built-in ones
//! live in `profiles.toml`, each with the source of its numbers.

use serde::Deserialize;

/// Capped power-law miss-ratio curve of the shared cache:
/// `m(S) = min(m_max, m0·(S/s0)^−alpha)` while `S < ws`, `m_floor` once the
/// working set fits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissCurve {
    /// Miss ratio at the reference size `s0_kib`.
    pub m0: f64,
    /// Reference size, KiB.
    pub s0_kib: f64,
    /// Exponent (≈ 0 for streaming, 0.5 the classic √2 rule, larger for
    /// cyclic access that thrashes LRU).
    pub alpha: f64,
    /// Upper cap.
    #[serde(default = "one")]
    pub m_max: f64,
    /// Miss ratio once the working set fits (compulsory and conflict misses).
    pub m_floor: f64,
    /// Working-set size, KiB.
    pub ws_kib: f64,
}

fn one() -> f64 {
    1.0
}

impl MissCurve {
    /// Miss ratio with `share_kib` of shared cache.
    pub fn ratio(&self, share_kib: f64) -> f64 {
        if share_kib >= self.ws_kib {
            return self.m_floor;
        }
        let s = share_kib.max(1e-3);
        (self.m0 * (s / self.s0_kib).powf(-self.alpha))
            .min(self.m_max)
            .max(self.m_floor)
    }
}

/// Alternating computation and blocking.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SleepSpec {
    /// Mean burst between sleeps, ms of run time alone at the machine's
    /// highest frequency. The burst is that much work (instructions), so it
    /// takes longer at a lower frequency or under contention.
    pub run_ms: f64,
    /// Mean sleep, ms.
    pub sleep_ms: f64,
    /// Exponentially distributed lengths (seeded) instead of fixed ones.
    #[serde(default)]
    pub random: bool,
}

/// One phase of a program.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Instructions in this phase; the last phase runs to the end.
    #[serde(default)]
    pub instructions: Option<f64>,
    /// Cycles per instruction with a perfect shared cache.
    pub cpi_core: f64,
    /// Shared-cache accesses (L1 misses) per instruction.
    pub api: f64,
    /// L1D references per instruction.
    #[serde(default = "default_l1d")]
    pub l1d_refs_per_instr: f64,
    /// Memory-level parallelism: misses overlapped on average.
    pub mlp: f64,
    /// Fraction of the shared-cache misses whose lines the hardware
    /// prefetcher brings in ahead of the demand (streams): those lines
    /// still occupy the cache and use memory bandwidth, but do not stall
    /// the core, and the PMU counts them as lines in (PAM eq. 5,
    /// `L2_LINES_IN_PREFETCH`) rather than as demand misses.
    #[serde(default)]
    pub prefetch_coverage: f64,
    /// Miss-ratio curve.
    pub miss: MissCurve,
    /// Blocking behaviour, if any.
    #[serde(default)]
    pub sleep: Option<SleepSpec>,
}

fn default_l1d() -> f64 {
    0.4
}

/// A program.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// One line.
    pub description: String,
    /// Where its numbers come from.
    pub source: String,
    /// Phases, in order.
    pub phases: Vec<Phase>,
}

impl Profile {
    /// Check ranges; returns the problem in words.
    pub fn check(&self) -> Result<(), String> {
        if self.phases.is_empty() {
            return Err("a profile needs at least one phase".into());
        }
        for (i, p) in self.phases.iter().enumerate() {
            let m = &p.miss;
            let finite_pos = |v: f64| v.is_finite() && v > 0.0;
            let fail = |what: &str| Err(format!("phases[{i}]: {what}"));
            if !finite_pos(p.cpi_core) {
                return fail("cpi_core must be positive");
            }
            if !(p.api.is_finite()
                && p.api >= 0.0
                && p.l1d_refs_per_instr.is_finite()
                && p.l1d_refs_per_instr >= p.api)
            {
                return fail("api must be ≥ 0 and l1d_refs_per_instr ≥ api");
            }
            if !(p.mlp.is_finite() && p.mlp >= 1.0) {
                return fail("mlp must be ≥ 1");
            }
            if !(p.prefetch_coverage.is_finite() && (0.0..1.0).contains(&p.prefetch_coverage)) {
                return fail("prefetch_coverage must lie in [0, 1)");
            }
            if !(finite_pos(m.s0_kib)
                && finite_pos(m.ws_kib)
                && m.alpha.is_finite()
                && m.alpha >= 0.0)
            {
                return fail("miss.s0_kib and miss.ws_kib must be positive, miss.alpha ≥ 0");
            }
            let ratio = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
            if !(ratio(m.m0) && ratio(m.m_max) && ratio(m.m_floor) && m.m_floor <= m.m_max) {
                return fail("miss ratios must lie in [0, 1] with m_floor ≤ m_max");
            }
            if let Some(n) = p.instructions {
                if !finite_pos(n) {
                    return fail("instructions must be positive");
                }
            }
            if let Some(s) = &p.sleep {
                if !(finite_pos(s.run_ms) && s.sleep_ms.is_finite() && s.sleep_ms >= 0.0) {
                    return fail("sleep.run_ms must be positive and sleep.sleep_ms ≥ 0");
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miss_curve_shape() {
        let c = MissCurve {
            m0: 0.5,
            s0_kib: 4096.0,
            alpha: 3.0,
            m_max: 1.0,
            m_floor: 0.01,
            ws_kib: 3500.0,
        };
        assert_eq!(c.ratio(4096.0), 0.01);
        assert_eq!(c.ratio(1024.0), 1.0);
        assert!((c.ratio(3400.0) - 0.5 * (3400.0f64 / 4096.0).powf(-3.0)).abs() < 1e-12);
        assert_eq!(c.ratio(3000.0), 1.0);
        assert!(c.ratio(0.0) <= 1.0);
    }
}
