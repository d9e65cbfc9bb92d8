//! resctrl monitoring (Intel RDT CMT/MBM, AMD PQoS): what the kernel
//! offers (`info/L3_MON`), and one monitoring group's readings summed over
//! the L3 domains (`mon_data/mon_L3_<id>/<feature>`).
//!
//! ```text
//! sys/fs/resctrl/info/L3_MON/mon_features   llc_occupancy, mbm_total_bytes, …
//! sys/fs/resctrl/info/L3_MON/num_rmids      monitoring groups the L3 can tell apart
//! sys/fs/resctrl/mon_groups/<name>/tasks    the group's threads
//! sys/fs/resctrl/mon_groups/<name>/mon_data/mon_L3_00/llc_occupancy   bytes
//! ```

use crate::fsroot::FsRoot;
use std::collections::BTreeSet;

/// Where the kernel documentation mounts resctrl.
pub const RESCTRL: &str = "sys/fs/resctrl";
/// LLC occupancy in bytes (CMT): a level.
pub const LLC_OCCUPANCY: &str = "llc_occupancy";
/// Bytes moved between the L3 and memory (MBM), cumulative.
pub const MBM_TOTAL_BYTES: &str = "mbm_total_bytes";
/// At most this many L3 domains are read per group (sockets, or CCXs and
/// sub-NUMA clusters: a 2-socket Genoa has 24).
const MAX_DOMAINS: usize = 256;

/// What resctrl monitoring this machine offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResctrlInfo {
    /// `info/L3_MON/mon_features`.
    pub features: BTreeSet<String>,
    /// `info/L3_MON/num_rmids`: monitoring groups, the default one
    /// included.
    pub num_rmids: u32,
    /// The cache-line size MBM bytes are divided by, from the CPU's cache
    /// description (`coherency_line_size`).
    pub line_bytes: Option<u64>,
}

impl ResctrlInfo {
    /// Read what `root` offers; the reason when it offers no L3
    /// monitoring.
    pub fn detect(root: &FsRoot) -> Result<ResctrlInfo, String> {
        let rel = format!("{RESCTRL}/info/L3_MON/mon_features");
        let features = match root.read_opt(&rel) {
            Ok(Some(text)) => text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
            Ok(None) => {
                return Err(format!(
                    "resctrl is not mounted with L3 monitoring (/{rel} absent)"
                ))
            }
            Err(e) => return Err(e.to_string()),
        };
        let rmids_rel = format!("{RESCTRL}/info/L3_MON/num_rmids");
        let num_rmids = root
            .read_u64_opt(&rmids_rel)
            .map_err(|e| e.to_string())?
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("/{rmids_rel} absent"))?;
        let line_bytes = root
            .read_u64_opt("sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
            .ok()
            .flatten()
            .filter(|n| *n > 0);
        Ok(ResctrlInfo {
            features,
            num_rmids,
            line_bytes,
        })
    }

    /// Whether the kernel monitors `feature`.
    pub fn has(&self, feature: &str) -> bool {
        self.features.contains(feature)
    }
}

/// `feature` of the group at `group` (relative to the root: `RESCTRL` for
/// the default group, `RESCTRL/mon_groups/<name>` for a monitoring group)
/// summed over its L3 domains; `None` when no domain has a value (the
/// kernel writes `Unavailable` while an RMID is not yet counting).
pub fn read_sum(root: &FsRoot, group: &str, feature: &str) -> Result<Option<u64>, String> {
    let mon_data = format!("{group}/mon_data");
    let mut domains = root.list(&mon_data).map_err(|e| e.to_string())?;
    domains.retain(|d| d.starts_with("mon_L3_"));
    domains.sort();
    if domains.len() > MAX_DOMAINS {
        return Err(format!(
            "{} lists {} L3 domains, more than the {MAX_DOMAINS} read",
            root.path(&mon_data).display(),
            domains.len()
        ));
    }
    let mut sum: Option<u64> = None;
    for d in domains {
        let rel = format!("{mon_data}/{d}/{feature}");
        let Some(text) = root.read_opt(&rel).map_err(|e| e.to_string())? else {
            continue;
        };
        let Ok(v) = text.trim().parse::<u64>() else {
            continue;
        };
        sum = Some(sum.unwrap_or(0).saturating_add(v));
    }
    Ok(sum)
}
