//! Where PAM's cache shares come from (Banikazemi et al., SC '08, §IV-B,
//! eqs. 5–7): the model needs each slot's share of its cache, `O^h`. The
//! paper estimates it from the lines each slot brings in; a machine with
//! cache monitoring (resctrl) measures it. Also: when the machine's caches
//! leave PAM no mapping to choose.

use super::model::SlotObs;
use super::search::Layout;
use ecosched_model::{CpuSet, Topology};

/// Where a slot's share of its cache (`O^h`, eqs. 5–7) comes from, best
/// first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OccupancySource {
    /// Measured occupancy (resctrl's cache monitoring).
    Measured,
    /// Lines into the cache, demand and prefetch (the paper's `L`).
    LinesIn,
    /// LLC misses standing in for lines in (prefetches missing).
    LlcMisses,
}

impl OccupancySource {
    /// Its name in statistics: the counter it comes from.
    pub fn name(self) -> &'static str {
        match self {
            OccupancySource::Measured => "llc_occupancy",
            OccupancySource::LinesIn => "lines_in",
            OccupancySource::LlcMisses => "llc_misses",
        }
    }
}

/// Why PAM has nothing to choose on `topology`'s CPUs `allowed`, if so:
/// one last-level cache (every mapping is the same), or none that two
/// CPUs share (no process ever shares a cache).
pub fn nothing_to_choose(topology: &Topology, allowed: &CpuSet) -> Option<String> {
    let layout = Layout::from_topology(topology, allowed);
    if layout.caches.len() < 2 {
        return Some("this machine has one".into());
    }
    if layout.caches.iter().all(|c| c.cpus.len() < 2) {
        return Some("on this machine no two CPUs share one".into());
    }
    None
}

/// With measured occupancies (`held`, bytes per slot; `None` where not
/// measured), weight each slot's lines-in rate so that eq. 7's shares are
/// the measured ones: slot `i` in cache `c` gets `O_i · Σ_c L`, where `O_i`
/// is its measured bytes over the cache's measured bytes. A cache where
/// any slot lacks a measurement, or where nothing is held, keeps its
/// lines-in rates.
pub fn weigh_by_measured_occupancy(
    slots: &mut [SlotObs],
    cache_of: &[usize],
    held: &[Option<f64>],
) {
    let caches = cache_of.iter().copied().max().map_or(0, |c| c + 1);
    let mut lines = vec![0.0; caches];
    let mut bytes = vec![Some(0.0); caches];
    for ((s, &c), h) in slots.iter().zip(cache_of).zip(held) {
        lines[c] += s.lines_per_s;
        bytes[c] = bytes[c].zip(*h).map(|(a, b)| a + b);
    }
    for ((s, &c), h) in slots.iter_mut().zip(cache_of).zip(held) {
        if let (Some(total), Some(own)) = (bytes[c], h) {
            if total > 0.0 {
                s.lines_per_s = own / total * lines[c];
            }
        }
    }
}
