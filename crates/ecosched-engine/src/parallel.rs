//! Independent simulations of one experiment spread over the cores, with
//! results in the items' order whatever the thread count, so that
//! `compare`, `validate` and `sweep` print the same bytes on one thread as
//! on many.
//!
//! Every job runs on rayon's global pool: its size follows rayon's default
//! (`RAYON_NUM_THREADS` when set, else one thread per CPU this process may
//! use), and nested calls (a `validate --perturb` pass whose rows run in
//! parallel too) share it rather than start threads of their own, so the
//! process never runs more simulations at once than the pool has threads.
//! A job carries the per-thread overrides of its caller, the seed shift
//! ([`crate::seed_shift::with_seed_shift`]) and the calibration
//! perturbation ([`ecosched_sim::perturb::with_perturbation`]), since a
//! pool thread may run jobs of several passes in turn.

use crate::seed_shift::{seed_shift, with_seed_shift};
use crate::EngineError;
use ecosched_sim::perturb::{self, Knob};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The per-thread overrides in force where a parallel run is started.
#[derive(Debug, Clone, Copy)]
struct Overrides {
    seed_shift: u64,
    moved: Option<(Knob, f64)>,
}

impl Overrides {
    fn here() -> Overrides {
        Overrides {
            seed_shift: seed_shift(),
            moved: perturb::active(),
        }
    }

    /// Run `f` under these overrides on the current thread.
    fn enter<T>(self, f: impl FnOnce() -> T) -> T {
        with_seed_shift(self.seed_shift, || perturb::with_active(self.moved, f))
    }
}

/// `f` of every item, run side by side, in the items' order; or the first
/// error in the items' order. Once a job fails no other starts, since the
/// caller only reports the error.
pub fn map<T, R, F>(items: &[T], f: F) -> Result<Vec<R>, EngineError>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> Result<R, EngineError> + Sync,
{
    map_counted(items, f, &|_, _| {})
}

/// [`map`], telling `progress` (from whichever thread finished it) how many
/// items have finished, of how many.
pub fn map_counted<T, R, F>(
    items: &[T],
    f: F,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<R>, EngineError>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> Result<R, EngineError> + Sync,
{
    let here = Overrides::here();
    let failed = AtomicBool::new(false);
    let done = AtomicUsize::new(0);
    let results: Vec<Option<Result<R, EngineError>>> = items
        .par_iter()
        .map(|item| {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let result = here.enter(|| f(item));
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, items.len());
            Some(result)
        })
        .collect();
    // A job is skipped only once another has failed, so the loop returns
    // that error before it could end with a result missing.
    let mut out = Vec::with_capacity(results.len());
    for r in results.into_iter().flatten() {
        out.push(r?);
    }
    Ok(out)
}

/// `f(a)` and `f(b)` side by side, each under the caller's overrides.
pub fn join<A, B>(
    a: impl FnOnce() -> Result<A, EngineError> + Send,
    b: impl FnOnce() -> Result<B, EngineError> + Send,
) -> Result<(A, B), EngineError>
where
    A: Send,
    B: Send,
{
    let here = Overrides::here();
    let (a, b) = rayon::join(|| here.enter(a), || here.enter(b));
    Ok((a?, b?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ecosched_sim::SimError;

    fn fail(i: usize) -> EngineError {
        EngineError::Sim(SimError::InvalidMachine {
            machine: format!("item {i}"),
            reason: "made to fail".into(),
        })
    }

    #[test]
    fn results_keep_the_items_order_and_the_first_error_wins() {
        let items: Vec<usize> = (0..64).collect();
        let squares = map(&items, |&i| Ok(i * i)).unwrap();
        assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
        let err = map(&items, |&i| if i >= 5 { Err(fail(i)) } else { Ok(i) }).unwrap_err();
        assert!(err.to_string().contains("item 5"), "{err}");
    }

    /// Once a job fails no thread starts another: at most the one each
    /// other thread had already begun runs.
    #[test]
    fn no_job_starts_after_a_failure() {
        let runs = AtomicUsize::new(0);
        let told = AtomicUsize::new(0);
        let items = [99, 20, 20, 20, 20, 20, 20, 20, 20, 20];
        let result = map_counted(
            &items,
            |&ms: &u64| {
                runs.fetch_add(1, Ordering::Relaxed);
                if ms == 99 {
                    return Err(fail(0));
                }
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(ms)
            },
            &|done, _| {
                told.fetch_max(done, Ordering::Relaxed);
            },
        );
        assert!(result.is_err());
        let ran = runs.into_inner();
        assert!(
            ran <= rayon::current_num_threads().min(10),
            "{ran} jobs ran"
        );
        assert_eq!(told.into_inner(), ran);
    }

    #[test]
    fn jobs_run_under_the_callers_overrides() {
        let items: Vec<usize> = (0..16).collect();
        let seen = with_seed_shift(7000, || {
            perturb::with_perturbation(Knob::Ceff, 1.1, || {
                map(&items, |_| Ok((seed_shift(), perturb::active()))).unwrap()
            })
        });
        assert!(seen
            .iter()
            .all(|&(s, m)| s == 7000 && m == Some((Knob::Ceff, 1.1))));
        let plain = map(&items, |_| Ok((seed_shift(), perturb::active()))).unwrap();
        assert!(plain.iter().all(|&(s, m)| s == 0 && m.is_none()));
    }
}
