//! The counted figures of every RUM-tree experiment at `SCALE=tiny`, seed 42, against a reference
//! committed in `tests/reference/tiny/`: page reads and writes, flushes, merges, Update Memo sizes,
//! candidates, results. A refactoring must leave them identical; a change that alters them on
//! purpose (a new default, a fixed bug) regenerates the reference with
//! `LSMLAB_BLESS=1 cargo test -p lsmlab --test counted_reference` and says why in its commit.
//!
//! Timings (`*_ms`, `*_us`, `*_ops_s`) are left out: they are measured, not counted. So are the
//! figures that depend on how threads interleave (flushes, page I/O and UM sizes of multi-threaded
//! `rum-concurrency` runs; their fresh sets are checked against a replay inside the experiment).

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const EXPERIMENTS: [&str; 5] = [
    "rum-update",
    "rum-query",
    "rum-mixed",
    "rum-concurrency",
    "rum-tuning",
];

fn is_timing(key: &str) -> bool {
    key.ends_with("_ms") || key.ends_with("_us") || key.ends_with("_ops_s")
}

/// Fields of a multi-threaded `rum-concurrency` row that depend on the interleaving.
fn depends_on_interleaving(experiment: &str, row: &Map<String, Value>, key: &str) -> bool {
    experiment == "rum-concurrency"
        && row.get("threads").and_then(Value::as_u64).unwrap_or(1) > 1
        && (matches!(key, "flushes" | "merges" | "um_entries_final" | "um_max_entries")
            || key.ends_with("page_reads")
            || key.ends_with("page_writes"))
}

/// The counted part of each row, in row order.
fn counted(experiment: &str, result: &Value) -> Vec<Map<String, Value>> {
    result["rows"]
        .as_array()
        .expect("a result has rows")
        .iter()
        .map(|row| {
            let row = row.as_object().expect("a row is an object");
            row.iter()
                .filter(|(k, _)| !is_timing(k) && !depends_on_interleaving(experiment, row, k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

/// Equal, where averages (non-integers) may differ in the last bits: the optimisation level changes
/// how a float sum is rounded, so the release binary and the test binary disagree at ~1e-16.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) if !(x.is_u64() && y.is_u64()) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => a == b,
    }
}

fn reference_path(experiment: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/tiny")
        .join(format!("{experiment}.counted.json"))
}

#[test]
fn counted_figures_of_every_rum_experiment_match_the_reference() {
    let bless = std::env::var_os("LSMLAB_BLESS").is_some();
    let dir = tempfile::tempdir().unwrap();
    let mut mismatches = Vec::new();
    for experiment in EXPERIMENTS {
        let out = Command::new(env!("CARGO_BIN_EXE_lsmlab"))
            .args([
                "run", experiment, "--scale", "tiny", "--seed", "42", "--quiet", "--out",
            ])
            .arg(dir.path())
            .output()
            .expect("lsmlab runs");
        assert!(
            out.status.success(),
            "{experiment}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text =
            std::fs::read_to_string(dir.path().join("tiny").join(format!("{experiment}.json"))).unwrap();
        let result: Value = serde_json::from_str(&text).unwrap();
        let got = counted(experiment, &result);
        let path = reference_path(experiment);
        if bless {
            std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
            continue;
        }
        let want: Vec<Map<String, Value>> = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (LSMLAB_BLESS=1 writes it)", path.display())),
        )
        .unwrap();
        if got.len() != want.len() {
            mismatches.push(format!(
                "{experiment}: {} rows, reference has {}",
                got.len(),
                want.len()
            ));
            continue;
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let differs = |k: &String| !same(g.get(k), w.get(k));
            if w.keys().chain(g.keys()).any(differs) {
                let keys: std::collections::BTreeSet<&String> =
                    w.keys().chain(g.keys()).filter(|k| differs(k)).collect();
                let show = |m: &Map<String, Value>| {
                    keys.iter()
                        .map(|k| format!("{k}={}", m.get(*k).unwrap_or(&Value::Null)))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                mismatches.push(format!(
                    "{experiment} row {i} ({} {}): got {}, reference {}",
                    w.get("dataset").unwrap_or(&Value::Null),
                    w.get("strategy").unwrap_or(&Value::Null),
                    show(g),
                    show(w)
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} counted figures differ from tests/reference/tiny:\n{}",
        mismatches.len(),
        mismatches.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}
