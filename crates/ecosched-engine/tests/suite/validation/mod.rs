//! The simulator against the papers' published figures, with the rows
//! `ecosched validate` prints: each test prints every row next to the
//! paper's figure and fails when a row leaves its band, a known miss
//! starts to pass, or a band breaks the tolerance rules
//! ([`crate::support::report`]). Minutes of simulation, so every test is
//! ignored unless the validation tier is asked for (`-- --ignored
//! validation::`).
//!
//! - `merkel`: Merkel et al. (EuroSys'10), Figs. 1, 5, 6, 8 and Tables 1–2.
//! - `richling`: Richling et al., Figs. 1–2, Table I and the three
//!   quad-cores.
//! - `pam`: Banikazemi et al. (PAM).
//! - `dhiman`: Dhiman et al. (WCA).
//! - `patel`: Patel's thesis, Tables 3–4, 8, 21, 24–25.
//! - `suite`: the workload suite of current machines and the README's
//!   results table.

mod dhiman;
mod merkel;
mod pam;
mod patel;
mod richling;
mod suite;
