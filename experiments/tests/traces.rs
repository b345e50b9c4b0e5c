//! Operation traces through the `lsmlab` binary: a trace `lsmlab gen` writes for a Leaper, YCSB
//! or DIOL experiment, replayed with `run --trace`, gives the generated run's counted fields
//! (`compare --check`); a trace of the wrong kind, a truncated one, a garbled line or parameters
//! that disagree with the run's stop it with the file, the line and the field, a non-zero exit and
//! no result. Runs are tiny, narrowed with `--set`; every assertion is about counted fields.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{gen, lsmlab, ok};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The stderr of a run that must fail.
fn fails(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "lsmlab succeeded: {err}");
    err
}

/// `lsmlab run EXPERIMENT --scale tiny --quiet --out OUT ARGS...`.
fn run(experiment: &str, out: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", experiment, "--scale", "tiny", "--quiet", "--out"];
    all.push(out.to_str().unwrap());
    all.extend(args);
    lsmlab(&all)
}

fn result(out: &Path, experiment: &str) -> PathBuf {
    out.join(format!("tiny/{experiment}.json"))
}

/// Runs `experiment` on generated streams (`gen_sets`) and on the traces (`replay_sets`, each
/// trace given with `--trace`) and asserts identical counted fields; returns the replay's result.
fn replay_equals_generated(
    dir: &Path,
    experiment: &str,
    gen_sets: &[&str],
    replay_sets: &[&str],
    traces: &[&Path],
) -> serde_json::Value {
    let (generated, replayed) = (
        dir.join(format!("{experiment}-gen")),
        dir.join(format!("{experiment}-rep")),
    );
    ok(&run(experiment, &generated, gen_sets));
    let mut args: Vec<&str> = replay_sets.to_vec();
    for t in traces {
        args.extend(["--trace", t.to_str().unwrap()]);
    }
    ok(&run(experiment, &replayed, &args));
    let (a, b) = (result(&generated, experiment), result(&replayed, experiment));
    let report = ok(&lsmlab(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--check",
    ]));
    assert!(report.contains("counted fields: identical"), "{report}");
    assert!(report.contains(", 0 only in A, 0 only in B"), "{report}");
    let text = std::fs::read_to_string(&b).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        !value["rows"].as_array().unwrap().is_empty(),
        "{experiment}: no rows"
    );
    value
}

/// leaper-online narrowed to two policies, no queueing run and no fjall peer (whose rows are wall
/// time and vary run to run).
/// The alternatives a replay does not run (the fjall peer and the variants draw their own keys)
/// are off in the generated run too, so that the two compare row for row.
const LEAPER_SETS: [&str; 8] = [
    "--set",
    "policies=lru,leaper",
    "--set",
    "queueing_clients=0",
    "--set",
    "fjall_peer=false",
    "--set",
    "variants=",
];

