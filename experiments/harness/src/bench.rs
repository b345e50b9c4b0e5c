//! `lsmlab bench-summary`: the criterion benches that run lsmlab beside peer crates, as one JSON
//! file of ratios (`results/bench/peers.json`).
//!
//! A bench group is one operation on one input; its functions whose names start with `lsmlab` are
//! lsmlab's, every other function is a peer doing the same work (`engine/benches/peers.rs`,
//! `engine/benches/cache.rs`, `experiments/benches/stores.rs`). Each (lsmlab function, peer) pair of a group becomes one row with
//! both throughputs and `ratio` = lsmlab's throughput / the peer's (above 1: lsmlab is faster),
//! from criterion's mean estimate of the latest run (`<criterion dir>/<group>/<function>/new/`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::result::{now_rfc3339, Machine};

/// The `schema` of a peers summary.
pub const SCHEMA: &str = "lsmlab.peers/1";

/// One benchmark function's latest estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The criterion group, e.g. `kvstore`.
    pub group: String,
    /// The function within its group, e.g. `lsmlab/get` or `fjall/get`.
    pub function: String,
    /// Mean time of one iteration, nanoseconds (criterion's mean point estimate).
    pub mean_ns: f64,
    /// Elements one iteration processes (criterion's `Throughput::Elements`), 1 when not given.
    pub elements: u64,
}

impl Measured {
    /// Elements per second.
    pub fn per_s(&self) -> f64 {
        self.elements as f64 / (self.mean_ns / 1e9)
    }

    fn is_lsmlab(&self) -> bool {
        self.function.starts_with("lsmlab")
    }
}

/// One lsmlab function against one peer on one operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerRow {
    /// The operation both sides ran (the criterion group).
    pub operation: String,
    /// The lsmlab function measured.
    pub lsmlab: String,
    /// The peer function measured.
    pub peer: String,
    /// lsmlab's throughput, elements per second.
    pub lsmlab_per_s: f64,
    /// The peer's throughput, elements per second.
    pub peer_per_s: f64,
    /// lsmlab's throughput over the peer's: above 1 means lsmlab is faster.
    pub ratio: f64,
    /// The same row's ratio in the summary given as `--previous` (an earlier run), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_ratio: Option<f64>,
}

/// The file `lsmlab bench-summary` writes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PeersSummary {
    /// The file's schema, [`SCHEMA`].
    pub schema: String,
    /// When the summary was written (RFC 3339).
    pub generated_at: String,
    /// The machine the benchmarks ran on (assumed to be this one).
    pub machine: Machine,
    /// Where the estimates were read.
    pub criterion_dir: PathBuf,
    /// One row per lsmlab function and peer on an operation.
    pub rows: Vec<PeerRow>,
    /// The rows below 1.0 in this run or the previous one, as `operation: lsmlab vs peer (ratio)`
    /// (with `; previous run R` when there was one).
    pub below_peer: Vec<String>,
    /// When the previous run's summary, if one was given, was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_generated_at: Option<String>,
}

#[derive(Deserialize)]
struct BenchmarkJson {
    group_id: String,
    function_id: Option<String>,
    value_str: Option<String>,
    throughput: Option<BTreeMap<String, u64>>,
}

#[derive(Deserialize)]
struct Estimate {
    point_estimate: f64,
}

#[derive(Deserialize)]
struct EstimatesJson {
    mean: Estimate,
}

/// Every benchmark's latest estimate under `criterion_dir` (criterion's output directory), sorted
/// by group and function. Errors name the file that could not be read.
pub fn collect(criterion_dir: &Path) -> anyhow::Result<Vec<Measured>> {
    if !criterion_dir.is_dir() {
        bail!(
            "{} does not exist or is not a directory; run `make bench` (or `cargo bench`) first",
            criterion_dir.display()
        );
    }
    let mut found = Vec::new();
    let mut stack = vec![criterion_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "new") {
                    if path.join("benchmark.json").is_file() {
                        found.push(read_one(&path)?);
                    }
                } else if path.file_name().is_none_or(|n| n != "report" && n != "base") {
                    stack.push(path);
                }
            }
        }
    }
    found.sort_by(|a, b| (&a.group, &a.function).cmp(&(&b.group, &b.function)));
    Ok(found)
}

