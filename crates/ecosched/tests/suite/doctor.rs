//! `ecosched doctor` on recorded machines: this VM's recording lists every
//! missing feature with its path and refuses the governors; the i7-1370P
//! under intel_pstate has cpufreq with EPP, so the governors run there;
//! the goresctrl Xeon has CMT and MBM; the PowerEdge R640's RAPL zones and
//! hwmon meter, put under the VM's recording, make power measured; the
//! text output has each section.

use crate::support::{ecosched, json};
use ecosched_testkit::trees::copy_tree;
use serde_json::Value;
use std::path::PathBuf;

fn tree(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data")
        .join(name)
}

fn doctor(name: &str) -> Value {
    json(&["doctor", "--json", "--root", tree(name).to_str().unwrap()])
}

fn verdict<'a>(v: &'a Value, policy: &str) -> &'a str {
    v["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == policy)
        .unwrap_or_else(|| panic!("{policy} not listed"))["verdict"]
        .as_str()
        .unwrap()
}

fn missing<'a>(v: &'a Value, feature: &str) -> Option<&'a Value> {
    v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["feature"].as_str().unwrap().starts_with(feature))
}

#[test]
fn the_vm_lists_every_missing_feature_with_its_path_and_consequence() {
    let v = doctor("vm-epyc-2cpu");
    assert_eq!(v["machine"]["cpus"], 2);
    let cpufreq = missing(&v, "cpufreq").unwrap();
    assert!(cpufreq["path"]
        .as_str()
        .unwrap()
        .ends_with("vm-epyc-2cpu/sys/devices/system/cpu/cpufreq absent"));
    let consequence = cpufreq["consequence"].as_str().unwrap();
    assert!(
        consequence
            .contains("refused: performance, powersave, ondemand, conservative, schedutil, fixed"),
        "{consequence}"
    );
    assert!(consequence.contains("degraded: hilo"), "{consequence}");
    let power = missing(&v, "power meter").unwrap();
    assert!(power["path"]
        .as_str()
        .unwrap()
        .contains("sys/class/powercap absent"));
    assert!(power["consequence"]
        .as_str()
        .unwrap()
        .contains("ESTIMATE (generic"));
    let counters = missing(&v, "hardware counters").unwrap();
    assert!(counters["path"]
        .as_str()
        .unwrap()
        .contains("sys/bus/event_source/devices/cpu absent"));
    assert!(counters["consequence"]
        .as_str()
        .unwrap()
        .contains("refused: pam, wca"));
    let resctrl = missing(&v, "resctrl").unwrap();
    assert!(resctrl["path"]
        .as_str()
        .unwrap()
        .ends_with("sys/fs/resctrl/info/L3_MON absent"));
    for p in [
        "performance",
        "powersave",
        "ondemand",
        "fixed",
        "pam",
        "wca",
        "av",
        "patel1",
        "oracle",
        "av-xnode",
    ] {
        assert_eq!(verdict(&v, p), "refused", "{p}");
    }
    assert_eq!(verdict(&v, "static"), "runs");
    assert_eq!(verdict(&v, "placed"), "runs");
    assert_eq!(verdict(&v, "hilo"), "degraded");
    assert_eq!(v["power"]["measured"], false);
    assert_eq!(v["cpufreq"]["present"], false);
    assert_eq!(v["cgroups"]["version"], "hybrid");
}

#[test]
fn cpufreq_with_epp_lets_the_governors_run() {
    let v = doctor("cpufreq-intel-pstate-i7-1370p");
    assert_eq!(v["machine"]["cpus"], 20);
    assert_eq!(v["machine"]["threads_per_core"], 2);
    let f = &v["cpufreq"];
    assert_eq!(f["present"], true);
    assert_eq!(f["drivers"][0], "intel_pstate");
    assert_eq!(f["epp"], "balance_performance");
    assert_eq!(f["boost"], true);
    assert!(missing(&v, "cpufreq").is_none());
    for p in ["performance", "powersave", "fixed", "hilo", "static"] {
        assert_eq!(verdict(&v, p), "runs", "{p}");
    }
    // Lines-in and occupancy are wanted, not needed: PAM goes on without.
    assert_eq!(verdict(&v, "pam"), "degraded");
}

#[test]
fn resctrl_monitoring_is_reported() {
    let v = doctor("resctrl-goresctrl-xeon-4l3");
    let r = &v["resctrl"];
    assert_eq!(r["mounted"], true);
    assert_eq!(r["cmt"], true);
    assert_eq!(r["mbm"], true);
    assert!(missing(&v, "resctrl").is_none());
}

#[test]
fn the_text_report_has_every_section() {
    let out = ecosched()
        .args(["doctor", "--root", tree("vm-epyc-2cpu").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for section in [
        "machine\n",
        "counters\n",
        "power\n",
        "cpufreq\n",
        "resctrl\n",
        "cgroups\n",
        "other managers\n",
        "missing\n",
        "policies\n",
    ] {
        assert!(text.contains(section), "{section:?} missing from\n{text}");
    }
    assert!(text.contains("  powersave "));
    let bad = ecosched()
        .args(["doctor", "--root", "/nonexistent-root"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn rapl_and_hwmon_meters_make_power_measured() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&tree("vm-epyc-2cpu"), dir.path());
    copy_tree(
        &tree("power-poweredge-r640-xeon-gold-6130/sys/class"),
        &dir.path().join("sys/class"),
    );
    let v = json(&["doctor", "--json", "--root", dir.path().to_str().unwrap()]);
    let power = &v["power"];
    assert_eq!(power["measured"], true);
    assert!(power["estimate"].is_null());
    let meters = power["meters"].as_array().unwrap();
    assert!(meters
        .iter()
        .any(|m| m["kind"] == "rapl" && m["name"] == "package-0" && m["access"] == "readable"));
    assert!(meters.iter().any(|m| m["kind"] == "hwmon"));
    assert!(missing(&v, "power meter").is_none());
    assert!(
        missing(&v, "cpufreq").is_some(),
        "the rest is still the VM's"
    );
}
