//! `ecosched bench attribution`: how well each method attributes energy
//! to tasks, against the simulator's per-task truth, on mixed
//! compute/memory scenarios (`docs/researchers/attribution.md`).

use crate::cli::BenchAttributionArgs;
use crate::outcome::Outcome;
use crate::output;
use crate::table::{num, Align, Table};
use anyhow::{Context, Result};
use ecosched_engine::attribution_check::{bench_attribution, AttributionBench, BENCH_SCENARIOS};

/// Run the bench and render it.
pub fn run(args: &BenchAttributionArgs) -> Result<Outcome> {
    let names: Vec<&str> = if args.scenario.is_empty() {
        BENCH_SCENARIOS.to_vec()
    } else {
        args.scenario.iter().map(String::as_str).collect()
    };
    let bench = bench_attribution(&names).context("checking energy attribution")?;
    Ok(Outcome::ok(if args.json {
        output::json(&bench)?
    } else {
        render(&bench)
    }))
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn render(b: &AttributionBench) -> String {
    let mut t = Table::new(
        &[
            "scenario",
            "machine",
            "tasks",
            "cpu-share error",
            "activity error",
            "model",
        ],
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for s in &b.scenarios {
        let model = s
            .report
            .attribution
            .as_ref()
            .and_then(|a| a.model.as_ref())
            .map_or_else(
                || "none".to_string(),
                |m| {
                    let weights: Vec<String> = m
                        .coefficients
                        .iter()
                        .map(|k| format!("{} J per {}", num(k.joules_per_unit), k.unit))
                        .collect();
                    format!("idle {} W; {}", num(m.idle_w), weights.join(", "))
                },
            );
        t.row([
            s.scenario.clone(),
            s.machine.clone(),
            s.tasks.to_string(),
            pct(s.cpu_share_mae),
            pct(s.activity_mae),
            model,
        ]);
    }
    format!(
        "Mean absolute error of per-task energy against the simulator's truth (relative, per task), under {}:\n\n{}\nall tasks: CPU-time share {}, activity model {}, ratio {:.2}\n",
        b.policy,
        t.render(),
        pct(b.cpu_share_mae),
        pct(b.activity_mae),
        b.ratio
    )
}
