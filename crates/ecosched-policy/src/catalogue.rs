//! Every policy, by family: one table drives construction, parameter
//! checking, `ecosched policies`, the policy reference in the docs, the
//! exporter's per-policy series and the "valid choices" of error messages.
//! The parameters and statistics are each family's own typed structs; the
//! table only points at them.

use crate::av::{Av, AvParams, AvStats};
use crate::baseline::{FixedParams, GovernorPolicy, NoParams, NoStats, StaticParams, StaticPolicy};
use crate::family::{Family, Needs, PolicyKind, Variant};
use crate::hilo::{FreqMode, Hilo, HiloParams, HiloStats};
use crate::oracle::{OracleParams, OracleStats};
use crate::pam::{Pam, PamParams, PamStats};
use crate::params::{Params, TypedParams};
use crate::patel::{Algorithm, Patel, PatelParams, PatelStats};
use crate::placed::{Placed, PlacedParams, PlacedStats};
use crate::wca::{Wca, WcaParams, WcaStats};
use crate::xnode::{XnodeConfig, XnodeParams, XnodeStats};
use crate::{Policy, PolicyError};
use ecosched_model::{Governor, TypedStats};

type Built = Result<Box<dyn Policy>, PolicyError>;

fn governor(v: &'static Variant, p: &Params, g: Governor) -> Built {
    let NoParams {} = v.typed(p)?;
    Ok(Box::new(GovernorPolicy::new(g)))
}

