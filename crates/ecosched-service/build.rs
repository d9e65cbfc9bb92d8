//! Records what built this binary, for `ecosched --version` and the
//! exporter's `ecosched_build_info`: the source revision (an operator
//! filing a bug names a commit, not just "0.1.0") and the compiler.
//! Outside a git checkout (a source tarball, a .deb built from one) the
//! revision is "unknown" rather than a build failure.

use std::process::Command;

fn main() {
    let revision = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ECOSCHED_REVISION={revision}");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ECOSCHED_RUSTC={rustc_version}");
    // A commit or checkout moves HEAD's reflog: rebuild then, and only then.
    if let Some(log) = git(&["rev-parse", "--git-path", "logs/HEAD"]) {
        println!("cargo:rerun-if-changed={log}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// One line of git's output, or None where git or the repository is absent.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}
