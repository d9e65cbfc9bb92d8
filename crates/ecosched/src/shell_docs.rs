//! Documentation generated from the command line itself, so that it can
//! never disagree with `--help`: shell completion scripts (`ecosched
//! completions SHELL`) and the man page (`ecosched man`). The .deb runs
//! both at build time (scripts/build-deb) and installs what they print.

use crate::cli::Cli;
use crate::outcome::Outcome;
use anyhow::{Context, Result};
use clap::CommandFactory;

/// The completion script for `shell`, as its completion system loads it.
pub fn completions(shell: clap_complete::Shell) -> Result<Outcome> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ecosched", &mut script);
    let text = String::from_utf8(script).context("the completion script is not UTF-8")?;
    Ok(Outcome::ok(text))
}

/// ecosched(1): the synopsis, every option and one section per
/// subcommand, since operators read one page rather than nineteen.
pub fn man_page() -> Result<Outcome> {
    let cmd = Cli::command();
    let mut page = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    render_subcommands(&cmd, "", &mut page)?;
    man.render_version_section(&mut page)?;
    let text = String::from_utf8(page).context("the man page is not UTF-8")?;
    Ok(Outcome::ok(text))
}

/// A `.SH` section per subcommand, nested ones (`bench sim`) after their
/// parent, with its synopsis, description and options, in the order
/// `--help` lists them.
fn render_subcommands(cmd: &clap::Command, prefix: &str, out: &mut Vec<u8>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{prefix}{}", sub.get_name());
        out.extend_from_slice(format!(".SH \"ECOSCHED {}\"\n", name.to_uppercase()).as_bytes());
        let page = clap_mangen::Man::new(sub.clone().bin_name(format!("ecosched {name}")));
        let mut body = Vec::new();
        page.render_synopsis_section(&mut body)?;
        page.render_description_section(&mut body)?;
        page.render_options_section(&mut body)?;
        // Inside one page, the sub-page's own headings become subsections.
        let text = String::from_utf8(body).context("the man page is not UTF-8")?;
        // Each part repeats the page's preamble, which the top already has.
        for line in text.lines().filter(|l| !l.contains(".ds Aq ")) {
            let line = line
                .strip_prefix(".SH ")
                .map_or_else(|| line.to_string(), |heading| format!(".SS {heading}"));
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        if sub.has_subcommands() {
            render_subcommands(sub, &format!("{name} "), out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_name_every_subcommand() {
        let bash = completions(clap_complete::Shell::Bash).unwrap().stdout;
        for sub in ["run", "daemon", "ctl", "completions", "man"] {
            assert!(bash.contains(sub), "bash completion lacks {sub}");
        }
        let zsh = completions(clap_complete::Shell::Zsh).unwrap().stdout;
        assert!(zsh.starts_with("#compdef ecosched"), "{}", &zsh[..40]);
    }

    #[test]
    fn man_page_has_a_section_per_subcommand() {
        let page = man_page().unwrap().stdout;
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{}", &page[..60]);
        assert!(page.contains(".TH ecosched 1"));
        for section in ["ECOSCHED RUN", "ECOSCHED BENCH SIM", "ECOSCHED CTL"] {
            assert!(page.contains(&format!(".SH \"{section}\"")), "{section}");
        }
        // The sub-pages' headings are demoted: one NAME section only.
        assert_eq!(page.matches(".SH NAME").count(), 1);
    }
}
