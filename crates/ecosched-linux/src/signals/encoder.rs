//! Turning an event's name into its perf encoding: libpfm4 for vendor
//! names, the `raw:0x...` form for an encoding a user writes, behind a
//! trait so the resolver is tested with a fake.

use crate::perf::RawCode;
use ecosched_libpfm::LibPfm;

/// Encodes vendor event names for the running PMU.
pub trait EventEncoder {
    /// The encoding of `name`, or the encoder's message why not.
    fn encode(&self, name: &str) -> Result<RawCode, String>;
}

impl EventEncoder for LibPfm {
    fn encode(&self, name: &str) -> Result<RawCode, String> {
        LibPfm::encode(self, name)
            .map(|e| RawCode {
                pmu_type: e.pmu_type,
                config: e.config,
                config1: e.config1,
            })
            .map_err(|e| e.message)
    }
}

/// `raw:0x1ff1` (or decimal `raw:8177`) as a `PERF_TYPE_RAW` encoding;
/// `None` when `text` is not of that form.
pub fn parse_raw(text: &str) -> Option<Result<RawCode, String>> {
    let value = text.strip_prefix("raw:")?.trim();
    let parsed = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    Some(
        parsed
            .map(RawCode::raw)
            .map_err(|_| format!("{value:?} is not a number (write raw:0x<hex>)")),
    )
}

/// A scripted encoder for tests: the names it knows, and a message for
/// the rest, as libpfm4 words it.
#[derive(Debug, Default, Clone)]
pub struct FakeEncoder {
    known: Vec<(String, RawCode)>,
}

impl FakeEncoder {
    /// Knows `name` as `code`.
    pub fn with(mut self, name: &str, code: RawCode) -> Self {
        self.known.push((name.to_string(), code));
        self
    }
}

impl EventEncoder for FakeEncoder {
    fn encode(&self, name: &str) -> Result<RawCode, String> {
        self.known
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
            .ok_or_else(|| "event not found".to_string())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn raw_overrides_parse_in_hex_and_decimal_and_others_are_names() {
        assert_eq!(
            parse_raw("raw:0x1ff1").unwrap().unwrap(),
            RawCode::raw(0x1ff1)
        );
        assert_eq!(
            parse_raw("raw:8177").unwrap().unwrap(),
            RawCode::raw(0x1ff1)
        );
        assert!(parse_raw("raw:0xzz").unwrap().unwrap_err().contains("0xzz"));
        assert!(parse_raw("L2_LINES_IN:ALL").is_none());
    }
}
