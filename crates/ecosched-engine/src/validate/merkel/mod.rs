//! Merkel, Stoess, Bellosa: *Resource-conscious Scheduling for Energy
//! Efficiency on Multicore Processors* (EuroSys'10), on the Core 2 Quad
//! Q6600 (`q6600` preset). The paper measures *processor* energy (§3: a
//! probe on the CPU supply), so its scenarios use the package meter and
//! attribute a task's energy by its share of the running time (Table 2).
//!
//! - [`measurements`]: §3's measurements that motivate the scheduler:
//!   co-run slowdowns (Fig. 1) and frequency scaling (Tables 1–2).
//! - [`evaluation`]: §8's evaluation of the activity-vector scheduler:
//!   sorted co-scheduling (Fig. 5), the frequency heuristic (Fig. 6) and
//!   cross-node swaps (Fig. 8).

pub mod evaluation;
pub mod measurements;