#[test]
fn a_leaper_trace_replays_to_the_generated_leaper_online_and_leaper_model_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = gen(d, "leaper-messaging", &["--seed", "7", "--set", "records=2000"]);
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains(r#""workload":"leaper-messaging""#) && lines[0].contains(r#""records":2000"#));
    assert_eq!(lines[1], "seq,day,time_of_day,op,key,hi");

    let common = [&LEAPER_SETS[..], &["--seed", "7", "--set", "records=2000"]].concat();
    let gen_sets = [&common[..], &["--set", "workloads=messaging"]].concat();
    // The trace's workload replaces the config's (all three by default).
    let replayed = replay_equals_generated(d, "leaper-online", &gen_sets, &common, &[&trace]);
    let notes = replayed["notes"].to_string();
    assert!(notes.contains("operations replayed from trace"), "{notes}");

    let model = ["--seed", "7", "--set", "records=2000"];
    let model_gen = [&model[..], &["--set", "workloads=messaging"]].concat();
    replay_equals_generated(d, "leaper-model", &model_gen, &model, &[&trace]);

    // A trace shorter than the run: it stops, naming the file, with no result.
    let short = gen(
        d,
        "leaper-synthetic",
        &["--seed", "7", "--set", "records=2000", "--ops", "12000"],
    );
    let out = d.join("short");
    let err = fails(&run(
        "leaper-online",
        &out,
        &[&common[..], &["--trace", short.to_str().unwrap()]].concat(),
    ));
    assert!(
        err.contains("leaper-synthetic.csv: the run needs more than the trace's 12000 operations")
            && err.contains("--ops N"),
        "{err}"
    );
    assert!(!result(&out, "leaper-online").exists());

    // Parameters that shaped the data the run loads: refused, naming the --set that fixes it (the
    // trace's seed given, which is checked first).
    let err = fails(&run(
        "leaper-online",
        &out,
        &[
            &LEAPER_SETS[..],
            &["--seed", "7", "--trace", trace.to_str().unwrap()],
        ]
        .concat(),
    ));
    assert!(
        err.contains("the trace was written with records = 2000, the run has records = 5000: run with --set records=2000"),
        "{err}"
    );
    assert!(!result(&out, "leaper-online").exists());
}

#[test]
fn ycsb_traces_replay_to_the_generated_oep7_ycsb_run_phases() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = gen(d, "ycsb-a", &[]);
    let dd = gen(d, "ycsb-d", &[]);
    let lines = std::fs::read_to_string(&dd).unwrap().lines().count();
    // Warm-up 1,000 + 2,000 measured operations at tiny, after the two header lines.
    assert_eq!(lines, 2 + 3000);
    // The traces' workloads replace the config's (all six), run in YCSB's order (A before D).
    let replayed = replay_equals_generated(d, "oep7-ycsb", &["--set", "workloads=a,d"], &[], &[&dd, &a]);
    let mut workloads: Vec<&str> = replayed["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(workloads[..2], ["ycsb-a", "ycsb-d"]);
    workloads.sort_unstable();
    workloads.dedup();
    assert_eq!(workloads, ["ycsb-a", "ycsb-d"]);

    // A key-space size other than the trace's: refused before it runs, nothing written.
    let out = d.join("mismatch");
    let err = fails(&run(
        "oep7-ycsb",
        &out,
        &["--set", "records=4000", "--trace", a.to_str().unwrap()],
    ));
    assert!(
        err.contains("ycsb-a.csv: the trace was written with records = 3000, the run has records = 4000"),
        "{err}"
    );
    assert!(!result(&out, "oep7-ycsb").exists());

    // A garbled line: the file, the line and the field.
    let text = std::fs::read_to_string(&a).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let fields: Vec<&str> = lines[6].split(',').collect();
    lines[6] = format!("{},k{},{}", fields[0], fields[1], fields[2..].join(","));
    let bad = d.join("bad.csv");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let err = fails(&run("oep7-ycsb", &out, &["--trace", bad.to_str().unwrap()]));
    assert!(err.contains("bad.csv:7: field `key`: `k"), "{err}");
    assert!(!result(&out, "oep7-ycsb").exists());
}

