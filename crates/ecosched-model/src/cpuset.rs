//! Sets of kernel CPU numbers, with the Linux *cpulist* text form
//! (`0-3,8,10-11`) used by sysfs (`online`, `shared_cpu_list`), cgroup
//! cpusets (`cpuset.cpus`) and `/proc/<pid>/status` (`Cpus_allowed_list`).
//!
//! A bitmap of 64-bit words: the sets are small (≤ a few thousand CPUs),
//! operations are hot in policies and in the simulator's scheduler, and
//! ordering by CPU number is what every consumer wants.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A kernel CPU number (`cpuN` in sysfs). Kept apart from dense indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuId(pub u32);

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpu{}", self.0)
    }
}

/// Largest CPU number accepted when parsing text, so a malicious or corrupt
/// `0-4294967295` cannot allocate gigabytes. Linux's `NR_CPUS` maximum is 8192.
pub const MAX_CPU_ID: u32 = 1 << 16;

/// A set of CPUs.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet {
    words: Vec<u64>,
}

/// Why a cpulist could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// A piece was not a number or range.
    #[error("invalid cpulist item {item:?} in {text:?}")]
    BadItem {
        /// The offending item.
        item: String,
        /// The whole text.
        text: String,
    },
    /// A range ran backwards (`5-3`).
    #[error("descending range {item:?} in {text:?}")]
    Descending {
        /// The offending item.
        item: String,
        /// The whole text.
        text: String,
    },
    /// A CPU number above [`MAX_CPU_ID`].
    #[error("CPU number {cpu} in {text:?} exceeds the supported maximum {MAX_CPU_ID}")]
    TooLarge {
        /// The number found.
        cpu: u64,
        /// The whole text.
        text: String,
    },
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// CPUs `0..n`.
    pub fn first_n(n: u32) -> Self {
        (0..n).map(CpuId).collect()
    }

    /// A set with one CPU.
    pub fn single(cpu: CpuId) -> Self {
        let mut s = Self::new();
        s.insert(cpu);
        s
    }

    /// Add a CPU.
    pub fn insert(&mut self, cpu: CpuId) {
        let (w, b) = (cpu.0 as usize / 64, cpu.0 % 64);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << b;
    }

    /// Remove a CPU.
    pub fn remove(&mut self, cpu: CpuId) {
        let (w, b) = (cpu.0 as usize / 64, cpu.0 % 64);
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1 << b);
        }
        self.trim();
    }

    /// Whether the CPU is in the set.
    pub fn contains(&self, cpu: CpuId) -> bool {
        let (w, b) = (cpu.0 as usize / 64, cpu.0 % 64);
        self.words.get(w).is_some_and(|word| word & (1 << b) != 0)
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether no CPU is in the set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            (0..64u32)
                .filter(move |b| word & (1u64 << b) != 0)
                .map(move |b| CpuId(i as u32 * 64 + b))
        })
    }

    /// The lowest-numbered CPU.
    pub fn first(&self) -> Option<CpuId> {
        self.iter().next()
    }

    /// Intersection.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut s = CpuSet {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
        };
        s.trim();
        s
    }

    /// Union.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let word = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        CpuSet {
            words: (0..n)
                .map(|i| word(&self.words, i) | word(&other.words, i))
                .collect(),
        }
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.intersection(other) == *self
    }

    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Parse a Linux cpulist: comma-separated CPU numbers and inclusive
    /// ranges, optionally with a stride (`0-7:2`, as the kernel accepts).
    /// Surrounding whitespace and an empty string (the empty set) are accepted.
    pub fn parse_list(text: &str) -> Result<Self, CpuListError> {
        let mut set = CpuSet::new();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(set);
        }
        let bad = |item: &str| CpuListError::BadItem {
            item: item.to_string(),
            text: text.to_string(),
        };
        let num = |s: &str, item: &str| -> Result<u32, CpuListError> {
            let v: u64 = s.trim().parse().map_err(|_| bad(item))?;
            if v > u64::from(MAX_CPU_ID) {
                return Err(CpuListError::TooLarge {
                    cpu: v,
                    text: text.to_string(),
                });
            }
            Ok(v as u32)
        };
        for item in trimmed.split(',') {
            let (range, stride) = match item.split_once(':') {
                Some((r, s)) => (r, num(s, item)?),
                None => (item, 1),
            };
            if stride == 0 {
                return Err(bad(item));
            }
            match range.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a, item)?, num(b, item)?);
                    if a > b {
                        return Err(CpuListError::Descending {
                            item: item.to_string(),
                            text: text.to_string(),
                        });
                    }
                    for c in (a..=b).step_by(stride as usize) {
                        set.insert(CpuId(c));
                    }
                }
                None if stride == 1 => set.insert(CpuId(num(range, item)?)),
                None => return Err(bad(item)),
            }
        }
        Ok(set)
    }

    /// The canonical cpulist form: ascending, maximal ranges (`0-3,8`).
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut iter = self.iter().map(|c| c.0).peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if end == start {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }
}

impl FromIterator<CpuId> for CpuSet {
    fn from_iter<I: IntoIterator<Item = CpuId>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_list(s)
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_list())
    }
}

/// Serialised as a cpulist string, the form every Linux interface uses.
impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        CpuSet::parse_list(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kernel_forms() {
        assert_eq!(
            CpuSet::parse_list("0-3,8,10-11").unwrap().to_list(),
            "0-3,8,10-11"
        );
        assert_eq!(CpuSet::parse_list(" 3,1,2\n").unwrap().to_list(), "1-3");
        assert_eq!(CpuSet::parse_list("0-7:2").unwrap().to_list(), "0,2,4,6");
        assert!(CpuSet::parse_list("").unwrap().is_empty());
        assert_eq!(CpuSet::parse_list("64,127").unwrap().len(), 2);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "a", "1-", "-1", "3-1", "1,,2", "1-2-3", "0-7:0", "5:2", "99999999",
        ] {
            assert!(CpuSet::parse_list(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn set_operations() {
        let a = CpuSet::parse_list("0-3").unwrap();
        let b = CpuSet::parse_list("2-5").unwrap();
        assert_eq!(a.intersection(&b).to_list(), "2-3");
        assert_eq!(a.union(&b).to_list(), "0-5");
        assert!(a.intersects(&b));
        assert!(CpuSet::parse_list("1-2").unwrap().is_subset(&a));
        let mut c = CpuSet::single(CpuId(70));
        c.remove(CpuId(70));
        assert_eq!(c, CpuSet::new());
    }

    proptest! {
        #[test]
        fn cpulist_round_trips(cpus in proptest::collection::btree_set(0u32..300, 0..40)) {
            let set: CpuSet = cpus.iter().map(|&c| CpuId(c)).collect();
            let text = set.to_list();
            let back = CpuSet::parse_list(&text).unwrap();
            prop_assert_eq!(&back, &set);
            prop_assert_eq!(back.len(), cpus.len());
            prop_assert_eq!(back.iter().map(|c| c.0).collect::<Vec<_>>(), cpus.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn parser_never_panics(text in "[0-9,:\\- ]{0,24}") {
            let _ = CpuSet::parse_list(&text);
        }
    }
}
