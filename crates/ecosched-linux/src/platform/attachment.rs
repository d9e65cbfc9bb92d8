//! An attached platform (one of the daemon's groups) manages processes
//! that already run: the daemon decides membership (a cgroup's processes,
//! a user's or a command name's), the platform follows and manages them
//! until told to stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where an attached platform finds its tasks: the root processes to
/// follow, with their descendants, asked at every look.
pub type Members = Box<dyn FnMut() -> Vec<u32> + Send>;

/// What an attached platform follows and when it ends.
pub(super) struct Attachment {
    members: Members,
    /// The members are all the processes there are (a cgroup's), not
    /// roots of trees.
    exact: bool,
    /// Set to end the management.
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("exact", &self.exact)
            .finish_non_exhaustive()
    }
}

impl Attachment {
    /// Follow the trees of `members` until `stop` is set.
    pub(super) fn new(members: Members, stop: Arc<AtomicBool>) -> Self {
        Attachment {
            members,
            exact: false,
            stop,
        }
    }

    /// The members are exactly the processes listed, not roots of trees.
    pub(super) fn follow_exactly(&mut self) {
        self.exact = true;
    }

    /// The processes to follow now, and whether they are all there are.
    pub(super) fn roots(&mut self) -> (Vec<u32>, bool) {
        ((self.members)(), self.exact)
    }

    /// Whether the management is to end.
    pub(super) fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}
