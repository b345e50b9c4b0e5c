//! Long sweeps through the `lsmlab` binary: provenance, `compare`, cells with `--resume`,
//! `--shard` with `merge`, and `--repeat`. Runs are small (a few thousand records); every
//! assertion is about counted fields, never about time.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{gen, lsmlab, ok};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value};

/// A small `rum-update` sweep: 2 datasets x 3 strategies = 6 cells.
const SETS: [&str; 8] = [
    "--set",
    "records=3000",
    "--set",
    "datasets=chicago,berlinmod",
    "--set",
    "strategies=Eager,UM+F,UM+M",
    "--seed",
    "7",
];

fn run_update(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lsmlab"));
    cmd.args(["run", "rum-update", "--scale", "tiny", "--quiet", "--out"])
        .arg(out)
        .args(SETS)
        .args(extra)
        .env("LSMLAB_NO_MEMORY_CHECK", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("lsmlab runs")
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn is_timed(key: &str) -> bool {
    lsmlab_harness::rows::is_timed(key)
}

/// The counted part of each row, in row order.
fn counted(result: &Value) -> Vec<Map<String, Value>> {
    result["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| !is_timed(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

fn result_path(out: &Path) -> PathBuf {
    out.join("tiny/rum-update.json")
}

#[test]
fn results_record_their_provenance_and_compare_tells_counted_from_timed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    ok(&run_update(&a, &[], &[]));
    ok(&run_update(&b, &["--set", "memory_pages=32"], &[]));
    let ra = read(&result_path(&a));
    assert_eq!(counted(&ra).len(), 6);
    assert!(counted(&ra)
        .iter()
        .all(|row| row.contains_key("flushes") && !row.contains_key("update_ms")));
    let p = &ra["provenance"];
    assert_eq!(p["lsmlab_version"], env!("CARGO_PKG_VERSION"));
    assert!(p["rustc"].as_str().unwrap().starts_with("rustc "), "{p}");
    assert!(p["profile"].as_str().unwrap().contains("opt-level"), "{p}");
    let command: Vec<&str> = p["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(command[1..4], ["run", "rum-update", "--scale"]);
    assert!(command.contains(&"strategies=Eager,UM+F,UM+M"), "{command:?}");

    let (pa, pb) = (result_path(&a), result_path(&b));
    let same = ok(&lsmlab(&[
        "compare",
        pa.to_str().unwrap(),
        pa.to_str().unwrap(),
        "--check",
    ]));
    assert!(
        same.contains("6 rows matched") && same.contains("identical in every matched row"),
        "{same}"
    );
    assert!(same.contains("update_ms"), "timed fields are listed: {same}");

    let differ = lsmlab(&["compare", pa.to_str().unwrap(), pb.to_str().unwrap()]);
    let text = ok(&differ);
    assert!(text.contains("config `memory_pages` differs: 64 vs 32"), "{text}");
    assert!(
        text.contains("dataset=chicago") && text.contains("flushes: "),
        "{text}"
    );
    let checked = lsmlab(&["compare", pa.to_str().unwrap(), pb.to_str().unwrap(), "--check"]);
    assert!(!checked.status.success());
    assert!(String::from_utf8_lossy(&checked.stderr).contains("counted fields differ"));

    // A result of another experiment is refused with a clear message.
    let other = dir.path().join("other.json");
    let mut renamed = ra.clone();
    renamed["experiment"] = "rum-query".into();
    std::fs::write(&other, serde_json::to_string(&renamed).unwrap()).unwrap();
    let refused = lsmlab(&["compare", pa.to_str().unwrap(), other.to_str().unwrap()]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("different experiments") && err.contains("`rum-query`"),
        "{err}"
    );
}

#[test]
fn an_interrupted_run_resumes_to_the_uninterrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, cut) = (dir.path().join("whole"), dir.path().join("cut"));
    ok(&run_update(&whole, &[], &[]));
    let reference = read(&result_path(&whole));
    assert_eq!(reference["cells"]["total"], 6);
    assert_eq!(reference["cells"]["done"].as_array().unwrap().len(), 6);
    assert_eq!(
        reference["cells"]["done"][1]["label"],
        "datasets=chicago strategies=UM+F"
    );

    // Stopped after 2 cells: no result, a partial file with those 2 cells.
    let stopped = run_update(&cut, &[], &[("LSMLAB_ABORT_AFTER_CELLS", "2")]);
    assert!(!stopped.status.success());
    let err = String::from_utf8_lossy(&stopped.stderr);
    assert!(err.contains("--resume"), "{err}");
    assert!(!result_path(&cut).exists(), "an interrupted run leaves no result");
    let partial = cut.join("tiny/rum-update.json.partial");
    assert_eq!(read(&partial)["cells"]["done"].as_array().unwrap().len(), 2);

    // Resumed and stopped again after 3 more cells, then finished.
    assert!(
        !run_update(&cut, &["--resume"], &[("LSMLAB_ABORT_AFTER_CELLS", "3")])
            .status
            .success()
    );
    assert_eq!(read(&partial)["cells"]["done"].as_array().unwrap().len(), 5);
    ok(&run_update(&cut, &["--resume"], &[]));
    assert!(
        !partial.exists(),
        "the partial file goes once the result is written"
    );
    let resumed = read(&result_path(&cut));
    assert_eq!(counted(&resumed), counted(&reference));
    assert_eq!(resumed["notes"], reference["notes"]);
    let labels = |r: &Value| -> Vec<Value> {
        r["cells"]["done"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["label"].clone())
            .collect()
    };
    assert_eq!(labels(&resumed), labels(&reference));

    // A partial result of another run is not resumed.
    assert!(!run_update(&cut, &[], &[("LSMLAB_ABORT_AFTER_CELLS", "1")])
        .status
        .success());
    let other = run_update(&cut, &["--resume", "--set", "memory_pages=32"], &[]);
    assert!(!other.status.success());
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(
        err.contains("cannot --resume") && err.contains("config differs"),
        "{err}"
    );
}

#[test]
fn two_shards_merge_into_the_unsharded_result() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, shards) = (dir.path().join("whole"), dir.path().join("shards"));
    ok(&run_update(&whole, &[], &[]));
    ok(&run_update(&shards, &["--shard", "1/2"], &[]));
    ok(&run_update(&shards, &["--shard", "2/2"], &[]));
    let one = shards.join("tiny/rum-update.shard-1-of-2.json");
    let two = shards.join("tiny/rum-update.shard-2-of-2.json");
    assert_eq!(read(&one)["rows"].as_array().unwrap().len(), 3);
    assert_eq!(read(&one)["cells"]["shard"]["index"], 1);

    let merged = dir.path().join("merged.json");
    // Given in any order.
    ok(&lsmlab(&[
        "merge",
        two.to_str().unwrap(),
        one.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]));
    let (m, reference) = (read(&merged), read(&result_path(&whole)));
    assert_eq!(counted(&m), counted(&reference));
    assert_eq!(m["cells"]["total"], 6);
    assert!(m["cells"].get("shard").is_none());
    let compared = ok(&lsmlab(&[
        "compare",
        merged.to_str().unwrap(),
        result_path(&whole).to_str().unwrap(),
        "--check",
    ]));
    assert!(compared.contains("identical in every matched row"), "{compared}");

    // A missing shard, a shard given twice and a shard of another run are refused, writing nothing.
    let bad = dir.path().join("bad.json");
    for (files, needle) in [
        (
            vec![&one],
            "in none of the files (cells 1, 3, 5, counted from 0): shard 2 of 2 is missing",
        ),
        (vec![&one, &one], "merge each shard once"),
    ] {
        let mut args = vec!["merge"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        args.extend(["--out", bad.to_str().unwrap()]);
        let out = lsmlab(&args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{err}");
    }
    let other = dir.path().join("other");
    ok(&run_update(
        &other,
        &["--shard", "2/2", "--set", "memory_pages=32"],
        &[],
    ));
    let out = lsmlab(&[
        "merge",
        one.to_str().unwrap(),
        other.join("tiny/rum-update.shard-2-of-2.json").to_str().unwrap(),
        "--out",
        bad.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("not shards of one run")
            && err.contains("configs differ in `memory_pages`"),
        "{err}"
    );
    assert!(!bad.exists());

    // Too many shards for the grid is an error before anything runs.
    let out = run_update(&dir.path().join("many"), &["--shard", "7/7"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("has no cells"), "{err}");
}

#[test]
fn repeat_writes_means_with_intervals_and_repetition_one_is_the_plain_run() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, repeated) = (dir.path().join("plain"), dir.path().join("repeated"));
    ok(&run_update(&plain, &[], &[]));
    ok(&run_update(
        &repeated,
        &["--repeat", "3", "--set", "datasets=chicago"],
        &[],
    ));
    let r = read(&result_path(&repeated));
    assert_eq!(r["cells"]["repeat"], 3);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["repeats"], 3);
        assert!(row.get("update_ms_ci95").is_some(), "{row}");
        assert_eq!(
            row["records"], 3000,
            "what every repetition shares stays as it is"
        );
    }
    // Repetitions draw other data (seeds derived from --seed), so some counted field varies.
    assert!(
        rows.iter().any(|row| row
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.ends_with("_ci95") && !is_timed(k))),
        "{rows:?}"
    );
    let bad = run_update(&repeated, &["--repeat", "0"], &[]);
    assert!(!bad.status.success());

    // The figures of the repeated run draw the intervals and say so; the plain run's do not.
    for (results, intervals) in [(&repeated, true), (&plain, false)] {
        let plots = results.join("plots");
        ok(&lsmlab(&[
            "plot",
            "--results",
            results.to_str().unwrap(),
            "--out",
            plots.to_str().unwrap(),
            "--scale",
            "tiny",
        ]));
        let manifest = read(&plots.join("tiny/rum-update.figures.json"));
        let figures: Vec<&str> = manifest["figures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .filter(|f| f.ends_with(".svg"))
            .collect();
        // The stacked bars of the paper's Figure 5 carry an error bar per segment.
        let stacked = "rum-update-fig5-chicago.svg";
        assert!(figures.contains(&stacked), "{figures:?}");
        let svg = std::fs::read_to_string(plots.join("tiny").join(stacked)).unwrap();
        assert_eq!(
            svg.contains(lsmlab_harness::plot::INTERVAL_NOTE),
            intervals,
            "{stacked} under --repeat 3: {intervals}"
        );
    }
    let strokes = |dir: &Path| {
        std::fs::read_to_string(dir.join("plots/tiny/rum-update-fig5-chicago.svg"))
            .unwrap()
            .matches("<polyline")
            .count()
    };
    assert!(strokes(&repeated) > strokes(&plain));
}

