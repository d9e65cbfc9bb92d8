//! `ecosched policies`: the catalogue as a user reads it — families with
//! their variants, what each needs of a machine, every parameter with its
//! values and default, every statistic with its exported series — as text
//! (at most 100 columns), JSON, or the Markdown policy reference
//! (`docs/policies.md` is this command's output).

use crate::table::block;
use ecosched_model::{CounterKind, Requirements, StatKind};
use ecosched_policy::params::{ParamDefault, ParamSpec};
use ecosched_policy::{families, needs, Family, PolicyKind, Variant};
use serde::Serialize;
use std::fmt::Write as _;

/// One family, for `--json`.
#[derive(Debug, Serialize)]
pub struct FamilyEntry {
    name: &'static str,
    title: &'static str,
    source: &'static str,
    decides: &'static str,
    kind: PolicyKind,
    variants: Vec<VariantEntry>,
    params: Vec<ParamEntry>,
    stats: Vec<StatEntry>,
}

/// One policy of a family.
#[derive(Debug, Serialize)]
struct VariantEntry {
    name: &'static str,
    summary: &'static str,
    /// Defaults that differ from the family's.
    defaults: Vec<(&'static str, &'static str)>,
    /// What it needs of a machine, in words.
    needs: Vec<String>,
}

/// One parameter.
#[derive(Debug, Serialize)]
struct ParamEntry {
    key: &'static str,
    values: String,
    default: Option<&'static str>,
    required: bool,
    /// What happens without a value, for a parameter with no default.
    unset: Option<&'static str>,
    help: &'static str,
    source: &'static str,
    /// The variants that take it, when not all do.
    only: Option<Vec<&'static str>>,
}

/// One statistic.
#[derive(Debug, Serialize)]
struct StatEntry {
    name: &'static str,
    kind: StatKind,
    help: &'static str,
    /// The exporter's series, for counters and gauges.
    series: Option<String>,
}

/// What a policy needs, in words: empty when it needs nothing.
fn needs_words(variant: &Variant) -> Vec<String> {
    let Ok(n) = needs(variant.name) else {
        return vec!["(cannot tell: it does not build with its defaults)".into()];
    };
    let mut out = Vec::new();
    match n.kind {
        PolicyKind::Local => {}
        PolicyKind::Cluster => out.push("a cluster scenario (simulator only)".into()),
        PolicyKind::Search => out.push("the simulator (`ecosched compare` only)".into()),
    }
    if let Some(r) = &n.requirements {
        out.extend(requirement_words(r));
    }
    out
}

/// A counter as trace files and `--json` name it (`llc_misses`).
fn counter_name(c: &CounterKind) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| format!("{c:?}"))
}

fn requirement_words(r: &Requirements) -> Vec<String> {
    let mut out = Vec::new();
    if !r.counters.is_empty() {
        let names: Vec<String> = r.counters.iter().map(counter_name).collect();
        out.push(format!("counters {}", names.join(", ")));
    }
    if !r.wanted.is_empty() {
        let names: Vec<String> = r.wanted.iter().map(counter_name).collect();
        out.push(format!(
            "also reads {} where the machine has them",
            names.join(", ")
        ));
    }
    if r.frequency {
        out.push("cpufreq".into());
    } else if r.frequency_wanted {
        out.push("cpufreq where the machine has it".into());
    }
    if r.affinity {
        out.push("affinity".into());
    }
    if r.gang {
        out.push("cgroup freezer".into());
    }
    if r.power {
        out.push("a power meter".into());
    }
    out
}

fn params_of(f: &Family) -> impl Iterator<Item = &'static ParamSpec> + '_ {
    f.params.iter().flat_map(|g| g.iter())
}

/// The variants that take `key`, when not every variant does.
fn only(f: &Family, key: &str) -> Option<Vec<&'static str>> {
    let taking: Vec<&'static str> = f
        .variants
        .iter()
        .filter(|v| v.takes(f, key))
        .map(|v| v.name)
        .collect();
    (taking.len() < f.variants.len()).then_some(taking)
}

