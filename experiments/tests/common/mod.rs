//! Helpers shared by the test crates that drive the `lsmlab` binary end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `lsmlab` binary with `args`, the memory check off (runs are small; the check is
/// tested on its own).
pub fn lsmlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args(args)
        .env("LSMLAB_NO_MEMORY_CHECK", "1")
        .output()
        .expect("lsmlab runs")
}

/// The stdout of a run that must have succeeded; else fails with its stdout and stderr.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "lsmlab failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `lsmlab gen WORKLOAD --scale tiny --out DIR/WORKLOAD.csv ARGS...`, which must succeed; the
/// trace's path.
pub fn gen(dir: &Path, workload: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(format!("{workload}.csv"));
    let mut all = vec![
        "gen",
        workload,
        "--scale",
        "tiny",
        "--out",
        path.to_str().unwrap(),
    ];
    all.extend(args);
    ok(&lsmlab(&all));
    path
}
