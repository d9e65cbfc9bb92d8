//! `ecosched`: the command line of the energy-aware meta-scheduler.
//!
//! Wiring only: parse the arguments (`cli`), run the command (`commands`,
//! which checks them through `settings` and renders through `output`), write
//! its text to stdout and pick the exit status:
//!
//! - 0: done;
//! - 1: a validation check failed, or the run itself failed;
//! - 2: bad input (arguments, unknown scenario or policy, a malformed
//!   scenario file or `RUST_LOG`), as for clap's own usage errors.
//!
//! `run` passes on its command's status, so its own outcomes use the
//! statuses a shell, `env` and `timeout` use: 127 the command was not
//! found, 126 it cannot be executed, 125 ecosched itself failed; bad input
//! is still 2, and nothing was run.

mod ab;
mod attribution_bench;
mod cli;
mod cluster_output;
mod commands;
mod doctor;
mod glossary;
mod history_view;
mod linux_commands;
mod logging;
mod machine_emit;
mod outcome;
mod output;
mod perfetto;
mod policy_list;
mod power_model;
mod progress;
mod recommend;
mod report;
mod report_commands;
mod run_outputs;
mod run_record;
mod run_summary;
mod service_commands;
mod settings;
mod shell_docs;
mod sim_machine;
mod slurm_commands;
mod suite_commands;
mod table;
mod timeseries;
mod topology_view;
mod trace_file;
mod work_view;

use clap::{CommandFactory, Parser};
use ecosched_engine::EngineError;
use ecosched_policy::PolicyError;
use ecosched_sim::SimError;
use std::io::Write;
use std::process::ExitCode;

/// Exit status for bad input.
const USAGE: u8 = 2;
/// Exit status for a failed run or a failed check.
const FAILURE: u8 = 1;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if cli.verbose > 0 && cli.quiet {
        // clap checks conflicts only where a flag is defined, not where a
        // global one is given (`ecosched -v run -q …`).
        cli::Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--verbose and --quiet exclude each other",
            )
            .exit();
    }
    if let Err(e) = logging::init(cli.verbose, cli.quiet) {
        logging::print_failure(&format!("error: {e}"));
        return ExitCode::from(USAGE);
    }
    table::set_wide(cli.wide);
    match commands::run(&cli) {
        Ok(outcome) => {
            if let Err(e) = print(&outcome.stdout) {
                logging::print_failure(&format!("error: cannot write to stdout: {e}"));
                return ExitCode::from(FAILURE);
            }
            if let Some(code) = outcome.exit_code {
                ExitCode::from(code)
            } else if outcome.failed {
                ExitCode::from(FAILURE)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            logging::print_failure(&render_error(&e));
            let status = match cli.command {
                cli::Command::Run(_) => run_exit_status(&e),
                _ => exit_status(&e),
            };
            ExitCode::from(status)
        }
    }
}

/// Write to stdout; a closed pipe (`ecosched policies | head -1`) is not an
/// error.
fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// `error: …` and one `caused by: …` line per underlying cause.
fn render_error(e: &anyhow::Error) -> String {
    let mut text = format!("error: {e}");
    let mut previous = e.to_string();
    for cause in e.chain().skip(1) {
        let line = cause.to_string();
        // Errors that quote their source (`cannot read F: No such file`)
        // would otherwise print it twice.
        if !previous.contains(&line) {
            text.push_str(&format!("\n  caused by: {line}"));
        }
        previous = line;
    }
    text
}

/// Usage status for anything the user can fix in the input; failure for the rest.
fn exit_status(e: &anyhow::Error) -> u8 {
    let input = e.chain().any(|c| {
        c.is::<outcome::UsageError>()
            || c.is::<PolicyError>()
            || c.is::<SimError>()
            || c.downcast_ref::<EngineError>()
                .is_some_and(EngineError::is_input)
    });
    if input {
        USAGE
    } else {
        FAILURE
    }
}

/// `run`'s status for an error: the shell's 127/126 when the command
/// could not be started, 2 for bad input, 125 for ecosched's own failures.
fn run_exit_status(e: &anyhow::Error) -> u8 {
    if let Some(c) = e
        .chain()
        .find_map(|c| c.downcast_ref::<ecosched_linux::spawn::CommandError>())
    {
        return c.exit_code();
    }
    match exit_status(e) {
        USAGE => USAGE,
        _ => RUN_OWN_FAILURE,
    }
}

/// `run`'s status when ecosched itself fails (as `env` and `timeout` do).
const RUN_OWN_FAILURE: u8 = 125;

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn causes_are_listed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = Err::<(), _>(SimError::Io {
            path: "x.toml".into(),
            source: io,
        })
        .context("cannot load scenario \"x.toml\"")
        .unwrap_err();
        assert_eq!(
            render_error(&e),
            "error: cannot load scenario \"x.toml\"\n  caused by: cannot read x.toml: gone"
        );
    }

    #[test]
    fn input_errors_are_usage_errors() {
        let unknown = PolicyError::UnknownPolicy {
            name: "x".into(),
            valid: vec![],
        };
        assert_eq!(
            exit_status(&anyhow::Error::new(EngineError::from(unknown)).context("run")),
            USAGE
        );
        assert_eq!(
            exit_status(&anyhow::Error::new(outcome::UsageError("bad".into()))),
            USAGE
        );
        assert_eq!(
            exit_status(&anyhow::anyhow!("the simulator broke")),
            FAILURE
        );
        // `run` keeps the command's statuses unambiguous.
        assert_eq!(run_exit_status(&anyhow::anyhow!("cgroup gone")), 125);
        assert_eq!(
            run_exit_status(&anyhow::Error::new(outcome::UsageError("bad".into()))),
            USAGE
        );
        let missing = ecosched_linux::spawn::CommandError::NotFound {
            program: "x".into(),
            searched: true,
        };
        assert_eq!(
            run_exit_status(&anyhow::Error::new(missing).context("starting")),
            127
        );
    }
}