/// Every family, for `--json`.
pub fn entries(filter: Option<&Family>) -> Vec<FamilyEntry> {
    families()
        .iter()
        .filter(|f| filter.is_none_or(|g| std::ptr::eq(*f, g)))
        .map(|f| FamilyEntry {
            name: f.name,
            title: f.title,
            source: f.source,
            decides: f.decides,
            kind: f.kind,
            variants: f
                .variants
                .iter()
                .map(|v| VariantEntry {
                    name: v.name,
                    summary: v.summary,
                    defaults: v.defaults.to_vec(),
                    needs: needs_words(v),
                })
                .collect(),
            params: params_of(f)
                .map(|s| ParamEntry {
                    key: s.key,
                    values: s.kind.range_words(),
                    default: match s.default {
                        ParamDefault::Value(v) => Some(v),
                        _ => None,
                    },
                    required: s.default == ParamDefault::Required,
                    unset: match s.default {
                        ParamDefault::Unset(w) if !w.is_empty() => Some(w),
                        _ => None,
                    },
                    help: s.help,
                    source: s.source,
                    only: only(f, s.key),
                })
                .collect(),
            stats: f
                .stats
                .iter()
                .map(|s| StatEntry {
                    name: s.name,
                    kind: s.kind,
                    help: s.help,
                    series: s.series(f.name),
                })
                .collect(),
        })
        .collect()
}

/// The family of the policy (or family) called `name`.
pub fn family_named(name: &str) -> Option<&'static Family> {
    families()
        .iter()
        .find(|f| f.name == name || f.variants.iter().any(|v| v.name == name))
}

fn default_words(s: &ParamSpec) -> String {
    match s.default {
        ParamDefault::Value(v) => v.to_string(),
        ParamDefault::Required => "required".into(),
        ParamDefault::Unset(_) => "unset".into(),
    }
}

fn param_help(f: &Family, s: &ParamSpec) -> String {
    let mut help = s.help.to_string();
    if let ParamDefault::Unset(w) = s.default {
        if !w.is_empty() {
            let _ = write!(help, " Without it: {w}.");
        }
    }
    if !s.source.is_empty() {
        let _ = write!(help, " ({})", s.source);
    }
    if let Some(taking) = only(f, s.key) {
        let _ = write!(help, " [{} only]", taking.join(", "));
    }
    help
}

/// The text listing: every family, or one.
pub fn text(filter: Option<&Family>) -> String {
    let mut out = String::new();
    if filter.is_none() {
        block(
            &mut out,
            "",
            0,
            "Policies by family. `ecosched policies NAME` shows one family; `--markdown` \
             prints the policy reference, `--json` the same as data. Pass parameters as \
             --param key=value.",
        );
    }
    for f in families()
        .iter()
        .filter(|f| filter.is_none_or(|g| std::ptr::eq(*f, g)))
    {
        out.push('\n');
        let head = format!("{} — {}", f.name, f.title);
        let _ = writeln!(out, "{head:<88}[{}]", f.kind.name());
        block(&mut out, "  ", 2, f.source);
        let name_w = f.variants.iter().map(|v| v.name.len()).max().unwrap_or(0) + 2;
        for v in f.variants {
            let mut summary = v.summary.to_string();
            if !v.defaults.is_empty() {
                let d: Vec<String> = v.defaults.iter().map(|(k, x)| format!("{k}={x}")).collect();
                let _ = write!(summary, " ({})", d.join(", "));
            }
            block(
                &mut out,
                &format!("  {:<name_w$}", v.name),
                2 + name_w,
                &summary,
            );
        }
        let all: Vec<(String, Vec<String>)> = f
            .variants
            .iter()
            .map(|v| (v.name.to_string(), needs_words(v)))
            .collect();
        if all.iter().all(|(_, n)| *n == all[0].1) {
            let words = if all[0].1.is_empty() {
                "nothing".to_string()
            } else {
                all[0].1.join("; ")
            };
            block(&mut out, "  needs: ", 9, &words);
        } else {
            for (name, n) in &all {
                let words = if n.is_empty() {
                    "nothing".into()
                } else {
                    n.join("; ")
                };
                block(
                    &mut out,
                    &format!("  needs ({name}): "),
                    4 + name_w + 7,
                    &words,
                );
            }
        }
        let specs: Vec<&ParamSpec> = params_of(f).collect();
        if !specs.is_empty() {
            let key_w = specs.iter().map(|s| s.key.len()).max().unwrap_or(0);
            let values_w = specs
                .iter()
                .map(|s| s.kind.range_words().chars().count())
                .max()
                .unwrap_or(0)
                .max("values".len());
            let _ = writeln!(
                out,
                "  {:<key_w$}    {:<values_w$}  default",
                "parameter", "values"
            );
            for s in &specs {
                let values = s.kind.range_words();
                let pad = values_w - values.chars().count();
                let _ = writeln!(
                    out,
                    "    {:<key_w$}  {values}{:pad$}  {}",
                    s.key,
                    "",
                    default_words(s)
                );
                block(&mut out, "", 6, &param_help(f, s));
            }
        }
        if !f.stats.is_empty() {
            let names: Vec<&str> = f.stats.iter().map(|s| s.name).collect();
            block(&mut out, "  statistics: ", 14, &names.join(", "));
        }
    }
    out
}

