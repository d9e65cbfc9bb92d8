//! A policy's statistics: what it has done so far (plans made, tasks moved,
//! searches run …), declared once per policy as a typed struct with
//! [`policy_stats!`](crate::policy_stats), in the manner of `scx_stats`.
//!
//! Each statistic is described once (name, kind, help) in a `'static`
//! table, so consumers that never see the policy's type still know what a
//! figure means:
//!
//! ```text
//! policy_stats! { struct WcaStats { ... } }   ── WcaStats::SPEC  (names, kinds, help)
//!         │                                            │
//!   Policy::stats() ── PolicyStats (values) ──▶ trace step, --json, report
//!                                              └──▶ exporter: one series per
//!                                                   counter/gauge, from SPEC
//! ```
//!
//! A [`PolicyStats`] carries values by name so that a trace written by one
//! build can be read by another; the exporter registers its series from
//! the specs before any run starts.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// How a statistic behaves over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatKind {
    /// Only grows (plans made, tasks moved): an OpenMetrics counter.
    Counter,
    /// Goes up and down (tasks placed now, a share): an OpenMetrics gauge.
    Gauge,
    /// Words, not a number (the cpusets in use, the last decision): shown
    /// in reports and `--json`, not exported as a series.
    Info,
}

/// The description of one statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatSpec {
    /// Its name, `snake_case`; the exporter's series is
    /// `ecosched_<family>_<name>` (with `_total` for counters).
    pub name: &'static str,
    /// What it counts or measures.
    pub help: &'static str,
    /// Counter, gauge or info.
    pub kind: StatKind,
}

impl StatSpec {
    /// The exporter's series for this statistic of policy family `family`
    /// (`ecosched_pam_plans_total`); `None` for words, which are not
    /// exported.
    pub fn series(&self, family: &str) -> Option<String> {
        let base = format!("ecosched_{}_{}", family.replace('-', "_"), self.name);
        match self.kind {
            StatKind::Counter => Some(format!("{base}_total")),
            StatKind::Gauge => Some(base),
            StatKind::Info => None,
        }
    }
}

/// One statistic's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatValue {
    /// A count.
    Count(u64),
    /// A real value.
    Real(f64),
    /// Words.
    Text(String),
}

impl StatValue {
    /// The value as a number, for an exported series; `None` for words.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            StatValue::Count(n) => Some(*n as f64),
            StatValue::Real(x) => Some(*x),
            StatValue::Text(_) => None,
        }
    }
}

impl std::fmt::Display for StatValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatValue::Count(n) => write!(f, "{n}"),
            StatValue::Real(x) => write!(f, "{x:.4}"),
            StatValue::Text(s) => f.write_str(s),
        }
    }
}

/// A field type a statistic can have.
pub trait StatField {
    /// Its value.
    fn stat_value(&self) -> StatValue;
}

impl StatField for u64 {
    fn stat_value(&self) -> StatValue {
        StatValue::Count(*self)
    }
}

impl StatField for usize {
    fn stat_value(&self) -> StatValue {
        StatValue::Count(*self as u64)
    }
}

impl StatField for u32 {
    fn stat_value(&self) -> StatValue {
        StatValue::Count(u64::from(*self))
    }
}

impl StatField for f64 {
    fn stat_value(&self) -> StatValue {
        StatValue::Real(*self)
    }
}

impl StatField for String {
    fn stat_value(&self) -> StatValue {
        StatValue::Text(self.clone())
    }
}

/// A policy's statistics at one moment, in the order of its spec. Empty for
/// a policy that keeps none (the governors). Serialised as one JSON object,
/// names in spec order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyStats {
    /// Name and value of each statistic.
    pub values: Vec<(Cow<'static, str>, StatValue)>,
}

impl PolicyStats {
    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of the statistic called `name`.
    pub fn get(&self, name: &str) -> Option<&StatValue> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Every name and value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &StatValue)> {
        self.values.iter().map(|(n, v)| (n.as_ref(), v))
    }
}