#[test]
fn a_diol_trace_replays_to_the_generated_diol_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One stream per trace: a config of several o3 ratios must pick one.
    let several = lsmlab(&[
        "gen",
        "diol-diol",
        "--scale",
        "tiny",
        "--out",
        d.join("x.csv").to_str().unwrap(),
    ]);
    assert!(fails(&several).contains("--set o3_ratios=R"));
    assert!(!d.join("x.csv").exists());

    let small = ["--set", "points=4000", "--set", "workloads=A,B"];
    let trace = gen(
        d,
        "diol-diol",
        &[&small[..], &["--set", "o3_ratios=0.2"]].concat(),
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(text.lines().nth(1), Some("arrival,time"));
    assert_eq!(text.lines().count(), 2 + 4000);
    // The trace replaces the o3 ratio x delay model grid: its rows are the generated run's at the
    // trace's ratio and model.
    let gen_sets = [
        &small[..],
        &["--set", "o3_ratios=0.2", "--set", "delay_models=diol"],
    ]
    .concat();
    let replayed = replay_equals_generated(d, "diol", &gen_sets, &small, &[&trace]);
    assert!(replayed["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["o3_ratio"] == 0.2 && r["delay_model"] == "diol"));

    // Truncated: fewer arrivals than its points; and a different point count than the run's.
    let cut: String = text.lines().take(1000).map(|l| format!("{l}\n")).collect();
    let bad = d.join("cut.csv");
    std::fs::write(&bad, cut).unwrap();
    let out = d.join("bad");
    let err = fails(&run(
        "diol",
        &out,
        &[&small[..], &["--trace", bad.to_str().unwrap()]].concat(),
    ));
    assert!(
        err.contains("cut.csv:1001: the trace ends after 998 arrivals; its description says points = 4000 (truncated?)"),
        "{err}"
    );
    let err = fails(&run("diol", &out, &["--trace", trace.to_str().unwrap()]));
    assert!(
        err.contains("the trace was written with points = 4000, the run has points = 20000: run with --set points=4000"),
        "{err}"
    );
    assert!(!result(&out, "diol").exists());
}

#[test]
fn a_trace_of_another_kind_is_refused_naming_the_file_and_what_the_experiment_replays() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let listed = ok(&lsmlab(&["gen", "--list"]));
    for name in [
        "diol-diol",
        "diol-lognormal",
        "diol-file",
        "leaper-synthetic",
        "ycsb-f",
    ] {
        assert!(listed.contains(name), "{listed}");
    }
    let ycsb = gen(d, "ycsb-c", &[]);
    let out = d.join("out");
    for (experiment, needle) in [
        (
            "leaper-online",
            "ycsb-c.csv:1: a ycsb-c trace; `leaper-online` replays leaper-* traces",
        ),
        (
            "diol",
            "ycsb-c.csv:1: a ycsb-c trace; `diol` replays diol-* traces",
        ),
        (
            "rum-update",
            "ycsb-c.csv:1: a ycsb-c trace; `rum-update` replays rum-* traces",
        ),
        (
            "leaper-sensitivity",
            "`leaper-sensitivity` does not replay traces",
        ),
        ("oep7-fetch", "`oep7-fetch` generates no stream a trace holds"),
    ] {
        let err = fails(&run(experiment, &out, &["--trace", ycsb.to_str().unwrap()]));
        assert!(err.contains(needle), "{experiment}: {err}");
        assert!(!result(&out, experiment).exists());
    }
}

#[test]
fn a_config_files_traces_are_checked_before_the_run_like_trace_arguments() {
    // A result of a replay records its trace among its data; rerunning from that result replays
    // it again, so its kind and every line are checked before anything runs.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = gen(d, "ycsb-c", &[]);
    let first = d.join("first");
    ok(&run("oep7-ycsb", &first, &["--trace", trace.to_str().unwrap()]));
    let config = result(&first, "oep7-ycsb");
    let config = config.to_str().unwrap();
    // Another experiment's kind: refused naming the trace.
    let out = d.join("out");
    let err = fails(&run("leaper-online", &out, &["--config", config]));
    assert!(
        err.contains("a ycsb-c trace; `leaper-online` replays leaper-* traces"),
        "{err}"
    );
    assert!(!result(&out, "leaper-online").exists());
    // A garbled line: refused with the file, the line and the field, before the run.
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[4] = "read,notanumber,x,1,ab".to_string();
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let err = fails(&run("oep7-ycsb", &out, &["--config", config]));
    assert!(err.contains("ycsb-c.csv:5: field `key`"), "{err}");
    assert!(!result(&out, "oep7-ycsb").exists());
}