const fn governor_variant(
    name: &'static str,
    summary: &'static str,
    build: fn(&'static Variant, &Params) -> Built,
) -> Variant {
    Variant {
        name,
        summary,
        defaults: &[],
        without: &[],
        example: &[],
        build,
    }
}

fn hilo(v: &'static Variant, p: &Params, mode: FreqMode) -> Built {
    Ok(Box::new(Hilo::new(v.name, v.typed(p)?, mode)?))
}

fn av(v: &'static Variant, p: &Params) -> Built {
    Ok(Box::new(Av::new(v.name, v.typed(p)?)?))
}

fn patel(v: &'static Variant, p: &Params, algorithm: Algorithm) -> Built {
    Ok(Box::new(Patel::new(v.name, algorithm, v.typed(p)?)?))
}

/// Patel's priority guards (§6.2), which algorithm 1 does not have.
const PATEL_PRIORITY: [&str; 8] = [
    "nice_up_max",
    "nice_down_split",
    "heavy_load_factor",
    "nice_up_noncpu",
    "light_load_factor",
    "wait_move_fraction",
    "wait_move_nice_fraction",
    "wait_move_nice",
];

const PATEL1_WITHOUT: [&str; 10] = {
    let mut out = ["cache_miss_threshold"; 10];
    out[1] = "cs_mig_threshold";
    let mut i = 0;
    while i < PATEL_PRIORITY.len() {
        out[i + 2] = PATEL_PRIORITY[i];
        i += 1;
    }
    out
};

const FAMILIES: &[Family] = &[
    Family {
        name: "governors",
        title: "the kernel's own scheduler under one cpufreq governor",
        source: "Linux cpufreq; the baselines every paper compares against",
        decides: "Nothing after the start: every frequency domain gets the governor, and the \
                  kernel schedules as it would without ecosched. On a machine without cpufreq \
                  (many VMs) there is nothing to set, so the policy is refused there.",
        kind: PolicyKind::Local,
        params: &[NoParams::SPEC],
        stats: NoStats::SPEC,
        variants: &[
            governor_variant("performance", "highest frequency", |v, p| {
                governor(v, p, Governor::Performance)
            }),
            governor_variant("powersave", "lowest frequency", |v, p| {
                governor(v, p, Governor::Powersave)
            }),
            governor_variant(
                "ondemand",
                "polls load, jumps to the highest frequency above 80 %",
                |v, p| governor(v, p, Governor::Ondemand),
            ),
            governor_variant(
                "conservative",
                "steps the frequency up and down with load",
                |v, p| governor(v, p, Governor::Conservative),
            ),
            governor_variant(
                "schedutil",
                "follows the scheduler's utilisation",
                |v, p| governor(v, p, Governor::Schedutil),
            ),
        ],
    },
    Family {
        name: "fixed",
        title: "every CPU held at one frequency",
        source: "the comparison of Merkel et al. Table 1 and Richling et al. Table I",
        decides: "At the start, every frequency domain is set to `freq_mhz`, which must be one \
                  of the machine's P-states; the kernel schedules as usual.",
        kind: PolicyKind::Local,
        params: &[FixedParams::SPEC],
        stats: NoStats::SPEC,
        variants: &[Variant {
            name: "fixed",
            summary: "every CPU at --param freq_mhz",
            defaults: &[],
            without: &[],
            example: &[("freq_mhz", "1600")],
            build: |v, p| Ok(Box::new(StaticPolicy::fixed(v.typed(p)?))),
        }],
    },
    Family {
        name: "static",
        title: "managed tasks confined to one CPU set, like taskset",
        source: "the measured equivalent of `taskset`",
        decides: "At the start, every managed task is confined to `cpus` (and new tasks as they \
                  appear); with `freq_mhz` every frequency domain is also held there.",
        kind: PolicyKind::Local,
        params: &[StaticParams::SPEC],
        stats: NoStats::SPEC,
        variants: &[Variant {
            name: "static",
            summary: "managed tasks on --param cpus=LIST, optionally at freq_mhz",
            defaults: &[],
            without: &[],
            example: &[("cpus", "0")],
            build: |v, p| Ok(Box::new(StaticPolicy::confined(v.typed(p)?)?)),
        }],
    },
    Family {
        name: "placed",
        title: "each named task pinned to a CPU of its own",
        source: "the hand-made best and worst placements of Dhiman et al. §3, Fig. 2a",
        decides: "Every `interval_ms`, each new task whose name is in `map` is pinned to its CPU; \
                  other tasks are left to the kernel.",
        kind: PolicyKind::Local,
        params: &[PlacedParams::SPEC],
        stats: PlacedStats::SPEC,
        variants: &[Variant {
            name: "placed",
            summary: "tasks pinned by --param map=name@cpu,…",
            defaults: &[],
            without: &[],
            example: &[("map", "a@0")],
            build: |v, p| Ok(Box::new(Placed::new(v.typed(p)?)?)),
        }],
    },
    Family {
        name: "hilo",
        title: "high/low CPU sets with a spare (Richling et al.)",
        source: "Richling et al., high/low sets with a spare core, §IV–V",
        decides: "Every `interval_ms` it measures the managed work's parallelism (or takes the \
                  application's hint) and confines the work to a high set H of parallelism + \
                  `spare` CPUs, filled one cache domain at a time; H grows at once and shrinks \
                  after `hold_ms`. Frequency domains with a CPU in H run at their highest \
                  P-state, the others at their lowest. With `green=true`, memory-bound tasks \
                  get a set of their own at `green_mhz` (§IV-C). Without cpufreq it only \
                  confines.",
        kind: PolicyKind::Local,
        params: &[HiloParams::SPEC],
        stats: HiloStats::SPEC,
        variants: &[
            Variant {
                name: "hilo",
                summary: "variant C: H = parallelism + 1 spare at max, the rest at min",
                defaults: &[],
                without: &[],
                example: &[],
                build: |v, p| hilo(v, p, FreqMode::HighLow),
            },
            Variant {
                name: "hilo-nospare",
                summary: "variant B: H = parallelism, no spare",
                defaults: &[("spare", "0")],
                without: &[],
                example: &[],
                build: |v, p| hilo(v, p, FreqMode::HighLow),
            },
            Variant {
                name: "hilo-ondemand",
                summary: "variant A: work confined to H, frequencies left to ondemand",
                defaults: &[("spare", "0")],
                without: &[],
                example: &[],
                build: |v, p| hilo(v, p, FreqMode::Ondemand),
            },
        ],
    },
    Family {
        name: "pam",
        title: "shared-cache-aware process mapping (Banikazemi et al., PAM)",
        source: "Banikazemi, Poff and Abali, PAM, §II–IV",
        decides: "Every `interval_ms` it reads each task's instructions, cycles, cache \
                  references and misses, predicts with an algebraic shared-cache model \
                  (eqs. 5–14) how every mapping of processes to caches would run, and pins \
                  tasks to the best mapping while measurements show it helps (Good state, \
                  checked every `m` intervals, at most `n`). `goal=power-cap` also shrinks \
                  the CPUs in use while power is above `power_cap_w`; `goal=energy` keeps a \
                  plan only while it saves energy.",
        kind: PolicyKind::Local,
        params: &[PamParams::SPEC],
        stats: PamStats::SPEC,
        variants: &[Variant {
            name: "pam",
            summary: "cache model picks process-to-cache mappings",
            defaults: &[],
            without: &[],
            example: &[],
            build: |v, p| Ok(Box::new(Pam::new(v.typed(p)?)?)),
        }],
    },
    Family {
        name: "wca",
        title: "workload-characteristics-aware balancing (Dhiman et al., WCA)",
        source: "Dhiman et al., ISLPED'10, §4, Table 1",
        decides: "Every `interval_ms` it ignores transient threads (on-CPU share below \
                  `t_on_tr`), weighs the others by IPC and LLC requests per instruction, and \
                  balances them at every topology level by count, then cache weight, then \
                  IPC; each placed thread is pinned so the kernel's balancer leaves it.",
        kind: PolicyKind::Local,
        params: &[WcaParams::SPEC],
        stats: WcaStats::SPEC,
        variants: &[Variant {
            name: "wca",
            summary: "threads balanced by count, cache weight, then IPC, and pinned",
            defaults: &[],
            without: &[],
            example: &[],
            build: |v, p| Ok(Box::new(Wca::new(v.typed(p)?)?)),
        }],
    },
    Family {
        name: "av",
        title: "activity vectors (Merkel et al.)",
        source: "Merkel, Stoess and Bellosa, EuroSys'10, §4–6",
        decides: "Each task gets an activity vector (memory bus, shared cache, core) from its \
                  counters. Every `balance_ms` tasks are moved or swapped between run queues \
                  to raise the smallest variance sum (varsum); a CPU with several tasks runs \
                  them in a sorted gang cycle (frozen and thawed through the cgroup freezer \
                  on Linux); `av` also lowers the chip's frequency when the mean EDP factor \
                  of the tasks about to run is below 1. Needs `ecosched calibrate av`.",
        kind: PolicyKind::Local,
        params: &[AvParams::SPEC],
        stats: AvStats::SPEC,
        variants: &[
            Variant {
                name: "av",
                summary: "varsum balancing, sorted co-scheduling and the frequency heuristic",
                defaults: &[],
                without: &[],
                example: &[],
                build: av,
            },
            Variant {
                name: "av-sort",
                summary: "av without the frequency heuristic",
                defaults: &[("freq", "false")],
                without: &[],
                example: &[],
                build: av,
            },
        ],
    },
    Family {
        name: "av-xnode",
        title: "activity vectors across the nodes of a cluster (Merkel et al.)",
        source: "Merkel, Stoess and Bellosa, EuroSys'10, §5.2, §8.4",
        decides: "`av` runs on every node; every `publish_s` each node publishes its tasks' \
                  vectors, and every `swap_s` the one swap of two tasks on two nodes that \
                  raises min(varsum) of the pair most is made, if it gains more than \
                  `swap_gain`. Runs on cluster scenarios in the simulator.",
        kind: PolicyKind::Cluster,
        params: &[XnodeParams::SPEC, AvParams::SPEC],
        stats: XnodeStats::SPEC,
        variants: &[Variant {
            name: "av-xnode",
            summary: "av on every node plus cross-node swaps",
            defaults: &[],
            without: &[],
            example: &[],
            build: |_, p| {
                node_policy(p)?;
                Err(PolicyError::Unbuildable {
                    policy: "av-xnode".into(),
                    reason: "av-xnode balances across nodes: it runs on a cluster scenario (one \
                             with [[nodes]], e.g. merkel-xnode-worst); on one machine use av"
                        .into(),
                })
            },
        }],
    },
    Family {
        name: "patel",
        title: "heterogeneous fixed-frequency cpusets (Patel)",
        source: "Patel, PhD thesis (UNLV 2012), chapters 5–8",
        decides: "The machine is split once into cpusets of different fixed frequencies \
                  (`partition`); every decision window each process is moved up or down \
                  between them from its IPC, time waiting, CPU intensity and the load average. \
                  Algorithms 2–4 add nice-value guards; 3 vetoes up-moves of cache-missing \
                  processes, 4 of processes that switch and migrate often.",
        kind: PolicyKind::Local,
        params: &[PatelParams::SPEC],
        stats: PatelStats::SPEC,
        variants: &[
            Variant {
                name: "patel1",
                summary: "algorithm 1: moves by IPC, wait, CPU intensity and load",
                defaults: &[],
                without: &PATEL1_WITHOUT,
                example: &[],
                build: |v, p| patel(v, p, Algorithm::CpuScheduler),
            },
            Variant {
                name: "patel2",
                summary: "algorithm 2: patel1 with nice-value guards",
                defaults: &[],
                without: &["cache_miss_threshold", "cs_mig_threshold"],
                example: &[],
                build: |v, p| patel(v, p, Algorithm::Priority),
            },
            Variant {
                name: "patel3",
                summary: "algorithm 3: patel2, no up-move while the cache miss ratio is high",
                defaults: &[],
                without: &["cs_mig_threshold"],
                example: &[],
                build: |v, p| patel(v, p, Algorithm::CacheMiss),
            },
            Variant {
                name: "patel4",
                summary: "algorithm 4: patel2, no up-move while switching and migrating often",
                defaults: &[],
                without: &["cache_miss_threshold"],
                example: &[],
                build: |v, p| patel(v, p, Algorithm::ContextSwitch),
            },
        ],
    },
    Family {
        name: "oracle",
        title: "the best static placement and frequencies, by search",
        source: "the comparison point for every policy, searched up to symmetry as in PAM's eq. 3",
        decides: "Simulates every static placement of up to 8 named tasks on up to 8 CPUs, \
                  with every frequency per domain, and keeps the one that minimises \
                  `objective`: a lower bound for any static policy on that scenario. Runs \
                  only in `ecosched compare`.",
        kind: PolicyKind::Search,
        params: &[OracleParams::SPEC],
        stats: OracleStats::SPEC,
        variants: &[Variant {
            name: "oracle",
            summary: "exhaustive search over the simulator (compare only)",
            defaults: &[],
            without: &[],
            example: &[],
            build: |v, p| {
                let _: OracleParams = v.typed(p)?;
                Err(PolicyError::Unbuildable {
                    policy: "oracle".into(),
                    reason: "oracle searches every static placement and frequency in the \
                             simulator: run it with `ecosched compare --policies …,oracle`"
                        .into(),
                })
            },
        }],
    },
];

/// Every family, in the order `ecosched policies` lists them.
pub fn families() -> &'static [Family] {
    FAMILIES
}

