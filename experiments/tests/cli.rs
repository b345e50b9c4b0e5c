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
