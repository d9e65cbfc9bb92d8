//! `--report out.html` is one self-contained page that opens in a real
//! browser. Each page is checked statically (no scripts, no external
//! references) and then loaded in headless Chromium (Debian's `chromium`
//! package; `.ci/run` installs it): a probe injected into a *copy* of the
//! page records every error (scripts, failed loads, `console.error`), the
//! rendered size of every SVG and, from the browser's own text layout,
//! every chart's readability faults — a text cut off by its chart's edge,
//! two texts on top of each other, a legend over the plotting area or the
//! data — and is read back from `--dump-dom`. A screenshot of each page is
//! kept beside it (in `$ECOSCHED_SCREENSHOTS` when set). Without a browser
//! these tests fail and say what to install.

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

/// Measures every SVG's texts, legend, plotting area and data in the
/// browser and lists what a reader would see as broken: a text outside its
/// SVG (clipped), two texts that overlap, a legend that meets the plotting
/// area or a data element, a chart without a marked plotting area.
const LAYOUT: &str = r#"<script>addEventListener("load",()=>{const P=[];let bars=0;const box=e=>e.getBoundingClientRect();const meet=(a,b,m)=>Math.min(a.right,b.right)-Math.max(a.left,b.left)>m&&Math.min(a.bottom,b.bottom)-Math.max(a.top,b.top)>m;document.querySelectorAll("svg").forEach((svg,i)=>{const s=box(svg);const T=[...svg.querySelectorAll("text")].filter(t=>t.textContent.trim()).map(t=>[t.textContent,box(t)]);for(const [t,r] of T){if(r.left<s.left-0.5||r.right>s.right+0.5||r.top<s.top-0.5||r.bottom>s.bottom+0.5)P.push(`chart ${i}: text "${t}" is clipped`)}for(let a=0;a<T.length;a++)for(let b=a+1;b<T.length;b++)if(meet(T[a][1],T[b][1],0.5))P.push(`chart ${i}: texts "${T[a][0]}" and "${T[b][0]}" overlap`);const area=svg.querySelector(".plot-area");if(!area){P.push(`chart ${i}: no marked plotting area`);return}const L=svg.querySelector(".legend");if(L){const l=box(L);if(meet(l,box(area),0))P.push(`chart ${i}: the legend overlaps the plotting area`);for(const d of svg.querySelectorAll(".data *"))if(meet(l,box(d),0)){P.push(`chart ${i}: the legend covers data`);break}}});bars=document.querySelectorAll(".errorbar").length;document.body.insertAdjacentHTML("beforeend","<div id=layout>"+JSON.stringify({problems:P.slice(0,40),count:P.length,errorbars:bars})+"</div>")})</script>"#;

/// Chromium with the flags every test uses.
fn chromium(dir: &Path) -> std::process::Command {
    let Some(chromium) = browser() else {
        panic!(
            "the live tier needs a headless browser (apt-get install chromium; \
             scripts/test installs it as root)"
        );
    };
    let mut c = std::process::Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", dir.join("profile").display()));
    c
}

/// The JSON a probe wrote into `<div id="{id}">` of the dumped `dom`.
fn probe_json(dom: &str, id: &str, stderr: &[u8]) -> Value {
    let open = format!("<div id=\"{id}\">");
    let start = dom.find(&open).unwrap_or_else(|| {
        panic!(
            "no {id} output; stderr:\n{}",
            String::from_utf8_lossy(stderr)
        )
    }) + open.len();
    let end = start + dom[start..].find("</div>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap()
}

/// Load `html` (with `extra` before `</body>`) in the browser; the probe's
/// findings, and the layout probe's when `extra` is [`LAYOUT`].
fn load_dom(html: &str, extra: &str, dir: &Path) -> (String, Vec<u8>) {
    let probed = html
        .replacen("<head>", &format!("<head>{PROBE}"), 1)
        .replacen("</body>", &format!("{extra}</body>"), 1);
    let path = dir.join("probe.html");
    std::fs::write(&path, probed).unwrap();
    let out = chromium(dir)
        .arg("--window-size=1100,900")
        .arg("--dump-dom")
        .arg(format!("file://{}", path.display()))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.stderr,
    )
}

/// Load `html` (with `extra` before `</body>`) in the browser; the probe's
/// findings.
fn load(html: &str, extra: &str, dir: &Path) -> Value {
    let (dom, stderr) = load_dom(html, extra, dir);
    probe_json(&dom, "probe", &stderr)
}

