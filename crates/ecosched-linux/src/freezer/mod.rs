//! Timed gang schedules carried out between decisions: a cycle of slots in
//! which only some groups of tasks may run (Merkel et al. §4.3, sorted
//! co-scheduling). A control loop that wakes every few hundred
//! milliseconds cannot switch gangs every time slice, so the platform
//! wakes at each slot boundary by itself ([`GangRunner::due`]) and freezes
//! and thaws whole groups.
//!
//! ```text
//! v1: <freezer mount>/<ecosched's own freezer cgroup>/
//!        └─ <name>-<pid>/            this run; grouped tasks' home base,
//!             ├─ <group a>/          never frozen (tasks taken out of a
//!             └─ <group b>/          group wait here), one directory per
//!                                    group, freezer.state FROZEN/THAWED
//! v2: <the run's cgroup>/<group>/    cgroup.freeze 1/0
//! ```
//!
//! Mechanisms, best first:
//! - the cgroup v1 `freezer` hierarchy. It is a hierarchy of its own, apart
//!   from the `cpuset` one, so moving a thread into a freezer group does not
//!   change which CPUs it may use. Threads move one by one (`tasks`).
//! - cgroup v2 `cgroup.freeze` (Linux 5.2) in child cgroups of the run's
//!   cgroup. On a pure v2 machine that is the run's cpuset cgroup and no
//!   controller is enabled below it, so a group inherits the run's CPUs.
//!   Processes move whole (`cgroup.procs`): the threads of one process
//!   cannot be in two groups.
//! - `SIGSTOP`/`SIGCONT` ([`crate::gang`]) when no freezer is mounted. A
//!   stop signal stops a whole process, so this too works per process.
//!
//! Every directory created, task moved and state written is journalled
//! before it is made ([`crate::journal`]); undoing thaws each group (the
//! state write comes later in the journal than the directory, so it is
//! undone first), moves each task back, then removes the directories. A
//! task forked by a grouped task is born in its group and moved to the run
//! directory when discovered, so a task that no group names is never frozen
//! for longer than one discovery.

mod groups;
mod mount;
mod runner;

pub use groups::FreezerRun;
pub use mount::{FreezerMount, FreezerVersion};
pub use runner::{
    check_schedule, ForcedMechanism, GangContext, GangRunner, SwitchStats, MIN_SLOT_US,
};
