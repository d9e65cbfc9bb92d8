//! The memory-bus component of an activity vector (Merkel et al.,
//! EuroSys'10, §4.1): which counter it reads and over which calibrated
//! peak. The paper counts bus transactions; today's machines count memory
//! traffic with the CPU's own events or resctrl's bandwidth monitoring
//! (both `mem_transactions`). LLC misses stand in where neither is
//! counted, or where the calibration has no peak to scale them by, and
//! leave out prefetched lines; [`BusSource`] says which was read and why.

use ecosched_model::calibration::ActivityCalibration;
use ecosched_model::Counters;

/// Which counter the memory-bus component reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusEvent {
    /// Memory transactions where the task's counters have them and the
    /// calibration has their peak; LLC misses otherwise.
    Auto,
    /// LLC misses, over the calibrated peak in misses.
    LlcMisses,
    /// Memory transactions, over their calibrated peak (the peak in LLC
    /// misses where the calibration has none).
    MemTransactions,
}

/// Where a bus reading came from, for the `bus_from` statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusSource {
    /// Memory transactions.
    MemTransactions,
    /// LLC misses, as `bus_event=llc_misses` asks.
    LlcMissesAsked,
    /// LLC misses: the machine counts no memory transactions.
    LlcMissesNoTraffic,
    /// LLC misses: the calibration has no memory-transaction peak.
    LlcMissesNoPeak,
}

impl BusSource {
    /// In words.
    pub fn describe(self) -> &'static str {
        match self {
            BusSource::MemTransactions => "mem_transactions",
            BusSource::LlcMissesAsked => "llc_misses (bus_event=llc_misses)",
            BusSource::LlcMissesNoTraffic => {
                "llc_misses: this machine counts no memory transactions, so prefetched lines are missing"
            }
            BusSource::LlcMissesNoPeak => {
                "llc_misses: the calibration has no memory-transaction peak (re-run ecosched calibrate av)"
            }
        }
    }
}

/// The bus count of counters `c`, its calibrated peak per second, and
/// where it came from; `None` when the counter read is missing.
pub fn bus_reading(
    c: &Counters,
    act: &ActivityCalibration,
    bus_event: BusEvent,
) -> Option<(f64, f64, BusSource)> {
    let misses = |why| Some((c.llc_misses? as f64, act.peak_mem_per_s, why));
    match bus_event {
        BusEvent::LlcMisses => misses(BusSource::LlcMissesAsked),
        BusEvent::MemTransactions => Some((
            c.mem_transactions? as f64,
            act.peak_mem_transactions_per_s
                .unwrap_or(act.peak_mem_per_s),
            BusSource::MemTransactions,
        )),
        BusEvent::Auto => match (c.mem_transactions, act.peak_mem_transactions_per_s) {
            (Some(m), Some(peak)) => Some((m as f64, peak, BusSource::MemTransactions)),
            (None, _) => misses(BusSource::LlcMissesNoTraffic),
            (Some(_), None) => misses(BusSource::LlcMissesNoPeak),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(transactions_peak: Option<f64>) -> ActivityCalibration {
        ActivityCalibration {
            peak_mem_per_s: 1e8,
            peak_mem_transactions_per_s: transactions_peak,
            peak_cache_per_cycle: 0.25,
            translation: Vec::new(),
        }
    }

    #[test]
    fn auto_reads_memory_traffic_where_counted_and_calibrated_and_says_why_not() {
        let both = Counters {
            llc_misses: Some(10),
            mem_transactions: Some(30),
            ..Counters::default()
        };
        let misses_only = Counters {
            mem_transactions: None,
            ..both.clone()
        };
        let auto = |c: &Counters, peak| bus_reading(c, &calibration(peak), BusEvent::Auto);
        assert_eq!(
            auto(&both, Some(3e8)),
            Some((30.0, 3e8, BusSource::MemTransactions))
        );
        assert_eq!(
            auto(&misses_only, Some(3e8)),
            Some((10.0, 1e8, BusSource::LlcMissesNoTraffic))
        );
        assert_eq!(
            auto(&both, None),
            Some((10.0, 1e8, BusSource::LlcMissesNoPeak))
        );
        // Forced: the event asked for, and nothing in its place.
        let cal = calibration(None);
        assert_eq!(
            bus_reading(&both, &cal, BusEvent::MemTransactions),
            Some((30.0, 1e8, BusSource::MemTransactions))
        );
        assert_eq!(
            bus_reading(&misses_only, &cal, BusEvent::MemTransactions),
            None
        );
        assert!(BusSource::LlcMissesNoTraffic
            .describe()
            .contains("counts no memory transactions"));
    }
}
