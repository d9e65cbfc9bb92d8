//! Every file format the simulator reads (scenario, machine file with its
//! PMU table inline, calibration file), given arbitrary bytes or a valid
//! file with random edits: the loader never panics, and what it refuses it
//! refuses with an error naming the file (or, for a machine that parses
//! but cannot be built, the machine). A few hundred cases each, so the
//! module takes a few seconds.

use ecosched_model::Calibration;
use ecosched_sim::scenario::parse_toml;
use ecosched_sim::{Machine, MachineSpec, Scenario};
use ecosched_testkit::fuzz::edit;
use proptest::prelude::*;

const SCENARIOS: &[&str] = &[
    include_str!("../../scenarios/merkel-2hmmer-2soplex.toml"),
    include_str!("../../scenarios/richling-i7-j1.toml"),
    include_str!("../../scenarios/patel-task4.toml"),
];
const Q6600: &str = include_str!("../../machines/q6600.toml");

/// The q6600 preset with its PMU written inline instead of by name.
fn machine_with_inline_pmu() -> String {
    format!(
        "{}\n[pmu]\ncounters = 4\nevents = [{{ kind = \"cycles\", name = \"CPU_CLK_UNHALTED.CORE\", raw = 0x3c }}, {{ kind = \"lines_in\", name = \"X\", raw = 0x10 }}]\n",
        Q6600.replace("pmu = \"core2\"", "")
    )
}

/// q6600's `[calibration]` table as a `--calibration` file.
fn calibration_file() -> String {
    let start = Q6600.find("[calibration]").unwrap();
    let end = Q6600[start..].find("\n[governor]").unwrap() + start;
    Q6600[start..end]
        .replace("[calibration]\n", "")
        .replace("[calibration.activity]", "[activity]")
}

/// An edit that TOML-shaped text is likely to meet: numbers huge and tiny,
/// signs, brackets, quotes, keys.
fn insertion() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_=\\[\\]{}\" .,\n-]{0,16}",
        Just("1e9".to_string()),
        Just("-1".to_string()),
        Just("1e300".to_string()),
        Just("nan".to_string()),
        Just("4294967295".to_string()),
        Just("0".to_string()),
    ]
}

fn scenario_located(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = Scenario::from_toml("fuzz.toml", text, None) {
        let e = e.to_string();
        prop_assert!(e.contains("fuzz.toml") || e.contains("machine"), "{}", e);
    }
    Ok(())
}

fn machine_located(text: &str) -> Result<(), TestCaseError> {
    match parse_toml::<MachineSpec>("m.toml", text) {
        Ok(spec) => {
            let name = spec.name.clone();
            if let Err(e) = Machine::build(spec) {
                prop_assert!(e.to_string().contains(&name), "{}", e);
            }
        }
        Err(e) => prop_assert!(e.to_string().contains("m.toml"), "{}", e),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic_any_loader(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let text = String::from_utf8_lossy(&bytes);
        scenario_located(&text)?;
        machine_located(&text)?;
        if let Err(e) = parse_toml::<Calibration>("cal.toml", &text) {
            prop_assert!(e.to_string().contains("cal.toml"), "{}", e);
        }
    }

    #[test]
    fn edited_scenarios_load_or_name_the_file(which in 0usize..3, at in 0usize..2000, cut in 0usize..8, insert in insertion()) {
        scenario_located(&edit(SCENARIOS[which], at, cut, &insert))?;
    }

    #[test]
    fn edited_machines_and_pmu_tables_load_or_name_the_file(inline in any::<bool>(), at in 0usize..6000, cut in 0usize..8, insert in insertion()) {
        let base = if inline { machine_with_inline_pmu() } else { Q6600.to_string() };
        machine_located(&edit(&base, at, cut, &insert))?;
    }

    #[test]
    fn edited_calibration_files_load_or_name_the_file(at in 0usize..1200, cut in 0usize..8, insert in insertion()) {
        let text = edit(&calibration_file(), at, cut, &insert);
        if let Err(e) = parse_toml::<Calibration>("cal.toml", &text) {
            prop_assert!(e.to_string().contains("cal.toml"), "{}", e);
        }
    }
}

#[test]
fn the_fuzzed_bases_are_valid() {
    for text in SCENARIOS {
        Scenario::from_toml("base.toml", text, None).unwrap();
    }
    Machine::build(parse_toml::<MachineSpec>("m.toml", &machine_with_inline_pmu()).unwrap())
        .unwrap();
    parse_toml::<Calibration>("cal.toml", &calibration_file()).unwrap();
}
