//! Policy parameters: what a user writes (`--param key=value`, a daemon
//! group's `params` table) and what a policy reads (one typed struct per
//! policy family, declared with [`typed_params!`](crate::typed_params)).
//!
//! ```text
//! --param hold_ms=300 ─▶ Params (strings) ─▶ resolve against HiloParams::SPEC
//!                                              (unknown key? required? range?
//!                                               default of the variant?)
//!                                          ─▶ Resolved ─▶ HiloParams { hold_ms: 300.0, … }
//! ```
//!
//! The spec is the one source of truth: `ecosched policies`, the policy
//! reference in the docs, the error messages and the defaults all come
//! from it, so a default is written exactly once.

use crate::PolicyError;
use std::collections::BTreeMap;

/// Parameters given to a policy, as text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    values: BTreeMap<String, String>,
}

impl Params {
    /// Parse `key=value` strings.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = &'a str>) -> Result<Self, PolicyError> {
        let mut values = BTreeMap::new();
        for pair in pairs {
            let (k, v) = pair.split_once('=').ok_or_else(|| PolicyError::BadParam {
                key: pair.to_string(),
                value: String::new(),
                reason: "expected key=value".into(),
            })?;
            values.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(Params { values })
    }

    /// Set one value.
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.values.insert(key.to_string(), value.to_string());
        self
    }

    /// The text given for `key`, if any.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Every key and value, for reports.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Split off the keys `spec` declares: `(those, the rest)`. A policy
    /// that wraps another (the cross-node coordinator around `av`) takes
    /// its own keys and passes the rest on.
    pub fn split(&self, spec: &[ParamSpec]) -> (Params, Params) {
        let (mine, rest): (BTreeMap<_, _>, BTreeMap<_, _>) = self
            .values
            .clone()
            .into_iter()
            .partition(|(k, _)| spec.iter().any(|s| s.key == k));
        (Params { values: mine }, Params { values: rest })
    }

    /// Check every key and value against `spec` (keys in `without` are
    /// refused as unknown), fill in defaults (a variant's `overrides`
    /// first, then the spec's) and return the values a typed struct is
    /// built from.
    pub fn resolve(
        &self,
        policy: &str,
        spec: &'static [ParamSpec],
        overrides: &[(&str, &str)],
        without: &[&str],
    ) -> Result<Resolved, PolicyError> {
        let accepted = |key: &str| spec.iter().any(|s| s.key == key) && !without.contains(&key);
        if let Some(key) = self.values.keys().find(|k| !accepted(k)) {
            return Err(PolicyError::UnknownParam {
                policy: policy.to_string(),
                key: key.clone(),
                valid: spec
                    .iter()
                    .map(|s| s.key)
                    .filter(|k| accepted(k))
                    .map(String::from)
                    .collect(),
            });
        }
        let mut values = Vec::with_capacity(spec.len());
        for s in spec {
            let given = self.values.get(s.key).map(String::as_str);
            let default = overrides
                .iter()
                .find(|(k, _)| *k == s.key)
                .map(|(_, v)| *v)
                .or(match s.default {
                    ParamDefault::Value(v) => Some(v),
                    ParamDefault::Required | ParamDefault::Unset(_) => None,
                });
            let value = match (given, default) {
                (Some(v), _) => {
                    s.kind.check(v).map_err(|reason| PolicyError::BadParam {
                        key: s.key.to_string(),
                        value: v.to_string(),
                        reason,
                    })?;
                    Some(v.to_string())
                }
                (None, Some(d)) => Some(d.to_string()),
                (None, None)
                    if s.default == ParamDefault::Required && !without.contains(&s.key) =>
                {
                    return Err(PolicyError::MissingParam {
                        policy: policy.to_string(),
                        key: s.key.to_string(),
                        help: s.help.to_string(),
                    })
                }
                (None, None) => None,
            };
            values.push((s.key, value));
        }
        Ok(Resolved { values })
    }
}

/// Values checked against a spec, defaults filled in: what a typed
/// parameter struct is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    values: Vec<(&'static str, Option<String>)>,
}

impl Resolved {
    /// The value of `key` as the field's type.
    pub fn take<T: ParamType>(&self, key: &str) -> Result<T, PolicyError> {
        let text = self
            .values
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_deref());
        T::from_text(text).map_err(|reason| PolicyError::BadParam {
            key: key.to_string(),
            value: text.unwrap_or_default().to_string(),
            reason,
        })
    }
}

/// A field type of a typed parameter struct.
pub trait ParamType: Sized {
    /// From the resolved text (`None`: not given and no default).
    fn from_text(text: Option<&str>) -> Result<Self, String>;
}

