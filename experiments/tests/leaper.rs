//! The Leaper experiments end to end through the binary, on a store of a few thousand records: the
//! rows carry the ratios and windows they promise, counted figures (and the virtual clock's) are
//! the same for the same seed, and bad parameters fail without writing anything.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value};
use std::path::Path;
use std::process::Command;

type Row = Map<String, Value>;

/// A store small enough for the test profile: 2,000 records, 40 intervals.
const SMALL: [&str; 5] = [
    "records=2000",
    "warmup_ops=4000",
    "intervals=40",
    "gbdt_rounds=10",
    "t2_intervals=2",
];

fn run(experiment: &str, out: &Path, sets: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lsmlab"));
    cmd.args(["run", experiment, "--scale", "tiny", "--quiet", "--out"])
        .arg(out);
    for s in SMALL.iter().chain(sets) {
        cmd.args(["--set", s]);
    }
    cmd.output().expect("lsmlab runs")
}

fn result(out: &Path, experiment: &str) -> Value {
    let text = std::fs::read_to_string(out.join("tiny").join(format!("{experiment}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn rows(v: &Value, kind: &str) -> Vec<Row> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_object().unwrap().clone())
        .filter(|r| r["kind"] == kind)
        .collect()
}

/// lsmlab's own rows (the fjall peer's say `engine = fjall`).
fn lsmlab_rows(v: &Value, kind: &str) -> Vec<Row> {
    let rows: Vec<Row> = rows(v, kind)
        .into_iter()
        .filter(|r| r["engine"] == "lsmlab")
        .collect();
    rows
}

fn f(r: &Row, k: &str) -> f64 {
    r[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing or not a number: {r:?}"))
}

const ONLINE: [&str; 2] = ["workloads=synthetic", "policies=incremental-warmup,leaper"];

#[test]
fn leaper_online_rows_carry_the_ratios_the_windows_and_the_summary_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = run("leaper-online", dir.path(), &ONLINE);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = result(dir.path(), "leaper-online");
    let intervals = lsmlab_rows(&v, "interval");
    let summaries = lsmlab_rows(&v, "summary");
    assert_eq!(intervals.len(), 2 * 40, "40 intervals per policy");
    assert_eq!(summaries.len(), 2);
    for r in intervals.iter().chain(&summaries) {
        assert!((f(r, "cache_data_ratio") - 0.3).abs() < 0.01, "{r:?}");
        assert!((f(r, "memtable_data_ratio") - 0.1).abs() < 0.001, "{r:?}");
        assert!(r["background_ops"].as_u64().unwrap() >= 1, "{r:?}");
    }
    for r in &intervals {
        for k in [
            "interval",
            "hit_ratio",
            "qps",
            "p95_us",
            "in_flush",
            "in_compaction",
        ] {
            assert!(r.contains_key(k), "{k}: {r:?}");
        }
    }
    assert!(intervals.iter().any(|r| r["in_flush"] == true));
    for r in intervals.iter().chain(&summaries) {
        for k in ["compaction_cache_ratio", "cached_inputs_per_compaction"] {
            assert!(f(r, k) >= 0.0, "{k}: {r:?}");
        }
    }
    // the variants ran beside the default, under lru and Table 4's pair, in rows of their own kind
    let variants = lsmlab_rows(&v, "variant-summary");
    let names: std::collections::BTreeSet<&str> =
        variants.iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["keys=scrambled-zipfian", "keys=special", "shape=table2"].into(),
        "the default variants"
    );
    assert_eq!(variants.len(), 9, "3 variants x 3 policies");
    assert_eq!(lsmlab_rows(&v, "variant-interval").len(), 9 * 40);
    // Table 2's synthetic table is 20 M of the 50 M records: the cache is 0.75 of its data
    for r in variants.iter().filter(|r| r["variant"] == "shape=table2") {
        assert!((f(r, "cache_data_ratio") - 0.75).abs() < 0.02, "{r:?}");
        assert!((f(r, "memtable_data_ratio") - 0.25).abs() < 0.01, "{r:?}");
    }
    for r in &summaries {
        for k in [
            "hit_ratio",
            "qps",
            "p95_us",
            "p99_us",
            "cache_misses_in_windows",
            "invalidations",
            "latency_spikes",
            "prefetched_blocks",
            "prefetch_hits",
            "overhead_pct",
        ] {
            assert!(r.contains_key(k), "{k}: {r:?}");
        }
        // the background operations of a run are its flushes and compactions
        assert_eq!(
            r["background_ops"].as_u64().unwrap(),
            r["flushes"].as_u64().unwrap() + r["compactions"].as_u64().unwrap()
        );
        // every operation's block reads are in exactly one interval
        let per_interval: u64 = intervals
            .iter()
            .filter(|i| i["policy"] == r["policy"])
            .map(|i| i["cache_misses"].as_u64().unwrap())
            .sum();
        assert_eq!(per_interval, r["cache_misses"].as_u64().unwrap());
    }
    let base = summaries
        .iter()
        .find(|r| r["policy"] == "incremental-warmup")
        .unwrap();
    assert_eq!(f(base, "overhead_pct"), 0.0, "the baseline against itself");
    let leaper = summaries.iter().find(|r| r["policy"] == "leaper").unwrap();
    assert!(leaper.contains_key("inference_ms") && f(leaper, "prefetched_blocks") > 0.0);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(notes
        .iter()
        .any(|n| n.contains("cache / data = 0.3") && n.contains("memtable / data = 0.1")));
    assert!(notes.iter().any(|n| n.starts_with("Latency spike")));
    assert!(notes
        .iter()
        .any(|n| n.starts_with("Keys: key_dist = sysbench-zipfian")));
    assert!(notes
        .iter()
        .any(|n| n.starts_with("Variants (rows kind = variant-interval")));
    assert!(notes
        .iter()
        .any(|n| n.contains("saved") && n.contains("loaded back")));
    fjall_peer_rows(&v, &summaries, &notes);
}

/// With the `fjall` feature, the workload also ran on fjall: 40 intervals of a fixed op count
/// after lsmlab's warm-up, counters that add up, and the note that says what the numbers are.
#[cfg(feature = "fjall")]
fn fjall_peer_rows(v: &Value, lsmlab: &[Row], notes: &[&str]) {
    let of = |kind: &str| -> Vec<Row> {
        rows(v, kind)
            .into_iter()
            .filter(|r| r["engine"] == "fjall")
            .collect()
    };
    let (intervals, summaries) = (of("interval"), of("summary"));
    assert_eq!(intervals.len(), 40, "as many intervals as lsmlab's runs");
    assert_eq!(summaries.len(), 1);
    let s = &summaries[0];
    assert_eq!(s["policy"], "fjall");
    assert!(
        s["engine_version"].as_str().unwrap().starts_with("fjall 3."),
        "{s:?}"
    );
    // lsmlab's runs here are incremental-warmup and leaper: the first one's measured ops are
    // matched, in 40 equal intervals
    let matched = lsmlab[0]["ops"].as_u64().unwrap();
    let per = s["interval_ops"].as_u64().unwrap();
    assert_eq!(per, matched / 40);
    assert_eq!(s["ops"].as_u64().unwrap(), per * 40);
    let warmup = notes
        .iter()
        .find_map(|n| {
            n.strip_prefix("synthetic: warm-up of ")?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .expect("the warm-up note");
    assert_eq!(s["warmup_ops"].as_u64(), Some(warmup));
    for (n, r) in intervals.iter().enumerate() {
        assert_eq!(r["interval"].as_u64(), Some(n as u64));
        assert_eq!(r["ops"].as_u64(), Some(per));
        for k in ["hit_ratio", "ops_per_s", "p95_us", "in_flush", "in_compaction"] {
            assert!(r.contains_key(k), "{k}: {r:?}");
        }
        assert!((f(r, "cache_data_ratio") - 0.3).abs() < 1e-9, "{r:?}");
        assert!((f(r, "memtable_data_ratio") - 0.1).abs() < 1e-9, "{r:?}");
    }
    for k in ["cache_hits", "cache_misses", "flushes", "compactions"] {
        let sum: u64 = intervals.iter().map(|r| r[k].as_u64().unwrap()).sum();
        assert_eq!(Some(sum), s[k].as_u64(), "{k}");
    }
    // ~10k ops, a fifth of them writes of ~200 B against a ~42 KB memtable: fjall flushes
    assert!(s["flushes"].as_u64().unwrap() >= 1, "{s:?}");
    let windows = intervals.iter().filter(|r| r["in_window"] == true).count() as u64;
    assert_eq!(s["window_intervals"].as_u64(), Some(windows));
    for k in [
        "hit_ratio",
        "qps",
        "p95_us",
        "p99_us",
        "hit_ratio_in_windows",
        "dips",
        "dips_in_or_after_window",
    ] {
        assert!(s.contains_key(k), "{k}: {s:?}");
    }
    assert!(s["dips_in_or_after_window"].as_u64() <= s["dips"].as_u64());
    let note = notes
        .iter()
        .find(|n| n.starts_with("fjall peer, synthetic"))
        .expect("the fjall note");
    assert!(
        note.contains("wall time") && note.contains("not LRU") && note.contains("hit-ratio dip"),
        "{note}"
    );
}

#[cfg(not(feature = "fjall"))]
fn fjall_peer_rows(v: &Value, _: &[Row], _: &[&str]) {
    assert!(v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["engine"] != "fjall"));
}

#[test]
fn counted_and_virtual_figures_are_deterministic_for_a_seed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&a, &b] {
        // fjall's figures depend on its threads' timing: lsmlab's alone are compared
        let out = run(
            "leaper-online",
            d.path(),
            &[ONLINE[0], ONLINE[1], "fjall_peer=false"],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (x, y) = (
        result(a.path(), "leaper-online"),
        result(b.path(), "leaper-online"),
    );
    let keys = [
        "ops",
        "cache_hits",
        "cache_misses",
        "cache_misses_in_windows",
        "invalidations",
        "flushes",
        "compactions",
        "prefetched_blocks",
        "prefetch_hits",
        "qps",
        "p95_us",
        "latency_spikes",
    ];
    let (sx, sy) = (rows(&x, "summary"), rows(&y, "summary"));
    assert_eq!(sx.len(), sy.len());
    for (r, s) in sx.iter().zip(&sy) {
        for k in keys {
            assert_eq!(r[k], s[k], "{k} of {}", r["policy"]);
        }
    }
    let (ix, iy) = (rows(&x, "interval"), rows(&y, "interval"));
    for (r, s) in ix.iter().zip(&iy) {
        for k in ["ops", "cache_misses", "p95_us", "in_compaction"] {
            assert_eq!(r[k], s[k], "interval {} {k}", r["interval"]);
        }
    }
}

#[test]
fn leaper_model_reports_metrics_ablation_and_importance() {
    let dir = tempfile::tempdir().unwrap();
    let out = run("leaper-model", dir.path(), &["workloads=e-commerce", "steps=2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = result(dir.path(), "leaper-model");
    let metrics = rows(&v, "metrics");
    assert_eq!(metrics.len(), 4, "2 steps x (leaper, last-slot)");
    for m in &metrics {
        for k in ["precision", "recall"] {
            assert!((0.0..=1.0).contains(&f(m, k)), "{m:?}");
        }
    }
    assert!(metrics.iter().any(|m| m["model"] == "last-slot"));
    let leaper = metrics.iter().find(|m| m["model"] == "leaper").unwrap();
    assert!(f(leaper, "train_s") >= 0.0 && f(leaper, "inference_ms") >= 0.0);
    let ablation: Vec<String> = rows(&v, "ablation")
        .iter()
        .map(|r| r["features"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ablation, ["R", "R/W", "R/W/T", "R/W/T/P"]);
    let importance = rows(&v, "importance");
    assert_eq!(importance.len(), 4);
    let total: f64 = importance.iter().map(|r| f(r, "share_pct")).sum();
    assert!((total - 100.0).abs() < 1e-6 || total == 0.0, "{total}");
}

#[test]
fn leaper_sensitivity_reports_gains_and_the_best_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        "leaper-sensitivity",
        dir.path(),
        &[
            "zipfs=0,0.9",
            "range_shares=0.2",
            "cache_ratios=0.1",
            "range_sizes=10",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = result(dir.path(), "leaper-sensitivity");
    let gains = rows(&v, "gain");
    let sweeps: Vec<&str> = gains.iter().map(|g| g["sweep"].as_str().unwrap()).collect();
    assert_eq!(
        sweeps,
        ["zipf", "zipf", "range_share", "cache_ratio", "range_size"]
    );
    assert_eq!(rows(&v, "summary").len(), 2 * 5, "two policies per cell");
    let best = rows(&v, "best");
    assert_eq!(best.len(), 4);
    let zipf = best.iter().find(|b| b["sweep"] == "zipf").unwrap();
    let at = f(zipf, "best_qps_gain_at");
    assert!(at == 0.0 || at == 0.9, "{zipf:?}");
}

#[test]
fn bad_values_name_the_key_and_write_no_result() {
    let dir = tempfile::tempdir().unwrap();
    for (experiment, set, needle) in [
        ("leaper-online", "cache_ratio=0", "cache_ratio"),
        ("leaper-online", "policies=lfu", "lfu"),
        ("leaper-online", "workloads=tpcc", "tpcc"),
        ("leaper-online", "compaction_mb_s=0", "compaction_mb_s"),
        ("leaper-online", "cache_ration=0.3", "cache_ration"),
        ("leaper-online", "key_dist=zipf", "key_dist"),
        ("leaper-online", "variants=keys=zipf", "keys=zipf"),
        ("leaper-online", "variants=shape=table3", "shape=table3"),
        (
            "leaper-online",
            "variants=keys=special,keys=special",
            "each variant once",
        ),
        #[cfg(feature = "fjall")]
        ("leaper-online", "value_bytes=8", "value_bytes"),
        #[cfg(not(feature = "fjall"))]
        ("leaper-online", "fjall_peer=true", "fjall_peer"),
        ("leaper-sensitivity", "zipfs=0.5,1.5", "zipfs"),
        ("leaper-model", "days=1", "days"),
        ("leaper-model", "sample_p=0", "sample_p"),
    ] {
        let out = run(experiment, dir.path(), &[set]);
        assert!(!out.status.success(), "{experiment} {set}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{experiment} {set}: {err}");
    }
    assert!(!dir.path().join("tiny").exists(), "no result written");
}