impl Serialize for PolicyStats {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.values.len()))?;
        for (name, value) in &self.values {
            map.serialize_entry(name.as_ref(), value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for PolicyStats {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> serde::de::Visitor<'de> for InOrder {
            type Value = PolicyStats;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of statistic names to values")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PolicyStats, A::Error> {
                let mut values = Vec::new();
                while let Some((name, value)) = map.next_entry::<String, StatValue>()? {
                    values.push((Cow::Owned(name), value));
                }
                Ok(PolicyStats { values })
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

/// A policy's typed statistics struct.
pub trait TypedStats {
    /// Every statistic's description, in field order.
    const SPEC: &'static [StatSpec];
    /// The values now.
    fn to_stats(&self) -> PolicyStats;
}

/// Declare a policy's statistics struct: each field's doc comment is its
/// help, and `counter`, `gauge` or `info` its kind.
///
/// ```
/// ecosched_model::policy_stats! {
///     /// What the example policy did.
///     pub struct ExampleStats {
///         /// Plans that changed something.
///         plans: u64 => counter,
///         /// Tasks placed now.
///         placed: usize => gauge,
///     }
/// }
/// use ecosched_model::stats::TypedStats;
/// let s = ExampleStats { plans: 3, placed: 1 };
/// assert_eq!(ExampleStats::SPEC[0].name, "plans");
/// assert_eq!(s.to_stats().get("placed").unwrap().as_f64(), Some(1.0));
/// ```
#[macro_export]
macro_rules! policy_stats {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                $field:ident : $ty:ty => $kind:ident
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        $vis struct $name {
            $(
                $(#[doc = $doc])+
                pub $field: $ty,
            )*
        }

        impl $crate::stats::TypedStats for $name {
            const SPEC: &'static [$crate::stats::StatSpec] = &[
                $($crate::stats::StatSpec {
                    name: stringify!($field),
                    help: $crate::stats::trim_doc(concat!($($doc),+)),
                    kind: $crate::policy_stats!(@kind $kind),
                },)*
            ];

            fn to_stats(&self) -> $crate::stats::PolicyStats {
                $crate::stats::PolicyStats {
                    values: vec![$((
                        ::std::borrow::Cow::Borrowed(stringify!($field)),
                        $crate::stats::StatField::stat_value(&self.$field),
                    ),)*],
                }
            }
        }
    };
    (@kind counter) => { $crate::stats::StatKind::Counter };
    (@kind gauge) => { $crate::stats::StatKind::Gauge };
    (@kind info) => { $crate::stats::StatKind::Info };
}

/// A doc comment's text without the space rustdoc keeps after `///`.
pub const fn trim_doc(doc: &'static str) -> &'static str {
    match doc.as_bytes() {
        [b' ', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(s) => s,
            Err(_) => doc,
        },
        _ => doc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::policy_stats! {
        /// Test statistics.
        struct Example {
            /// Plans made.
            plans: u64 => counter,
            /// The share of time at a low frequency,
            /// over the whole run.
            low_share: f64 => gauge,
            /// The cpusets in use.
            sets: String => info,
        }
    }

    #[test]
    fn spec_and_values_follow_the_declaration() {
        let s = Example {
            plans: 2,
            low_share: 0.25,
            sets: "4@800".into(),
        };
        let names: Vec<&str> = Example::SPEC.iter().map(|s| s.name).collect();
        assert_eq!(names, ["plans", "low_share", "sets"]);
        assert_eq!(Example::SPEC[0].help, "Plans made.");
        assert_eq!(
            Example::SPEC[1].help,
            "The share of time at a low frequency, over the whole run."
        );
        assert_eq!(Example::SPEC[2].kind, StatKind::Info);
        let v = s.to_stats();
        assert_eq!(v.get("plans"), Some(&StatValue::Count(2)));
        assert_eq!(v.get("low_share").and_then(StatValue::as_f64), Some(0.25));
        assert_eq!(v.get("sets").and_then(StatValue::as_f64), None);
    }

    #[test]
    fn stats_round_trip_through_json_by_name() {
        let s = Example {
            plans: 7,
            low_share: 0.5,
            sets: "a".into(),
        }
        .to_stats();
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(text, r#"{"plans":7,"low_share":0.5,"sets":"a"}"#);
        let back: PolicyStats = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
    }
}
