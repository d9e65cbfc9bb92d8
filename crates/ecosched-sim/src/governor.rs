//! Models of the Linux cpufreq governors (`docs/design/simulator.md`,
//! "Governors"), one per frequency domain. Sampling is explicit: ondemand and
//! conservative only look at load every sampling period, so a core that
//! becomes busy waits for the next sample — the delay Richling et al.
//! measured hurting short compile jobs.
//!
//! - performance / powersave / userspace (`Fixed`): constant.
//! - ondemand: every `sampling_ms`, load = busiest CPU's busy fraction over
//!   the period; above `up_threshold` jump to max. Below it, as the
//!   machine's kernel did: 2.6 (the papers' time) steps down only under
//!   `up_threshold − down_differential`, to the lowest P-state ≥
//!   `cur·load/(up − down)`; 3.11 on goes to `min + load·(max − min)`,
//!   rounded to the closest P-state. `powersave_bias` lowers the request.
//! - conservative: every `sampling_ms`, step the request up by
//!   `freq_step·max` above `up_threshold`, down below `down_threshold`; the
//!   P-state is the highest ≤ the request going up, the lowest ≥ it going down.
//! - ondemand and conservative sample on a grid of whole periods ("we want
//!   all CPUs to do sampling nearly on same jiffy": `delay -= jiffies %
//!   delay` in `do_dbs_timer`, 2.6.22 on), from deferrable work queued on
//!   the policy's first CPU (`policy->cpu`, one work item per policy, in
//!   2.6; on every CPU of the policy in 3.11): a sample that falls due
//!   while those CPUs idle waits until one wakes
//!   (`INIT_DELAYED_WORK_DEFERRABLE`, 2.6.22 on), however busy a 2.6
//!   domain's other CPUs are, and the load it sees is over the time since
//!   the last sample, idle time included; the next sample is the next grid
//!   point. The platform does the deferring
//!   (`deferrable`), assuming a quiet tickless idle (CONFIG_NO_HZ, x86-64
//!   from 2.6.24) in which only a task landing on a core wakes it; other
//!   wake-ups (interrupts, timers) would run the deferred sample earlier,
//!   so the model is the late limit of a behaviour that lies between it
//!   and an on-time sample.
//! - schedutil: per-CPU utilisation as a PELT-like exponential average
//!   (half-life `util_half_life_ms`), frequency-invariant;
//!   `f = 1.25 · f_max · util`, lowest P-state ≥ f, at most once per `rate_limit_ms`.
//! - hardware-chosen (`FreqSetting::Hwp`: Intel HWP, AMD CPPC autonomous
//!   mode): every `hwp_period_ms` the busiest CPU's frequency-invariant
//!   utilisation `u` over the period gives `f = f_max · u / target(EPP)`,
//!   the lowest P-state ≥ f within the request's `[min, max]`; EPP
//!   `performance` always takes the maximum. The Intel SDM (vol. 3B,
//!   "Hardware Controlled Performance States") leaves the hardware's
//!   algorithm unpublished and defines EPP only as a hint from 0
//!   (performance) to 255 (energy); the targets here (0.6, 0.8, 0.95 for
//!   balance_performance, balance_power, power) are the model's estimate
//!   of that hint, ordered as the hint is.
//!
//! With a package power limit every setting is also re-evaluated every
//! `limit_period_ms`, and what it asks for is capped at the package's
//! boost ceiling (`crate::platform`'s limit): the platform passes the
//! ceiling in, the governor applies it.

use crate::machine::{GovernorSpec, OndemandKernel};
use ecosched_model::topology::FreqDomain;
use ecosched_model::{Epp, FreqSetting, Governor};

/// Nanoseconds.
type Ns = u64;

/// The governor state of one frequency domain.
#[derive(Debug, Clone)]
pub struct DomainGovernor {
    setting: FreqSetting,
    /// Busy nanoseconds per CPU since the last sample.
    busy_ns: Vec<f64>,
    /// Frequency-invariant utilisation per CPU (schedutil).
    util: Vec<f64>,
    /// conservative's running request, kHz.
    request_khz: f64,
    last_eval: Ns,
    /// With a package power limit: how often any setting re-evaluates.
    limit_period: Option<Ns>,
    /// When the limit last had the setting re-evaluated.
    limit_at: Ns,
    /// What the setting last asked for, before any cap, kHz.
    last_want: u64,
}