fn read_one(dir: &Path) -> anyhow::Result<Measured> {
    let read = |name: &str| -> anyhow::Result<String> {
        let p = dir.join(name);
        fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
    };
    let bench: BenchmarkJson = serde_json::from_str(&read("benchmark.json")?).with_context(|| {
        format!(
            "{} is not a criterion benchmark.json",
            dir.join("benchmark.json").display()
        )
    })?;
    let est: EstimatesJson = serde_json::from_str(&read("estimates.json")?).with_context(|| {
        format!(
            "{} is not a criterion estimates.json",
            dir.join("estimates.json").display()
        )
    })?;
    let function = bench
        .function_id
        .or(bench.value_str)
        .unwrap_or_else(|| bench.group_id.clone());
    let elements = bench
        .throughput
        .as_ref()
        .and_then(|t| t.get("Elements").copied())
        .unwrap_or(1)
        .max(1);
    if !(est.mean.point_estimate.is_finite() && est.mean.point_estimate > 0.0) {
        bail!(
            "{}: mean estimate {} is not a positive time",
            dir.display(),
            est.mean.point_estimate
        );
    }
    Ok(Measured {
        group: bench.group_id,
        function,
        mean_ns: est.mean.point_estimate,
        elements,
    })
}

/// The rows of every group that has both an lsmlab function and a peer.
pub fn rows(measured: &[Measured]) -> Vec<PeerRow> {
    let mut groups: BTreeMap<&str, Vec<&Measured>> = BTreeMap::new();
    for m in measured {
        groups.entry(&m.group).or_default().push(m);
    }
    let mut out = Vec::new();
    for (group, ms) in groups {
        for ours in ms.iter().filter(|m| m.is_lsmlab()) {
            for peer in ms.iter().filter(|m| !m.is_lsmlab()) {
                out.push(PeerRow {
                    operation: group.to_string(),
                    lsmlab: ours.function.clone(),
                    peer: peer.function.clone(),
                    lsmlab_per_s: ours.per_s(),
                    peer_per_s: peer.per_s(),
                    ratio: ours.per_s() / peer.per_s(),
                    previous_ratio: None,
                });
            }
        }
    }
    out
}

/// Reads a summary `lsmlab bench-summary` wrote. Errors name the file.
pub fn read_summary(path: &Path) -> anyhow::Result<PeersSummary> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let summary: PeersSummary = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a peers summary (lsmlab bench-summary's output)",
            path.display()
        )
    })?;
    if summary.schema != SCHEMA {
        bail!(
            "{} has schema {:?}, not {SCHEMA:?}",
            path.display(),
            summary.schema
        );
    }
    Ok(summary)
}

