//! What this machine offers a policy ([`Capabilities`]), from the same
//! facts whether a run is managed or only looked at: the counters a task's
//! reading has (perf events that open, `schedstat`), whether energy is
//! measured, and frequency control (cpufreq). `LinuxPlatform` reports
//! these, and `ecosched doctor` computes them without starting anything,
//! so a policy's verdict ([`ecosched_model::Requirements::verdict`]) is
//! the same in both.

use crate::fsroot::FsRoot;
use crate::perf::{probe_events_with, CounterAvailability, PerfBackend};
use crate::signals::Resolution;
use crate::tasks::availability_here;
use crate::topology::LinuxTopology;
use ecosched_model::{Capabilities, PowerSource};

/// The counters a task's reading has at `root` when the hardware events
/// are opened the way `resolution` found (each perf event probed once on
/// the calling thread).
pub fn counter_availability(
    root: &FsRoot,
    perf: &dyn PerfBackend,
    resolution: &Resolution,
) -> CounterAvailability {
    let events = probe_events_with(perf, &resolution.perf_events());
    availability_here(root, &events).0
}

/// What a policy gets: `counters` as found, energy as `power` says,
/// affinity and gangs wherever ecosched may change the machine
/// (`writable`: a live root, not a recording), frequency control where
/// it may and the machine has cpufreq.
pub fn capabilities(
    machine: &LinuxTopology,
    counters: &CounterAvailability,
    power: PowerSource,
    writable: bool,
) -> Capabilities {
    Capabilities {
        counters: counters.available.clone(),
        power: Some(power),
        affinity: writable,
        frequency: writable && !machine.cpufreq.is_empty(),
        gang: writable,
    }
}

/// What a run as root on the machine at `root` gets, found without
/// changing anything: the counters (perf events probed on the calling
/// thread), measured energy where a meter reads, frequency control where
/// cpufreq is. The daemon checks its groups' policies against this when
/// it loads its configuration; `ecosched doctor` reports it.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The capabilities a policy is judged against.
    pub capabilities: Capabilities,
    /// Which counters are had, and why the others are not.
    pub counters: CounterAvailability,
}

/// [`Offer`] for the machine at `root`.
pub fn offered(
    root: &FsRoot,
    perf: &dyn PerfBackend,
    resolution: &Resolution,
    machine: &LinuxTopology,
    power_measured: bool,
) -> Offer {
    let counters = counter_availability(root, perf, resolution);
    let power = if power_measured {
        PowerSource::Measured
    } else {
        PowerSource::Estimated
    };
    Offer {
        capabilities: capabilities(machine, &counters, power, true),
        counters,
    }
}

/// [`offered`] on this machine, its counters opened the way
/// `resolution` found ([`crate::signals::resolve_live`]).
pub fn offered_live(resolution: &Resolution) -> Result<Offer, crate::error::LinuxError> {
    let root = FsRoot::live();
    let machine = crate::topology::discover(&root)?;
    let power = crate::features::probe_power(&root)?;
    Ok(offered(
        &root,
        &crate::perf::SystemPerf,
        resolution,
        &machine,
        power.measures(),
    ))
}
