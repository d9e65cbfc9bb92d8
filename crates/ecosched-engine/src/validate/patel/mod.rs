//! R. Patel: *CPU Scheduling for Power/Energy Management on
//! Heterogeneous Multicore Processors* (PhD thesis, UNLV 2012), ch. 9 on
//! the Opteron 6134 (`opteron-6134` preset): algorithms 1–4 against the
//! control group (the default scheduler under ondemand) on Tasks 1–4. The
//! thesis measured wall power with a KillAWatt and counts with `perf`
//! (§9.1); every row is a mean over seeds 1..=[`SEEDS`], because one run's
//! counts swing with the seed as much as the differences the thesis
//! reports.
//!
//! - [`algorithm1`]: Tables 3–4, algorithm 1 on Tasks 1–4.
//! - [`priorities`]: Tables 8, 21, 24 and 25, algorithms 2–4 on Task 4
//!   with static and dynamic priorities.

pub mod algorithm1;
pub mod priorities;
mod seeded;

pub use seeded::SEEDS;