impl DomainGovernor {
    /// A governor for a domain of `cpus` CPUs, starting at `now` with the
    /// domain at `cur_khz`.
    /// `limit_period`: the package power limit's period, if the machine
    /// has a limit.
    pub fn new(
        setting: FreqSetting,
        cpus: usize,
        now: Ns,
        cur_khz: u64,
        limit_period: Option<Ns>,
    ) -> Self {
        DomainGovernor {
            setting,
            busy_ns: vec![0.0; cpus],
            util: vec![0.0; cpus],
            request_khz: cur_khz as f64,
            last_eval: now,
            limit_period,
            limit_at: now,
            last_want: cur_khz,
        }
    }

    /// The setting this governor implements.
    pub fn setting(&self) -> FreqSetting {
        self.setting
    }

    /// The frequency to switch to as soon as the setting is applied. A
    /// governor that follows load keeps the current frequency when it takes
    /// over a machine that has been running (Linux's ondemand starts its
    /// timers and changes nothing until its first sample), but a run starts
    /// on a machine that has been idle (`idle_before`): there such a
    /// governor has already settled at the lowest P-state, and a core that
    /// the run never wakes stays there. Starting at the top instead would
    /// leave every core a run never uses at the top clock for the whole
    /// run under the deferrable sample (Patel's Task 1 control would draw
    /// 155.6 W against the thesis's 144 W).
    pub fn initial_khz(&self, domain: &FreqDomain, cur_khz: u64, idle_before: bool) -> u64 {
        match self.setting {
            FreqSetting::Fixed { freq_khz } => freq_khz,
            FreqSetting::Governor(Governor::Performance) => domain.max_khz(),
            FreqSetting::Governor(Governor::Powersave) => domain.min_khz(),
            FreqSetting::Governor(_) if idle_before => domain.min_khz(),
            FreqSetting::Governor(_) => cur_khz,
            // The platform resolves "as found" to the scenario's governor
            // before it builds a governor; unresolved, nothing changes.
            FreqSetting::AsFound => cur_khz,
            FreqSetting::Hwp { epp, .. } => {
                let (lo, hi) = hwp_range(self.setting, domain);
                if epp == Epp::Performance {
                    hi
                } else if idle_before {
                    lo
                } else {
                    cur_khz.clamp(lo, hi)
                }
            }
        }
    }

    /// Account `dt` nanoseconds during which CPU `i` of the domain was busy
    /// (`busy`) at frequency `cur_khz` out of `max_khz`.
    pub fn account(
        &mut self,
        spec: &GovernorSpec,
        i: usize,
        dt: Ns,
        busy: bool,
        cur_khz: u64,
        max_khz: u64,
    ) {
        match self.setting {
            FreqSetting::Governor(Governor::Ondemand | Governor::Conservative) if busy => {
                self.busy_ns[i] += dt as f64;
            }
            FreqSetting::Hwp { .. } if busy => {
                self.busy_ns[i] += dt as f64 * cur_khz as f64 / max_khz.max(1) as f64;
            }
            FreqSetting::Governor(Governor::Schedutil) => {
                let decay = 0.5f64.powf(dt as f64 / (spec.util_half_life_ms * 1e6));
                let running = if busy {
                    cur_khz as f64 / max_khz as f64
                } else {
                    0.0
                };
                self.util[i] = self.util[i] * decay + (1.0 - decay) * running;
            }
            _ => {}
        }
    }

