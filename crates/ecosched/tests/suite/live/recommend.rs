//! `ecosched recommend` for this machine: without `--machine` it reads
//! the running host, takes its preset when one describes its CPU and else
//! builds the machine in memory as `topology --emit-machine` writes it,
//! and says which.

use crate::support::json;

/// This host's recommendation works and names where its machine came
/// from. Live tier: it reads the running machine's sysfs and procfs, which
/// differ on every host (the fast tier uses recorded trees instead); on a
/// VM no preset describes, the machine is the emitted one.
#[test]
#[ignore = "live: this machine's sysfs and procfs"]
fn this_host_is_its_preset_or_an_emitted_machine_and_says_which() {
    let r = json(&["recommend", "--class", "batch-services", "--json"]);
    let source = r["machine_source"].as_str().unwrap();
    assert!(source.starts_with("this host ("), "{source}");
    if r["machine"] == "this-host" {
        assert!(
            source.contains("matches no built-in preset")
                && source.contains("--emit-machine")
                && source.contains("generic model"),
            "{source}"
        );
    } else {
        assert!(source.contains("is built-in preset"), "{source}");
    }
    let chosen = r["recommended"].is_object();
    assert_eq!(chosen, r.get("run_fast_because").is_none(), "{r}");
    assert_eq!(r["seeds"].as_array().unwrap().len(), 3);
}
