//! The seed shift of `validate --reseed`: a per-thread offset added to
//! every simulated run's seed, so that the same rows run again on other
//! seed sets. It lives apart from [`crate::experiment`] so that
//! [`crate::parallel`] can carry it into its worker threads without the
//! two modules importing each other.

thread_local! {
    static SEED_SHIFT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The seed shift in force on this thread (see [`with_seed_shift`]), to
/// carry into the worker threads of a parallel search.
pub fn seed_shift() -> u64 {
    SEED_SHIFT.with(std::cell::Cell::get)
}

/// Run `f` with the seed of every simulated run on this thread (the
/// explicit one or the scenario's) moved by `shift`: `validate --reseed`
/// re-runs the same rows on other seeds to show which verdicts are a seed's
/// luck. The shift ends with `f`, even on early return.
pub fn with_seed_shift<T>(shift: u64, f: impl FnOnce() -> T) -> T {
    struct Reset(u64);
    impl Drop for Reset {
        fn drop(&mut self) {
            SEED_SHIFT.with(|s| s.set(self.0));
        }
    }
    let _reset = Reset(SEED_SHIFT.with(|s| s.replace(shift)));
    f()
}

/// The seed a run uses: `explicit` if given, else the scenario's, moved
/// by the thread's [`with_seed_shift`].
pub(crate) fn run_seed(explicit: Option<u64>, scenario_seed: u64) -> u64 {
    explicit
        .unwrap_or(scenario_seed)
        .wrapping_add(SEED_SHIFT.with(std::cell::Cell::get))
}