/// The policy every node of an `av-xnode` cluster runs: `av` with the
/// parameters the coordinator does not take.
pub fn node_policy(params: &Params) -> Result<Box<dyn Policy>, PolicyError> {
    let (_, rest) = XnodeConfig::split(params)?;
    build(crate::xnode::NODE_POLICY, &rest)
}

/// Every policy with its family.
pub fn variants() -> impl Iterator<Item = (&'static Family, &'static Variant)> {
    families()
        .iter()
        .flat_map(|f| f.variants.iter().map(move |v| (f, v)))
}

/// The policy called `name`, or the "unknown policy" error listing the
/// valid names.
pub fn find(name: &str) -> Result<(&'static Family, &'static Variant), PolicyError> {
    variants()
        .find(|(_, v)| v.name == name)
        .ok_or_else(|| PolicyError::UnknownPolicy {
            name: name.to_string(),
            valid: variants().map(|(_, v)| v.name.to_string()).collect(),
        })
}

/// Build a policy by name.
pub fn build(name: &str, params: &Params) -> Result<Box<dyn Policy>, PolicyError> {
    let (_, variant) = find(name)?;
    (variant.build)(variant, params)
}

/// Check `params` for the policy called `name` without running anything:
/// a local policy is built; a cluster policy builds its node policy; a
/// search checks its own parameters.
pub fn check(name: &str, params: &Params) -> Result<(), PolicyError> {
    let (family, variant) = find(name)?;
    match (variant.build)(variant, params) {
        Ok(_) => Ok(()),
        Err(PolicyError::Unbuildable { .. }) if family.kind != PolicyKind::Local => Ok(()),
        Err(e) => Err(e),
    }
}

