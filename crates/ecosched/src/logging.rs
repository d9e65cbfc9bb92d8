//! Diagnostics: every crate reports through `tracing` events with a level;
//! this module picks which levels show and writes each event as one line
//! on stderr.
//!
//! Which levels show: `RUST_LOG` when it is set (an `EnvFilter`, e.g.
//! `debug` or `ecosched_service=debug,warn`), otherwise info and above,
//! `-v` adding debug, `-vv` trace, and `-q` keeping errors only.
//!
//! How a line looks depends on where stderr goes. Under systemd with
//! stderr connected to the journal (`JOURNAL_STREAM` names stderr's device
//! and inode, as systemd.exec(5) documents), each line starts with the
//! syslog priority journald reads, `<3>` for errors to `<7>` for debug,
//! and nothing else: journald adds the time and the program's name. Anywhere
//! else a line reads `ecosched: [warning: |error: ]message key=value…`.

use std::io::Write;
use std::os::fd::AsFd;
use std::sync::Mutex;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{EnvFilter, Layer};

/// The environment variable whose filter, when set, decides what shows.
const FILTER_VARIABLE: &str = "RUST_LOG";

/// How lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// For a person: `ecosched: ` and the level's word for warnings and
    /// worse.
    Terminal,
    /// For journald's stream: the syslog priority `<N>` on every line.
    Journal,
}

/// The style for this process's stderr: [`Style::Journal`] when
/// `JOURNAL_STREAM` names the device and inode stderr is open on.
pub fn style_of_stderr() -> Style {
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else {
        return Style::Terminal;
    };
    let Ok(stat) = nix::sys::stat::fstat(std::io::stderr().as_fd()) else {
        return Style::Terminal;
    };
    match stream.to_str().and_then(parse_journal_stream) {
        Some(ids) if ids == (stat.st_dev, stat.st_ino) => Style::Journal,
        _ => Style::Terminal,
    }
}

/// `DEVICE:INODE`, both decimal, as systemd sets `JOURNAL_STREAM`.
fn parse_journal_stream(value: &str) -> Option<(u64, u64)> {
    let (dev, ino) = value.split_once(':')?;
    Some((dev.parse().ok()?, ino.parse().ok()?))
}

/// The syslog priority journald gives a line of `level`.
pub fn priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// The filter when `RUST_LOG` is not set: info, more with `-v`, errors
/// only with `-q`.
fn default_directive(verbose: u8, quiet: bool) -> &'static str {
    match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    }
}

/// The filter: `rust_log` (the variable's value) when set and not empty,
/// else from the flags. A malformed `RUST_LOG` is an error naming it.
fn filter(rust_log: Option<&str>, verbose: u8, quiet: bool) -> Result<EnvFilter, String> {
    match rust_log.map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => EnvFilter::builder()
            .parse(v)
            .map_err(|e| format!("environment variable {FILTER_VARIABLE}={v:?}: {e}")),
        None => Ok(EnvFilter::new(default_directive(verbose, quiet))),
    }
}

/// Send this process's diagnostics to stderr, filtered by `RUST_LOG` or
/// the flags. Errors: a malformed `RUST_LOG`.
pub fn init(verbose: u8, quiet: bool) -> Result<(), String> {
    let rust_log = std::env::var(FILTER_VARIABLE).ok();
    let filter = filter(rust_log.as_deref(), verbose, quiet)?;
    let lines = Lines::new(style_of_stderr(), Box::new(std::io::stderr()));
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(lines.with_filter(filter)),
    )
    .map_err(|e| format!("cannot set up logging: {e}"))
}

/// Write a failed command's final message (`error: …`) to stderr: as it
/// is on a terminal, at error priority for the journal. It shows whatever
/// the filter, as the command's answer.
pub fn print_failure(text: &str) {
    let style = style_of_stderr();
    let mut out = String::new();
    for line in text.lines() {
        if style == Style::Journal {
            out.push_str(&format!("<{}>", priority(Level::ERROR)));
        }
        out.push_str(line);
        out.push('\n');
    }
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
}

/// The layer writing each event as lines of `style` to `out`.
struct Lines {
    style: Style,
    out: Mutex<Box<dyn Write + Send>>,
}

impl Lines {
    fn new(style: Style, out: Box<dyn Write + Send>) -> Self {
        Lines {
            style,
            out: Mutex::new(out),
        }
    }
}

impl<S: Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let text = render(self.style, *event.metadata().level(), &fields.line());
        // One write per event, so threads' lines do not interleave; a
        // closed stderr loses the line, nothing else.
        if let Ok(mut out) = self.out.lock() {
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
    }
}

