//! What the platform measures of the whole machine at each observation:
//! every CPU's utilisation and frequency (`/proc/stat`, cpufreq), the
//! energy since the last one (measured or estimated, see
//! [`crate::power`]) and the load average (`/proc/loadavg`).

use crate::cpustat::CpuStat;
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::power::estimate::EstimateParams;
use crate::power::PowerMeter;
use crate::procfs;
use ecosched_model::{CpuSample, LoadAvg, Meter, PowerSample, PowerSource, Topology};

/// The machine-wide readings.
#[derive(Debug)]
pub(super) struct Sensors {
    root: FsRoot,
    meter: PowerMeter,
    cpustat: CpuStat,
    /// Why the load average could not be read, said once.
    loadavg_failed: bool,
}

impl Sensors {
    /// Open the meter for `topology` and take the first CPU times.
    pub(super) fn open(root: &FsRoot, topology: &Topology) -> Result<Self, LinuxError> {
        Ok(Sensors {
            meter: PowerMeter::open(root, topology)?,
            cpustat: CpuStat::new(root.clone())?,
            root: root.clone(),
            loadavg_failed: false,
        })
    }

    /// Estimate power with `params` where nothing measures it; the meter
    /// takes its first reading now.
    pub(super) fn set_power_model(
        &mut self,
        topology: &Topology,
        params: EstimateParams,
    ) -> Result<(), LinuxError> {
        self.meter = PowerMeter::open_with(&self.root, topology, params)?;
        Ok(())
    }

    /// Where power comes from.
    pub(super) fn power_source(&self) -> PowerSource {
        self.meter.source()
    }

    /// What the meter measures.
    pub(super) fn meter(&self) -> Meter {
        self.meter.meter()
    }

    /// How power is measured, in one line.
    pub(super) fn describe_power(&self) -> String {
        self.meter.describe()
    }

    /// Each CPU's utilisation since the last call and the energy over the
    /// `interval_s` that covers.
    pub(super) fn sample(
        &mut self,
        interval_s: f64,
    ) -> Result<(Vec<CpuSample>, PowerSample), LinuxError> {
        let cpus = self.cpustat.sample()?;
        let power = self.meter.sample(interval_s, &cpus)?;
        Ok((cpus, power))
    }

    /// The system load average, or `None` when it cannot be read: said
    /// once through `notice`.
    pub(super) fn load_avg(&mut self, notice: &mut dyn FnMut(String)) -> Option<LoadAvg> {
        match read_loadavg(&self.root) {
            Ok(l) => Some(LoadAvg {
                one: l.one,
                five: l.five,
                fifteen: l.fifteen,
                runnable: l.runnable,
                total: l.total,
            }),
            Err(e) => {
                if !self.loadavg_failed {
                    self.loadavg_failed = true;
                    notice(format!("load average unavailable, left absent: {e}"));
                }
                None
            }
        }
    }
}

/// The load average of `root` (`proc/loadavg`).
fn read_loadavg(root: &FsRoot) -> Result<procfs::LoadAvg, LinuxError> {
    let rel = "proc/loadavg";
    let text = root.read(rel, "load average")?;
    procfs::loadavg::parse(&text).map_err(|e| LinuxError::parse(&root.path(rel), &text, e.reason))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_load_average_is_read_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = FsRoot::recorded(dir.path());
        let e = read_loadavg(&root).unwrap_err();
        assert!(
            e.is_absent() && e.to_string().contains("load average"),
            "{e}"
        );
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/loadavg"), "0.50 0.25 0.10 2/80 300\n").unwrap();
        let load = read_loadavg(&root).unwrap();
        assert_eq!((load.runnable, load.total), (2, 80));
    }
}
