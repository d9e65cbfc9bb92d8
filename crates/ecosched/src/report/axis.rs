//! Value axes for the report's charts: a linear scale with round ticks, or
//! a logarithmic one when the values span two decades or more (a 0.17 s
//! task beside a 30 s one stays visible), and tick labels short enough to
//! leave room for each other.

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// `lo..hi`, ticks every `step`.
    Linear { lo: f64, hi: f64, step: f64 },
    /// `lo..hi` (both > 0, whole decades), ticks at powers of ten.
    Log { lo: f64, hi: f64 },
}

/// Values whose largest over smallest positive one reaches this get a
/// logarithmic axis.
const LOG_SPAN: f64 = 100.0;

/// A round step near `raw`: 1, 2 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let k = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    k * p
}

impl Scale {
    /// A scale holding `values` (and `extra`, e.g. a reference line at 1):
    /// from 0 when `from_zero` and every value is ≥ 0, logarithmic when
    /// `allow_log` and the positive values span two decades or more.
    pub fn fit(values: &[f64], extra: Option<f64>, from_zero: bool, allow_log: bool) -> Scale {
        let vals: Vec<f64> = values
            .iter()
            .copied()
            .chain(extra)
            .filter(|v| v.is_finite())
            .collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() || !hi.is_finite() {
            return Scale::linear(0.0, 1.0);
        }
        if allow_log && lo > 0.0 && hi / lo >= LOG_SPAN {
            return Scale::Log {
                lo: 10f64.powf(lo.log10().floor()),
                hi: 10f64.powf(hi.log10().ceil()),
            };
        }
        let lo = if from_zero && lo >= 0.0 { 0.0 } else { lo };
        Scale::linear(lo, hi)
    }

    /// A linear scale over `lo..hi`, widened to round ticks (about six).
    pub fn linear(lo: f64, hi: f64) -> Scale {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else if lo == 0.0 {
            (0.0, 1.0)
        } else {
            (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1)
        };
        let step = nice_step((hi - lo) / 6.0);
        Scale::Linear {
            lo: (lo / step + 1e-9).floor() * step,
            hi: (hi / step - 1e-9).ceil() * step,
            step,
        }
    }

    /// A linear scale over exactly `lo..hi` (a time axis ends where the
    /// run ends), ticks at round values inside it.
    pub fn exact(lo: f64, hi: f64) -> Scale {
        match Scale::linear(lo, hi) {
            Scale::Linear { step, .. } if hi > lo => Scale::Linear { lo, hi, step },
            other => other,
        }
    }

    /// Where `v` falls, 0 at the low end and 1 at the high end (clamped).
    pub fn frac(&self, v: f64) -> f64 {
        let f = match *self {
            Scale::Linear { lo, hi, .. } => (v - lo) / (hi - lo),
            Scale::Log { lo, hi } => {
                if v <= 0.0 {
                    0.0
                } else {
                    (v.log10() - lo.log10()) / (hi.log10() - lo.log10())
                }
            }
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The low end (where bars start).
    pub fn low(&self) -> f64 {
        match *self {
            Scale::Linear { lo, .. } | Scale::Log { lo, .. } => lo,
        }
    }

    /// Whether the axis is logarithmic.
    pub fn is_log(&self) -> bool {
        matches!(self, Scale::Log { .. })
    }

    /// At most `max` ticks with their labels.
    pub fn ticks(&self, max: usize) -> Vec<(f64, String)> {
        let max = max.max(2);
        match *self {
            Scale::Linear { lo, hi, step } => {
                let n = ((hi - lo) / step).round() as usize;
                let every = n / max + 1;
                let step = step * every as f64;
                let first = (lo / step - 1e-9).ceil() * step;
                let count = ((hi - first) / step + 1e-9).floor().max(0.0) as usize;
                (0..=count)
                    .map(|i| {
                        let v = first + step * i as f64;
                        (v, label(v, step))
                    })
                    .collect()
            }
            Scale::Log { lo, hi } => {
                let (a, b) = (lo.log10().round() as i32, hi.log10().round() as i32);
                let n = (b - a).max(1) as usize;
                let every = (n / max + 1) as i32;
                (a..=b)
                    .filter(|k| (k - a) % every == 0)
                    .map(|k| {
                        let v = 10f64.powi(k);
                        let text = if (-3..=5).contains(&k) {
                            label(v, v)
                        } else {
                            format!("1e{k}")
                        };
                        (v, text)
                    })
                    .collect()
            }
        }
    }
}

/// `v` with as many decimals as `step` needs; thousands as "k" when the
/// step is a whole number of thousands.
fn label(v: f64, step: f64) -> String {
    if v.abs() >= 10_000.0 && step >= 1000.0 && (step / 1000.0).fract() == 0.0 {
        return format!("{}k", (v / 1000.0).round());
    }
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10() - 1e-9).ceil().max(0.0) as usize
    };
    let s = format!("{v:.decimals$}");
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_over_two_decades_get_a_log_axis() {
        let s = Scale::fit(&[0.17, 30.0], None, true, true);
        assert_eq!(s, Scale::Log { lo: 0.1, hi: 100.0 });
        let ticks: Vec<String> = s.ticks(8).into_iter().map(|t| t.1).collect();
        assert_eq!(ticks, ["0.1", "1", "10", "100"]);
        assert!(!Scale::fit(&[1.0, 30.0], None, true, true).is_log());
        assert!(!Scale::fit(&[0.17, 30.0], None, true, false).is_log());
    }

    #[test]
    fn linear_ticks_are_round_and_bounded() {
        let s = Scale::fit(&[0.0, 4512.0], None, true, true);
        let ticks: Vec<String> = s.ticks(10).into_iter().map(|t| t.1).collect();
        assert_eq!(ticks, ["0", "1000", "2000", "3000", "4000", "5000"]);
        assert!(s.ticks(3).len() <= 4);
        let big = Scale::fit(&[0.0, 596_106.0], None, true, true);
        assert_eq!(big.ticks(10)[1].1, "100k");
        assert_eq!(Scale::linear(0.9, 1.1).ticks(10)[1].1, "0.95");
        let t: Vec<String> = Scale::exact(0.0, 4500.0)
            .ticks(10)
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(t, ["0", "1000", "2000", "3000", "4000"]);
    }

    #[test]
    fn frac_is_clamped() {
        let s = Scale::linear(0.0, 10.0);
        assert_eq!(s.frac(5.0), 0.5);
        assert_eq!(s.frac(20.0), 1.0);
        assert_eq!(Scale::Log { lo: 1.0, hi: 100.0 }.frac(10.0), 0.5);
    }
}