    /// When the governor next wants to look, if ever: the next whole
    /// sampling period for ondemand and conservative (their samples are
    /// aligned to a grid, also after a deferred one), one rate limit after
    /// the last look for schedutil.
    pub fn next_eval(&self, spec: &GovernorSpec) -> Option<Ns> {
        let own = self.own_next_eval(spec);
        let limit = self.limit_period.map(|p| self.limit_at + p.max(1));
        match (own, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the setting itself next wants to look.
    fn own_next_eval(&self, spec: &GovernorSpec) -> Option<Ns> {
        match self.setting {
            FreqSetting::Governor(Governor::Ondemand | Governor::Conservative) => {
                let period = ((spec.sampling_ms * 1e6) as Ns).max(1);
                Some((self.last_eval / period + 1) * period)
            }
            FreqSetting::Governor(Governor::Schedutil) => {
                Some(self.last_eval + (spec.rate_limit_ms.max(1.0) * 1e6) as Ns)
            }
            FreqSetting::Hwp { .. } => {
                Some(self.last_eval + ((spec.hwp_period_ms * 1e6) as Ns).max(1))
            }
            _ => None,
        }
    }

    /// Whether a sample that falls due while the domain idles waits for a
    /// CPU to wake (ondemand's and conservative's deferrable work).
    pub fn deferrable(&self) -> bool {
        matches!(
            self.setting,
            FreqSetting::Governor(Governor::Ondemand | Governor::Conservative)
        )
    }

    /// Take a sample at `now`; returns the frequency to switch to, if it
    /// changes. `cap_khz` is the package's boost ceiling (`u64::MAX`
    /// without a power limit): the result never exceeds it.
    pub fn evaluate(
        &mut self,
        spec: &GovernorSpec,
        domain: &FreqDomain,
        now: Ns,
        cur_khz: u64,
        cap_khz: u64,
    ) -> Option<u64> {
        self.limit_at = now;
        let want = self.want(spec, domain, now, cur_khz)?;
        let next = if want > cap_khz {
            at_most(domain, cap_khz as f64)
        } else {
            want
        };
        (next != cur_khz).then_some(next)
    }

    /// The frequency the setting asks for at `now`, before any cap;
    /// `None` when it does not decide now (a sample that only the power
    /// limit's period brought about for a setting that samples itself).
    fn want(
        &mut self,
        spec: &GovernorSpec,
        domain: &FreqDomain,
        now: Ns,
        cur_khz: u64,
    ) -> Option<u64> {
        match self.setting {
            FreqSetting::Fixed { freq_khz } => return Some(freq_khz),
            FreqSetting::Governor(Governor::Performance) => return Some(domain.max_khz()),
            FreqSetting::Governor(Governor::Powersave) => return Some(domain.min_khz()),
            _ => {}
        }
        if self.limit_period.is_some() && self.own_next_eval(spec).is_some_and(|t| now < t) {
            // Only the limit's period is due: keep the setting's last
            // choice, re-capped (a lifted cap restores what it asked for).
            return Some(self.last_want);
        }
        let chosen = self.sample(spec, domain, now, cur_khz)?;
        self.last_want = chosen;
        Some(chosen)
    }

    /// The setting's own sample.
    fn sample(
        &mut self,
        spec: &GovernorSpec,
        domain: &FreqDomain,
        now: Ns,
        cur_khz: u64,
    ) -> Option<u64> {
        let elapsed = now.saturating_sub(self.last_eval).max(1) as f64;
        self.last_eval = now;
        let (min, max) = (domain.min_khz() as f64, domain.max_khz() as f64);
        let load = self
            .busy_ns
            .iter()
            .fold(0.0f64, |m, b| m.max(b / elapsed))
            .min(1.0);
        self.busy_ns.iter_mut().for_each(|b| *b = 0.0);
        let next = match self.setting {
            FreqSetting::Governor(Governor::Ondemand) => {
                let bias = 1.0 - spec.powersave_bias / 1000.0;
                if load > spec.up_threshold {
                    biased(domain, max, bias)
                } else {
                    match spec.ondemand_kernel {
                        OndemandKernel::Linux3_11 => closest(domain, min + load * (max - min)),
                        OndemandKernel::Linux2_6 => {
                            let floor = spec.up_threshold - spec.down_differential;
                            if load < floor {
                                biased(domain, cur_khz as f64 * load / floor, bias)
                            } else {
                                cur_khz
                            }
                        }
                    }
                }
            }
            FreqSetting::Governor(Governor::Conservative) => {
                let step = spec.freq_step * max;
                if load > spec.up_threshold {
                    self.request_khz = (self.request_khz + step).min(max);
                    at_most(domain, self.request_khz)
                } else if load < spec.down_threshold {
                    self.request_khz = (self.request_khz - step).max(min);
                    domain.at_least(self.request_khz)
                } else {
                    cur_khz
                }
            }
            FreqSetting::Governor(Governor::Schedutil) => {
                let util = self.util.iter().fold(0.0f64, |m, u| m.max(*u));
                domain.at_least(1.25 * max * util)
            }
            FreqSetting::Hwp { epp, .. } => {
                let (lo, hi) = hwp_range(self.setting, domain);
                let want = match epp_target(epp) {
                    None => hi,
                    Some(target) => domain.at_least(max * load / target),
                };
                want.clamp(lo, hi)
            }
            _ => return None,
        };
        Some(next)
    }
}

/// The utilisation hardware-chosen frequency aims for at each EPP
/// (`None`: always the highest allowed); see the module's doc.
fn epp_target(epp: Epp) -> Option<f64> {
    match epp {
        Epp::Performance => None,
        Epp::BalancePerformance => Some(0.6),
        Epp::BalancePower => Some(0.8),
        Epp::Power => Some(0.95),
    }
}

/// An HWP request's range in P-states: the lowest at or above its
/// minimum, the highest at or below its maximum.
fn hwp_range(setting: FreqSetting, domain: &FreqDomain) -> (u64, u64) {
    let FreqSetting::Hwp {
        min_khz, max_khz, ..
    } = setting
    else {
        return (domain.min_khz(), domain.max_khz());
    };
    let lo = domain.at_least(min_khz.unwrap_or_else(|| domain.min_khz()) as f64);
    let hi = at_most(domain, max_khz.unwrap_or_else(|| domain.max_khz()) as f64);
    (lo.min(hi), hi)
}

/// ondemand's `powersave_bias_target`: with no bias, the lowest P-state
/// ≥ `khz` (`RELATION_L`). With a bias the kernel splits the next period
/// between the P-states around `khz · bias`; the model takes the one the
/// split would spend most of the period in (the closer one).
fn biased(domain: &FreqDomain, khz: f64, bias: f64) -> u64 {
    if bias >= 1.0 {
        domain.at_least(khz)
    } else {
        closest(domain, khz * bias)
    }
}

/// The P-state closest to `khz` (cpufreq `RELATION_C`).
fn closest(domain: &FreqDomain, khz: f64) -> u64 {
    domain
        .pstates
        .iter()
        .map(|p| p.freq_khz)
        .min_by(|a, b| (*a as f64 - khz).abs().total_cmp(&(*b as f64 - khz).abs()))
        .unwrap_or_else(|| domain.max_khz())
}

/// The highest P-state ≤ `khz` (cpufreq `RELATION_H`), or the lowest.
fn at_most(domain: &FreqDomain, khz: f64) -> u64 {
    domain
        .pstates
        .iter()
        .rev()
        .map(|p| p.freq_khz)
        .find(|&f| f as f64 <= khz)
        .unwrap_or_else(|| domain.min_khz())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_model::topology::PState;
    use ecosched_model::CpuSet;

    fn domain() -> FreqDomain {
        FreqDomain {
            cpus: CpuSet::first_n(2),
            pstates: [1000, 1500, 2000]
                .iter()
                .map(|&m| PState {
                    freq_khz: m * 1000,
                    voltage_mv: None,
                })
                .collect(),
            transition_latency_us: 10,
            voltage_domain: 0,
        }
    }
    const MS: Ns = 1_000_000;

    /// A run starts on an idle machine, where a load-following governor
    /// has settled at the bottom; one that takes over a running machine
    /// changes nothing until it samples; fixed settings apply at once.
    #[test]
    fn load_following_governors_start_low_only_on_an_idle_machine() {
        let d = domain();
        for g in [
            Governor::Ondemand,
            Governor::Conservative,
            Governor::Schedutil,
        ] {
            let gov = DomainGovernor::new(FreqSetting::Governor(g), 2, 0, 2_000_000, None);
            assert_eq!(gov.initial_khz(&d, 2_000_000, true), 1_000_000, "{g:?}");
            assert_eq!(gov.initial_khz(&d, 1_500_000, false), 1_500_000, "{g:?}");
        }
        let perf = DomainGovernor::new(FreqSetting::Governor(Governor::Performance), 2, 0, 0, None);
        assert_eq!(perf.initial_khz(&d, 1_000_000, true), 2_000_000);
    }

    #[test]
    fn ondemand_jumps_to_max_only_at_the_next_sample() {
        let spec = GovernorSpec {
            ondemand_kernel: OndemandKernel::Linux3_11,
            ..GovernorSpec::default()
        };
        let d = domain();
        let mut g = DomainGovernor::new(
            FreqSetting::Governor(Governor::Ondemand),
            2,
            0,
            1_000_000,
            None,
        );
        assert_eq!(g.next_eval(&spec), Some(200 * MS));
        g.account(&spec, 0, 100 * MS, true, 1_000_000, 2_000_000);
        // 50 % load: min + 0.5·(max − min) = 1.5 GHz.
        assert_eq!(
            g.evaluate(&spec, &d, 200 * MS, 1_000_000, u64::MAX),
            Some(1_500_000)
        );
        g.account(&spec, 1, 190 * MS, true, 1_500_000, 2_000_000);
        assert_eq!(
            g.evaluate(&spec, &d, 400 * MS, 1_500_000, u64::MAX),
            Some(2_000_000)
        );
        assert_eq!(
            g.evaluate(&spec, &d, 600 * MS, 2_000_000, u64::MAX),
            Some(1_000_000)
        );
    }

    /// Linux 2.6.25's ondemand: at the lowest P-state 50 % load asks for
    /// less than it has, so it stays (the proportional 3.11 model would
    /// go to 1.5 GHz); above 80 % it jumps to the maximum; it steps down
    /// only under 70 %, to the lowest P-state ≥ cur·load/0.7.
    #[test]
    fn ondemand_2_6_holds_between_the_thresholds() {
        let spec = GovernorSpec::default();
        assert_eq!(spec.ondemand_kernel, OndemandKernel::Linux2_6);
        let d = domain();
        let mut g = DomainGovernor::new(
            FreqSetting::Governor(Governor::Ondemand),
            1,
            0,
            1_000_000,
            None,
        );
        g.account(&spec, 0, 100 * MS, true, 1_000_000, 2_000_000);
        assert_eq!(g.evaluate(&spec, &d, 200 * MS, 1_000_000, u64::MAX), None);
        g.account(&spec, 0, 170 * MS, true, 1_000_000, 2_000_000);
        assert_eq!(
            g.evaluate(&spec, &d, 400 * MS, 1_000_000, u64::MAX),
            Some(2_000_000)
        );
        // 75 % at 2 GHz: between the thresholds, stays.
        g.account(&spec, 0, 150 * MS, true, 2_000_000, 2_000_000);
        assert_eq!(g.evaluate(&spec, &d, 600 * MS, 2_000_000, u64::MAX), None);
        // 50 % at 2 GHz asks for 1.43 GHz: the lowest P-state ≥ it, 1.5.
        g.account(&spec, 0, 100 * MS, true, 2_000_000, 2_000_000);
        assert_eq!(
            g.evaluate(&spec, &d, 800 * MS, 2_000_000, u64::MAX),
            Some(1_500_000)
        );
        // 60 % at 2 GHz asks for 1.71 GHz: RELATION_L gives 2 GHz; a
        // 200 ‰ powersave bias lowers it to 1.37 GHz, closest 1.5 GHz.
        let biased = GovernorSpec {
            powersave_bias: 200.0,
            ..GovernorSpec::default()
        };
        let mut g = DomainGovernor::new(
            FreqSetting::Governor(Governor::Ondemand),
            1,
            0,
            2_000_000,
            None,
        );
        g.account(&spec, 0, 120 * MS, true, 2_000_000, 2_000_000);
        assert_eq!(g.evaluate(&spec, &d, 200 * MS, 2_000_000, u64::MAX), None);
        g.account(&biased, 0, 120 * MS, true, 2_000_000, 2_000_000);
        assert_eq!(
            g.evaluate(&biased, &d, 400 * MS, 2_000_000, u64::MAX),
            Some(1_500_000)
        );
    }

    #[test]
    fn conservative_steps() {
        let spec = GovernorSpec::default();
        let d = domain();
        let mut g = DomainGovernor::new(
            FreqSetting::Governor(Governor::Conservative),
            1,
            0,
            1_000_000,
            None,
        );
        let mut cur = 1_000_000;
        let mut now = 0;
        let mut seen = vec![];
        for _ in 0..12 {
            g.account(&spec, 0, 200 * MS, true, cur, 2_000_000);
            now += 200 * MS;
            if let Some(f) = g.evaluate(&spec, &d, now, cur, u64::MAX) {
                cur = f;
                seen.push(f);
            }
        }
        // 5 % of 2 GHz = 100 MHz per sample: 1.5 GHz after 5 samples, 2 GHz after 10.
        assert_eq!(seen, vec![1_500_000, 2_000_000]);
    }

    #[test]
    fn schedutil_follows_utilisation() {
        let spec = GovernorSpec::default();
        let d = domain();
        let mut g = DomainGovernor::new(
            FreqSetting::Governor(Governor::Schedutil),
            1,
            0,
            1_000_000,
            None,
        );
        for _ in 0..100 {
            g.account(&spec, 0, MS, true, 2_000_000, 2_000_000);
        }
        assert_eq!(
            g.evaluate(&spec, &d, 100 * MS, 1_000_000, u64::MAX),
            Some(2_000_000)
        );
        for _ in 0..400 {
            g.account(&spec, 0, MS, false, 2_000_000, 2_000_000);
        }
        assert_eq!(
            g.evaluate(&spec, &d, 500 * MS, 2_000_000, u64::MAX),
            Some(1_000_000)
        );
    }

    /// Hardware-chosen frequency: EPP performance takes the top, the
    /// other preferences aim the busiest CPU's utilisation at their target
    /// (a lower preference, a lower frequency), within the request's range.
    #[test]
    fn hwp_follows_utilisation_by_preference() {
        let spec = GovernorSpec::default();
        let d = domain();
        let pick = |epp: Epp, max_khz: Option<u64>| {
            let setting = FreqSetting::Hwp {
                epp,
                min_khz: None,
                max_khz,
            };
            let mut g = DomainGovernor::new(setting, 2, 0, 2_000_000, None);
            assert_eq!(g.next_eval(&spec), Some(4 * MS));
            // Busy 40 % of the period at the top frequency.
            g.account(&spec, 1, 16 * MS / 10, true, 2_000_000, 2_000_000);
            g.evaluate(&spec, &d, 4 * MS, 2_000_000, u64::MAX)
        };
        assert_eq!(pick(Epp::Performance, None), None, "already at the top");
        // 0.4 / 0.6 = 0.67 of 2 GHz: 1.5 GHz; 0.4 / 0.95: 1 GHz.
        assert_eq!(pick(Epp::BalancePerformance, None), Some(1_500_000));
        assert_eq!(pick(Epp::Power, None), Some(1_000_000));
        assert_eq!(pick(Epp::Performance, Some(1_500_000)), Some(1_500_000));
    }

    /// A package's boost ceiling caps every setting, and the settings
    /// that do not sample (performance) are re-evaluated every limit
    /// period, so a lifted ceiling restores the top.
    #[test]
    fn the_boost_ceiling_caps_and_lifts() {
        let spec = GovernorSpec::default();
        let d = domain();
        let perf = FreqSetting::Governor(Governor::Performance);
        let mut g = DomainGovernor::new(perf, 2, 0, 2_000_000, Some(10 * MS));
        assert_eq!(g.next_eval(&spec), Some(10 * MS));
        assert_eq!(
            g.evaluate(&spec, &d, 10 * MS, 2_000_000, 1_600_000),
            Some(1_500_000)
        );
        assert_eq!(g.next_eval(&spec), Some(20 * MS));
        assert_eq!(
            g.evaluate(&spec, &d, 20 * MS, 1_500_000, u64::MAX),
            Some(2_000_000)
        );
        let none = DomainGovernor::new(perf, 2, 0, 2_000_000, None);
        assert_eq!(
            none.next_eval(&spec),
            None,
            "no limit: nothing to re-evaluate"
        );
    }
}
