//! The progress indicator on stderr for long runs. It is drawn only when
//! stderr is a terminal and JSON was not asked for, and only once a run has
//! lasted about a second, so short runs never flash a bar. With a known
//! simulated duration it is a bar in simulated seconds; otherwise a spinner
//! counting them.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a run goes before the indicator appears.
const SHOW_AFTER: Duration = Duration::from_millis(1000);
/// Least wall time between two updates of the indicator's text.
const UPDATE_EVERY: Duration = Duration::from_millis(50);

/// Whether to show progress at all: stderr is a terminal and the output is
/// not JSON.
pub fn wanted(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// A progress indicator that may never become visible.
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Dropping it tells the reveal thread the run is over.
    stop: Option<Sender<()>>,
    reveal: Option<JoinHandle<()>>,
    /// Length in simulated seconds, for a bar.
    total_s: Option<f64>,
    last_update: Option<Instant>,
}

impl Progress {
    /// An indicator that never shows.
    pub fn off() -> Progress {
        Progress {
            bar: None,
            stop: None,
            reveal: None,
            total_s: None,
            last_update: None,
        }
    }

    /// A simulation's indicator: a bar over `total_s` simulated seconds when
    /// known, else a spinner. Off unless `enabled`.
    pub fn simulation(enabled: bool, total_s: Option<f64>) -> Progress {
        if !enabled {
            return Progress::off();
        }
        let bar = match total_s {
            Some(t) => {
                let bar = ProgressBar::with_draw_target(
                    Some(t.ceil().max(1.0) as u64),
                    ProgressDrawTarget::hidden(),
                );
                bar.set_style(style(
                    "{spinner} {prefix}[{bar:30}] {pos}/{len} simulated s ({elapsed})",
                ));
                bar
            }
            None => {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                bar.set_style(style("{spinner} {prefix}{msg} ({elapsed})"));
                bar.set_message("0.0 simulated s");
                bar
            }
        };
        Progress::start(bar, total_s)
    }

    /// A spinner with a fixed message, for work that reports no progress.
    pub fn spinner(enabled: bool, message: &str) -> Progress {
        if !enabled {
            return Progress::off();
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(style("{spinner} {msg} ({elapsed})"));
        bar.set_message(message.to_string());
        Progress::start(bar, None)
    }

    fn start(bar: ProgressBar, total_s: Option<f64>) -> Progress {
        let (stop, wait) = channel::<()>();
        let shown = bar.clone();
        let reveal = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = wait.recv_timeout(SHOW_AFTER) {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(100));
            }
        });
        Progress {
            bar: Some(bar),
            stop: Some(stop),
            reveal: Some(reveal),
            total_s,
            last_update: None,
        }
    }

    /// Start a new stage (compare: the next policy): set the label in front
    /// and restart the count.
    pub fn stage(&mut self, label: &str) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(format!("{label} "));
            bar.set_position(0);
            if self.total_s.is_none() {
                bar.set_message("0.0 simulated s");
            }
            self.last_update = None;
        }
    }

    /// Replace a spinner's message (validate: how many groups of rows or
    /// passes have finished).
    pub fn say(&mut self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_string());
        }
    }

    /// The run has reached `sim_s` simulated seconds.
    pub fn update(&mut self, sim_s: f64) {
        let Some(bar) = &self.bar else { return };
        let now = Instant::now();
        if self
            .last_update
            .is_some_and(|t| now.duration_since(t) < UPDATE_EVERY)
        {
            return;
        }
        self.last_update = Some(now);
        match self.total_s {
            Some(_) => bar.set_position(sim_s.max(0.0) as u64),
            None => bar.set_message(format!("{sim_s:.1} simulated s")),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(reveal) = self.reveal.take() {
            let _ = reveal.join();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse() {
        for t in [
            "{spinner} {prefix}[{bar:30}] {pos}/{len} simulated s ({elapsed})",
            "{spinner} {prefix}{msg} ({elapsed})",
            "{spinner} {msg} ({elapsed})",
        ] {
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }

    #[test]
    fn short_runs_stay_hidden() {
        let mut p = Progress::simulation(true, Some(10.0));
        p.stage("[1/2] performance");
        p.update(5.0);
        assert!(p.bar.as_ref().is_some_and(|b| b.is_hidden()));
        drop(p);
        let mut off = Progress::off();
        off.update(1.0);
    }
}