/// What the policy called `name` needs.
pub fn needs(name: &str) -> Result<Needs, PolicyError> {
    let (family, variant) = find(name)?;
    let params = variant
        .example
        .iter()
        .fold(Params::default(), |p, (k, v)| p.with(k, v));
    let requirements = match family.kind {
        PolicyKind::Search => None,
        PolicyKind::Local => Some((variant.build)(variant, &params)?.requirements()),
        PolicyKind::Cluster => Some(node_policy(&params)?.requirements()),
    };
    Ok(Needs {
        kind: family.kind,
        requirements,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamDefault;
    use ecosched_model::stats::StatKind;

    #[test]
    fn every_policy_builds_or_says_where_it_runs() {
        for (family, v) in variants() {
            let params = v
                .example
                .iter()
                .fold(Params::default(), |p, (k, val)| p.with(k, val));
            match ((v.build)(v, &params), family.kind) {
                (Ok(p), PolicyKind::Local) => assert_eq!(p.name(), v.name),
                (Err(PolicyError::Unbuildable { reason, .. }), PolicyKind::Search) => {
                    assert!(reason.contains("ecosched compare"), "{reason}")
                }
                (Err(PolicyError::Unbuildable { reason, .. }), PolicyKind::Cluster) => {
                    assert!(reason.contains("[[nodes]]"), "{reason}")
                }
                (Ok(_), kind) => panic!("{} is {kind:?} but builds as a local policy", v.name),
                (Err(e), _) => panic!("{}: {e}", v.name),
            }
            assert!(check(v.name, &params).is_ok(), "{}", v.name);
            assert!(needs(v.name).is_ok(), "{}", v.name);
        }
    }

    #[test]
    fn a_required_parameter_is_named_when_missing() {
        for (family, v) in variants().filter(|(_, v)| !v.example.is_empty()) {
            match (v.build)(v, &Params::default()) {
                Err(PolicyError::MissingParam { key, .. }) => {
                    assert!(v.takes(family, &key), "{}: {key}", v.name)
                }
                Err(e) => panic!("{}: {e}", v.name),
                Ok(_) => panic!("{} built without its required parameters", v.name),
            }
        }
    }

    #[test]
    fn names_are_unique_and_every_default_is_valid() {
        let mut names: Vec<&str> = variants().map(|(_, v)| v.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a policy name is used twice");
        for (family, v) in variants() {
            for spec in family.params.iter().flat_map(|g| g.iter()) {
                if let ParamDefault::Value(d) = v.default_of(spec) {
                    assert!(spec.kind.check(d).is_ok(), "{}: {}={d}", v.name, spec.key);
                }
            }
            for (k, _) in v.defaults.iter().chain(v.example) {
                assert!(v.takes(family, k), "{}: {k} is not a parameter", v.name);
            }
        }
    }

    #[test]
    fn a_local_policys_statistics_follow_its_familys_spec() {
        for (family, v) in variants().filter(|(f, _)| f.kind == PolicyKind::Local) {
            let params = v
                .example
                .iter()
                .fold(Params::default(), |p, (k, val)| p.with(k, val));
            let policy = (v.build)(v, &params).unwrap_or_else(|e| panic!("{}: {e}", v.name));
            let names: Vec<String> = policy.stats().iter().map(|(n, _)| n.to_string()).collect();
            let spec: Vec<&str> = family.stats.iter().map(|s| s.name).collect();
            assert_eq!(names, spec, "{}", v.name);
            for s in family.stats {
                let value = policy.stats().get(s.name).cloned();
                let numeric = value.as_ref().and_then(|v| v.as_f64()).is_some();
                assert_eq!(numeric, s.kind != StatKind::Info, "{}: {}", v.name, s.name);
            }
        }
    }

    #[test]
    fn unknown_policy_lists_choices() {
        let err = build("pamm", &Params::default()).err().unwrap();
        assert!(err.to_string().contains("ondemand"), "{err}");
    }

    #[test]
    fn governors_take_no_params() {
        let err = build("ondemand", &Params::default().with("x", 1))
            .err()
            .unwrap();
        assert!(matches!(err, PolicyError::UnknownParam { .. }));
    }
}
