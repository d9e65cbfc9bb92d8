//! Events the kernel names itself under
//! `/sys/bus/event_source/devices/<pmu>/events/<name>` (the Arm PMUs list
//! the architectural events their core implements there): the PMU's
//! `type` file and the event's `event=0x..` term give the encoding.

use crate::fsroot::FsRoot;
use crate::perf::RawCode;

const DEVICES: &str = "sys/bus/event_source/devices";

/// The encoding of the event `name` on the first PMU (in name order) that
/// lists it, with that PMU's name; the reason when none does.
pub fn lookup(root: &FsRoot, name: &str) -> Result<(String, RawCode), String> {
    if name.contains('/') || name.starts_with('.') {
        return Err(format!("{name:?} is not an event name"));
    }
    let mut pmus = root
        .list(DEVICES)
        .map_err(|e| format!("no PMU is listed: {e}"))?;
    pmus.sort();
    for pmu in pmus {
        let rel = format!("{DEVICES}/{pmu}/events/{name}");
        let Ok(Some(term)) = root.read_opt(&rel) else {
            continue;
        };
        let config =
            parse_terms(&term).map_err(|why| format!("{}: {why}", root.path(&rel).display()))?;
        let type_rel = format!("{DEVICES}/{pmu}/type");
        let pmu_type = root
            .read(&type_rel, "PMU type")
            .map_err(|e| e.to_string())?
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("{}: not a number", root.path(&type_rel).display()))?;
        return Ok((
            pmu.clone(),
            RawCode {
                pmu_type,
                config,
                config1: 0,
            },
        ));
    }
    Err(format!(
        "no PMU under /{DEVICES} lists an event named {name}"
    ))
}

/// The config of an event file's terms: `event=0x0017` (Arm's only
/// term; `umask=` and the like, which x86 PMUs use, are not taken: an
/// event with them is refused rather than mis-encoded).
fn parse_terms(text: &str) -> Result<u64, String> {
    let mut config = None;
    for term in text.trim().split(',') {
        let (key, value) = term.split_once('=').unwrap_or((term, "1"));
        match key.trim() {
            "event" => {
                let v = value.trim();
                let n = match v.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => v.parse(),
                };
                config = Some(n.map_err(|_| format!("event={v} is not a number"))?);
            }
            other => return Err(format!("term {other:?} is not understood here")),
        }
    }
    config.ok_or_else(|| format!("{:?} has no event= term", text.trim()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn terms_give_the_event_number_and_others_are_refused() {
        assert_eq!(parse_terms("event=0x0017\n").unwrap(), 0x17);
        assert_eq!(parse_terms("event=0x4001").unwrap(), 0x4001);
        assert!(parse_terms("event=0x3c,umask=0x00")
            .unwrap_err()
            .contains("umask"));
        assert!(parse_terms("").is_err());
    }
}