macro_rules! param_types {
    ($($t:ty),*) => {$(
        impl ParamType for $t {
            fn from_text(text: Option<&str>) -> Result<Self, String> {
                let text = text.ok_or_else(|| "no value and no default".to_string())?;
                text.parse::<$t>().map_err(|e| e.to_string())
            }
        }
        impl ParamType for Option<$t> {
            fn from_text(text: Option<&str>) -> Result<Self, String> {
                text.map(|t| t.parse::<$t>().map_err(|e| e.to_string())).transpose()
            }
        }
    )*};
}

param_types!(bool, u32, u64, usize, i32, f64, String);

/// One parameter a policy accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    /// Key, with its unit in the name (`hold_ms`, `freq_mhz`).
    pub key: &'static str,
    /// What it means.
    pub help: &'static str,
    /// The values it takes.
    pub kind: ParamKind,
    /// What it is when not given.
    pub default: ParamDefault,
    /// Where it comes from (a paper's section or equation), if anywhere.
    pub source: &'static str,
}

/// The values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamKind {
    /// `true` or `false`.
    Flag,
    /// A whole number in `min..=max`.
    Int {
        /// Smallest value.
        min: i128,
        /// Largest value.
        max: i128,
    },
    /// A finite real number between `min` and `max`, each end open or
    /// closed.
    Real {
        /// Lower end (`-inf`: none).
        min: f64,
        /// Whether `min` itself is refused.
        min_open: bool,
        /// Upper end (`inf`: none).
        max: f64,
        /// Whether `max` itself is refused.
        max_open: bool,
    },
    /// One of a few words.
    Choice(&'static [&'static str]),
    /// Text the policy parses itself; the syntax, for help.
    Text(&'static str),
}

