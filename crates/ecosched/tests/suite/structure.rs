//! The workspace's shape, checked so it stays as CONTRIBUTING.md describes
//! it: no source file over 1,000 lines of code (comments, blank lines and
//! `#[cfg(test)] mod tests` blocks aside, and `tests.rs` files, which are
//! all tests), and no import cycle between the modules of a crate (module
//! A uses B and B uses A, directly or through others).
//!
//! Imports are read from the text: every `crate::a::b…` path and every
//! `super::…` path outside comments and test blocks names the longest
//! module prefix it matches; a `use crate::{a, b::c}` group names each.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines of code one source file may hold.
const MAX_CODE_LINES: usize = 1000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every crate's `src` directory.
fn crate_sources() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("src"),
            )
        })
        .filter(|(_, src)| src.is_dir())
        .collect();
    out.sort();
    out
}

/// The text without its unit-test block and without comments.
fn code_of(text: &str) -> String {
    let body = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i]);
    body.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_source_file_is_over_a_thousand_lines_of_code() {
    let mut over = Vec::new();
    let mut files = 0;
    for (_, src) in crate_sources() {
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        for p in paths.iter().filter(|p| !p.ends_with("tests.rs")) {
            files += 1;
            let n = code_of(&std::fs::read_to_string(p).unwrap())
                .lines()
                .count();
            if n > MAX_CODE_LINES {
                over.push(format!("{} ({n} lines of code)", p.display()));
            }
        }
    }
    assert!(files > 100, "only {files} source files found");
    assert!(over.is_empty(), "split these files by job: {over:?}");
}

/// A module's path in its crate (`pam::search`), from its file.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        parts.pop();
    }
    parts
}

/// The modules `file` (module `me`) imports, among `modules`.
fn imports(me: &[String], text: &str, modules: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let resolve = |path: Vec<String>| -> Option<Vec<String>> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains(p))
    };
    let code = code_of(text);
    let mut out = BTreeSet::new();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut rest = code.as_str();
    while let Some(i) = rest.find(['c', 's']) {
        let at = &rest[i..];
        let boundary = rest[..i].chars().last().is_none_or(|c| !word(c));
        let head = ["crate::", "super::"]
            .into_iter()
            .find(|h| at.starts_with(h));
        rest = &rest[i + 1..];
        let (Some(head), true) = (head, boundary) else {
            continue;
        };
        let tail: String = at[head.len()..]
            .chars()
            .take_while(|c| word(*c) || *c == ':' || *c == '{' || *c == ',' || *c == ' ')
            .collect();
        let mut base: Vec<String> = if head == "crate::" {
            Vec::new()
        } else {
            me[..me.len().saturating_sub(1)].to_vec()
        };
        let mut segments: Vec<&str> = tail.split("::").map(str::trim).collect();
        while segments.first() == Some(&"super") {
            segments.remove(0);
            base.pop();
        }
        // `crate::{a, b::c}`: each member of the group.
        if let Some(group) = segments.first().and_then(|s| s.strip_prefix('{')) {
            for member in group.split(',') {
                let first = member.trim().split("::").next().unwrap_or("");
                if !first.is_empty() {
                    let mut p = base.clone();
                    p.push(first.to_string());
                    out.extend(resolve(p));
                }
            }
            continue;
        }
        let mut p = base;
        for s in segments {
            let name: String = s.chars().take_while(|c| word(*c)).collect();
            if name.is_empty() {
                break;
            }
            p.push(name);
        }
        out.extend(resolve(p));
    }
    out.remove(me);
    out
}

/// The strongly connected components of more than one module.
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    // Two modules are in one cycle when each reaches the other.
    let reach = |from: &Vec<String>| -> BTreeSet<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<_, _> = edges.keys().map(|m| (m.clone(), reach(m))).collect();
    let mut out = Vec::new();
    let mut placed = BTreeSet::new();
    for m in edges.keys() {
        if placed.contains(m) || !reached[m].contains(m) {
            continue;
        }
        let group: Vec<String> = edges
            .keys()
            .filter(|n| reached[m].contains(*n) && reached[*n].contains(m))
            .inspect(|n| {
                placed.insert((*n).clone());
            })
            .map(|n| n.join("::"))
            .collect();
        out.push(group);
    }
    out
}

#[test]
fn no_crate_has_an_import_cycle() {
    let mut found = Vec::new();
    for (name, src) in crate_sources() {
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let files: Vec<(Vec<String>, String)> = paths
            .iter()
            .filter(|p| !p.ends_with("tests.rs"))
            .map(|p| (module_of(&src, p), std::fs::read_to_string(p).unwrap()))
            .collect();
        let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
        let edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = files
            .iter()
            .map(|(m, text)| (m.clone(), imports(m, text, &modules)))
            .collect();
        for cycle in cycles(&edges) {
            found.push(format!("{name}: {}", cycle.join(" → ")));
        }
    }
    assert!(found.is_empty(), "import cycles: {found:?}");
}

#[test]
fn the_cycle_finder_sees_a_cycle() {
    let modules: BTreeSet<Vec<String>> = [vec![], vec!["a".into()], vec!["b".into()]].into();
    let a = imports(&["a".into()], "use crate::b::Thing;\n", &modules);
    let b = imports(&["b".into()], "fn f() { super::a::g(); }\n", &modules);
    let edges: BTreeMap<_, _> = [(vec!["a".into()], a), (vec!["b".into()], b)].into();
    assert_eq!(cycles(&edges), vec![vec!["a".to_string(), "b".to_string()]]);
    let none = imports(&["a".into()], "// crate::b::Thing\n", &modules);
    assert!(none.is_empty(), "a comment is not an import: {none:?}");
}
