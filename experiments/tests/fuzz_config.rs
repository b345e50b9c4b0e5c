//! Hostile configuration: `--set KEY=VALUE` overlays of every registered experiment with mutated
//! keys and values, config files (JSON and TOML) of raw and mutated text, and result files (as
//! `plot` and `report` read them) of raw bytes and mutated valid results. The property: never a
//! panic; `Ok`, or an error whose message is not empty. Budget: `FUZZ_CASES` cases per target
//! (default 32); `make fuzz` runs many more and prints the executions per target.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::path::Path;

use lsmlab::registry;
use lsmlab_harness::config::{parse_assignment, ConfigFile, Overlay};
use lsmlab_harness::result::ResultFile;
use lsmlab_harness::scale::Scale;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32)
}

fn run<T: std::fmt::Debug>(
    target: &str,
    strategy: impl Strategy<Value = T>,
    f: impl Fn(&T) -> Result<(), String>,
) {
    let (ok, err, runs) = (Cell::new(0u64), Cell::new(0u64), Cell::new(0u64));
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |t| {
        runs.set(runs.get() + 1);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&t))) {
            Ok(Ok(())) => ok.set(ok.get() + 1),
            Ok(Err(msg)) => {
                prop_assert!(!msg.trim().is_empty(), "an error with an empty message");
                err.set(err.get() + 1);
            }
            Err(_) => return Err(TestCaseError::fail(format!("{target}: panic"))),
        }
        Ok(())
    });
    println!(
        "fuzz {target}: {} executions, {} accepted, {} refused with an error",
        runs.get(),
        ok.get(),
        err.get()
    );
    if let Err(e) = result {
        panic!("{target}: {e}");
    }
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("1e308".to_string()),
        Just("18446744073709551616".to_string()),
        Just("true".to_string()),
        Just("[1,2".to_string()),
        Just("a,b,,c".to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
        ".{0,12}",
    ]
}

#[test]
fn set_overlays_of_every_experiment() {
    let experiments = registry::all();
    let keys: Vec<Vec<String>> = experiments
        .iter()
        .map(|e| {
            e.resolve(Scale::Tiny, &Overlay::default())
                .unwrap()
                .keys()
                .cloned()
                .collect()
        })
        .collect();
    let n = experiments.len();
    run(
        "--set overlays",
        (
            0..n,
            prop::collection::vec(
                (
                    any::<usize>(),
                    prop_oneof![3 => Just(None), 1 => ".{0,8}".prop_map(Some)],
                    value(),
                ),
                1..4,
            ),
        ),
        |(e, sets)| {
            let ks = &keys[*e];
            let args: Vec<String> = sets
                .iter()
                .map(|(k, raw_key, v)| match raw_key {
                    Some(raw) => format!("{raw}={v}"),
                    None => format!("{}={v}", ks[k % ks.len()]),
                })
                .collect();
            for a in &args {
                let _ = parse_assignment(a).map_err(|e| assert!(!e.to_string().is_empty()));
            }
            experiments[*e]
                .resolve(Scale::Tiny, &Overlay::sets(&args))
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        },
    );
}

#[test]
fn config_files() {
    let dir = std::env::temp_dir().join(format!("lsmlab-fuzz-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let seed = serde_json::to_string_pretty(
        &registry::all()[0]
            .resolve(Scale::Tiny, &Overlay::default())
            .unwrap(),
    )
    .unwrap();
    run(
        "config files (JSON, TOML)",
        (
            any::<bool>(),
            prop::collection::vec((any::<usize>(), 0usize..8, ".{0,6}"), 0..6),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..200)),
        ),
        |(toml, edits, raw)| {
            let path = dir.join(if *toml { "c.toml" } else { "c.json" });
            let bytes = match raw {
                Some(b) => b.clone(),
                None => {
                    let mut s = seed.clone().into_bytes();
                    for (at, del, ins) in edits {
                        let at = at % (s.len() + 1);
                        let end = (at + del).min(s.len());
                        s.splice(at..end, ins.bytes());
                    }
                    s
                }
            };
            std::fs::write(&path, bytes).unwrap();
            let r = ConfigFile::read(&path).map_err(|e| format!("{e:#}"))?;
            let overlay = Overlay {
                file: Some(r),
                sets: Vec::new(),
            };
            registry::all()[0]
                .resolve(Scale::Tiny, &overlay)
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn result_files() {
    let dir = std::env::temp_dir().join(format!("lsmlab-fuzz-results-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/small");
    let seeds: Vec<String> = std::fs::read_dir(&committed)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                .take(4)
                .collect()
        })
        .unwrap_or_default();
    let seeds = if seeds.is_empty() {
        vec!["{}".to_string()]
    } else {
        seeds
    };
    run(
        "result files (plot, report)",
        (
            any::<usize>(),
            prop::collection::vec((any::<usize>(), 0usize..8, ".{0,6}"), 0..6),
            prop::option::of(any::<usize>()),
        ),
        |(which, edits, truncate)| {
            let mut s = seeds[which % seeds.len()].clone().into_bytes();
            for (at, del, ins) in edits {
                let at = at % (s.len() + 1);
                let end = (at + del).min(s.len());
                s.splice(at..end, ins.bytes());
            }
            if let Some(t) = truncate {
                s.truncate(t % (s.len() + 1));
            }
            let path = dir.join("r.json");
            std::fs::write(&path, s).unwrap();
            ResultFile::read(&path).map(|_| ()).map_err(|e| format!("{e:#}"))
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
}
