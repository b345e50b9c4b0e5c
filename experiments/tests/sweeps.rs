//! Long sweeps through the `lsmlab` binary: provenance, `compare`, cells with `--resume`,
//! `--shard` with `merge`, and `--repeat`. Runs are small (a few thousand records); every
//! assertion is about counted fields, never about time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value};

fn lsmlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lsmlab"))
        .args(args)
        .env("LSMLAB_NO_MEMORY_CHECK", "1")
        .output()
        .expect("lsmlab runs")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "lsmlab failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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
    lsmlab::rows::is_timed(key)
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