/// Small sweeps of one experiment of each other paper, each a grid of at least two cells.
const PAPER_SWEEPS: [(&str, &[&str]); 4] = [
    (
        "leaper-model",
        &["--set", "workloads=synthetic,messaging", "--seed", "7"],
    ),
    (
        "leaper-online",
        &[
            "--set",
            "workloads=synthetic,messaging",
            "--set",
            "policies=lru,leaper",
            "--set",
            "variants=keys=special",
            "--set",
            "variant_policies=lru",
            "--set",
            "queueing_clients=0",
            "--set",
            "fjall_peer=false",
            "--seed",
            "7",
        ],
    ),
    (
        "diol",
        &[
            "--set",
            "workloads=A,recent",
            "--set",
            "o3_ratios=0.1,0.3",
            "--set",
            "delay_models=diol",
            "--seed",
            "7",
        ],
    ),
    ("oep7-ycsb", &["--set", "workloads=ycsb-a,ycsb-e", "--seed", "7"]),
];

fn run_exp(name: &str, sets: &[&str], out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lsmlab"));
    cmd.args(["run", name, "--scale", "tiny", "--quiet", "--out"])
        .arg(out)
        .args(sets)
        .args(extra)
        .env("LSMLAB_NO_MEMORY_CHECK", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("lsmlab runs")
}

#[test]
fn leaper_diol_and_oep7_runs_resume_and_merge_to_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    for (name, sets) in PAPER_SWEEPS {
        let base = dir.path().join(name);
        let (whole, cut) = (base.join("whole"), base.join("cut"));
        ok(&run_exp(name, sets, &whole, &[], &[]));
        let reference = read(&whole.join(format!("tiny/{name}.json")));
        let total = reference["cells"]["total"].as_u64().unwrap();
        assert!(total >= 2, "{name}: {total} cells");

        // Interrupted after one cell, then resumed: the uninterrupted result.
        let out = run_exp(name, sets, &cut, &[], &[("LSMLAB_ABORT_AFTER_CELLS", "1")]);
        assert!(!out.status.success(), "{name}");
        let result = cut.join(format!("tiny/{name}.json"));
        assert!(!result.exists(), "{name}: no result before the last cell");
        ok(&run_exp(name, sets, &cut, &["--resume"], &[]));
        let resumed = read(&result);
        assert_eq!(counted(&resumed), counted(&reference), "{name}");
        assert_eq!(resumed["cells"]["done"].as_array().unwrap().len() as u64, total);

        // Two shards, merged: the unsharded result.
        let (_, merged) = two_shards_merged(name, sets, &base);
        assert_eq!(counted(&read(&merged)), counted(&reference), "{name}");
        counted_identical(&merged, &whole.join(format!("tiny/{name}.json")));
    }
}

