//! The binary's command-line contract: help everywhere, errors as `error: ...` with a non-zero exit.

// Tests may unwrap: a panic here is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

fn lsmlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args(args)
        .output()
        .expect("lsmlab runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_command_has_help() {
    for args in [
        &["--help"][..],
        &["list", "--help"],
        &["params", "--help"],
        &["run", "--help"],
        &["plot", "--help"],
        &["report", "--help"],
    ] {
        let out = lsmlab(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("Usage:"), "{args:?}");
    }
    let run_help = stdout(&lsmlab(&["run", "--help"]));
    for option in [
        "--scale",
        "--seed",
        "--set",
        "--out",
        "--data",
        "--format",
        "--columns",
        "--skip-malformed",
        "--quiet",
        "--config",
        "--print-config",
    ] {
        assert!(run_help.contains(option), "run --help lacks {option}");
    }
}

#[test]
fn list_names_prints_one_plain_name_per_line() {
    let out = lsmlab(&["list", "--names"]);
    assert!(out.status.success());
    for line in stdout(&out).lines() {
        assert!(
            !line.is_empty()
                && line
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
    let list = lsmlab(&["list"]);
    assert!(list.status.success());
    // Each experiment's line says how many cells it runs at small (what `--shard K/N` splits):
    // rum-update's grid is 3 datasets x 11 strategies.
    let text = stdout(&list);
    let rum = text
        .lines()
        .find(|l| l.starts_with("rum-update "))
        .expect("rum-update listed");
    let cells: Vec<&str> = rum.split_whitespace().collect();
    assert!(cells.contains(&"33"), "{rum}");
    assert!(text.lines().next().unwrap().contains("cells"), "{text}");
    // At paper scale leaper-online splits by policy run: 3 workloads x 16.
    let paper = stdout(&lsmlab(&["list", "--scale", "paper"]));
    let online = paper
        .lines()
        .find(|l| l.starts_with("leaper-online "))
        .expect("leaper-online listed");
    assert!(online.split_whitespace().any(|w| w == "48"), "{online}");
}

#[test]
fn repeat_is_refused_up_front_where_repetitions_cannot_pair() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let args = [
        "run",
        "leaper-online",
        "--scale",
        "tiny",
        "--repeat",
        "2",
        "--out",
        out_dir,
    ];
    let out = lsmlab(&args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--repeat 2: `leaper-online` cannot average its repetitions"),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
    assert!(!dir.path().join("tiny").exists(), "no result, no partial file");
}

#[test]
fn params_numbers_the_cells_a_shard_of_one_runs() {
    let out = stdout(&lsmlab(&["params", "leaper-online", "--scale", "paper"]));
    assert!(
        out.contains("cells at scale paper with these defaults (48;"),
        "{out}"
    );
    assert!(
        out.contains("\n  37  workloads=synthetic policies=leaper\n"),
        "{out}"
    );
    let whole = stdout(&lsmlab(&["params", "oep7-space"]));
    assert!(whole.trim_end().ends_with("1 (the whole run)"), "{whole}");
}

/// Ctrl-C during a run says how many cells are saved where and how to continue, and exits 130;
/// `--resume` then picks up those cells, and a plain rerun mentions the saved file first.
#[test]
#[cfg(unix)]
fn an_interrupted_run_says_what_is_saved_and_how_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let args = |extra: &[&str]| {
        let mut v: Vec<String> = [
            "run",
            "rum-update",
            "--scale",
            "tiny",
            "--set",
            "records=300000",
            "--out",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.push(out.to_str().unwrap().to_string());
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let partial = out.join("tiny/rum-update.json.partial");
    let child = Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args(args(&[]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first saved cell, then interrupt as a terminal's Ctrl-C does.
    let start = std::time::Instant::now();
    while !partial.exists() {
        assert!(start.elapsed().as_secs() < 300, "no cell was saved");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    assert!(
        err.contains("cells are saved in")
            && err.contains("rum-update.json.partial")
            && err.contains("--resume"),
        "{err}"
    );
    assert!(
        !out.join("tiny/rum-update.json").exists(),
        "no result for an interrupted run"
    );
    // A plain rerun says that the saved cells exist before starting over.
    let child = Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args(args(&[]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let rerun = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&rerun.stderr);
    assert!(
        err.contains("holds an interrupted run") && err.contains("--resume"),
        "{err}"
    );
}

#[test]
fn unknown_experiment_is_an_error() {
    for args in [
        &["run", "no-such-experiment", "--scale", "tiny"][..],
        &["params", "no-such-experiment"],
    ] {
        let out = lsmlab(args);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.contains("unknown experiment `no-such-experiment`"),
            "{err}"
        );
    }
}

#[test]
fn bad_scale_and_data_options_are_usage_errors() {
    let out = lsmlab(&["run", "x", "--scale", "huge"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("huge"));
    let out = lsmlab(&["run", "x", "--format", "csv"]);
    assert!(!out.status.success(), "--format needs --data");
}

#[test]
fn plot_and_report_without_results_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = lsmlab(&[
        "plot",
        "--results",
        results,
        "--out",
        dir.path().join("plots").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with("error: no result files"),
        "{}",
        stderr(&out)
    );
    let out = lsmlab(&[
        "report",
        "--results",
        results,
        "--out",
        dir.path().join("R.md").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(!dir.path().join("R.md").exists());
}

#[test]
fn every_registered_experiment_lists_its_params() {
    let names = stdout(&lsmlab(&["list", "--names"]));
    for name in names.lines() {
        for scale in ["tiny", "small", "paper"] {
            let out = lsmlab(&["params", name, "--scale", scale]);
            assert!(
                out.status.success(),
                "params {name} --scale {scale}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn print_config_prints_the_effective_config_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let args = [
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--out",
        out_dir,
        "--print-config",
        "--set",
        "vacuum_threshold=16",
        "--set",
        "strategies=UM,UM+F",
    ];
    let out = lsmlab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let config: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(config["vacuum_threshold"], 16);
    assert_eq!(config["strategies"], serde_json::json!(["UM", "UM+F"]));
    assert_eq!(config["records"], 20_000, "the tiny default");
    assert_eq!(config["profile"], "nvme");
    assert!(
        !dir.path().join("tiny").exists(),
        "--print-config ran the experiment"
    );

    // printed -> file -> --config: the same config, in JSON and in TOML
    let json = dir.path().join("update.json");
    std::fs::write(&json, stdout(&out)).unwrap();
    let again = lsmlab(&[
        "run",
        "rum-update",
        "--print-config",
        "--config",
        json.to_str().unwrap(),
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout(&again)).unwrap(),
        config
    );

    let toml = dir.path().join("update.toml");
    std::fs::write(
        &toml,
        "vacuum_threshold = 16\nstrategies = [\"UM\", \"UM+F\"]\nrecords = 20_000\n",
    )
    .unwrap();
    let from_toml = lsmlab(&[
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--print-config",
        "--config",
        toml.to_str().unwrap(),
    ]);
    assert!(from_toml.status.success(), "{}", stderr(&from_toml));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout(&from_toml)).unwrap(),
        config
    );
}

#[test]
fn out_of_range_and_unknown_values_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    for (set, needles) in [
        (
            "vacuum_threshold=4294967297",
            &["vacuum_threshold", "4294967297", "1 to 4294967295"][..],
        ),
        ("records=-1", &["records", "-1"]),
        ("profile=floppy", &["profile", "floppy", "sata-ssd"]),
        ("merge_policy=leveled", &["merge_policy", "leveled", "prefix"]),
        ("vacuum_thresold=8", &["vacuum_thresold", "vacuum_threshold"]),
    ] {
        let out = lsmlab(&[
            "run",
            "rum-update",
            "--scale",
            "tiny",
            "--out",
            out_dir,
            "--set",
            set,
        ]);
        assert_eq!(out.status.code(), Some(1), "{set} was accepted");
        let err = stderr(&out);
        assert!(err.starts_with("error: "), "{err}");
        for needle in needles {
            assert!(err.contains(needle), "{set}: `{err}` lacks `{needle}`");
        }
    }
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"vacuum_threshold": 8, "threads": [1]}"#).unwrap();
    let out = lsmlab(&[
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--out",
        out_dir,
        "--config",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("bad.json") && stderr(&out).contains("`threads`"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("tiny").exists());
}

#[test]
fn committed_results_are_accepted_by_config_with_the_same_keys() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/small");
    let names = stdout(&lsmlab(&["list", "--names"]));
    let mut checked = 0;
    for name in names.lines() {
        let path = results.join(format!("{name}.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let recorded: serde_json::Value = serde_json::from_str(&text).unwrap();
        let out = lsmlab(&[
            "run",
            name,
            "--scale",
            "small",
            "--print-config",
            "--config",
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let printed: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| !matches!(k.as_str(), "data" | "derived"))
                .cloned()
                .collect();
            k.sort();
            k
        };
        assert_eq!(keys(&printed), keys(&recorded["config"]), "{name}");
        checked += 1;
    }
    eprintln!("{checked} committed results checked");
}

/// A CSV of `n` records: `uid,lng,lat,datetime` (column names the loader guesses), 50 objects.
fn trips_csv(n: usize) -> String {
    let mut s = String::from("ride,uid,lng,lat,datetime\n");
    for i in 0..n {
        s.push_str(&format!(
            "r{i},{},{}.5,{}.25,{}\n",
            i % 50,
            (i * 7) % 100,
            (i * 13) % 100,
            1_000_000 + i
        ));
    }
    s
}

/// `lsmlab run rum-update --scale tiny` on one cheap strategy with `args` added.
fn run_tiny(out: &std::path::Path, args: &[&str]) -> Output {
    let mut all = vec![
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--set",
        "strategies=UM",
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    lsmlab(&all)
}

/// True if stderr shows that something was generated or run.
fn ran_anything(err: &str) -> bool {
    err.contains("generating") || err.contains("[1/") || err.contains("cell 1/")
}

#[test]
fn progress_lines_give_each_cell_an_eta_and_no_single_step_counter() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let run = lsmlab(&[
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--set",
        "datasets=gowalla",
        "--set",
        "strategies=UM,UM+F,UM+BV",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    // stderr is not a terminal here: plain lines, no bar.
    assert!(
        err.contains("] cell 1/3: datasets=gowalla strategies=UM\n"),
        "{err}"
    );
    assert!(err.contains("] cell 2/3 (ETA "), "{err}");
    assert!(err.contains("] cell 3/3 (ETA "), "{err}");
    // A cell of one step says no `[1/1 ...]`.
    assert!(!err.contains("[1/1 "), "{err}");
    assert!(err.contains("s] gowalla UM+F\n"), "{err}");
    // Each cell's end says what it cost, and the result keeps it per cell beside the estimate.
    assert_eq!(
        err.matches("] done: datasets=gowalla strategies=").count(),
        3,
        "{err}"
    );
    assert!(err.contains(" s wall, ") && err.contains(" s CPU"), "{err}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tiny/rum-update.json")).unwrap()).unwrap();
    let log = &result["cells"];
    assert!(log["memory_estimate_bytes"].as_u64().unwrap() > 0, "{log}");
    for cell in log["done"].as_array().unwrap() {
        assert!(cell["cpu_s"].as_f64().unwrap() >= 0.0, "{cell}");
        if cfg!(target_os = "linux") {
            assert!(cell["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{cell}");
        }
    }
}

#[test]
fn a_bad_data_file_fails_before_anything_is_generated_or_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let cases: [(&str, String, &[&str]); 4] = [
        (
            "names.csv",
            "who,when,where,what\n1,2,3,4\n".to_string(),
            &[
                "names.csv: cannot tell which columns",
                "header: who, when, where, what",
                "--columns oid=",
            ],
        ),
        (
            "headerless.csv",
            "1,2,3,4\n".to_string(),
            &["no header line", "--columns oid=0,time=1,x=2,y=3"],
        ),
        (
            "early.csv",
            "uid,lat,lon,time\n1,2,3,4\n1,north,3,5\n".to_string(),
            &["early.csv:3: column \"lat\": expected a number"],
        ),
        // Past what the check reads: found while loading, still before any generation.
        (
            "late.csv",
            format!("{}r,7,8.5,x,1\n", trips_csv(1_500)),
            &["late.csv:1502:", "column \"lat\": expected a number"],
        ),
    ];
    for (name, text, needles) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let res = run_tiny(&out, &["--data", path.to_str().unwrap()]);
        assert_eq!(res.status.code(), Some(1), "{name} was accepted");
        let err = stderr(&res);
        for needle in needles {
            assert!(err.contains(needle), "{name}: `{err}` lacks `{needle}`");
        }
        assert!(!ran_anything(&err), "{name}: {err}");
        assert!(!out.exists(), "{name}: a failed run wrote {}", out.display());
    }
    let missing = dir.path().join("nope.csv");
    let err = stderr(&run_tiny(&out, &["--data", missing.to_str().unwrap()]));
    assert!(
        err.contains("nope.csv does not exist") && !ran_anything(&err),
        "{err}"
    );
    // Columns that share a position.
    let good = dir.path().join("good.csv");
    std::fs::write(&good, trips_csv(10)).unwrap();
    let err = stderr(&run_tiny(
        &out,
        &["--data", good.to_str().unwrap(), "--columns", "1,4,2,2"],
    ));
    assert!(
        err.contains("x and y are both column 2") && !ran_anything(&err),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn data_files_replace_the_generated_datasets_and_same_names_become_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let mut paths = Vec::new();
    for sub in ["north", "south"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        let p = dir.path().join(sub).join("trips.csv");
        std::fs::write(&p, trips_csv(600)).unwrap();
        paths.push(p);
    }
    let res = run_tiny(
        &out,
        &[
            "--set",
            "records=500",
            "--data",
            paths[0].to_str().unwrap(),
            "--data",
            paths[1].to_str().unwrap(),
        ],
    );
    let err = stderr(&res);
    assert!(res.status.success(), "{err}");
    for needle in [
        "--data replaces the generated datasets: gowalla, chicago, berlinmod not run",
        "--data: 2 paths are named \"trips\"; they run as \"north-trips\"",
        "north-trips: columns guessed from the header: oid=\"uid\" (column 1), time=\"datetime\" (column 4), \
         x=\"lng\" (column 2), y=\"lat\" (column 3)",
        "south-trips: read 600 records from",
        "south-trips: kept the first 500 of 600 records at scale tiny",
    ] {
        assert!(err.contains(needle), "`{err}` lacks `{needle}`");
    }
    assert!(!err.contains("generating"), "{err}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tiny/rum-update.json")).unwrap()).unwrap();
    let datasets: Vec<&str> = result["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dataset"].as_str().unwrap())
        .collect();
    assert_eq!(datasets, ["north-trips", "south-trips"]);
    let notes: Vec<&str> = result["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("north-trips: kept the first 500 of 600 records at scale tiny")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("north-trips: columns guessed")),
        "{notes:?}"
    );

    // The same file twice is refused.
    let err = stderr(&run_tiny(
        &out,
        &[
            "--data",
            paths[0].to_str().unwrap(),
            "--data",
            paths[0].to_str().unwrap(),
        ],
    ));
    assert!(err.contains("are the same path"), "{err}");
}

#[test]
fn no_datasets_and_no_data_is_refused_and_keeps_the_old_result() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("tiny/rum-update.json");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(&old, "an earlier result").unwrap();
    let res = run_tiny(dir.path(), &["--set", "datasets="]);
    assert_eq!(res.status.code(), Some(1));
    let err = stderr(&res);
    assert!(
        err.contains("`datasets` is empty and no --data file is given")
            && err.contains("--set datasets=gowalla,chicago,berlinmod"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&old).unwrap(), "an earlier result");
}

#[test]
fn an_unwritable_out_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = file.join("results");
    let res = run_tiny(&out, &[]);
    assert_eq!(res.status.code(), Some(1));
    let err = stderr(&res);
    assert!(
        err.contains("cannot write results to") && err.contains("a-file/results/tiny (--out)"),
        "{err}"
    );
    assert!(!ran_anything(&err), "{err}");

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        // A privileged user writes anyway: then there is nothing to refuse.
        if std::fs::write(locked.join("probe"), "").is_err() {
            let err = stderr(&run_tiny(&locked, &[]));
            assert!(
                err.contains("cannot write results to") && err.contains("locked/tiny") && !ran_anything(&err),
                "{err}"
            );
        } else {
            eprintln!("note: running as a privileged user; the read-only directory case is skipped");
        }
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn run_help_describes_data_loading() {
    let help = stdout(&lsmlab(&["run", "--help"]));
    for needle in [
        "instead of the generated datasets",
        "or a directory whose files load as one dataset",
        "geolife-plt",
        "`time=date+time` joins",
        "`oid=@file` or `oid=@dir`",
        "checked for writing before the run starts",
    ] {
        assert!(help.contains(needle), "run --help lacks `{needle}`");
    }
}

#[test]
fn the_shared_gowalla_sample_says_what_it_kept_when_present() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/gowalla_nyc_checkins.tsv.gz");
    if !sample.exists() {
        eprintln!("note: {} is absent; skipping", sample.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let res = run_tiny(dir.path(), &["--data", sample.to_str().unwrap()]);
    let err = stderr(&res);
    assert!(res.status.success(), "{err}");
    for needle in [
        "gowalla_nyc_checkins: SNAP check-ins: oid=user (column 0)",
        "gowalla_nyc_checkins: read 138,957 records from",
        "gowalla_nyc_checkins: kept the first 20,000 of 138,957 records at scale tiny",
    ] {
        assert!(err.contains(needle), "`{err}` lacks `{needle}`");
    }
}

#[test]
fn a_geolife_directory_runs_as_one_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Data");
    for user in ["000", "001"] {
        let traj = data.join(user).join("Trajectory");
        std::fs::create_dir_all(&traj).unwrap();
        let mut plt = String::from(
            "Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n0,2,255,My Track,0,0,2,8421376\n0\n",
        );
        for s in 0..30 {
            plt.push_str(&format!(
                "39.9{s:02},116.3{user},0,492,39744.12,2008-10-23,02:53:{s:02}\n"
            ));
        }
        std::fs::write(traj.join("20081023025304.plt"), plt).unwrap();
    }
    std::fs::write(
        data.join("001/labels.txt"),
        "Start Time\tEnd Time\tTransportation Mode\n",
    )
    .unwrap();
    let out = dir.path().join("results");
    let res = run_tiny(&out, &["--data", data.to_str().unwrap()]);
    let err = stderr(&res);
    assert!(res.status.success(), "{err}");
    for needle in [
        "Data: loading",
        "as geolife-plt",
        "Data: GeoLife .plt: oid=the user directory",
        "(geolife-plt, 2 files, 60 data lines)",
        "kept all 60 records",
        "they hold 2 objects",
        "Data: read 2 .plt files under",
        "left out 1 file with other extensions",
    ] {
        assert!(err.contains(needle), "`{err}` lacks `{needle}`");
    }
    let result = std::fs::read_to_string(out.join("tiny/rum-update.json")).unwrap();
    assert!(result.contains("\"dataset\": \"Data\""));
}

/// Hostile input through the binary (the table in docs/BAD_INPUTS.md): each gets `error: ...`
/// naming what was wrong, exit 1, nothing run, and the earlier result file is left as it was.
#[test]
fn hostile_inputs_are_refused_and_clobber_nothing() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let old = out.join("tiny/rum-update.json");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(&old, "an earlier result").unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    };
    let empty = file("empty.csv", b"");
    let headed_only = file("header.csv", b"ride,uid,lng,lat,datetime\n");
    let garbled = file(
        "garbled.csv",
        &(0..600u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<_>>(),
    );
    let mut gz = flate2_free_gzip(trips_csv(300).as_bytes());
    gz.truncate(gz.len() / 2);
    let truncated = file("cut.csv.gz", &gz);
    let good = file("good.csv", trips_csv(50).as_bytes());
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--data", &empty],
            vec!["empty.csv", "is empty (0 bytes)", "nothing to load"],
        ),
        (vec!["--data", &empty, "--format", "csv"], vec!["empty.csv"]),
        (
            vec!["--data", &headed_only, "--format", "csv"],
            vec!["header.csv"],
        ),
        (vec!["--data", &garbled, "--format", "csv"], vec!["garbled.csv"]),
        (vec!["--data", &truncated], vec!["cut.csv.gz", "deflate"]),
        (
            vec!["--data", &good, "--format", "nosuch"],
            vec!["unknown format \"nosuch\"", "snap-gowalla"],
        ),
        (
            vec!["--set", "records=NaN"],
            vec!["`records`", "`NaN`", "integer"],
        ),
        (vec!["--set", "records="], vec!["`records`", "integer"]),
        (
            vec!["--set", "records=18446744073709551616"],
            vec!["`records`", "18446744073709551616"],
        ),
        (vec!["--set", "=5"], vec!["`--set =5`", "key=value"]),
        (vec!["--set", "records"], vec!["`--set records`", "key=value"]),
    ];
    for (args, needles) in cases {
        let res = run_tiny(&out, &args);
        assert_eq!(res.status.code(), Some(1), "{args:?} was accepted");
        let err = stderr(&res);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        for needle in needles {
            assert!(err.contains(needle), "{args:?}: `{err}` lacks `{needle}`");
        }
        assert!(!ran_anything(&err), "{args:?}: {err}");
        assert_eq!(
            std::fs::read_to_string(&old).unwrap(),
            "an earlier result",
            "{args:?}"
        );
        let names: Vec<_> = std::fs::read_dir(old.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{args:?} left {names:?}");
    }
    // A corrupt result file: plot and report name it, write the rest, exit 1.
    let results = dir.path().join("plotted");
    std::fs::create_dir_all(results.join("tiny")).unwrap();
    let truncated_result = results.join("tiny/rum-update.json");
    std::fs::write(&truncated_result, "{\"schema\": 1, \"experiment\": \"rum-upd").unwrap();
    let plots = dir.path().join("plots");
    let res = lsmlab(&[
        "plot",
        "--results",
        results.to_str().unwrap(),
        "--out",
        plots.to_str().unwrap(),
        "--scale",
        "tiny",
    ]);
    assert_eq!(res.status.code(), Some(1));
    assert!(
        stderr(&res).contains("rum-update.json") && stderr(&res).contains("not valid JSON"),
        "{}",
        stderr(&res)
    );
    // The folder is there (a report refuses a missing one), the corrupt result's figures not.
    std::fs::create_dir_all(&plots).unwrap();
    let report = dir.path().join("REPORT.md");
    let res = lsmlab(&[
        "report",
        "--results",
        results.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
        "--scale",
        "tiny",
        "--out",
        report.to_str().unwrap(),
    ]);
    assert_eq!(res.status.code(), Some(1));
    assert!(
        stderr(&res).contains("rum-update.json") && stderr(&res).contains("not valid JSON"),
        "{}",
        stderr(&res)
    );
    assert_eq!(
        std::fs::read_to_string(&truncated_result).unwrap(),
        "{\"schema\": 1, \"experiment\": \"rum-upd"
    );
    let _ = std::io::stderr().flush();
}

/// A gzip member of `bytes` with stored (uncompressed) deflate blocks, so the test needs no
/// compression crate: the loaders recognise gzip by its magic bytes and decompress it.
fn flate2_free_gzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let chunks: Vec<&[u8]> = bytes.chunks(65_535).collect();
    for (i, c) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = c.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(c);
    }
    let crc = crc32(bytes);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The peak resident memory of a child run, sampled from `/proc/<pid>/status` (`VmHWM`, the
/// high-water mark) until it exits; `None` where `/proc` is not there.
fn peak_rss_of(args: &[&str]) -> Option<u64> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("lsmlab runs");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = None;
    loop {
        if let Some(kib) = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        }) {
            peak = Some(kib * 1024);
        }
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "{args:?} failed");
            return peak;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The DIOL and OEP 7 memory estimates (what `run` refuses a too-large config with) against the
/// measured peak of a tiny run: at least the peak (sampled, so a lower bound), and within 4x
/// (the fixed base dominates at tiny sizes; the per-point and per-record slopes were measured
/// between tiny and ten times tiny).
#[test]
fn memory_estimates_cover_the_measured_peak_of_a_tiny_run() {
    use lsmlab_harness::config::Overlay;
    use lsmlab_harness::scale::Scale;
    let dir = tempfile::tempdir().unwrap();
    for name in ["diol-sizing", "oep7-space", "leaper-online"] {
        let e = lsmlab::registry::find(name).unwrap();
        let config = e.resolve(Scale::Tiny, &Overlay::default()).unwrap();
        let estimate = e.memory_estimate(&config, &[]).unwrap().expect("an estimate");
        assert!(estimate.basis.contains("measured per"), "{}", estimate.basis);
        let out = dir.path().join(name);
        let Some(peak) = peak_rss_of(&[
            "run",
            name,
            "--scale",
            "tiny",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]) else {
            eprintln!("note: no /proc; {name}'s measured peak is not checked");
            continue;
        };
        let ratio = estimate.bytes as f64 / peak as f64;
        eprintln!(
            "{name}: estimate {} B ({}), measured peak {peak} B, ratio {ratio:.2}",
            estimate.bytes, estimate.basis
        );
        assert!(
            (1.0..=4.0).contains(&ratio),
            "{name}: estimate {} B vs peak {peak} B",
            estimate.bytes
        );
    }
}

/// `lsmlab ARGS` with stdout (and, with `stderr_too`, stderr) a pipe whose reader is already gone,
/// as `| head -1` leaves it once head has read its line.
fn lsmlab_into_closed_pipe(args: &[&str], stderr_too: bool) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lsmlab"));
    cmd.args(args);
    if stderr_too {
        cmd.stderr(writer.try_clone().unwrap());
    } else {
        cmd.stderr(std::process::Stdio::piped());
    }
    cmd.stdout(writer).output().expect("lsmlab runs")
}

/// `params X | head -1`, `run X --print-config | head`, `run X 2>&1 | head`: no panic ("failed
/// printing to stdout"), exit 0, and the run still writes its result.
#[test]
fn a_closed_stdout_ends_printing_quietly_and_never_stops_a_run() {
    for args in [
        &["params", "rum-update"][..],
        &["list"],
        &["run", "rum-update", "--scale", "tiny", "--print-config"],
        &["gen", "--list"],
    ] {
        let out = lsmlab_into_closed_pipe(args, false);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let out = lsmlab_into_closed_pipe(
        &[
            "run",
            "rum-update",
            "--scale",
            "tiny",
            "--set",
            "datasets=gowalla",
            "--set",
            "strategies=UM,Eager",
            "--out",
            results.to_str().unwrap(),
        ],
        true,
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(results.join("tiny/rum-update.json").is_file());
}

/// `lsmlab ARGS` run in `dir` (where a bare `lsmlab report` writes REPORT.md).
fn lsmlab_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("lsmlab runs")
}

/// A bare `lsmlab report` after a tiny run reports each scale on its own: the small reference
/// (REPORT.md) and its claims evaluation are left byte for byte as they were, the tiny report goes
/// beside the tiny results. Paths that would overwrite an input or the reference are refused, and
/// so is `merge --out` onto one of its own shards; nothing changes under any of them.
#[test]
fn report_and_merge_never_rewrite_the_reference_or_their_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = d.join("results/small");
    std::fs::create_dir_all(&small).unwrap();
    std::fs::create_dir_all(d.join("plots")).unwrap();
    let committed = concat!(env!("CARGO_MANIFEST_DIR"), "/../results/small/oep7-graph.json");
    std::fs::copy(committed, small.join("oep7-graph.json")).unwrap();
    let first = lsmlab_in(d, &["report"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let reference = std::fs::read(d.join("REPORT.md")).unwrap();
    let claims = std::fs::read(small.join("claims.json")).unwrap();
    let snapshot = || {
        (
            std::fs::read(d.join("REPORT.md")).unwrap(),
            std::fs::read(small.join("claims.json")).unwrap(),
            std::fs::read(small.join("oep7-graph.json")).unwrap(),
        )
    };
    let before = snapshot();
    assert_eq!((&before.0, &before.1), (&reference, &claims));

    // A tiny run, then a bare report: one report per scale, the reference unchanged.
    let tiny = run_tiny(
        &d.join("results"),
        &["--set", "datasets=gowalla", "--set", "strategies=UM,Eager"],
    );
    assert!(tiny.status.success(), "{}", stderr(&tiny));
    let again = lsmlab_in(d, &["report"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("small report: unchanged") && stderr(&again).contains("tiny report: written"),
        "{}",
        stderr(&again)
    );
    assert_eq!(snapshot(), before, "a bare report changed the small reference");
    let tiny_report = std::fs::read_to_string(d.join("results/tiny/REPORT.md")).unwrap();
    assert!(
        tiny_report.contains("rum-update") && !tiny_report.contains("oep7-graph"),
        "the tiny report mixes scales"
    );

    // Refused: several scales into one --out, the tiny report onto REPORT.md, a report onto a
    // result, figures from a missing folder.
    let refusals: [(&[&str], &[&str]); 4] = [
        (&["report", "--out", "R.md"], &["tiny, small", "--scale"]),
        (
            &["report", "--scale", "tiny", "--out", "REPORT.md"],
            &["REPORT.md", "scale small", "results/tiny/REPORT.md"],
        ),
        (
            &[
                "report",
                "--scale",
                "small",
                "--out",
                "results/small/oep7-graph.json",
            ],
            &["oep7-graph.json", ".md"],
        ),
        (
            &["report", "--scale", "small", "--plots", "figs"],
            &["--plots figs", "no such folder", "lsmlab plot"],
        ),
    ];
    for (args, needles) in refusals {
        let out = lsmlab_in(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?} was accepted");
        for needle in needles {
            assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        }
        assert_eq!(snapshot(), before, "{args:?} changed a file");
        assert!(!d.join("R.md").exists());
    }

    // merge --out onto one of its shards, and shards of different splits.
    let shard = |k: &str| {
        let out = run_tiny(
            &d.join("shards"),
            &[
                "--set",
                "datasets=gowalla",
                "--set",
                "strategies=UM,Eager",
                "--shard",
                k,
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let name = format!("rum-update.shard-{}.json", k.replace('/', "-of-"));
        d.join("shards/tiny").join(name).to_str().unwrap().to_string()
    };
    let (one, two, two_of_three) = (shard("1/2"), shard("2/2"), shard("2/3"));
    let one_bytes = std::fs::read(&one).unwrap();
    let out = lsmlab_in(d, &["merge", &one, &two, "--out", &one]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is one of the shard files being merged"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&one).unwrap(), one_bytes);
    let merged = d.join("merged.json");
    let out = lsmlab_in(
        d,
        &["merge", &one, &two_of_three, "--out", merged.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not shards of one split")
            && stderr(&out).contains("shard 1/2")
            && stderr(&out).contains("shard 2/3"),
        "{}",
        stderr(&out)
    );
    assert!(!merged.exists());
    // Onto another experiment's result: refused; a new file: written.
    let out = lsmlab_in(
        d,
        &["merge", &one, &two, "--out", "results/small/oep7-graph.json"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("holds a result of `oep7-graph`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(), before);
    let out = lsmlab_in(d, &["merge", &one, &two, "--out", merged.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The Makefile's build step runs cargo only when a file the binary is built from is newer than
/// the binary, and when cargo finds everything fresh (leaving the binary's date alone) the binary
/// is touched, so the next `make` is a no-op instead of asking cargo again. Run on a copy of the
/// Makefile with a stand-in cargo that logs its calls; skipped where `make` is not installed.
#[test]
fn the_makefile_build_step_is_a_no_op_once_cargo_said_fresh() {
    use std::os::unix::fs::PermissionsExt;
    if Command::new("make").arg("--version").output().is_err() {
        eprintln!("make is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    std::fs::copy(format!("{root}/Makefile"), d.join("Makefile")).unwrap();
    for f in [
        "Cargo.toml",
        "Cargo.lock",
        "engine/src/lib.rs",
        "experiments/claims/rum.json",
    ] {
        let p = d.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
    // Builds the binary when it is missing; otherwise "fresh": nothing written.
    let cargo = d.join("fake-cargo");
    std::fs::write(
        &cargo,
        "#!/bin/sh\necho \"$@\" >> cargo.log\nif [ ! -f target/release/lsmlab ]; then \
         mkdir -p target/release && echo bin > target/release/lsmlab; fi\n",
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let make = || {
        let out = Command::new("make")
            .current_dir(d)
            .env_remove("MAKEFLAGS")
            .args(["build", &format!("CARGO={}", cargo.display())])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        std::fs::read_to_string(d.join("cargo.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(make(), 1, "a missing binary is built");
    assert_eq!(make(), 1, "nothing newer than the binary: cargo is not asked");
    // A source newer than the binary (its date set back): cargo is asked, says fresh (the stand-in
    // leaves the binary alone), and the binary is touched, so cargo is not asked again.
    let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::options()
        .append(true)
        .open(d.join("target/release/lsmlab"))
        .unwrap()
        .set_modified(earlier)
        .unwrap();
    assert_eq!(make(), 2, "a newer source: cargo decides");
    assert_eq!(make(), 2, "cargo said fresh: the next make is a no-op");
}

/// The refusal of `args` (a run of rum-update at tiny unless they say otherwise): exit 1, every
/// needle in the message, nothing run, nothing written under `out`.
fn refused(out: &std::path::Path, args: &[&str], needles: &[&str]) {
    let res = lsmlab(args);
    let err = stderr(&res);
    assert_eq!(res.status.code(), Some(1), "{args:?} was accepted: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: `{err}` lacks `{needle}`");
    }
    assert!(!ran_anything(&err), "{args:?} ran: {err}");
    assert!(
        !out.join("tiny").exists(),
        "{args:?} wrote under {}",
        out.display()
    );
}

/// Options that were accepted and then ignored (or silently resolved one way) are refused, the
/// message naming both values: `--data` to an experiment that reads none, a trace whose records
/// or seed are not the run's, a list naming a value twice, a JSON config naming a key twice.
#[test]
fn ignored_or_conflicting_options_are_refused_naming_both_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = out.to_str().unwrap();
    let data = dir.path().join("trips.csv");
    std::fs::write(&data, trips_csv(50)).unwrap();
    let data = data.to_str().unwrap();
    for experiment in [
        "leaper-online",
        "leaper-model",
        "oep7-ycsb",
        "oep7-graph",
        "combined",
    ] {
        refused(
            &out,
            &["run", experiment, "--scale", "tiny", "--out", o, "--data", data],
            &[
                &format!("`{experiment}` reads no --data files"),
                "trips.csv",
                "ignored",
            ],
        );
        refused(
            &out,
            &[
                "run",
                experiment,
                "--scale",
                "tiny",
                "--data",
                data,
                "--print-config",
            ],
            &["reads no --data files"],
        );
    }
    // A trace with other records, or another seed, than the run.
    let trace = dir.path().join("gowalla.csv");
    let t = trace.to_str().unwrap();
    let gen = lsmlab(&[
        "gen",
        "rum-gowalla",
        "--scale",
        "tiny",
        "--seed",
        "42",
        "--out",
        t,
    ]);
    assert!(gen.status.success(), "{}", stderr(&gen));
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "rum-update", "--scale", "tiny", "--set", "strategies=UM"];
        args.extend_from_slice(&["--out", o, "--trace", t]);
        args.extend_from_slice(extra);
        lsmlab(&args)
    };
    let res = run(&["--set", "records=100"]);
    assert_eq!(res.status.code(), Some(1));
    let err = stderr(&res);
    assert!(
        err.contains("records = 20000")
            && err.contains("records = 100")
            && err.contains("--set records=20000"),
        "{err}"
    );
    assert!(!out.join("tiny/rum-update.json").exists());
    let res = run(&["--seed", "7"]);
    assert_eq!(res.status.code(), Some(1));
    let err = stderr(&res);
    assert!(
        err.contains("written with seed 42") && err.contains("--seed 7") && !ran_anything(&err),
        "{err}"
    );
    // Repeats in lists, in any case; repeated keys in a JSON config.
    for (set, needles) in [
        ("strategies=UM,UM", ["`strategies`", "`UM` is listed twice"]),
        (
            "strategies=UM,um+f,UM+F",
            ["`strategies`", "`UM+F` is listed twice"],
        ),
        (
            "datasets=gowalla,gowalla",
            ["`datasets`", "`gowalla` is listed twice"],
        ),
    ] {
        refused(
            &out,
            &["run", "rum-update", "--scale", "tiny", "--out", o, "--set", set],
            &needles,
        );
    }
    let config = dir.path().join("twice.json");
    std::fs::write(
        &config,
        "{\"records\": 100, \"strategies\": [\"UM\"], \"records\": 200}",
    )
    .unwrap();
    refused(
        &out,
        &[
            "run",
            "rum-update",
            "--scale",
            "tiny",
            "--out",
            o,
            "--config",
            config.to_str().unwrap(),
        ],
        &["twice.json", "key `records` appears twice", "100", "200"],
    );
}

/// Inputs whose message used to mislead now say what was wrong (and a BOM is simply read).
#[test]
fn misleading_inputs_get_messages_that_say_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("results");
    let o = out.to_str().unwrap();
    let path = |name: &str| d.join(name).to_str().unwrap().to_string();
    let tiny = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["run", "rum-update", "--scale", "tiny", "--set", "strategies=UM"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(["--out".to_string(), o.to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let refuse = |extra: &[&str], needles: &[&str]| {
        let args = tiny(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&out, &args, needles);
    };
    // An empty file or folder: said so, not "cannot tell the format".
    std::fs::write(d.join("empty.txt"), "").unwrap();
    std::fs::create_dir(d.join("nothing")).unwrap();
    refuse(&["--data", &path("empty.txt")], &["empty.txt is empty (0 bytes)"]);
    refuse(
        &["--data", &path("nothing")],
        &["folder", "nothing holds no files"],
    );
    // A repeated trace is named as --trace.
    let trace = path("g.csv");
    assert!(
        lsmlab(&["gen", "rum-gowalla", "--scale", "tiny", "--out", &trace])
            .status
            .success()
    );
    refuse(
        &["--trace", &trace, "--trace", &trace],
        &["--trace", "g.csv and --trace", "the same path"],
    );
    // The range a refusal gives is the one the config accepts, not the type's.
    refuse(
        &["--set", "vacuum_threshold=-1"],
        &["`vacuum_threshold`", "`-1`", "from 1 to 4294967295"],
    );
    // file_dir where no file can be created: refused before running, naming key and value.
    refuse(
        &["--set", "device=file", "--set", "file_dir=/proc"],
        &["`file_dir`", "`/proc`", "a directory where files can be created"],
    );
    // A result path that is a directory: found before the run, not after.
    std::fs::create_dir_all(out.join("tiny/rum-update.json")).unwrap();
    let res = lsmlab(
        &tiny(&["--set", "datasets=gowalla"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(res.status.code(), Some(1));
    assert!(
        stderr(&res).contains("rum-update.json exists and is not a file") && !ran_anything(&stderr(&res)),
        "{}",
        stderr(&res)
    );
    std::fs::remove_dir_all(out.join("tiny")).unwrap();
    // Coordinates that parse but overflow the extent: said in words, no `Rect { .. }` dump.
    std::fs::write(
        d.join("huge.csv"),
        "uid,lat,lon,time\n1,1e308,5,100\n2,-1e308,6,200\n3,bad,7,300\n",
    )
    .unwrap();
    let res = lsmlab(
        &tiny(&["--data", &path("huge.csv"), "--skip-malformed"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let err = stderr(&res);
    assert_eq!(res.status.code(), Some(1));
    assert!(
        err.contains("huge.csv: the records span") && err.contains("1e308") && !err.contains("Rect {"),
        "{err}"
    );
    assert!(!out.join("tiny/rum-update.json").exists());
    // Another experiment's result as --config.
    let other = d.join("other/tiny/rum-update.json");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    let res = lsmlab(&[
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--set",
        "datasets=gowalla",
        "--set",
        "strategies=UM",
        "--out",
        d.join("other").to_str().unwrap(),
    ]);
    assert!(res.status.success(), "{}", stderr(&res));
    let res = lsmlab(&[
        "run",
        "rum-query",
        "--scale",
        "tiny",
        "--print-config",
        "--config",
        other.to_str().unwrap(),
    ]);
    assert_eq!(res.status.code(), Some(1));
    assert!(
        stderr(&res).contains("is a result of `rum-update`, not of `rum-query`"),
        "{}",
        stderr(&res)
    );
    // compare on a field edited into another type: named, not "0 rows matched".
    let text = std::fs::read_to_string(&other).unwrap();
    let edited = text.replacen("\"flushes\": ", "\"flushes\": \"", 1);
    let edited = {
        let at = edited.find("\"flushes\": \"").unwrap() + "\"flushes\": \"".len();
        let end = at + edited[at..].find([',', '\n']).unwrap();
        format!("{}\"{}", &edited[..end], &edited[end..])
    };
    let b = d.join("b.json");
    std::fs::write(&b, edited).unwrap();
    let res = lsmlab(&["compare", other.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(res.status.code(), Some(1));
    assert!(
        stderr(&res).contains("field `flushes` is a number in A") && stderr(&res).contains("text in B"),
        "{}",
        stderr(&res)
    );
    // A UTF-8 BOM in a CSV or a JSON config is read, not part of the first name.
    let csv = format!(
        "\u{feff}uid,lng,lat,datetime\n{}",
        (0..40)
            .map(|i| format!("{},{}.5,{}.25,{}\n", i % 5, i, i, 1000 + i))
            .collect::<String>()
    );
    std::fs::write(d.join("bom.csv"), csv).unwrap();
    let res = lsmlab(
        &tiny(&["--data", &path("bom.csv")])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(res.status.success(), "{}", stderr(&res));
    std::fs::write(d.join("bom.json"), "\u{feff}{\"records\": 123}").unwrap();
    let res = lsmlab(&[
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--print-config",
        "--config",
        &path("bom.json"),
    ]);
    assert!(res.status.success(), "{}", stderr(&res));
    assert!(stdout(&res).contains("\"records\": 123"));
    // Choice names are case-insensitive everywhere, as strategies always were.
    let res = lsmlab(&[
        "run",
        "rum-update",
        "--scale",
        "tiny",
        "--print-config",
        "--set",
        "merge_policy=PREFIX",
        "--set",
        "strategies=um+f",
        "--set",
        "datasets=Gowalla",
        "--set",
        "device=MEM",
    ]);
    assert!(res.status.success(), "{}", stderr(&res));
    let config = stdout(&res);
    for canonical in [
        "\"merge_policy\": \"prefix\"",
        "\"UM+F\"",
        "\"gowalla\"",
        "\"device\": \"mem\"",
    ] {
        assert!(config.contains(canonical), "{canonical}: {config}");
    }
}

/// `diol --data` of a delays file needs no `--format delays` (diol reads nothing else); a file of
/// locations is refused before any cell starts, and so is a second file or another format.
#[test]
fn diol_infers_its_delays_format_and_refuses_other_data_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = out.to_str().unwrap();
    let delays = dir.path().join("delays_ms.txt");
    std::fs::write(
        &delays,
        (0..500)
            .map(|i| format!("{}\n", (i * 37) % 400))
            .collect::<String>(),
    )
    .unwrap();
    let delays = delays.to_str().unwrap();
    let locations = dir.path().join("checkins.tsv");
    std::fs::write(&locations, "0\t2010-10-12T00:21:28Z\t40.6\t-73.7\t1\n").unwrap();
    let locations = locations.to_str().unwrap();
    let res = lsmlab(&[
        "run",
        "diol",
        "--scale",
        "tiny",
        "--data",
        delays,
        "--print-config",
    ]);
    assert!(res.status.success(), "{}", stderr(&res));
    let res = Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args([
            "run",
            "diol",
            "--scale",
            "tiny",
            "--out",
            o,
            "--data",
            delays,
            "--set",
            "workloads=A",
        ])
        .args(["--set", "layouts=diol", "--set", "o3_ratios=0.1"])
        .output()
        .unwrap();
    assert!(res.status.success(), "{}", stderr(&res));
    let result = std::fs::read_to_string(out.join("tiny/diol.json")).unwrap();
    assert!(result.contains("\"format\": \"delays\"") && result.contains("delays_ms.txt"));
    std::fs::remove_dir_all(&out).unwrap();
    refused(
        &out,
        &["run", "diol", "--scale", "tiny", "--out", o, "--data", locations],
        &["checkins.tsv", "as a file of delays", "integer"],
    );
    refused(
        &out,
        &[
            "run", "diol", "--scale", "tiny", "--out", o, "--data", delays, "--data", locations,
        ],
        &["reads one file of delays", "delays_ms.txt", "checkins.tsv"],
    );
    refused(
        &out,
        &[
            "run", "diol", "--scale", "tiny", "--out", o, "--data", delays, "--format", "csv",
        ],
        &["--format csv does not apply", "delays_ms.txt"],
    );
    refused(
        &out,
        &[
            "run",
            "rum-update",
            "--scale",
            "tiny",
            "--out",
            o,
            "--data",
            delays,
            "--format",
            "delays",
        ],
        &["`rum-update` reads location records", "delays_ms.txt"],
    );
}
