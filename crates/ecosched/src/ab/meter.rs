//! The energy of one run, read from the power meter around it.
//!
//! Why `ab` reads the meter itself rather than take the run's own figure:
//! the run integrates energy per control interval of the command, while a
//! comparison wants every joule from the command's start to its end,
//! whatever the interval. A sampler thread reads the counters every
//! [`PERIOD`] while the run goes on, so a RAPL counter that wraps during a
//! long run is still counted once per wrap, and an hwmon power reading is
//! integrated over short spans. Only measured meters count: an estimate
//! is a model of utilisation, not a measurement of the two arms.

use anyhow::{Context, Result};
use ecosched_linux::power::PowerMeter;
use ecosched_linux::FsRoot;
use ecosched_model::{Meter, PowerSource, Topology};
use serde::Serialize;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often the counters are read during a run.
pub const PERIOD: Duration = Duration::from_secs(1);

/// What the meter of this machine (or of a recorded tree) is.
pub struct MeterInfo {
    root: FsRoot,
    topology: Topology,
    /// `measured: RAPL package-0 (+dram); system: RAPL psys`, or why
    /// nothing is measured.
    pub description: String,
    /// Measured or estimated.
    pub source: PowerSource,
    /// The meter the comparison uses: the whole system when it is
    /// measured, otherwise the packages.
    pub meter: Meter,
}

/// The joules of one run, from a measured meter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RunEnergy {
    /// The compared figure: `system_j` when measured, else `package_j`.
    pub energy_j: Option<f64>,
    /// Σ RAPL package zones (or hwmon package sensors).
    pub package_j: Option<f64>,
    /// RAPL psys or an hwmon system meter.
    pub system_j: Option<f64>,
    /// Σ RAPL dram zones, where there are any (inside neither total).
    pub dram_j: Option<f64>,
}

impl MeterInfo {
    /// Look at the meter under `root` (this machine: `FsRoot::live()`).
    pub fn open(root: FsRoot, topology: Topology) -> Result<MeterInfo> {
        let meter = PowerMeter::open(&root, &topology).context("opening the power meter")?;
        Ok(MeterInfo {
            description: meter.describe(),
            source: meter.source(),
            meter: meter.meter(),
            root,
            topology,
        })
    }

    /// Whether energy is measured, so that the arms can be compared on it.
    pub fn measured(&self) -> bool {
        self.source == PowerSource::Measured
    }

    /// Run `work` and return what it gives with the energy the meter saw
    /// meanwhile (all `None` when the meter is not measured).
    pub fn measure<T>(&self, work: impl FnOnce() -> T) -> Result<(T, RunEnergy)> {
        if !self.measured() {
            return Ok((work(), RunEnergy::default()));
        }
        let mut meter =
            PowerMeter::open(&self.root, &self.topology).context("opening the power meter")?;
        let which = self.meter;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let sampler = scope.spawn(move || -> Result<RunEnergy> {
                let mut total = RunEnergy::default();
                let mut last = Instant::now();
                loop {
                    let done = !matches!(
                        stopped.recv_timeout(PERIOD),
                        Err(mpsc::RecvTimeoutError::Timeout)
                    );
                    let now = Instant::now();
                    let s = meter
                        .sample(now.duration_since(last).as_secs_f64(), &[])
                        .context("reading the power meter")?;
                    last = now;
                    let dram: Option<f64> = meter
                        .domains()
                        .iter()
                        .filter(|d| d.name.ends_with("/dram"))
                        .map(|d| d.energy_j)
                        .sum();
                    let add = |a: &mut Option<f64>, b: Option<f64>| {
                        if let Some(b) = b {
                            *a = Some(a.unwrap_or(0.0) + b);
                        }
                    };
                    add(&mut total.package_j, s.package_j);
                    add(&mut total.system_j, s.system_j);
                    add(&mut total.dram_j, dram);
                    add(&mut total.energy_j, s.energy_j(which));
                    if done {
                        return Ok(total);
                    }
                }
            });
            let out = work();
            // The sampler ends with a last reading whether or not the
            // message arrives (a closed channel ends it too).
            let _ = stop.send(());
            let energy = sampler
                .join()
                .map_err(|_| anyhow::anyhow!("the power meter's sampler panicked"))??;
            Ok((out, energy))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_testkit::trees::copy_tree;

    fn thinkpad() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../ecosched-linux/tests/data/power-thinkpad-t480-i7-8650u")
    }

    /// The recorded laptop's counters move only when written: a run that
    /// writes 12.5 J into psys and 9 J into package-0 measures exactly that.
    #[test]
    fn a_run_measures_what_its_counters_moved() {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&thinkpad(), dir.path());
        let root = FsRoot::writable_fixture(dir.path());
        let info = MeterInfo::open(root, Topology::default()).unwrap();
        assert!(info.measured());
        assert_eq!(info.meter, Meter::System);
        let rapl = dir.path().join("sys/class/powercap");
        let bump = |zone: &str, uj: u64| {
            let f = rapl.join(zone).join("energy_uj");
            let v: u64 = std::fs::read_to_string(&f).unwrap().trim().parse().unwrap();
            std::fs::write(&f, format!("{}\n", v + uj)).unwrap();
        };
        let ((), e) = info
            .measure(|| {
                bump("intel-rapl:1", 12_500_000);
                bump("intel-rapl:0", 9_000_000);
            })
            .unwrap();
        assert_eq!(e.energy_j, Some(12.5));
        assert_eq!(e.system_j, Some(12.5));
        assert_eq!(e.package_j, Some(9.0));
        assert_eq!(e.dram_j, Some(0.0));
    }
}
