//! Hand-built topologies for tests: the papers' machines as the policy
//! tests use them, and a [`Synthetic`] machine of any shape.
//!
//! Every machine here is built by [`Synthetic`], so a topology is put
//! together field by field in one place. The papers' machines carry only
//! what the tests that use them read: their docs say what each leaves out
//! (a cache level, the list of voltage domains), so a test that needs more
//! builds it with [`Synthetic`] or adds it to the returned value.

use ecosched_model::topology::{CacheDomain, CacheKind, Cpu, FreqDomain, PState, VoltageDomain};
use ecosched_model::{CpuId, CpuSet, FreqDomainId, Topology};

/// A level of the machine's hierarchy: what a frequency or voltage domain
/// spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One core.
    Core,
    /// The cores of one LLC domain (one die).
    Llc,
    /// The cores of one package.
    Package,
}

/// Frequency control of a [`Synthetic`] machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Dvfs {
    /// What one frequency domain spans.
    pub domain: Scope,
    /// What one voltage domain spans; no finer than `domain`.
    pub voltage: Scope,
    /// The P-states of every domain, ascending.
    pub pstates: Vec<PState>,
    /// Every domain's transition latency.
    pub transition_latency_us: u32,
}

/// A machine of `packages` × LLC domains × cores, one hardware thread per
/// core, numbered package by package: CPU, core and die (LLC domain) ids
/// count up across the machine. Without [`Synthetic::llc`] it lists no
/// caches; without [`Synthetic::dvfs`] it has no frequency control (every
/// CPU's domain is `None`). NUMA nodes are not listed; each CPU names its
/// node (0, or its package with [`Synthetic::numa_per_package`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Synthetic {
    packages: u32,
    llcs_per_package: u32,
    cores_per_llc: u32,
    llc: Option<(u8, u64)>,
    numa_per_package: bool,
    dvfs: Option<Dvfs>,
    /// CPUs (by number) whose capacity is below the biggest core's.
    smaller: Vec<(std::ops::Range<u32>, u32)>,
}

impl Synthetic {
    /// `packages` packages of `llcs_per_package` LLC domains of
    /// `cores_per_llc` cores.
    pub fn new(packages: u32, llcs_per_package: u32, cores_per_llc: u32) -> Self {
        Synthetic {
            packages,
            llcs_per_package,
            cores_per_llc,
            llc: None,
            numa_per_package: false,
            dvfs: None,
            smaller: Vec::new(),
        }
    }

    /// CPUs `cpus` are smaller cores of `capacity` (on Linux's scale, 1024
    /// = the biggest core), as the efficiency cores of a hybrid part; the
    /// others keep 1024.
    pub fn capacity(mut self, cpus: std::ops::Range<u32>, capacity: u32) -> Self {
        self.smaller.push((cpus, capacity));
        self
    }

    /// One unified cache of `size_kib` at `level` per LLC domain.
    pub fn llc(mut self, level: u8, size_kib: u64) -> Self {
        self.llc = Some((level, size_kib));
        self
    }

    /// One NUMA node per package (memory controller on the package).
    pub fn numa_per_package(mut self) -> Self {
        self.numa_per_package = true;
        self
    }

    /// Frequency control: domains, voltage domains and P-states.
    pub fn dvfs(mut self, dvfs: Dvfs) -> Self {
        self.dvfs = Some(dvfs);
        self
    }

