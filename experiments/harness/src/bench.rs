//! `lsmlab bench-summary`: the criterion benches that run lsmlab beside peer crates, as one JSON
//! file of ratios (`results/bench/peers.json`).
//!
//! A bench group is one operation on one input; its functions whose names start with `lsmlab` are
//! lsmlab's, every other function is a peer doing the same work (`engine/benches/peers.rs`,
//! `engine/benches/cache.rs`, `experiments/benches/stores.rs`). Each (lsmlab function, peer) pair of a group becomes one row with
//! both throughputs and `ratio` = lsmlab's throughput / the peer's (above 1: lsmlab is faster),
//! from criterion's mean estimate of the latest run (`<criterion dir>/<group>/<function>/new/`).
//! The groups `engine/benches/paired.rs` also runs in paired rounds (both sides timed back to back
//! in every round) add the median of the rounds' ratios and its quartiles to their rows, and the cache
//! groups each side's device reads per element (the counted work behind the time).

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
    /// The median over paired rounds of the peer's time over lsmlab's (`engine/benches/paired.rs`:
    /// both sides timed back to back in every round), when the operation was run paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_ratio: Option<f64>,
    /// The lower and upper quartiles of the paired rounds' ratios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_quartiles: Option<[f64; 2]>,
    /// The paired rounds behind [`PeerRow::paired_ratio`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_rounds: Option<usize>,
    /// Device page reads per element over the paired rounds, lsmlab's and the peer's, when the
    /// group counted them (both sides read one device): the work behind the time. Sides that read
    /// the device unequally differ by policy as well as by code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_reads_per_element: Option<[f64; 2]>,
}

/// The `schema` of a paired group's file (`engine/benches/paired.rs` writes them).
pub const PAIRED_SCHEMA: &str = "lsmlab.paired/1";

/// One paired group as `engine/benches/paired.rs` wrote it: every side's CPU time per round.
#[derive(Clone, Debug, Deserialize)]
pub struct PairedGroup {
    /// The file's schema, [`PAIRED_SCHEMA`].
    pub schema: String,
    /// The operation, named as its criterion group.
    pub group: String,
    /// Elements one side's round processes.
    pub elements: u64,
    /// Function -> its CPU nanoseconds in each round (every function has the same rounds).
    pub rounds_ns: BTreeMap<String, Vec<u64>>,
    /// Function -> the device page reads of each of its timed rounds, for groups whose sides read
    /// one device (absent otherwise).
    #[serde(default)]
    pub device_reads: BTreeMap<String, Vec<u64>>,
}

/// The median and quartiles of the rounds' ratios `peer / lsmlab` (per round: the peer's time over
/// lsmlab's, i.e. lsmlab's throughput over the peer's).
fn paired_ratio(ours: &[u64], peer: &[u64]) -> (f64, [f64; 2]) {
    let mut r: Vec<f64> = ours
        .iter()
        .zip(peer)
        .map(|(a, b)| *b as f64 / *a as f64)
        .collect();
    r.sort_by(f64::total_cmp);
    let at = |q: usize| r[(r.len() - 1) * q / 4];
    (at(2), [at(1), at(3)])
}

