//! The binary's command-line contract: help everywhere, errors as `error: ...` with a non-zero exit.

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
    assert!(lsmlab(&["list"]).status.success());
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
            &["vacuum_threshold", "4294967297", "0 to 4294967295"][..],
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