/// What a parameter is when it is not given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamDefault {
    /// This value.
    Value(&'static str),
    /// It must be given.
    Required,
    /// No value; the words say what happens then.
    Unset(&'static str),
}

impl ParamKind {
    /// Whether `text` is a valid value; why not.
    pub fn check(&self, text: &str) -> Result<(), String> {
        match *self {
            ParamKind::Flag => text
                .parse::<bool>()
                .map(|_| ())
                .map_err(|_| "expected true or false".into()),
            ParamKind::Int { min, max } => {
                let v: i128 = text
                    .parse()
                    .map_err(|_| "expected a whole number".to_string())?;
                if v < min || v > max {
                    return Err(format!("must be {}", self.limits()));
                }
                Ok(())
            }
            ParamKind::Real {
                min,
                min_open,
                max,
                max_open,
            } => {
                let v: f64 = text.parse().map_err(|_| "expected a number".to_string())?;
                let low_ok = if min_open { v > min } else { v >= min };
                let high_ok = if max_open { v < max } else { v <= max };
                if !v.is_finite() || !low_ok || !high_ok {
                    return Err(format!("must be {}", self.limits()));
                }
                Ok(())
            }
            ParamKind::Choice(words) => {
                if words.contains(&text) {
                    Ok(())
                } else {
                    Err(format!("expected {}", or_list(words)))
                }
            }
            ParamKind::Text(_) => Ok(()),
        }
    }

    /// The accepted values, compactly, for listings (`≥ 0`, `in (0, 1]`,
    /// `bus|cache|core`).
    pub fn range_words(&self) -> String {
        match *self {
            ParamKind::Choice(words) => words.join("|"),
            _ => self.limits(),
        }
    }

    /// The accepted values in words, for messages.
    fn limits(&self) -> String {
        match *self {
            ParamKind::Flag => "true or false".into(),
            ParamKind::Int { min, max } => match (min == i128::MIN, max == i128::MAX) {
                (true, true) => "a whole number".into(),
                (false, true) => format!("≥ {min}"),
                (true, false) => format!("≤ {max}"),
                (false, false) => format!("{min}–{max}"),
            },
            ParamKind::Real {
                min,
                min_open,
                max,
                max_open,
            } => match (min.is_finite(), max.is_finite()) {
                (false, false) => "a finite number".into(),
                (true, false) if min == 0.0 && min_open => "positive".into(),
                (true, false) => format!("{} {min}", if min_open { ">" } else { "≥" }),
                (false, true) => format!("{} {max}", if max_open { "<" } else { "≤" }),
                (true, true) => format!(
                    "in {}{min}, {max}{}",
                    if min_open { "(" } else { "[" },
                    if max_open { ")" } else { "]" }
                ),
            },
            ParamKind::Choice(words) => or_list(words),
            ParamKind::Text(syntax) => syntax.into(),
        }
    }
}
fn or_list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).into(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The building blocks of a spec in [`typed_params!`](crate::typed_params): a kind, then its
/// default and source (`real().above(0.0).default("0.5").source("eq. 1")`).
pub mod build {
    use super::{ParamDefault, ParamKind, ParamSpec};

    const fn spec(kind: ParamKind) -> ParamSpec {
        ParamSpec {
            key: "",
            help: "",
            kind,
            default: ParamDefault::Unset(""),
            source: "",
        }
    }

    /// `true` or `false`.
    pub const fn flag() -> ParamSpec {
        spec(ParamKind::Flag)
    }

    /// A whole number in `min..=max`.
    pub const fn int(min: i128, max: i128) -> ParamSpec {
        spec(ParamKind::Int { min, max })
    }

    /// A whole number from `min` up.
    pub const fn int_from(min: i128) -> ParamSpec {
        int(min, i128::MAX)
    }

    /// Any finite real number (narrowed by the methods below).
    pub const fn real() -> ParamSpec {
        spec(ParamKind::Real {
            min: f64::NEG_INFINITY,
            min_open: false,
            max: f64::INFINITY,
            max_open: false,
        })
    }

    /// One of `words`.
    pub const fn choice(words: &'static [&'static str]) -> ParamSpec {
        spec(ParamKind::Choice(words))
    }

    /// Text in the given syntax, parsed by the policy.
    pub const fn text(syntax: &'static str) -> ParamSpec {
        spec(ParamKind::Text(syntax))
    }

    impl ParamSpec {
        const fn low(self, min: f64, open: bool) -> Self {
            match self.kind {
                ParamKind::Real { max, max_open, .. } => ParamSpec {
                    kind: ParamKind::Real {
                        min,
                        min_open: open,
                        max,
                        max_open,
                    },
                    ..self
                },
                _ => self,
            }
        }

        const fn high(self, max: f64, open: bool) -> Self {
            match self.kind {
                ParamKind::Real { min, min_open, .. } => ParamSpec {
                    kind: ParamKind::Real {
                        min,
                        min_open,
                        max,
                        max_open: open,
                    },
                    ..self
                },
                _ => self,
            }
        }

        /// A real number ≥ `min`.
        pub const fn at_least(self, min: f64) -> Self {
            self.low(min, false)
        }

        /// A real number > `min`.
        pub const fn above(self, min: f64) -> Self {
            self.low(min, true)
        }

        /// A real number ≤ `max`.
        pub const fn at_most(self, max: f64) -> Self {
            self.high(max, false)
        }

        /// A real number < `max`.
        pub const fn below(self, max: f64) -> Self {
            self.high(max, true)
        }

        /// Its default value, as a user would write it.
        pub const fn default(self, value: &'static str) -> Self {
            ParamSpec {
                default: ParamDefault::Value(value),
                ..self
            }
        }

        /// It must be given.
        pub const fn required(self) -> Self {
            ParamSpec {
                default: ParamDefault::Required,
                ..self
            }
        }

        /// Without a value, what happens instead.
        pub const fn unset(self, meaning: &'static str) -> Self {
            ParamSpec {
                default: ParamDefault::Unset(meaning),
                ..self
            }
        }

        /// Where the parameter comes from.
        pub const fn source(self, source: &'static str) -> Self {
            ParamSpec { source, ..self }
        }
    }
}

/// The help of `key` in `spec` (empty if there is no such key).
pub fn help_of(spec: &[ParamSpec], key: &str) -> &'static str {
    spec.iter().find(|s| s.key == key).map_or("", |s| s.help)
}

/// A policy family's typed parameter struct.
pub trait TypedParams: Sized {
    /// Every parameter, in field order.
    const SPEC: &'static [ParamSpec];
    /// Built from resolved values.
    fn from_resolved(values: &Resolved) -> Result<Self, PolicyError>;
}