/// Every paired group under `dir` (its `*.json` files), sorted by group. Errors name the file.
pub fn collect_paired(dir: &Path) -> anyhow::Result<Vec<PairedGroup>> {
    if !dir.is_dir() {
        bail!(
            "{} does not exist or is not a directory; run `make bench` (or `cargo bench -p lsmlab-engine --bench paired`) first",
            dir.display()
        );
    }
    let mut groups = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let g: PairedGroup = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a paired group (engine/benches/paired.rs's output)",
                path.display()
            )
        })?;
        if g.schema != PAIRED_SCHEMA {
            bail!(
                "{} has schema {:?}, not {PAIRED_SCHEMA:?}",
                path.display(),
                g.schema
            );
        }
        let rounds = g.rounds_ns.values().next().map_or(0, Vec::len);
        if rounds == 0 || g.elements == 0 {
            bail!("{}: no rounds, or no elements per round", path.display());
        }
        if let Some((f, v)) = g
            .rounds_ns
            .iter()
            .find(|(_, v)| v.len() != rounds || v.contains(&0))
        {
            bail!(
                "{}: {f} has {} rounds (others {rounds}), or a round of 0 ns",
                path.display(),
                v.len()
            );
        }
        if !g.device_reads.is_empty()
            && (!g.device_reads.keys().eq(g.rounds_ns.keys())
                || g.device_reads.values().any(|v| v.len() != rounds))
        {
            bail!(
                "{}: device_reads must give every function of rounds_ns ({}) one count per round ({rounds})",
                path.display(),
                g.rounds_ns.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        groups.push(g);
    }
    groups.sort_by(|a, b| a.group.cmp(&b.group));
    Ok(groups)
}