/// A Markdown table cell: no line breaks, no bare pipes.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The policy reference in Markdown.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Policy reference\n\n\
         Generated by `ecosched policies --markdown` from the policies' own \
         definitions: parameters, defaults, ranges and statistics come from \
         the code and cannot drift from it.\n\n\
         A policy is *local* (decides from one machine's snapshots, on Linux \
         and in the simulator alike), *cluster* (balances across the nodes \
         of a simulated cluster) or *search* (simulates static \
         configurations; `ecosched compare` only). \"Needs\" lists what a \
         policy refuses to start without, with its default parameters. Pass \
         parameters as `--param key=value` (or `policy:key=value` in \
         `compare`), or in a daemon group's `params` table.\n\n\
         Every counter and gauge a policy keeps is exported by the daemon as \
         the series named in its table, labelled with the group.\n\n",
    );
    for f in families() {
        let _ = writeln!(out, "## {}: {}\n", f.name, f.title);
        let _ = writeln!(out, "*{}* · source: {}\n", f.kind.name(), f.source);
        let _ = writeln!(out, "{}\n", f.decides);
        let _ = writeln!(out, "| policy | what it is | defaults of its own | needs |");
        let _ = writeln!(out, "|---|---|---|---|");
        for v in f.variants {
            let d: Vec<String> = v
                .defaults
                .iter()
                .map(|(k, x)| format!("`{k}={x}`"))
                .collect();
            let n = needs_words(v);
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                v.name,
                cell(v.summary),
                if d.is_empty() {
                    "—".into()
                } else {
                    d.join(", ")
                },
                if n.is_empty() {
                    "nothing".into()
                } else {
                    cell(&n.join("; "))
                },
            );
        }
        out.push('\n');
        let specs: Vec<&ParamSpec> = params_of(f).collect();
        if !specs.is_empty() {
            let _ = writeln!(out, "| parameter | values | default | meaning |");
            let _ = writeln!(out, "|---|---|---|---|");
            for s in specs {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    s.key,
                    cell(&s.kind.range_words()),
                    cell(&default_words(s)),
                    cell(&param_help(f, s)),
                );
            }
            out.push('\n');
        }
        if !f.stats.is_empty() {
            let _ = writeln!(out, "| statistic | kind | meaning | series |");
            let _ = writeln!(out, "|---|---|---|---|");
            for s in f.stats {
                let kind = match s.kind {
                    StatKind::Counter => "counter",
                    StatKind::Gauge => "gauge",
                    StatKind::Info => "words",
                };
                let series = s.series(f.name).map_or("—".into(), |n| format!("`{n}`"));
                let _ = writeln!(
                    out,
                    "| `{}` | {kind} | {} | {series} |",
                    s.name,
                    cell(s.help)
                );
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_fits_100_columns_and_names_every_policy() {
        let t = text(None);
        for line in t.lines() {
            assert!(
                line.chars().count() <= crate::table::WIDTH,
                "{} columns: {line}",
                line.len()
            );
        }
        for v in ecosched_policy::variants().map(|(_, v)| v.name) {
            assert!(t.contains(v), "{v} is missing");
        }
    }

    #[test]
    fn one_family_lists_only_itself() {
        let hilo = family_named("hilo-nospare");
        assert_eq!(hilo.map(|f| f.name), Some("hilo"));
        let t = text(hilo);
        assert!(t.contains("hold_ms") && !t.contains("patel1"), "{t}");
        assert!(t.contains("(spare=0)"), "{t}");
    }

    #[test]
    fn series_names_follow_the_kind() {
        let f = family_named("pam").unwrap();
        let plans = f.stats.iter().find(|s| s.name == "plans").unwrap();
        assert_eq!(
            plans.series("av-xnode").as_deref(),
            Some("ecosched_av_xnode_plans_total")
        );
        let goal = f.stats.iter().find(|s| s.name == "goal").unwrap();
        assert_eq!(goal.series("pam"), None);
    }

    #[test]
    fn the_committed_reference_is_this_output() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/policies.md");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == markdown(),
            "docs/policies.md is stale: regenerate it with \
             `cargo run -p ecosched -- policies --markdown > docs/policies.md`"
        );
    }
}
