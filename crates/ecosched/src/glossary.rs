//! What every column of `ecosched compare` means, shown under `compare
//! --help` (and repeated in `docs/researchers/simulation.md`), so that a
//! reader never has to guess whether a figure is a ratio, a gain or a
//! total.

/// The text after `compare --help`'s options.
pub const COMPARE_COLUMNS: &str = "\
Columns (× = this policy / the baseline; * marks the baseline):
  normalisation      The header says which. If every run finished its work,
                     totals compare. If the scenario has a fixed duration and
                     some run stopped with work left, every headline figure
                     is per unit of work: per completed instance when all
                     instances are the same program and length, else per
                     10^9 instructions. Less work never reads as less energy.
  work               Units of work done: completed instances, or 10^9
                     instructions retired by the managed tasks.
  throughput         Units of work per simulated second.
  J/unit             Energy over the run / units of work.
  EDP                Energy-delay product, J·s: energy × makespan (totals),
                     or J/unit × seconds/unit (per unit). Lower is better.
  makespan (s)       Time until the last managed task finished.
  avg power (W)      Energy / simulated time, from the scenario's meter
                     (package, like RAPL, or system, like a wall meter).
  × makespan, × energy, × EDP, × avg power, × throughput, × J/unit,
  × EDP/unit         The figure divided by the baseline's: below 1 is less
                     (better, except throughput, where above 1 is more work).
  speedup (geomean)  Geometric mean over tasks of baseline run time / run
                     time (PAM eq. 1); above 1 is faster.
  AW perf/W          Dhiman eq. 2: the gain (not a ratio) in alone-weighted
                     performance per watt over the baseline; 0 = equal,
                     +0.05 = 5 % better. Each task's run time is weighted by
                     its run time alone on the machine.
  run-time std-dev   (--seeds) Standard deviation of each task's run time
                     across seeds, % of its mean, averaged over tasks.
  run-queue wait     (run --json task_counters runqueue_wait_ns) Time a
                     runnable task waited for a CPU (/proc/<pid>/schedstat).
  × oracle           (with --policies …,oracle) The figure divided by the
                     oracle's: the best static placement and frequencies.
";
