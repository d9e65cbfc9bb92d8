//! The one-line notices a run gathers (what is missing or estimated, tasks
//! that could not be read or journalled): each said once, and at most
//! [`MAX_NOTICES`] kept, with a count of the rest, so a run that meets the
//! same trouble at every observation keeps a bounded list however long it
//! lasts.

/// How many notices a run keeps; `--json` lists them, so the bound is
/// also what the summary can hold of them.
pub const MAX_NOTICES: usize = 100;

/// The notices kept, and how many more were not.
#[derive(Debug, Default)]
pub(super) struct Notices {
    kept: Vec<String>,
    dropped: u64,
}

impl Notices {
    /// Start with `lines` (the builder's).
    pub(super) fn new(lines: Vec<String>) -> Self {
        let mut notices = Notices::default();
        for line in lines {
            notices.push(line);
        }
        notices
    }

    /// Keep `line` unless it is kept already; past the bound, count it.
    pub(super) fn push(&mut self, line: String) {
        if self.kept.contains(&line) {
            return;
        }
        if self.kept.len() < MAX_NOTICES {
            self.kept.push(line);
        } else {
            self.dropped += 1;
        }
    }

    /// Put `line` in place of the notice that starts with `prefix`, or
    /// keep it as a new one.
    pub(super) fn replace_prefixed(&mut self, prefix: &str, line: String) {
        match self.kept.iter_mut().find(|n| n.starts_with(prefix)) {
            Some(n) => *n = line,
            None => self.push(line),
        }
    }

    /// The notices kept, in the order they came.
    pub(super) fn kept(&self) -> &[String] {
        &self.kept
    }

    /// How many distinct notices came past the bound and were not kept.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_kept_once_and_bounded_with_a_count_of_the_rest() {
        let mut n = Notices::new(vec!["power: estimated".into()]);
        for _ in 0..1000 {
            n.push("power: estimated".into());
        }
        assert_eq!(n.kept().len(), 1);
        for i in 0..250 {
            n.push(format!("task {i} is no longer observed"));
        }
        assert_eq!(n.kept().len(), MAX_NOTICES);
        assert_eq!(n.dropped(), 151);
        n.replace_prefixed("power: ", "power: measured".into());
        assert_eq!(n.kept()[0], "power: measured");
        assert_eq!(n.kept().len(), MAX_NOTICES);
    }
}