/// Runs `name` with `sets` as shards 1/2 and 2/2 into `dir/shards` and merges them into
/// `dir/merged.json`; returns the first shard's result and the merged one's path.
fn two_shards_merged(name: &str, sets: &[&str], dir: &Path) -> (Value, PathBuf) {
    let shards = dir.join("shards");
    ok(&run_exp(name, sets, &shards, &["--shard", "1/2"], &[]));
    ok(&run_exp(name, sets, &shards, &["--shard", "2/2"], &[]));
    let shard = |k: u32| shards.join(format!("tiny/{name}.shard-{k}-of-2.json"));
    let merged = dir.join("merged.json");
    ok(&lsmlab(&[
        "merge",
        shard(1).to_str().unwrap(),
        shard(2).to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]));
    (read(&shard(1)), merged)
}

/// `lsmlab compare --check`: every counted field of `a` and `b` identical.
fn counted_identical(a: &Path, b: &Path) {
    ok(&lsmlab(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--check",
    ]));
}

/// The summary fields that set a leaper-online run beside its workload's other runs.
const BESIDE: [&str; 4] = [
    "spike_threshold_us",
    "latency_spikes",
    "overhead_pct",
    "overhead_pct_without_collector",
];

#[test]
fn leaper_online_by_policy_shards_merge_to_the_run_by_workload() {
    let dir = tempfile::tempdir().unwrap();
    let name = "leaper-online";
    let mut sets: Vec<&str> = vec![
        "--set",
        "workloads=synthetic,messaging",
        "--set",
        "policies=lru,incremental-warmup,leaper",
        "--set",
        "variants=keys=special",
        "--set",
        "variant_policies=lru",
        "--set",
        "queueing_clients=0",
        "--set",
        "fjall_peer=false",
        "--seed",
        "7",
    ];
    let whole = dir.path().join("whole");
    ok(&run_exp(name, &sets, &whole, &[], &[]));
    let whole_path = whole.join("tiny/leaper-online.json");
    assert_eq!(read(&whole_path)["cells"]["total"], 2);
    sets.extend(["--set", "cells_by=policy"]);
    let (first, merged) = two_shards_merged(name, &sets, dir.path());
    // Per workload, three policy runs and the variant's one: 8 cells, 4 in each shard.
    assert_eq!(first["cells"]["total"], 8);
    let summaries: Vec<&Value> = first["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "summary" || r["kind"] == "variant-summary")
        .collect();
    assert_eq!(summaries.len(), 4);
    for row in &summaries {
        for field in BESIDE {
            assert!(row.get(field).is_none(), "a shard cannot set {field}: {row}");
        }
    }
    let merged_rows = read(&merged)["rows"].clone();
    let leaper = merged_rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "summary" && r["policy"] == "leaper")
        .unwrap();
    for field in BESIDE {
        assert!(leaper.get(field).is_some(), "merge fills {field}: {leaper}");
    }
    counted_identical(&merged, &whole_path);
}