/// Adds the paired groups' ratios to `rows`: to the row of the same operation, lsmlab function and
/// peer, or as a row of its own (throughputs from the median rounds) when criterion measured none.
fn add_paired(rows: &mut Vec<PeerRow>, groups: &[PairedGroup]) {
    let median = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[(v.len() - 1) / 2] as f64
    };
    for g in groups {
        let per_s = |ns: &[u64]| g.elements as f64 / (median(ns) / 1e9);
        let reads_per_element = |f: &str| {
            let v = g.device_reads.get(f)?;
            Some(v.iter().sum::<u64>() as f64 / (v.len() as u64 * g.elements) as f64)
        };
        for (ours, ours_ns) in g.rounds_ns.iter().filter(|(f, _)| f.starts_with("lsmlab")) {
            for (peer, peer_ns) in g.rounds_ns.iter().filter(|(f, _)| !f.starts_with("lsmlab")) {
                let (ratio, quartiles) = paired_ratio(ours_ns, peer_ns);
                let key = (&g.group, ours, peer);
                let at = match rows
                    .iter()
                    .position(|r| (&r.operation, &r.lsmlab, &r.peer) == key)
                {
                    Some(i) => i,
                    None => {
                        rows.push(PeerRow {
                            operation: g.group.clone(),
                            lsmlab: ours.clone(),
                            peer: peer.clone(),
                            lsmlab_per_s: per_s(ours_ns),
                            peer_per_s: per_s(peer_ns),
                            ratio: per_s(ours_ns) / per_s(peer_ns),
                            previous_ratio: None,
                            paired_ratio: None,
                            paired_quartiles: None,
                            paired_rounds: None,
                            device_reads_per_element: None,
                        });
                        rows.len() - 1
                    }
                };
                let row = &mut rows[at];
                row.paired_ratio = Some(ratio);
                row.paired_quartiles = Some(quartiles);
                row.paired_rounds = Some(ours_ns.len());
                row.device_reads_per_element = reads_per_element(ours)
                    .zip(reads_per_element(peer))
                    .map(|(a, b)| [a, b]);
            }
        }
    }
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
                    paired_ratio: None,
                    paired_quartiles: None,
                    paired_rounds: None,
                    device_reads_per_element: None,
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
/// itself), each row also carries that run's ratio; with `paired` (the directory of
/// `engine/benches/paired.rs`'s groups), the paired rounds' median ratio. A row below 1.0 by any
/// of them is listed.
pub fn write_summary(
    criterion_dir: &Path,
    out: &Path,
    previous: Option<&Path>,
    paired: Option<&Path>,
) -> anyhow::Result<PeersSummary> {
    let previous = previous.map(read_summary).transpose()?;
    let paired = paired.map(collect_paired).transpose()?;
    let measured = collect(criterion_dir)?;
    let mut rows = rows(&measured);
    if let Some(groups) = &paired {
        add_paired(&mut rows, groups);
    }
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
        .filter(|r| {
            r.ratio < 1.0
                || r.previous_ratio.is_some_and(|p| p < 1.0)
                || r.paired_ratio.is_some_and(|p| p < 1.0)
        })
        .map(|r| {
            let previous = r
                .previous_ratio
                .map(|p| format!("; previous run {p:.2}x"))
                .unwrap_or_default();
            let paired = match (r.paired_ratio, r.paired_quartiles) {
                (Some(p), Some([lo, hi])) => format!("; paired {p:.2}x, quartiles {lo:.2}-{hi:.2}"),
                _ => String::new(),
            };
            let reads = r
                .device_reads_per_element
                .map(|[ours, peer]| format!("; device reads per element {ours:.3} vs {peer:.3}"))
                .unwrap_or_default();
            format!(
                "{}: {} vs {} ({:.2}x{previous}{paired}{reads})",
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
        let summary = write_summary(dir.path(), &out, None, None).unwrap();
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
        let err =
            write_summary(&dir.path().join("nope"), &dir.path().join("p.json"), None, None).unwrap_err();
        assert!(format!("{err:#}").contains("make bench"), "{err:#}");
        bench(dir.path(), "g", "lsmlab", 1.0, None);
        fs::write(dir.path().join("g/lsmlab/new/estimates.json"), "{").unwrap();
        let err = write_summary(dir.path(), &dir.path().join("p.json"), None, None).unwrap_err();
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
        write_summary(dir.path(), &out, None, None).unwrap();
        // the second run: hit 0.5x -> 1.25x, miss 0.5x -> 0.8x; the previous file is `out` itself
        bench(dir.path(), "hit", "lsmlab", 8.0, None);
        bench(dir.path(), "hit", "peer", 10.0, None);
        bench(dir.path(), "miss", "peer", 8.0, None);
        let s = write_summary(dir.path(), &out, Some(&out), None).unwrap();
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
        let err = write_summary(dir.path(), &dir.path().join("q.json"), Some(&bad), None).unwrap_err();
        assert!(
            format!("{err:#}").contains("bad.json is not a peers summary"),
            "{err:#}"
        );
        assert!(!dir.path().join("q.json").exists());
    }

    fn paired(dir: &Path, group: &str, rounds: &[(&str, &[u64])]) {
        paired_with_reads(dir, group, rounds, &[]);
    }

    fn paired_with_reads(dir: &Path, group: &str, rounds: &[(&str, &[u64])], reads: &[(&str, &[u64])]) {
        fs::create_dir_all(dir).unwrap();
        let rounds: BTreeMap<&str, &[u64]> = rounds.iter().copied().collect();
        let mut doc = serde_json::json!({
            "schema": PAIRED_SCHEMA, "group": group, "elements": 1000, "rounds_ns": rounds,
        });
        if !reads.is_empty() {
            let reads: BTreeMap<&str, &[u64]> = reads.iter().copied().collect();
            doc["device_reads"] = serde_json::json!(reads);
        }
        fs::write(dir.join(format!("{group}.json")), doc.to_string()).unwrap();
    }

    #[test]
    fn counted_device_reads_go_beside_the_paired_ratio() {
        let dir = tempfile::tempdir().unwrap();
        let crit = dir.path().join("criterion");
        let pairs = dir.path().join("paired");
        bench(&crit, "miss", "lsmlab", 10.0, None);
        bench(&crit, "miss", "peer", 9.0, None);
        // 1000 elements a round: lsmlab reads the device 750 times a round, the peer 600 and 700.
        paired_with_reads(
            &pairs,
            "miss",
            &[("lsmlab", &[10, 10]), ("peer", &[9, 9])],
            &[("lsmlab", &[750, 750]), ("peer", &[600, 700])],
        );
        let out = dir.path().join("peers.json");
        let s = write_summary(&crit, &out, None, Some(&pairs)).unwrap();
        assert_eq!(s.rows[0].device_reads_per_element, Some([0.75, 0.65]));
        assert_eq!(
            s.below_peer,
            vec!["miss: lsmlab vs peer (0.90x; paired 0.90x, quartiles 0.90-0.90; device reads per element 0.750 vs 0.650)".to_string()]
        );
        // Counts that do not match the timed rounds are named, and nothing is written.
        let out2 = dir.path().join("p2.json");
        paired_with_reads(
            &pairs,
            "miss",
            &[("lsmlab", &[10, 10]), ("peer", &[9, 9])],
            &[("lsmlab", &[750]), ("peer", &[600, 700])],
        );
        let err = write_summary(&crit, &out2, None, Some(&pairs)).unwrap_err();
        assert!(
            format!("{err:#}").contains("miss.json: device_reads must give every function"),
            "{err:#}"
        );
        assert!(!out2.exists());
    }

    #[test]
    fn paired_rounds_add_their_median_ratio_and_its_quartiles() {
        let dir = tempfile::tempdir().unwrap();
        let crit = dir.path().join("criterion");
        let pairs = dir.path().join("paired");
        bench(&crit, "hit", "lsmlab", 10.0, None);
        bench(&crit, "hit", "peer", 12.0, None);
        // Per round peer / lsmlab: 2.0, 0.5, 0.9, 0.8, 3.0 -> median 0.9, quartiles 0.8 and 2.0;
        // criterion's ratio of means (1.2) is above 1.0, the paired median below.
        paired(
            &pairs,
            "hit",
            &[("lsmlab", &[10, 20, 10, 10, 10]), ("peer", &[20, 10, 9, 8, 30])],
        );
        // An operation criterion did not measure gets a row of its own.
        paired(&pairs, "scan", &[("lsmlab-a", &[4, 4, 4]), ("other", &[8, 8, 8])]);
        let out = dir.path().join("peers.json");
        let s = write_summary(&crit, &out, None, Some(&pairs)).unwrap();
        let hit = s.rows.iter().find(|r| r.operation == "hit").unwrap();
        assert!((hit.ratio - 1.2).abs() < 1e-9, "{hit:?}");
        assert_eq!(
            (hit.paired_ratio, hit.paired_quartiles, hit.paired_rounds),
            (Some(0.9), Some([0.8, 2.0]), Some(5))
        );
        assert_eq!(
            s.below_peer,
            vec!["hit: lsmlab vs peer (1.20x; paired 0.90x, quartiles 0.80-2.00)".to_string()]
        );
        let scan = s.rows.iter().find(|r| r.operation == "scan").unwrap();
        assert_eq!((scan.lsmlab.as_str(), scan.peer.as_str()), ("lsmlab-a", "other"));
        assert!(
            (scan.ratio - 2.0).abs() < 1e-9 && (scan.lsmlab_per_s - 2.5e11).abs() < 1.0,
            "{scan:?}"
        );
        assert_eq!(scan.paired_ratio, Some(2.0));

        // Broken paired files are named, and nothing is written.
        let out2 = dir.path().join("p2.json");
        paired(&pairs, "bad", &[("lsmlab", &[1, 2]), ("peer", &[3])]);
        let err = write_summary(&crit, &out2, None, Some(&pairs)).unwrap_err();
        assert!(
            format!("{err:#}").contains("bad.json: peer has 1 rounds"),
            "{err:#}"
        );
        fs::write(pairs.join("bad.json"), "{").unwrap();
        let err = write_summary(&crit, &out2, None, Some(&pairs)).unwrap_err();
        assert!(
            format!("{err:#}").contains("bad.json is not a paired group"),
            "{err:#}"
        );
        let err = write_summary(&crit, &out2, None, Some(&dir.path().join("none"))).unwrap_err();
        assert!(format!("{err:#}").contains("--bench paired"), "{err:#}");
        assert!(!out2.exists());
    }
}
