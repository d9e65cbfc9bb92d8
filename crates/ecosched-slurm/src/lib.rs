//! # ecosched-slurm
//!
//! The cluster side of ecosched on a Slurm cluster (Merkel et al.'s
//! cross-node placement, EuroSys'10 §5.2, without a C plugin): an idempotent
//! advisory loop that turns the activity the nodes measure into Slurm's own
//! soft placement knobs.
//!
//! ```text
//!  every pass:  squeue (running jobs) ─┐
//!               node exporters ────────┼─► classify (declared, measured,
//!               (ecosched daemons)     │   remembered in SQLite)
//!                                      ▼
//!               plan: per node, which class it has room for ─► scontrol update
//!                     (features eco_take_mem / eco_take_cpu, weight)
//!               classes.tsv ─► job_submit.lua sets a new job's --prefer
//! ```
//!
//! Everything Slurm-facing is re-derived and re-applied each pass, so a
//! `scontrol reconfigure` (which resets node features to slurm.conf) is
//! undone at the next pass, and running the loop twice changes nothing.
//! The plan ([`plan`]) is pure; [`slurm`] and [`scrape`] are the thin I/O.

pub mod advisor;
pub mod plan;
pub mod scrape;
pub mod slurm;
pub mod store;
