//! `/proc/cpuinfo` (x86): the CPU's identity as the kernel's pmu-events map
//! names it, `<vendor_id>-<cpu family>-<model>` with the family in decimal
//! and the model in upper-case hex, two digits (`GenuineIntel-6-0F` for a
//! Core 2), so the running machine can be matched to a machine preset's
//! PMU description and its model-specific events opened.

use super::ProcParseError;

/// The pmu-events CPU id of the first processor listed in `cpuinfo`.
pub fn parse_cpuid(cpuinfo: &str) -> Result<String, ProcParseError> {
    let first = cpuinfo.split("\n\n").next().unwrap_or("");
    let field = |name: &str| {
        first.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim())
        })
    };
    if field("vendor_id").is_none() {
        if let (Some(implementer), Some(part)) = (field("CPU implementer"), field("CPU part")) {
            return arm_midr(implementer, part);
        }
    }
    let vendor = field("vendor_id").ok_or_else(|| ProcParseError::new("no vendor_id line"))?;
    let family: u32 = field("cpu family")
        .ok_or_else(|| ProcParseError::new("no cpu family line"))?
        .parse()
        .map_err(|_| ProcParseError::new("cpu family is not a number"))?;
    let model: u32 = field("model")
        .ok_or_else(|| ProcParseError::new("no model line"))?
        .parse()
        .map_err(|_| ProcParseError::new("model is not a number"))?;
    if vendor.is_empty() || vendor.contains(char::is_whitespace) {
        return Err(ProcParseError::new(format!(
            "vendor_id {vendor:?} is not one word"
        )));
    }
    Ok(format!("{vendor}-{family}-{model:02X}"))
}

/// An Arm CPU as the kernel's arm64 pmu-events map names it: its MIDR
/// with variant and revision cleared (`0x00000000410fd0c0`, Neoverse N1),
/// the architecture field being 0xF on every Armv8 core.
fn arm_midr(implementer: &str, part: &str) -> Result<String, ProcParseError> {
    let hex = |name: &str, v: &str| {
        u64::from_str_radix(v.trim_start_matches("0x"), 16)
            .map_err(|_| ProcParseError::new(format!("{name} {v:?} is not a hex number")))
    };
    let implementer = hex("CPU implementer", implementer)?;
    let part = hex("CPU part", part)?;
    if implementer > 0xff || part > 0xfff {
        return Err(ProcParseError::new("CPU implementer or part out of range"));
    }
    Ok(format!(
        "0x{:016x}",
        (implementer << 24) | (0xf << 16) | (part << 4)
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn core2_and_this_vms_sapphire_rapids_are_named_as_pmu_events_names_them() {
        let q6600 = include_str!("../../tests/data/cpuinfo-core2-q6600/proc/cpuinfo");
        assert_eq!(parse_cpuid(q6600).unwrap(), "GenuineIntel-6-0F");
        // The first block of this development VM's cpuinfo.
        let vm = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(parse_cpuid(vm).unwrap(), "GenuineIntel-6-A7");
        let amd = "vendor_id\t: AuthenticAMD\ncpu family\t: 16\nmodel\t\t: 9\n";
        assert_eq!(parse_cpuid(amd).unwrap(), "AuthenticAMD-16-09");
        // Ampere Altra (Neoverse N1 r3p1), as arm64 /proc/cpuinfo words it.
        let n1 = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n";
        assert_eq!(parse_cpuid(n1).unwrap(), "0x00000000410fd0c0");
    }

    #[test]
    fn incomplete_or_malformed_cpuinfo_is_an_error_naming_the_field() {
        // An ARM cpuinfo has none of the x86 fields.
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n";
        assert!(parse_cpuid(arm).unwrap_err().reason.contains("vendor_id"));
        let bad = "vendor_id\t: GenuineIntel\ncpu family\t: six\nmodel\t\t: 15\n";
        assert!(parse_cpuid(bad).unwrap_err().reason.contains("cpu family"));
        let no_model = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: x\n";
        assert!(parse_cpuid(no_model)
            .unwrap_err()
            .reason
            .contains("no model"));
    }
}
