//! Pure parsers for the text formats sysfs uses for CPU sets and sizes, so
//! they can be tested on literal strings: the hexadecimal bitmask
//! (`shared_cpu_map`, `thread_siblings`: 32-bit words, most significant
//! first, comma separated) and cache sizes (`32K`, `30720K`, `12M`).

use ecosched_model::{CpuId, CpuSet};

/// A kernel bitmask such as `00000000,0000f00f` as a CPU set. Any width
/// is read (a 128-CPU machine's `00000000,00000000,ffffffff,ffffffff`, a
/// first word shorter than 8 digits when the CPU count is not a multiple
/// of 32), up to the model's largest CPU number; a set bit beyond it is
/// refused rather than allocated.
pub fn parse_cpumask(text: &str) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    let words: Vec<&str> = text.trim().split(',').collect();
    for (i, word) in words.iter().rev().enumerate() {
        let word = word.trim();
        if word.is_empty() || word.len() > 8 {
            return None;
        }
        let bits = u32::from_str_radix(word, 16).ok()?;
        for b in 0..32u32 {
            if bits & (1 << b) != 0 {
                let cpu = u32::try_from(i).ok()?.checked_mul(32)?.checked_add(b)?;
                if cpu > ecosched_model::cpuset::MAX_CPU_ID {
                    return None;
                }
                set.insert(CpuId(cpu));
            }
        }
    }
    Some(set)
}

/// A cache `size` file (`32K`, `12M`, `512`) in KiB. A bare number is in
/// bytes, as the kernel's `size` attribute would print it without a unit.
pub fn parse_size_kib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, scale_kib, bytes) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1, false),
        'M' | 'm' => (&t[..t.len() - 1], 1024, false),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024, false),
        _ => (t, 1, true),
    };
    let n: u64 = digits.trim().parse().ok()?;
    Some(if bytes { n / 1024 } else { n * scale_kib })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn masks_are_words_of_32_bits_most_significant_first() {
        assert_eq!(parse_cpumask("0000000f").unwrap().to_list(), "0-3");
        assert_eq!(
            parse_cpumask("00000001,00000000,80000001")
                .unwrap()
                .to_list(),
            "0,31,64"
        );
        assert_eq!(parse_cpumask("00000000").unwrap().to_list(), "");
        assert!(parse_cpumask("xyz").is_none());
        assert!(parse_cpumask("0,,1").is_none());
        assert!(parse_cpumask("123456789").is_none());
    }

    #[test]
    fn sizes_carry_their_unit() {
        assert_eq!(parse_size_kib("32K"), Some(32));
        assert_eq!(parse_size_kib("12M"), Some(12 * 1024));
        assert_eq!(parse_size_kib("65536"), Some(64));
        assert_eq!(parse_size_kib("K"), None);
        assert_eq!(parse_size_kib("lots"), None);
    }
}
