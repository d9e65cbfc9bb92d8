//! The simulator checked against the papers' published figures
//! (`docs/design/simulator.md`, "Calibration, perturbation, validation").
//! Each check runs built-in scenarios, derives the figure the paper
//! reports, and compares it with the paper's value within a stated
//! tolerance. The tests and `ecosched validate` call the same code.
//!
//! - [`Check`] is one row: the paper's figure, the model's, the tolerance,
//!   whether a parameter was set from it ([`RowKind`]), and the rules every
//!   row's band keeps ([`Check::tolerance_problem`],
//!   [`Check::no_effect_problem`]).
//! - One module per paper builds its rows; each opens with a table of the
//!   figures it checks: [`merkel`] (Merkel et al., EuroSys'10),
//!   [`richling`] (Richling et al.), [`pam`] (Banikazemi et al.),
//!   [`dhiman`] (Dhiman et al.) and [`patel`] (Patel's thesis).
//! - [`checks_of`] runs the rows of the papers asked for, side by side on
//!   every core, in the order `validate` prints them; [`markdown`] renders them as the document
//!   `docs/validation.md`.

mod check;
pub mod dhiman;
pub mod markdown;
pub mod merkel;
pub mod pam;
pub mod patel;
pub mod richling;
mod runs;

pub use check::{Check, RowKind, MAX_REL_TOLERANCE};

use crate::EngineError;
use ecosched_sim::Observe;

/// The five source papers, so that `validate --paper` can run one
/// paper's rows alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paper {
    /// Merkel, Stoess, Bellosa (EuroSys'10): Figs. 1, 5, 6, 8, Tables 1–2.
    Merkel,
    /// Richling et al.: Figs. 1–2, Table I, §II's three quad-cores.
    Richling,
    /// Banikazemi et al. (PAM).
    Pam,
    /// Dhiman et al. (WCA).
    Dhiman,
    /// Patel's thesis: Tables 3–4, 21, 24–25.
    Patel,
}

impl Paper {
    /// Every paper, in the order `validate` reports them.
    pub const ALL: [Paper; 5] = [
        Paper::Merkel,
        Paper::Richling,
        Paper::Pam,
        Paper::Dhiman,
        Paper::Patel,
    ];

    /// The name `--paper` takes.
    pub fn name(self) -> &'static str {
        match self {
            Paper::Merkel => "merkel",
            Paper::Richling => "richling",
            Paper::Pam => "pam",
            Paper::Dhiman => "dhiman",
            Paper::Patel => "patel",
        }
    }

    /// How the paper's rows cite it: every row's [`Check::source`] starts
    /// with this, followed by the section and figure.
    pub fn cited_as(self) -> &'static str {
        match self {
            Paper::Merkel => "Merkel et al. EuroSys'10",
            Paper::Richling => "Richling et al.",
            Paper::Pam => "Banikazemi et al. (PAM)",
            Paper::Dhiman => "Dhiman et al. (WCA)",
            Paper::Patel => "Patel, PhD thesis (UNLV 2012)",
        }
    }

    /// The paper's full reference, for the documentation.
    pub fn reference(self) -> &'static str {
        match self {
            Paper::Merkel => {
                "A. Merkel, J. Stoess, F. Bellosa. *Resource-conscious Scheduling for Energy \
                 Efficiency on Multicore Processors.* EuroSys '10, Paris, 2010."
            }
            Paper::Richling => {
                "J. Richling, J. H. Schönherr, G. Mühl, M. Werner. *Towards Energy-Aware \
                 Multi-Core Scheduling.* PIK – Praxis der Informationsverarbeitung und \
                 Kommunikation 32(2), 2009."
            }
            Paper::Pam => {
                "M. Banikazemi, D. Poff, B. Abali. *PAM: A Novel Performance/Power Aware \
                 Meta-scheduler for Multi-core Systems.* SC '08, 2008."
            }
            Paper::Dhiman => {
                "G. Dhiman, T. Rosing, V. Kontorinis, E. Saxe, D. Tullsen, J. Chew. *Dynamic \
                 Workload Characterization for Power Efficient Scheduling on CMP Systems.* \
                 ISLPED '10, Austin, Texas, 2010."
            }
            Paper::Patel => {
                "R. Patel. *CPU Scheduling for Power/Energy Management on Heterogeneous \
                 Multicore Processors.* PhD thesis, University of Nevada, Las Vegas, 2012."
            }
        }
    }

    /// The paper a row's source cites, if it is one of the five.
    pub fn of(check: &Check) -> Option<Paper> {
        Paper::ALL.into_iter().find(|p| {
            check
                .source
                .strip_prefix(p.cited_as())
                .is_some_and(|rest| rest.starts_with(" §"))
        })
    }

    /// Where in the paper a row's figure is (`§3.1, Fig. 1`): its source
    /// without the citation.
    pub fn place(self, check: &Check) -> &str {
        check
            .source
            .strip_prefix(self.cited_as())
            .unwrap_or(&check.source)
            .trim()
    }
}

impl std::str::FromStr for Paper {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Paper::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let valid: Vec<&str> = Paper::ALL.iter().map(|p| p.name()).collect();
                format!("unknown paper {s:?}; valid: {}", valid.join(", "))
            })
    }
}

/// One group of rows and the paper it checks.
type RowGroup = (Paper, fn(Observe) -> Result<Vec<Check>, EngineError>);

/// Every group of rows, in the order `validate` prints them.
const GROUPS: [RowGroup; 18] = [
    (Paper::Merkel, merkel::measurements::fig1),
    (Paper::Merkel, merkel::measurements::table1),
    (Paper::Merkel, merkel::measurements::table2),
    (Paper::Richling, richling::fig2),
    (Paper::Richling, richling::table1),
    (Paper::Pam, pam::checks),
    (Paper::Pam, pam::predicted),
    (Paper::Pam, pam::power_cap),
    (Paper::Dhiman, |_| dhiman::checks()),
    (Paper::Merkel, merkel::evaluation::fig5),
    (Paper::Merkel, merkel::evaluation::fig6),
    (Paper::Patel, |_| patel::algorithm1::table4()),
    (Paper::Patel, |_| patel::priorities::tables24_25()),
    (Paper::Patel, |_| patel::priorities::table21()),
    (Paper::Patel, |_| patel::priorities::table8()),
    (Paper::Richling, richling::fig1_ordering),
    (Paper::Richling, richling::three_quads),
    (Paper::Merkel, merkel::evaluation::fig8),
];

/// Every check.
pub fn all_checks(o: Observe) -> Result<Vec<Check>, EngineError> {
    checks_of(&Paper::ALL, o)
}

/// The checks of the named papers, in `all_checks`'s order.
pub fn checks_of(papers: &[Paper], o: Observe) -> Result<Vec<Check>, EngineError> {
    checks_counted(papers, o, &|_, _| {})
}

/// [`checks_of`], telling `progress` how many groups of rows have finished,
/// of how many. The groups run side by side ([`crate::parallel`]), and so
/// do the independent runs within a group; the rows come back in the
/// groups' order whatever the thread count.
pub fn checks_counted(
    papers: &[Paper],
    o: Observe,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Check>, EngineError> {
    let groups: Vec<RowGroup> = GROUPS
        .into_iter()
        .filter(|(paper, _)| papers.contains(paper))
        .collect();
    let rows = crate::parallel::map_counted(&groups, |(_, rows)| rows(o), progress)?;
    Ok(rows.into_iter().flatten().collect())
}