#[test]
fn leaper_sensitivity_by_policy_shards_merge_to_the_whole_run_with_its_gain_rows() {
    let dir = tempfile::tempdir().unwrap();
    let name = "leaper-sensitivity";
    let mut sets: Vec<&str> = vec![
        "--set",
        "zipfs=0.0,0.99",
        "--set",
        "range_shares=",
        "--set",
        "cache_ratios=0.1",
        "--set",
        "range_sizes=",
        "--seed",
        "7",
    ];
    let whole = dir.path().join("whole");
    ok(&run_exp(name, &sets, &whole, &[], &[]));
    let whole_path = whole.join("tiny/leaper-sensitivity.json");
    let reference = read(&whole_path);
    assert_eq!(reference["cells"]["total"], 1);
    let kinds = |result: &Value| -> Vec<String> {
        let rows = result["rows"].as_array().unwrap();
        rows.iter()
            .map(|r| r["kind"].as_str().unwrap().to_string())
            .collect()
    };
    // Three grid points of two policies, then the best rows of two sweeps and three gains.
    let expected: Vec<&str> = [["summary"; 6].as_slice(), &["best"; 2], &["gain"; 3]].concat();
    assert_eq!(kinds(&reference), expected);
    sets.extend(["--set", "cells_by=policy"]);
    let (first, merged) = two_shards_merged(name, &sets, dir.path());
    assert_eq!(first["cells"]["total"], 6);
    assert_eq!(kinds(&first), ["summary"; 3], "a shard has no gain or best rows");
    let merged_result = read(&merged);
    assert_eq!(kinds(&merged_result), expected);
    assert_eq!(merged_result["cells"]["grid_rows"], 5);
    counted_identical(&merged, &whole_path);
}

