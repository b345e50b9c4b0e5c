//! The harness's modules form layers: no module reaches, through the modules it names, back to
//! itself. (Cargo already refuses an import from the harness up into the papers' crate; this
//! checks the order inside the harness.) Library code only: test modules and the `testing`
//! module may name anything.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The library part of a source file: comment lines and the trailing test module left out.
fn library_text(text: &str) -> String {
    let end = ["#[cfg(test)]\nmod tests", "#[cfg(test)]\npub(crate) mod tests"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate's top-level modules each module names (`crate::x` or `use crate::{x, ...}`).
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let top = |p: &Path| -> String {
        let rel = p.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        first.trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = files.iter().map(|p| top(p)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in &files {
        let from = top(path);
        if from == "lib" || from == "testing" || path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = library_text(&fs::read_to_string(path).unwrap());
        let mut named = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for part in group.split(',') {
                    let name = part.trim().split("::").next().unwrap_or("").trim();
                    named.insert(name.to_string());
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                named.insert(name);
            }
        }
        let deps = edges.entry(from.clone()).or_default();
        for name in named {
            if name != from && modules.contains(&name) {
                deps.insert(name);
            }
        }
    }
    edges
}

/// A path of modules from `from` back to `from`, if there is one.
fn cycle_through(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap().clone();
        for next in edges.get(&last).into_iter().flatten() {
            if next == from {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

#[test]
fn no_harness_module_reaches_back_to_itself() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    // The graph is read at all: the runner names the experiment contract and the results.
    assert!(edges["runner"].contains("experiment") && edges["runner"].contains("result"));
    for module in edges.keys() {
        if let Some(cycle) = cycle_through(&edges, module) {
            panic!("import circle in the harness: {}", cycle.join(" -> "));
        }
    }
}
