//! The engine's integration tests, in one binary. The default run (`cargo
//! test -p ecosched-engine`) is the fast tier: simulator runs of seconds,
//! no root. The papers' rows take minutes and sit in `validation`, ignored
//! unless asked for: `cargo test --release -p ecosched-engine -- --ignored
//! validation::`.
//!
//! - `attribution`: per-task energy by CPU time and by the activity model
//!   against the simulator's truth.
//! - `engine`: the control loop and the experiments end to end on the
//!   simulator (determinism, confinement, governors, `compare`, migration
//!   causes).
//! - `normalise`: fixed-duration comparisons read per unit of work, so less
//!   work never shows as an energy gain.
//! - `observe`: what a policy sees under `--observe linux` and `full`.
//! - `hilo`: Richling's high/low sets on `make -j1` … `-j8` and the green
//!   set.
//! - `pam`: PAM's mechanisms: the separation gain, the power cap, the
//!   worst-case bound of a wrong model, the per-task floor, CPI predictions,
//!   the counter samples and the refusal without a PMU.
//! - `patel`: Patel's schedulers: completion order without priorities,
//!   dynamic priorities, and what they read on Linux.
//! - `wca`: Dhiman's WCA where its rows do not reach (a tie of IPC sums).
//! - `validation`: every paper's rows against the simulator (the code of
//!   `ecosched validate`), one module per paper.
//! - `support`: what every validation test does with its rows.

#![allow(clippy::unwrap_used)]

mod attribution;
mod engine;
mod hilo;
mod normalise;
mod observe;
mod pam;
mod patel;
mod support;
mod validation;
mod wca;