#[test]
fn a_generated_trace_replays_to_the_generated_run_and_bad_lines_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let listed = ok(&lsmlab(&["gen", "--list"]));
    for name in [
        "rum-chicago",
        "leaper-messaging",
        "leaper-e-commerce",
        "ycsb-a",
        "ycsb-e",
    ] {
        assert!(listed.contains(name), "{listed}");
    }
    let unknown = lsmlab(&["gen", "rum-nowhere", "--out", "x.csv"]);
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        !unknown.status.success() && err.contains("rum-chicago, rum-berlinmod"),
        "{err}"
    );

    let trace = dir.path().join("chicago.csv");
    let tr = trace.to_str().unwrap();
    let gen_args = [
        "gen",
        "rum-chicago",
        "--scale",
        "tiny",
        "--seed",
        "7",
        "--set",
        "records=3000",
        "--out",
        tr,
    ];
    ok(&lsmlab(&gen_args));
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("# lsmlab-trace/1 {") && lines[0].contains(r#""seed":7"#));
    assert_eq!(lines[1], "op,oid,time,x,y");
    assert_eq!(lines.len(), 2 + 3000);

    // The generated run and the replay of its trace: identical counted fields.
    let sets = [
        "--set",
        "records=3000",
        "--set",
        "strategies=Eager,UM+F",
        "--seed",
        "7",
    ];
    let (generated, replayed) = (dir.path().join("generated"), dir.path().join("replayed"));
    ok(&run_exp(
        "rum-update",
        &[&sets[..], &["--set", "datasets=chicago"]].concat(),
        &generated,
        &[],
        &[],
    ));
    ok(&run_exp("rum-update", &sets, &replayed, &["--trace", tr], &[]));
    let (a, b) = (result_path(&generated), result_path(&replayed));
    assert_eq!(counted(&read(&a)), counted(&read(&b)));
    ok(&lsmlab(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--check",
    ]));

    // A bad line: the file, the line and the field, a non-zero exit, no result.
    let mut bad_lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let mut fields: Vec<&str> = lines[4].split(',').collect();
    fields[3] = "east";
    bad_lines[4] = fields.join(",");
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, bad_lines.join("\n") + "\n").unwrap();
    let out_dir = dir.path().join("bad-run");
    let out = run_exp(
        "rum-update",
        &sets,
        &out_dir,
        &["--trace", bad.to_str().unwrap()],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("bad.csv:5: field `x`: `east` is not a number"),
        "{err}"
    );
    assert!(!result_path(&out_dir).exists());
    // Only the rum-* experiments replay traces.
    let out = run_exp("diol", &[], &out_dir, &["--trace", tr], &[]);
    assert!(!out.status.success());

    // The other streams: a header, then one operation per line.
    for (workload, extra, header, n) in [
        (
            "leaper-synthetic",
            &["--ops", "100"][..],
            "seq,day,time_of_day,op,key,hi",
            100,
        ),
        ("ycsb-c", &[][..], "op,key,field,len,value", 0),
    ] {
        let path = gen(dir.path(), workload, extra);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], header);
        assert!(
            lines.len() > 2 && (n == 0 || lines.len() == n + 2),
            "{workload}: {}",
            lines.len()
        );
    }
}