/// Reads the estimates under `criterion_dir` and writes the summary to `out` (atomically). With
/// `previous` (an earlier run's summary, read before `out` is written, so it may be `out`
/// itself), each row also carries that run's ratio, and a row below 1.0 in either run is listed.
pub fn write_summary(
    criterion_dir: &Path,
    out: &Path,
    previous: Option<&Path>,
) -> anyhow::Result<PeersSummary> {
    let previous = previous.map(read_summary).transpose()?;
    let measured = collect(criterion_dir)?;
    let mut rows = rows(&measured);
    if let Some(prev) = &previous {
        for row in &mut rows {
            row.previous_ratio = prev
                .rows
                .iter()
                .find(|p| (&p.operation, &p.lsmlab, &p.peer) == (&row.operation, &row.lsmlab, &row.peer))
                .map(|p| p.ratio);
        }
    }
    if rows.is_empty() {
        bail!(
            "no bench group under {} has both an lsmlab function and a peer; run `make bench` first",
            criterion_dir.display()
        );
    }
    let below_peer = rows
        .iter()
        .filter(|r| r.ratio < 1.0 || r.previous_ratio.is_some_and(|p| p < 1.0))
        .map(|r| {
            let previous = r
                .previous_ratio
                .map(|p| format!("; previous run {p:.2}x"))
                .unwrap_or_default();
            format!(
                "{}: {} vs {} ({:.2}x{previous})",
                r.operation, r.lsmlab, r.peer, r.ratio
            )
        })
        .collect();
    let summary = PeersSummary {
        schema: SCHEMA.into(),
        generated_at: now_rfc3339(),
        machine: Machine::detect(),
        criterion_dir: criterion_dir.to_path_buf(),
        rows,
        below_peer,
        previous_generated_at: previous.map(|p| p.generated_at),
    };
    crate::atomic::write(out, (serde_json::to_string_pretty(&summary)? + "\n").as_bytes())?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(root: &Path, group: &str, function: &str, ns: f64, elements: Option<u64>) {
        let dir = root.join(group).join(function).join("new");
        fs::create_dir_all(&dir).unwrap();
        let throughput = elements.map_or("null".to_string(), |e| format!("{{\"Elements\":{e}}}"));
        fs::write(
            dir.join("benchmark.json"),
            format!(
                "{{\"group_id\":\"{group}\",\"function_id\":\"{function}\",\"value_str\":null,\
                 \"throughput\":{throughput},\"full_id\":\"{group}/{function}\",\
                 \"directory_name\":\"{group}/{function}\",\"title\":\"{group}/{function}\"}}"
            ),
        )
        .unwrap();
        fs::write(
            dir.join("estimates.json"),
            format!("{{\"mean\":{{\"point_estimate\":{ns},\"standard_error\":1.0}}}}"),
        )
        .unwrap();
    }

    #[test]
    fn groups_pair_each_lsmlab_function_with_each_peer() {
        let dir = tempfile::tempdir().unwrap();
        bench(dir.path(), "insert", "lsmlab", 1000.0, Some(100));
        bench(dir.path(), "insert", "rstar", 2000.0, Some(100));
        bench(dir.path(), "hit", "lsmlab-lru", 10.0, None);
        bench(dir.path(), "hit", "lsmlab-clock", 20.0, None);
        bench(dir.path(), "hit", "quick_cache", 5.0, None);
        bench(dir.path(), "alone", "lsmlab", 5.0, None);
        let out = dir.path().join("bench/peers.json");
        let summary = write_summary(dir.path(), &out, None).unwrap();
        assert_eq!(summary.rows.len(), 3, "{:?}", summary.rows);
        let insert = summary.rows.iter().find(|r| r.operation == "insert").unwrap();
        assert!((insert.ratio - 2.0).abs() < 1e-9 && (insert.lsmlab_per_s - 1e8).abs() < 1.0);
        let below: Vec<&String> = summary.below_peer.iter().collect();
        assert_eq!(below.len(), 2, "{below:?}");
        assert!(
            below[0].contains("hit: lsmlab-clock vs quick_cache (0.25x)"),
            "{below:?}"
        );
        let back: serde_json::Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(back["schema"], SCHEMA);
    }

    #[test]
    fn missing_or_broken_estimates_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_summary(&dir.path().join("nope"), &dir.path().join("p.json"), None).unwrap_err();
        assert!(format!("{err:#}").contains("make bench"), "{err:#}");
        bench(dir.path(), "g", "lsmlab", 1.0, None);
        fs::write(dir.path().join("g/lsmlab/new/estimates.json"), "{").unwrap();
        let err = write_summary(dir.path(), &dir.path().join("p.json"), None).unwrap_err();
        assert!(format!("{err:#}").contains("estimates.json"), "{err:#}");
        assert!(!dir.path().join("p.json").exists());
    }

    #[test]
    fn a_previous_run_adds_its_ratio_and_its_rows_below_the_peer() {
        let dir = tempfile::tempdir().unwrap();
        bench(dir.path(), "hit", "lsmlab", 10.0, None);
        bench(dir.path(), "hit", "peer", 20.0, None);
        bench(dir.path(), "miss", "lsmlab", 10.0, None);
        bench(dir.path(), "miss", "peer", 5.0, None);
        let out = dir.path().join("peers.json");
        write_summary(dir.path(), &out, None).unwrap();
        // the second run: hit 0.5x -> 1.25x, miss 0.5x -> 0.8x; the previous file is `out` itself
        bench(dir.path(), "hit", "lsmlab", 8.0, None);
        bench(dir.path(), "hit", "peer", 10.0, None);
        bench(dir.path(), "miss", "peer", 8.0, None);
        let s = write_summary(dir.path(), &out, Some(&out)).unwrap();
        let hit = s.rows.iter().find(|r| r.operation == "hit").unwrap();
        assert!(
            (hit.ratio - 1.25).abs() < 1e-9 && hit.previous_ratio == Some(2.0),
            "{hit:?}"
        );
        assert_eq!(
            s.below_peer,
            vec!["miss: lsmlab vs peer (0.80x; previous run 0.50x)".to_string()]
        );
        assert!(s.previous_generated_at.is_some());
        // not a summary: named, nothing written
        let bad = dir.path().join("bad.json");
        fs::write(&bad, "{}").unwrap();
        let err = write_summary(dir.path(), &dir.path().join("q.json"), Some(&bad)).unwrap_err();
        assert!(
            format!("{err:#}").contains("bad.json is not a peers summary"),
            "{err:#}"
        );
        assert!(!dir.path().join("q.json").exists());
    }
}
