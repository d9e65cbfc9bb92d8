//! Every policy's statistics as OpenMetrics series: one family of series
//! per statistic of every local policy family, named from its typed spec
//! (`ecosched_pam_plans_total`, `ecosched_hilo_high_cpus`) and labelled with
//! the group. They are registered when the daemon starts, from the
//! catalogue, so the series a policy exports are known before any group
//! runs it; words (`info` statistics) are not exported.

use crate::labels::{FloatCounter, FloatGauge, GroupLabels};
use ecosched_model::{PolicyStats, StatKind};
use ecosched_policy::{families, PolicyKind};
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One statistic's series.
#[derive(Debug, Clone)]
enum Series {
    /// A count that only grows.
    Counter(Family<GroupLabels, FloatCounter>),
    /// A value that goes up and down.
    Gauge(Family<GroupLabels, FloatGauge>),
}

/// The series of every local policy's statistics, cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct PolicySeries {
    /// (family, statistic) → its series.
    series: Arc<BTreeMap<(&'static str, &'static str), Series>>,
}

impl PolicySeries {
    /// Register a series for every numeric statistic of every local policy
    /// family.
    pub fn register(registry: &mut Registry) -> Self {
        let mut series = BTreeMap::new();
        for f in families().iter().filter(|f| f.kind == PolicyKind::Local) {
            for s in f.stats {
                let Some(name) = s.series(f.name) else {
                    continue;
                };
                let help = format!(
                    "{} (policy family {})",
                    s.help.trim_end_matches('.'),
                    f.name
                );
                let entry = match s.kind {
                    StatKind::Counter => {
                        let family = Family::<GroupLabels, FloatCounter>::default();
                        // The client adds `_total` to a counter's name.
                        let base = name.strip_suffix("_total").unwrap_or(&name);
                        registry.register(base, help, family.clone());
                        Series::Counter(family)
                    }
                    StatKind::Gauge => {
                        let family = Family::<GroupLabels, FloatGauge>::default();
                        registry.register(name, help, family.clone());
                        Series::Gauge(family)
                    }
                    StatKind::Info => continue,
                };
                series.insert((f.name, s.name), entry);
            }
        }
        PolicySeries {
            series: Arc::new(series),
        }
    }

    /// Publish `stats` of a policy of family `family` for `group`. `last`
    /// holds the counters' values already published for this group, so a
    /// counter grows by what the policy added (and restarts from the new
    /// value when a new policy instance reports less).
    pub fn record(
        &self,
        family: &'static str,
        group: &str,
        stats: &PolicyStats,
        last: &mut BTreeMap<String, f64>,
    ) {
        let labels = GroupLabels {
            group: group.to_string(),
        };
        for (name, value) in stats.iter() {
            let Some(v) = value.as_f64().filter(|v| v.is_finite()) else {
                continue;
            };
            match self.series.get(&(family, name)) {
                Some(Series::Gauge(g)) => {
                    g.get_or_create(&labels).set(v);
                }
                Some(Series::Counter(c)) => {
                    let before = last.insert(name.to_string(), v).unwrap_or(0.0);
                    let add = if v >= before { v - before } else { v };
                    // The series exists from the first report, at 0.
                    let counter = c.get_or_create(&labels);
                    if add > 0.0 {
                        counter.inc_by(add);
                    }
                }
                None => {}
            }
        }
    }

    /// Drop every policy series of `group`.
    pub fn forget_group(&self, group: &str) {
        let labels = GroupLabels {
            group: group.to_string(),
        };
        for s in self.series.values() {
            match s {
                Series::Counter(c) => {
                    c.remove(&labels);
                }
                Series::Gauge(g) => {
                    g.remove(&labels);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_model::StatValue;
    use std::borrow::Cow;

    fn stats(plans: u64, cpus: u64) -> PolicyStats {
        PolicyStats {
            values: vec![
                (Cow::Borrowed("goal"), StatValue::Text("performance".into())),
                (Cow::Borrowed("plans"), StatValue::Count(plans)),
                (Cow::Borrowed("cpus_allowed"), StatValue::Count(cpus)),
            ],
        }
    }

    fn encode(r: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, r).unwrap();
        text
    }

    #[test]
    fn every_numeric_statistic_is_a_series_and_counters_add_up() {
        let mut r = Registry::default();
        let s = PolicySeries::register(&mut r);
        let mut last = BTreeMap::new();
        s.record("pam", "db", &stats(2, 4), &mut last);
        s.record("pam", "db", &stats(5, 3), &mut last);
        let text = encode(&r);
        assert!(
            text.contains("ecosched_pam_plans_total{group=\"db\"} 5.0"),
            "{text}"
        );
        assert!(
            text.contains("ecosched_pam_cpus_allowed{group=\"db\"} 3.0"),
            "{text}"
        );
        assert!(!text.contains("ecosched_pam_goal"), "{text}");
        let wca = PolicyStats {
            values: vec![(Cow::Borrowed("moves_stage3_ipc"), StatValue::Count(1))],
        };
        s.record("wca", "db", &wca, &mut BTreeMap::new());
        let text = encode(&r);
        assert!(
            text.contains("# TYPE ecosched_wca_moves_stage3_ipc counter"),
            "{text}"
        );
        s.forget_group("db");
        assert!(!encode(&r).contains("group=\"db\""));
    }
}