    /// The topology.
    pub fn build(&self) -> Topology {
        let n = self.count(Scope::Core);
        let cpus = (0..n)
            .map(|i| Cpu {
                id: CpuId(i),
                package: self.key(Scope::Package, i),
                die: self.key(Scope::Llc, i),
                core: i,
                numa_node: if self.numa_per_package {
                    self.key(Scope::Package, i)
                } else {
                    0
                },
                online: true,
                freq_domain: self
                    .dvfs
                    .as_ref()
                    .map(|d| FreqDomainId(self.key(d.domain, i) as usize)),
                capacity: self
                    .smaller
                    .iter()
                    .rev()
                    .find(|(cpus, _)| cpus.contains(&i))
                    .map_or(ecosched_model::topology::FULL_CAPACITY, |(_, c)| *c),
            })
            .collect();
        let caches = self
            .llc
            .map(|(level, size_kib)| {
                (0..self.count(Scope::Llc))
                    .map(|d| CacheDomain {
                        level,
                        kind: CacheKind::Unified,
                        size_kib,
                        cpus: self.members(Scope::Llc, d).collect(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let (freq_domains, voltage_domains) = match &self.dvfs {
            Some(d) => self.domains(d),
            None => (Vec::new(), Vec::new()),
        };
        Topology {
            cpus,
            caches,
            freq_domains,
            voltage_domains,
            ..Topology::default()
        }
    }

    /// How many parts of this scope the machine has.
    fn count(&self, scope: Scope) -> u32 {
        match scope {
            Scope::Core => self.packages * self.llcs_per_package * self.cores_per_llc,
            Scope::Llc => self.packages * self.llcs_per_package,
            Scope::Package => self.packages,
        }
    }

    /// The part of this scope that CPU `cpu` belongs to.
    fn key(&self, scope: Scope, cpu: u32) -> u32 {
        match scope {
            Scope::Core => cpu,
            Scope::Llc => cpu / self.cores_per_llc,
            Scope::Package => cpu / (self.llcs_per_package * self.cores_per_llc),
        }
    }

    /// The CPUs of part `k` of this scope, ascending.
    fn members(&self, scope: Scope, k: u32) -> impl Iterator<Item = CpuId> + '_ {
        (0..self.count(Scope::Core))
            .filter(move |&i| self.key(scope, i) == k)
            .map(CpuId)
    }

    /// The frequency domains (one per part of `d.domain`) and the voltage
    /// domains (one per part of `d.voltage`).
    fn domains(&self, d: &Dvfs) -> (Vec<FreqDomain>, Vec<VoltageDomain>) {
        let freq_domains: Vec<FreqDomain> = (0..self.count(d.domain))
            .map(|k| {
                let cpus: CpuSet = self.members(d.domain, k).collect();
                let first = cpus.first().map_or(0, |c| c.0);
                FreqDomain {
                    cpus,
                    pstates: d.pstates.clone(),
                    transition_latency_us: d.transition_latency_us,
                    voltage_domain: self.key(d.voltage, first) as usize,
                }
            })
            .collect();
        let voltage_domains = (0..self.count(d.voltage) as usize)
            .map(|v| VoltageDomain {
                freq_domains: (0..freq_domains.len())
                    .filter(|&f| freq_domains[f].voltage_domain == v)
                    .map(FreqDomainId)
                    .collect(),
            })
            .collect();
        (freq_domains, voltage_domains)
    }
}

/// P-states of these frequencies (MHz), voltages unknown.
pub fn pstates_mhz(mhz: &[u64]) -> Vec<PState> {
    mhz.iter()
        .map(|m| PState {
            freq_khz: m * 1000,
            voltage_mv: None,
        })
        .collect()
}

/// P-states of these frequencies (MHz) at these voltages (mV).
pub fn pstates_mhz_mv(points: &[(u64, u32)]) -> Vec<PState> {
    points
        .iter()
        .map(|&(m, mv)| PState {
            freq_khz: m * 1000,
            voltage_mv: Some(mv),
        })
        .collect()
}

/// `n` CPUs of one package and one frequency domain with the given
/// P-states (kHz), no caches: the smallest machine a policy can run on.
pub fn flat(n: u32, pstates_khz: &[u64]) -> Topology {
    Synthetic::new(1, 1, n)
        .dvfs(Dvfs {
            domain: Scope::Package,
            voltage: Scope::Package,
            pstates: pstates_khz
                .iter()
                .map(|&freq_khz| PState {
                    freq_khz,
                    voltage_mv: None,
                })
                .collect(),
            transition_latency_us: 10,
        })
        .build()
}

/// The Intel Core 2 Quad Q6600 of Merkel et al.: two dies of two cores,
/// one chip-wide frequency at 1.6 GHz/1.13 V or 2.4 GHz/1.24 V, 10 µs
/// transitions. Its L2 caches are not listed.
pub fn q6600() -> Topology {
    Synthetic::new(1, 2, 2)
        .dvfs(Dvfs {
            domain: Scope::Package,
            voltage: Scope::Package,
            pstates: pstates_mhz_mv(&[(1600, 1130), (2400, 1240)]),
            transition_latency_us: 10,
        })
        .build()
}

/// The dual AMD Opteron 2352 of Richling et al.: two packages of four
/// cores, a 2 MiB L3 and a NUMA node per package, per-core frequency at
/// 1.05 or 2.1 GHz (voltages unknown), 100 µs transitions. Each frequency
/// domain names its package's voltage domain, but the voltage domains
/// themselves are not listed.
pub fn opteron_2352() -> Topology {
    let mut t = Synthetic::new(2, 1, 4)
        .llc(3, 2048)
        .numa_per_package()
        .dvfs(Dvfs {
            domain: Scope::Core,
            voltage: Scope::Package,
            pstates: pstates_mhz(&[1050, 2100]),
            transition_latency_us: 100,
        })
        .build();
    t.voltage_domains.clear();
    t
}

/// The AMD Opteron 6134 of Patel's thesis: one package of two dies of
/// four cores, per-core frequency at 800, 1400, 1700, 2000 or 2300 MHz
/// (voltages unknown), one voltage domain per die, 100 µs transitions. No
/// calibration, so a policy derives its partition from the P-states; its
/// L3 caches are not listed.
pub fn opteron_6134() -> Topology {
    Synthetic::new(1, 2, 4)
        .dvfs(Dvfs {
            domain: Scope::Core,
            voltage: Scope::Llc,
            pstates: pstates_mhz(&[800, 1400, 1700, 2000, 2300]),
            transition_latency_us: 100,
        })
        .build()
}

/// The Intel Xeon E5430 package of WCA's Fig. 1a: four cores, cores 0–1
/// sharing one 6 MiB L2 and cores 2–3 the other, no frequency control.
pub fn xeon_e5430() -> Topology {
    Synthetic::new(1, 2, 2).llc(2, 6144).build()
}

/// The Intel Xeon E5345 blade of PAM: two packages × two 4 MiB L2 caches ×
/// two cores, one NUMA node (a shared front-side bus). PAM sets no
/// frequency, so none is listed; every CPU still names frequency domain 0.
pub fn xeon_e5345() -> Topology {
    let mut t = Synthetic::new(2, 2, 2).llc(2, 4096).build();
    for cpu in &mut t.cpus {
        cpu.freq_domain = Some(FreqDomainId(0));
    }
    t
}

/// `topology` as a machine without cpufreq (a VM) shows it: no frequency
/// or voltage domains, and no CPU names one.
pub fn without_cpufreq(mut topology: Topology) -> Topology {
    topology.freq_domains.clear();
    topology.voltage_domains.clear();
    for cpu in &mut topology.cpus {
        cpu.freq_domain = None;
    }
    topology
}
