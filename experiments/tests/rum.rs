//! The RUM-tree experiments end to end through the binary, at a few thousand records: the result
//! files carry exactly the contracted fields, counted quantities are deterministic, and bad
//! parameters fail without writing anything.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run(experiment: &str, out: &Path, sets: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lsmlab"));
    cmd.args(["run", experiment, "--scale", "tiny", "--quiet", "--out"])
        .arg(out);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.output().expect("lsmlab runs")
}

fn rows(out: &Path, experiment: &str) -> Vec<serde_json::Map<String, Value>> {
    let text = std::fs::read_to_string(out.join("tiny").join(format!("{experiment}.json"))).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .collect()
}

/// The fields of a rum-update row, exactly (the contract).
const UPDATE_FIELDS: [&str; 27] = [
    "dataset",
    "strategy",
    "records",
    "update_ms",
    "flush_ms",
    "merge_ms",
    "total_ms",
    "flushes",
    "merges",
    "um_max_entries",
    "page_reads",
    "page_writes",
    "final_components",
    "final_disk_entries",
    "modelled_ms",
    "update_page_reads",
    "update_page_writes",
    "update_modelled_ms",
    "flush_page_reads",
    "flush_page_writes",
    "flush_modelled_ms",
    "merge_page_reads",
    "merge_page_writes",
    "merge_modelled_ms",
    "objects",
    "memory_capacity_entries",
    "objects_per_memory_capacity",
];

#[test]
fn rum_update_writes_33_rows_with_exactly_the_contracted_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = run("rum-update", dir.path(), &["records=3000", "memory_pages=8"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = rows(dir.path(), "rum-update");
    assert_eq!(rows.len(), 33);
    let mut want = UPDATE_FIELDS.to_vec();
    want.sort_unstable();
    for r in &rows {
        let mut keys: Vec<&str> = r.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(r["records"], 3000);
        let um = r["strategy"].as_str().unwrap().starts_with("UM");
        assert_eq!(r["um_max_entries"].as_u64().unwrap() > 0, um, "{r:?}");
        for io in ["page_reads", "page_writes"] {
            let phase = |p: &str| r[&format!("{p}_{io}")].as_u64().unwrap();
            assert_eq!(
                phase("update") + phase("flush") + phase("merge"),
                r[io].as_u64().unwrap(),
                "the phases split {io}: {r:?}"
            );
        }
    }
    let strategies: Vec<&str> = rows[..11]
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(
        strategies,
        [
            "Eager",
            "Eager(buddy)",
            "Eager(physical)",
            "Validation",
            "Validation(key-index)",
            "Validation(repair)",
            "UM",
            "UM+F",
            "UM+M",
            "UM+BV",
            "UM+FMBV"
        ]
    );
    // with 8 memory pages, 3000 records cross several flushes for the uncleaned UM
    let um_gowalla = rows
        .iter()
        .find(|r| r["dataset"] == "gowalla" && r["strategy"] == "UM")
        .unwrap();
    assert!(um_gowalla["flushes"].as_u64().unwrap() >= 3);
}

#[test]
fn counted_quantities_are_deterministic_for_a_seed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&a, &b] {
        let out = run(
            "rum-update",
            d.path(),
            &["records=2000", "memory_pages=8", "datasets=berlinmod"],
        );
        assert!(out.status.success());
    }
    let counted = [
        "flushes",
        "merges",
        "um_max_entries",
        "page_reads",
        "page_writes",
        "final_disk_entries",
    ];
    for (x, y) in rows(a.path(), "rum-update")
        .iter()
        .zip(rows(b.path(), "rum-update").iter())
    {
        for k in counted {
            assert_eq!(x[k], y[k], "{k} of {}", x["strategy"]);
        }
    }
}

#[test]
fn a_bad_value_names_the_key_and_writes_no_result() {
    let dir = tempfile::tempdir().unwrap();
    for (set, needle) in [
        ("memory_pages=0", "memory_pages"),
        ("strategies=UM+Q", "UM+Q"),
        ("vacuum_thresold=8", "vacuum_thresold"),
        ("device=tape", "device"),
    ] {
        let out = run("rum-update", dir.path(), &[set]);
        assert!(!out.status.success(), "{set} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{set}: {err}");
    }
    assert!(!dir.path().join("tiny").join("rum-update.json").exists());
}

#[test]
fn rum_query_rows_cover_every_strategy_and_selectivity() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        "rum-query",
        dir.path(),
        &["records=3000", "memory_pages=8", "queries=5", "datasets=chicago"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = rows(dir.path(), "rum-query");
    assert_eq!(rows.len(), 11 * 7);
    // every strategy returned the same results (the run checks it); the averages agree too
    for sel in [0.001, 0.343] {
        let results: Vec<f64> = rows
            .iter()
            .filter(|r| r["selectivity"].as_f64() == Some(sel))
            .map(|r| r["avg_results"].as_f64().unwrap())
            .collect();
        assert_eq!(results.len(), 11);
        assert!(results.iter().all(|&x| x == results[0]), "{results:?}");
    }
}

#[test]
fn rum_concurrency_checks_against_a_replay_and_reports_each_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        "rum-concurrency",
        dir.path(),
        &[
            "records=3000",
            "memory_pages=8",
            "datasets=berlinmod",
            "threads=1,2,4",
            "strategies=UM,UM+FMBV",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = rows(dir.path(), "rum-concurrency");
    assert_eq!(rows.len(), 2 * 3);
    let um: Vec<&serde_json::Map<String, Value>> = rows.iter().filter(|r| r["strategy"] == "UM").collect();
    // without cleaning the final UM size does not depend on the interleaving
    assert!(um
        .iter()
        .all(|r| r["um_entries_final"] == um[0]["um_entries_final"]));
}

/// The counted fields of the rows (timings are measured, not counted).
fn counted(rows: &[serde_json::Map<String, Value>]) -> Vec<serde_json::Map<String, Value>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .filter(|(k, _)| !(k.ends_with("_ms") || k.ends_with("_us") || k.ends_with("_ops_s")))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

fn config(out: &Path, experiment: &str) -> Value {
    let text = std::fs::read_to_string(out.join("tiny").join(format!("{experiment}.json"))).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["config"].clone()
}

#[test]
fn a_printed_config_or_a_result_file_repeats_the_run() {
    let sets = [
        "records=2000",
        "memory_pages=8",
        "datasets=berlinmod",
        "strategies=Validation,UM+FMBV",
        "vacuum_threshold=4",
    ];
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let out = run("rum-update", a.path(), &sets);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let mut print = Command::new(env!("CARGO_BIN_EXE_lsmlab"));
    print.args(["run", "rum-update", "--scale", "tiny", "--print-config"]);
    for s in sets {
        print.args(["--set", s]);
    }
    let printed = print.output().unwrap();
    assert!(printed.status.success());
    let file = a.path().join("printed.json");
    std::fs::write(&file, &printed.stdout).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&printed.stdout).unwrap(),
        config(a.path(), "rum-update"),
        "a result's config is the printed config"
    );

    let with_config = |config: &Path, out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_lsmlab"))
            .args(["run", "rum-update", "--scale", "tiny", "--quiet", "--config"])
            .arg(config)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };
    let out = with_config(&file, b.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result_file = a.path().join("tiny/rum-update.json");
    let out = with_config(&result_file, c.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for dir in [&b, &c] {
        assert_eq!(config(dir.path(), "rum-update"), config(a.path(), "rum-update"));
        assert_eq!(
            counted(&rows(dir.path(), "rum-update")),
            counted(&rows(a.path(), "rum-update"))
        );
    }
}