/// `message` (possibly several lines) at `level` as `style` writes it,
/// ending in a newline.
fn render(style: Style, level: Level, message: &str) -> String {
    let mut out = String::with_capacity(message.len() + 24);
    for (i, line) in message.lines().enumerate() {
        match style {
            Style::Journal => out.push_str(&format!("<{}>", priority(level))),
            Style::Terminal if i == 0 => {
                out.push_str("ecosched: ");
                out.push_str(match level {
                    Level::ERROR => "error: ",
                    Level::WARN => "warning: ",
                    Level::INFO => "",
                    Level::DEBUG => "debug: ",
                    _ => "trace: ",
                });
            }
            Style::Terminal => out.push_str("  "),
        }
        out.push_str(line);
        out.push('\n');
    }
    if message.is_empty() {
        out.push('\n');
    }
    out
}

/// An event's message and its other fields, in the order given.
#[derive(Default)]
struct Fields {
    message: String,
    others: Vec<(&'static str, String)>,
}

impl Fields {
    /// `message key=value…`, a value with spaces (or none) quoted.
    fn line(&self) -> String {
        let mut line = self.message.clone();
        for (key, value) in &self.others {
            if !line.is_empty() {
                line.push(' ');
            }
            if value.is_empty() || value.contains(char::is_whitespace) || value.contains('"') {
                line.push_str(&format!("{key}={value:?}"));
            } else {
                line.push_str(&format!("{key}={value}"));
            }
        }
        line
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.others.push((field.name(), value.to_string()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.others.push((field.name(), format!("{value:?}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `emit` logs through a `style` layer filtered by `filter`.
    fn logged(style: Style, filter: EnvFilter, emit: impl FnOnce()) -> String {
        let out = Captured::default();
        let layer = Lines::new(style, Box::new(out.clone()));
        let subscriber = tracing_subscriber::registry().with(layer.with_filter(filter));
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    fn every_level() {
        tracing::error!(group = "web", "could not undo the cpuset");
        tracing::warn!("record not kept");
        tracing::info!(path = "/run/a b", "history kept");
        tracing::debug!(pid = 42, "looked");
        tracing::trace!("ticked");
    }

    #[test]
    fn journal_lines_carry_syslog_priorities_and_nothing_else() {
        let text = logged(Style::Journal, EnvFilter::new("trace"), every_level);
        assert_eq!(
            text,
            "<3>could not undo the cpuset group=web\n<4>record not kept\n<6>history kept path=\"/run/a b\"\n<7>looked pid=42\n<7>ticked\n"
        );
    }

    #[test]
    fn terminal_lines_name_warnings_and_errors() {
        let text = logged(Style::Terminal, EnvFilter::new("info"), every_level);
        assert_eq!(
            text,
            "ecosched: error: could not undo the cpuset group=web\necosched: warning: record not kept\necosched: history kept path=\"/run/a b\"\n"
        );
    }

    #[test]
    fn every_line_of_a_long_message_gets_the_priority() {
        assert_eq!(render(Style::Journal, Level::WARN, "a\nb"), "<4>a\n<4>b\n");
        assert_eq!(
            render(Style::Terminal, Level::INFO, "a\nb"),
            "ecosched: a\n  b\n"
        );
    }

    #[test]
    fn flags_set_the_level_unless_rust_log_is_set() {
        let count = |f: EnvFilter| logged(Style::Journal, f, every_level).lines().count();
        assert_eq!(count(filter(None, 0, false).unwrap()), 3);
        assert_eq!(count(filter(None, 1, false).unwrap()), 4);
        assert_eq!(count(filter(None, 2, false).unwrap()), 5);
        assert_eq!(count(filter(None, 0, true).unwrap()), 1);
        assert_eq!(count(filter(Some(""), 0, true).unwrap()), 1);
        // RUST_LOG wins over the flags, either way.
        assert_eq!(count(filter(Some("warn"), 2, false).unwrap()), 2);
        assert_eq!(count(filter(Some("trace"), 0, true).unwrap()), 5);
        // Its per-target directives work: this test's events are the
        // binary's, not the daemon's.
        assert_eq!(
            count(filter(Some("ecosched_service=trace,error"), 0, false).unwrap()),
            1
        );
        let bad = filter(Some("ecosched=loud"), 0, false).unwrap_err();
        assert!(bad.contains("RUST_LOG=\"ecosched=loud\""), "{bad}");
    }

    #[test]
    fn journal_stream_is_device_colon_inode() {
        assert_eq!(parse_journal_stream("8:1234"), Some((8, 1234)));
        assert_eq!(parse_journal_stream("8"), None);
        assert_eq!(parse_journal_stream("x:1"), None);
        assert_eq!(parse_journal_stream("1:"), None);
    }

    #[test]
    fn priorities_are_syslogs() {
        let all = [
            Level::ERROR,
            Level::WARN,
            Level::INFO,
            Level::DEBUG,
            Level::TRACE,
        ];
        assert_eq!(all.map(priority), [3, 4, 6, 7, 7]);
    }
}