/// The layout probe's findings on `html`: `problems` (at most 40 listed),
/// `count` and `errorbars`.
fn layout(html: &str, dir: &Path) -> Value {
    let (dom, stderr) = load_dom(html, LAYOUT, dir);
    probe_json(&dom, "layout", &stderr)
}

/// A screenshot of `page` (the report itself, as a reader opens it) into
/// `$ECOSCHED_SCREENSHOTS` or `dir`, as evidence of what was checked.
fn screenshot(page: &Path, dir: &Path) -> PathBuf {
    let into = std::env::var_os("ECOSCHED_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.to_path_buf());
    std::fs::create_dir_all(&into).unwrap();
    let name = page.file_stem().unwrap().to_string_lossy().into_owned();
    let png = into.join(format!("{name}.png"));
    let out = chromium(dir)
        .arg("--window-size=1100,4000")
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        png.metadata().map(|m| m.len() > 10_000).unwrap_or(false),
        "no screenshot of {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    png
}

/// Every chart of the page at `path` reads: nothing clipped, no texts on
/// top of each other, legends clear of the plotting area and the data.
/// The layout probe's findings.
pub(super) fn assert_readable(path: &Path, dir: &Path) -> Value {
    let html = std::fs::read_to_string(path).unwrap();
    let found = layout(&html, dir);
    assert_eq!(found["count"], 0, "{}: {found:#}", path.display());
    screenshot(path, dir);
    found
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
    // 2 ratio charts + speedups + power + 2 heat maps per policy.
    assert_renders(&html, dir.path(), 4 + 2 * 3);
    assert_readable(&path, dir.path());
    assert!(html.contains("<table class=\"summary\">"));
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
    assert_readable(&path, dir.path());
}

/// The layout probe is not blind: a legend over the plotting area and the
/// data, two texts on top of each other and a text past the chart's edge
/// are each reported.
#[test]
#[ignore = "live: chromium"]
fn the_layout_probe_sees_faults() {
    let dir = tempfile::tempdir().unwrap();
    let page = r##"<!DOCTYPE html><html><head></head><body><svg width="300" height="200" font-family="sans-serif"><rect class="plot-area" x="40" y="20" width="200" height="150" fill="none" stroke="#888"/><g class="data"><rect x="150" y="30" width="60" height="40"/></g><g class="legend"><text x="160" y="50" font-size="12">policy</text></g><text x="10" y="190" font-size="12">tick one</text><text x="20" y="192" font-size="12">tick two</text><text x="280" y="100" font-size="12">clipped</text></svg></body></html>"##;
    let found = layout(page, dir.path());
    let problems = found["problems"].to_string();
    for fault in [
        "the legend overlaps the plotting area",
        "the legend covers data",
        "overlap",
        "is clipped",
    ] {
        assert!(problems.contains(fault), "{fault}: {found:#}");
    }
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
    assert_readable(&path, dir.path());
}

/// `compare --seeds 5 --report`: bars with error bars over the seeds (the
/// dhiman scenarios' kernel threads wake at random, so seeds differ).
#[test]
#[ignore = "live: chromium"]
fn seeds_report_has_error_bars_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seeds.html");
    ecosched()
        .args([
            "compare",
            "--scenario",
            "dhiman-art-equake-equake",
            "--policies",
            "performance,powersave",
            "--seeds",
            "5",
            "--report",
        ])
        .arg(&path)
        .assert()
        .success()
        .stderr(predicates::str::contains(format!(
            "report written to {}",
            path.display()
        )));
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("over 5 seeds") && html.contains("min–max"));
    assert_renders(&html, dir.path(), 2);
    let found = assert_readable(&path, dir.path());
    // 3 ratios per policy, and one per task and policy.
    assert!(found["errorbars"].as_u64().unwrap() >= 2 * 3, "{found}");
}

/// A machine of 224 CPUs: heat maps instead of a line per CPU, thinned
/// series, and a page that stays small.
#[test]
#[ignore = "live: chromium"]
fn report_of_hundreds_of_cpus_is_small_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xeon-224.html");
    ecosched()
        .args([
            "compare",
            "--scenario",
            "suite-xeon-batch",
            "--policies",
            "performance,powersave",
            "--report",
        ])
        .arg(&path)
        .assert()
        .success();
    let html = std::fs::read_to_string(&path).unwrap();
    // One line per policy (power), not one per CPU.
    assert_eq!(html.matches("<polyline").count(), 2);
    assert!(html.len() < 400_000, "{} bytes", html.len());
    assert_renders(&html, dir.path(), 3 + 2 * 2);
    assert_readable(&path, dir.path());
}