/// Declare a policy family's parameters as a typed struct: each field's
/// doc comment is its help, and an expression of [`build`] its kind,
/// default and source.
///
/// ```
/// use ecosched_policy::params::{Params, TypedParams};
/// ecosched_policy::typed_params! {
///     /// Parameters of an example policy.
///     pub struct ExampleParams {
///         /// How long a demand is held, ms.
///         hold_ms: f64 = real().at_least(0.0).default("200"),
///         /// A CPU list.
///         cpus: Option<String> = text("CPU list").unset("every CPU"),
///     }
/// }
/// let p = Params::default().with("hold_ms", 50);
/// let r = p.resolve("example", ExampleParams::SPEC, &[], &[]).unwrap();
/// let typed = ExampleParams::from_resolved(&r).unwrap();
/// assert_eq!(typed.hold_ms, 50.0);
/// assert_eq!(typed.cpus, None);
/// assert!(Params::default().with("hold_ms", -1)
///     .resolve("example", ExampleParams::SPEC, &[], &[]).is_err());
/// ```
#[macro_export]
macro_rules! typed_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])+
                $field:ident : $ty:ty = $spec:expr
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $(
                $(#[doc = $doc])+
                pub $field: $ty,
            )*
        }

        impl $crate::params::TypedParams for $name {
            const SPEC: &'static [$crate::params::ParamSpec] = &[
                $($crate::params::ParamSpec {
                    key: stringify!($field),
                    help: $crate::params::trim_doc(concat!($($doc),+)),
                    ..{
                        #[allow(unused_imports)]
                        use $crate::params::build::*;
                        $spec
                    }
                },)*
            ];

            #[allow(unused_variables)]
            fn from_resolved(
                values: &$crate::params::Resolved,
            ) -> Result<Self, $crate::PolicyError> {
                Ok($name {
                    $($field: values.take(stringify!($field))?,)*
                })
            }
        }
    };
}

pub use ecosched_model::stats::trim_doc;

#[cfg(test)]
mod tests {
    use super::*;

    crate::typed_params! {
        /// Test parameters.
        struct Example {
            /// Frequency, MHz.
            freq_mhz: u64 = int_from(1).required(),
            /// A share.
            share: f64 = real().above(0.0).at_most(1.0).default("0.5"),
            /// A word.
            mode: String = choice(&["bus", "cache", "core"]).default("bus"),
            /// A switch.
            on: bool = flag().default("false"),
            /// Optional.
            cap: Option<f64> = real().above(0.0).unset("no cap"),
        }
    }

    fn resolve(pairs: &[&str]) -> Result<Example, PolicyError> {
        let p = Params::parse(pairs.iter().copied())?;
        let r = p.resolve("example", Example::SPEC, &[("on", "true")], &[])?;
        Example::from_resolved(&r)
    }

    #[test]
    fn parses_and_types() {
        let p = Params::parse(["freq_mhz=1600", "cpus = 0-3"]).unwrap();
        assert_eq!(p.value("freq_mhz"), Some("1600"));
        assert_eq!(p.value("cpus"), Some("0-3"));
        assert!(Params::parse(["novalue"]).is_err());
    }

    #[test]
    fn defaults_overrides_and_types() {
        let e = resolve(&["freq_mhz=1600"]).unwrap();
        assert_eq!(e.freq_mhz, 1600);
        assert_eq!(e.share, 0.5);
        assert_eq!(e.mode, "bus");
        assert!(e.on, "the variant's override wins over the spec's default");
        assert_eq!(e.cap, None);
        let e = resolve(&["freq_mhz=1", "cap=20", "on=false"]).unwrap();
        assert_eq!(e.cap, Some(20.0));
        assert!(!e.on);
    }

    #[test]
    fn refusals_name_key_and_range() {
        let err = |pairs: &[&str]| resolve(pairs).unwrap_err().to_string();
        assert!(err(&[]).contains("needs --param freq_mhz"), "{}", err(&[]));
        let e = err(&["freq_mhz=1", "share=0"]);
        assert!(e.contains("share") && e.contains("in (0, 1]"), "{e}");
        let e = err(&["freq_mhz=1", "mode=dram"]);
        assert!(e.contains("bus, cache or core"), "{e}");
        let e = err(&["freq_mhz=0"]);
        assert!(e.contains("≥ 1"), "{e}");
        let e = err(&["freq_mhz=1", "share=nan"]);
        assert!(e.contains("share"), "{e}");
        let e = err(&["freq=1"]);
        assert!(e.contains("valid parameters: freq_mhz, share"), "{e}");
    }

    #[test]
    fn keys_left_out_of_a_variant_are_unknown_there() {
        let p = Params::default().with("freq_mhz", 1).with("mode", "bus");
        let err = p
            .resolve("example", Example::SPEC, &[], &["mode"])
            .unwrap_err();
        assert!(matches!(err, PolicyError::UnknownParam { .. }), "{err}");
    }

    #[test]
    fn the_spec_reads_from_the_declaration() {
        let s = &Example::SPEC[1];
        assert_eq!((s.key, s.help), ("share", "A share."));
        assert_eq!(s.default, ParamDefault::Value("0.5"));
        assert_eq!(s.kind.range_words(), "in (0, 1]");
        assert_eq!(Example::SPEC[2].kind.range_words(), "bus|cache|core");
    }
}
