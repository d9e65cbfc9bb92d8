//! `--report out.html` is one self-contained page that opens in a real
//! browser. Each page is checked statically (no scripts, no external
//! references) and then loaded in headless Chromium (Debian's `chromium`
//! package; `.ci/run` installs it): a probe injected into a *copy* of the
//! page records every error (scripts, failed loads, `console.error`) and
//! the rendered size of every SVG, and is read back from `--dump-dom`.
//! Without a browser these tests fail and say what to install.

use crate::support::ecosched;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The first Chromium or Chrome on `PATH`.
fn browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Collects errors from the start and writes them, with every SVG's size,
/// into `<div id="probe">` once the page has loaded.
const PROBE: &str = r#"<script>window.__errs=[];addEventListener("error",e=>__errs.push(e.message||("load failed: "+(e.target.src||e.target.href))),true);const __ce=console.error;console.error=(...a)=>{__errs.push(a.join(" "));__ce(...a)};addEventListener("load",()=>document.body.insertAdjacentHTML("beforeend","<div id=probe>"+JSON.stringify({errors:__errs,svgs:[...document.querySelectorAll("svg")].map(s=>{const r=s.getBoundingClientRect();return [r.width,r.height]})})+"</div>"))</script>"#;

/// Load `html` (with `extra` before `</body>`) in the browser; the probe's
/// findings.
fn load(html: &str, extra: &str, dir: &Path) -> Value {
    let Some(chromium) = browser() else {
        panic!(
            "the live tier needs a headless browser (apt-get install chromium; \
             scripts/test installs it as root)"
        );
    };
    let probed = html
        .replacen("<head>", &format!("<head>{PROBE}"), 1)
        .replacen("</body>", &format!("{extra}</body>"), 1);
    let path = dir.join("probe.html");
    std::fs::write(&path, probed).unwrap();
    let out = std::process::Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", path.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<div id=\"probe\">").unwrap_or_else(|| {
        panic!(
            "no probe output; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    }) + "<div id=\"probe\">".len();
    let end = start + dom[start..].find("</div>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap()
}

/// The page loads nothing from elsewhere and runs no script.
pub(super) fn assert_self_contained(html: &str) {
    let lower = html.to_lowercase();
    for bad in [
        "<script",
        " src=",
        "href=",
        "url(",
        "@import",
        "@font-face",
        "<link",
    ] {
        assert!(!lower.contains(bad), "the report has {bad:?}");
    }
}

/// The page has `svgs` charts and, in the browser, loads without an error
/// and draws every chart larger than 100×100 pixels.
pub(super) fn assert_renders(html: &str, dir: &Path, svgs: usize) {
    assert_eq!(html.matches("<svg").count(), svgs);
    let probe = load(html, "", dir);
    assert_eq!(probe["errors"].as_array().unwrap().len(), 0, "{probe}");
    let sizes = probe["svgs"].as_array().unwrap();
    assert_eq!(sizes.len(), svgs, "{probe}");
    for s in sizes {
        assert!(
            s[0].as_f64().unwrap() > 100.0 && s[1].as_f64().unwrap() > 100.0,
            "{probe}"
        );
    }
}

#[test]
#[ignore = "live: chromium"]
fn compare_report_opens_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("compare.html");
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-2hmmer-2soplex",
            "--policies",
            "performance,fixed,oracle",
            "--param",
            "fixed:freq_mhz=1600",
            "--report",
        ])
        .arg(&path)
        .assert()
        .success();
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    for part in [
        "merkel-2hmmer-2soplex",
        "q6600",
        "Against the baseline",
        "Against the oracle",
        "Per-task speedups",
        "Power over time",
        "fixed: task placement over time",
        "oracle: frequency over time",
        "per 10^9 instructions",
    ] {
        assert!(html.contains(part), "the report lacks {part:?}");
    }
    // 2 ratio charts + speedups + power + 2 per policy.
    assert_renders(&html, dir.path(), 4 + 2 * 3);
}

#[test]
#[ignore = "live: chromium"]
fn sim_report_opens_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim.html");
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "performance",
            "--report",
        ])
        .arg(&path)
        .assert()
        .success();
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("merkel-1-aluadd") && html.contains("Task run times"));
    assert_renders(&html, dir.path(), 4);
}

/// The probe is not blind: a page that fails to load a resource is caught.
#[test]
#[ignore = "live: chromium"]
fn the_probe_sees_errors() {
    let dir = tempfile::tempdir().unwrap();
    let page = "<!DOCTYPE html><html><head></head><body><svg width=\"10\" height=\"10\"></svg></body></html>";
    let probe = load(page, "<img src=\"missing.png\">", dir.path());
    assert_eq!(probe["errors"].as_array().unwrap().len(), 1, "{probe}");
}

#[test]
#[ignore = "live: chromium"]
fn sweep_report_opens_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sweep.html");
    ecosched()
        .args([
            "sweep",
            "--scenario",
            "merkel-4hmmer",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600..2400:800",
            "--report",
        ])
        .arg(&path)
        .assert()
        .success();
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    assert_renders(&html, dir.path(), 4);
}
