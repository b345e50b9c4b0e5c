//! Result files, `results/<scale>/<experiment>.json` (schema `lsmlab.result/1`,
//! `docs/design.md#result-files`).
//!
//! The only thing the runner, the plotter and the report share. Written atomically (temp file in
//! the same directory, fsync, rename) so an interrupted run never leaves a half-written file that
//! looks whole, and never with a non-finite number: serde_json would write NaN as `null`, which
//! reads back as something else.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::rows::Row;
use crate::scale::Scale;

/// The name of the verdicts file `lsmlab report` writes beside a scale's results (not a result).
pub const CLAIMS_FILE_NAME: &str = "claims.json";

/// The `schema` field of every result file this version writes and reads.
pub const SCHEMA: &str = "lsmlab.result/1";

/// One run's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    /// The file's schema, [`SCHEMA`].
    pub schema: String,
    /// The experiment's registry name.
    pub experiment: String,
    /// The paper's name ([`crate::experiment::Experiment::paper`]).
    pub paper: String,
    /// The scale the run ran at.
    pub scale: Scale,
    /// The run's seed.
    pub seed: u64,
    /// Every parameter that shaped the run: the resolved params plus the run's extra config.
    pub config: serde_json::Map<String, Value>,
    /// The machine the run ran on.
    pub machine: Machine,
    /// The code the run ran.
    pub git: GitInfo,
    /// RFC 3339, UTC, e.g. `2025-11-30T13:15:02Z`.
    pub started_at: String,
    /// Wall time of the whole run, seconds.
    pub duration_s: f64,
    /// The measured rows, in run order.
    pub rows: Vec<Row>,
    /// What a reader must know to interpret the rows.
    pub notes: Vec<String>,
    /// What built and started the run. Absent in files written before lsmlab recorded it; readers
    /// must not require it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The cells of the run's grid this file holds ([`crate::cells`]). Absent in files written
    /// before runs had cells; such a file holds one whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<CellLog>,
}

/// What built and started a run: the lsmlab version, the cargo profile and the rustc version of
/// the binary (recorded at build time by `experiments/build.rs`), and the full command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The crate version of the binary.
    pub lsmlab_version: String,
    /// `release` or `debug`.
    pub profile: String,
    /// `rustc --version` of the compiler that built the binary.
    pub rustc: String,
    /// The program and its arguments, as the process received them.
    pub command_line: Vec<String>,
}

impl Provenance {
    /// This binary's provenance, with this process's command line.
    pub fn current() -> Provenance {
        Provenance {
            lsmlab_version: env!("CARGO_PKG_VERSION").to_string(),
            profile: env!("LSMLAB_BUILD_PROFILE").to_string(),
            rustc: env!("LSMLAB_RUSTC_VERSION").to_string(),
            command_line: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }
}

/// Which cells of the grid a result file holds, in grid order; their rows follow one another in
/// the file's `rows`, `rows` of them per cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellLog {
    /// The cells of the whole grid (every shard's).
    pub total: usize,
    /// Set when the run was `--shard K/N`: the file holds only that shard's cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::cells::Shard>,
    /// Runs per cell (`--repeat R`, seeds from [`crate::cells::repeat_seed`]); rows then hold the
    /// mean and a 95% interval ([`crate::repeat`]).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: u32,
    /// The cells this file holds, in run order; their rows follow each other in the same order.
    pub done: Vec<CellRecord>,
    /// The run's memory estimate, in bytes, as the runner checked it against the memory available
    /// before the first cell (absent for experiments that make none, and with the check off), so
    /// that the cells' `peak_rss_bytes` can be set beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_estimate_bytes: Option<u64>,
    /// Rows computed across the cells once the grid was complete
    /// ([`crate::experiment::Experiment::complete_rows`]), after every cell's rows (0 in a shard's
    /// file, and in results of experiments without such rows).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub grid_rows: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One cell that ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// 0-based index in the whole grid.
    pub index: usize,
    /// What the cell narrowed, e.g. `datasets=berlinmod strategies=UM+F`.
    pub label: String,
    /// How many rows it wrote.
    pub rows: usize,
    /// Wall time of the cell, seconds.
    pub duration_s: f64,
    /// CPU time the process used for the cell, every thread, user and system, seconds
    /// ([`crate::usage`]); absent in results written before lsmlab recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    /// The process's largest resident set during the cell, bytes ([`crate::usage`]); absent where
    /// the system cannot tell it for the cell alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
}

impl CellLog {
    /// The rows of each done cell, as index ranges into the file's rows; fails when the counts
    /// and the [`CellLog::grid_rows`] after them do not add up to `rows`.
    pub fn row_ranges(&self, rows: usize) -> anyhow::Result<Vec<std::ops::Range<usize>>> {
        let mut start = 0;
        let mut ranges = Vec::with_capacity(self.done.len());
        for cell in &self.done {
            ranges.push(start..start + cell.rows);
            start += cell.rows;
        }
        if start + self.grid_rows != rows {
            let grid = if self.grid_rows > 0 {
                format!(" and {} rows of the whole grid", self.grid_rows)
            } else {
                String::new()
            };
            bail!("its cells account for {start} rows{grid}, but it has {rows}");
        }
        Ok(ranges)
    }

    /// The rows the done cells wrote, which the file's rows begin with.
    pub fn cell_rows(&self) -> usize {
        self.done.iter().map(|c| c.rows).sum()
    }

    /// The CPU seconds of every cell this file holds, summed; `None` unless every cell recorded
    /// its own.
    pub fn cpu_s(&self) -> Option<f64> {
        self.done.iter().map(|c| c.cpu_s).sum()
    }

    /// The largest peak of the cells this file holds, with the cell that reached it; `None` unless
    /// every cell recorded its own.
    pub fn peak(&self) -> Option<(u64, &CellRecord)> {
        let peaks: Option<Vec<u64>> = self.done.iter().map(|c| c.peak_rss_bytes).collect();
        let (at, &peak) = peaks?.iter().enumerate().max_by_key(|&(_, p)| *p)?;
        Some((peak, &self.done[at]))
    }
}

/// The machine a run ran on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Operating system name and version.
    pub os: String,
    /// CPU brand string.
    pub cpu: String,
    /// Logical CPUs.
    pub cores: usize,
    /// Total memory, bytes.
    pub memory_bytes: u64,
}

/// The code a run ran: the state of the source tree when the binary was built
/// ([`GitInfo::of_build`]). `commit` is `unknown` (and `dirty` false) for a binary built outside a
/// git work tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    /// The commit hash, or `unknown`.
    pub commit: String,
    /// The code the binary was built from differed from the commit: a tracked file under
    /// [`crate::source_tree::CODE_PATHS`] (the Cargo manifests, `engine/`, `workloads/`,
    /// `experiments/`) was modified. Untracked files and everything else (documentation, results,
    /// figures, REPORT.md, which `make` rewrites) do not count.
    pub dirty: bool,
}

impl Machine {
    /// Asks the operating system (through sysinfo); fields it cannot tell are `unknown` / 0.
    pub fn detect() -> Machine {
        let os = sysinfo::System::long_os_version()
            .or_else(|_| sysinfo::System::name())
            .unwrap_or_else(|_| std::env::consts::OS.to_string());
        let fallback_cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
        match sysinfo::System::new() {
            Ok(mut system) => {
                system.refresh_memory();
                system.refresh_cpu_all();
                let cpus = system.cpus();
                let cpu = cpus
                    .first()
                    .map(|c| c.brand().trim().to_string())
                    .filter(|b| !b.is_empty())
                    .unwrap_or_else(|| std::env::consts::ARCH.to_string());
                let cores = if cpus.is_empty() {
                    fallback_cores
                } else {
                    cpus.len()
                };
                Machine {
                    os,
                    cpu,
                    cores,
                    memory_bytes: system.total_memory(),
                }
            }
            Err(_) => Machine {
                os,
                cpu: std::env::consts::ARCH.to_string(),
                cores: fallback_cores,
                memory_bytes: 0,
            },
        }
    }
}

impl GitInfo {
    /// The source tree this binary was built from, as it was at the build (recorded by
    /// `build.rs`): a run started from an older binary while the tree has moved on, or has
    /// uncommitted edits the binary does not hold, still names the code that ran.
    pub fn of_build() -> GitInfo {
        GitInfo {
            commit: env!("LSMLAB_GIT_COMMIT").to_string(),
            dirty: env!("LSMLAB_GIT_DIRTY") == "true",
        }
    }

    /// The commit checked out in the work tree holding `dir` and whether its code
    /// ([`crate::source_tree::CODE_PATHS`]) differs from it.
    pub fn detect(dir: &Path) -> GitInfo {
        match crate::source_tree::state(dir) {
            Some((commit, dirty)) => GitInfo { commit, dirty },
            None => GitInfo::unknown(),
        }
    }

    /// The code of a run outside a git work tree (commit `unknown`, not dirty).
    pub fn unknown() -> GitInfo {
        GitInfo {
            commit: "unknown".to_string(),
            dirty: false,
        }
    }
}

/// Now, as RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339_utc(secs as i64)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_utc(unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs_of_day = unix_secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60
    )
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 -> (year, month, day), proleptic
/// Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl ResultFile {
    /// Where `lsmlab run` writes a result: `DIR/<scale>/<experiment>.json`.
    pub fn path_in(results_dir: &Path, scale: Scale, experiment: &str) -> PathBuf {
        results_dir
            .join(scale.as_str())
            .join(format!("{experiment}.json"))
    }

    /// Checks what serde_json cannot: a finite duration, and rows and config free of `null` (how
    /// serde_json writes NaN and infinities) with rows flat (tidy data: scalars only).
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.schema != SCHEMA {
            bail!("schema is `{}`, expected `{SCHEMA}`", self.schema);
        }
        if !self.duration_s.is_finite() || self.duration_s < 0.0 {
            bail!(
                "duration_s is {}, not a finite number of seconds",
                self.duration_s
            );
        }
        if let Some(cells) = &self.cells {
            cells
                .row_ranges(self.rows.len())
                .context("cells do not match rows")?;
        }
        for (key, value) in &self.config {
            check_no_null(value).with_context(|| format!("config field `{key}`"))?;
        }
        for (i, row) in self.rows.iter().enumerate() {
            for (key, value) in row {
                match value {
                    Value::Null => bail!(
                        "row {i}, field `{key}` is null (a NaN or infinity turned into null?): leave the \
                         field out and add a note instead"
                    ),
                    Value::Array(_) | Value::Object(_) => bail!(
                        "row {i}, field `{key}` is not a scalar: rows are flat (one record per measured cell)"
                    ),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Writes the file atomically ([`crate::atomic`]), creating the directory if needed. Refuses to
    /// write an invalid result.
    pub fn write_atomic(&self, path: &Path) -> anyhow::Result<()> {
        self.validate()
            .with_context(|| format!("refusing to write result file {}", path.display()))?;
        let mut json = serde_json::to_string_pretty(self)
            .with_context(|| format!("serialising result for {}", path.display()))?;
        json.push('\n');
        crate::atomic::write(path, json.as_bytes()).context("writing result file")
    }

    /// Reads and checks a result file; errors name the file.
    pub fn read(path: &Path) -> anyhow::Result<ResultFile> {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading result file {}", path.display()))?;
        let probe: Value = serde_json::from_str(&text)
            .with_context(|| format!("result file {} is not valid JSON", path.display()))?;
        match probe.get("schema").and_then(Value::as_str) {
            Some(SCHEMA) => {}
            Some(other) => {
                bail!(
                    "result file {} has schema `{other}`; this lsmlab reads `{SCHEMA}`",
                    path.display()
                )
            }
            None => bail!(
                "result file {} has no `schema` field; is it an lsmlab result?",
                path.display()
            ),
        }
        let result: ResultFile = serde_json::from_value(probe)
            .with_context(|| format!("result file {} does not match schema {SCHEMA}", path.display()))?;
        result
            .validate()
            .with_context(|| format!("result file {}", path.display()))?;
        Ok(result)
    }

    /// The string values of `key` across rows, in first-seen order (for categories and series).
    pub fn distinct(&self, key: &str) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for row in &self.rows {
            if let Some(v) = row.get(key) {
                let s = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if !seen.contains(&s) {
                    seen.push(s);
                }
            }
        }
        seen
    }
}

fn check_no_null(value: &Value) -> anyhow::Result<()> {
    match value {
        Value::Null => bail!("is null (a NaN or infinity turned into null?)"),
        Value::Array(items) => items.iter().try_for_each(check_no_null),
        Value::Object(map) => map.values().try_for_each(check_no_null),
        _ => Ok(()),
    }
}

/// A `--shard K/N` result's file name: `<experiment>.shard-K-of-N.json`.
pub fn is_shard_file(name: &str) -> bool {
    name.strip_suffix(".json")
        .and_then(|stem| stem.rsplit_once(".shard-"))
        .and_then(|(_, tail)| tail.split_once("-of-"))
        .is_some_and(|(k, n)| k.parse::<usize>().is_ok() && n.parse::<usize>().is_ok())
}

/// Every result file under `results_dir/<scale>/*.json`, for the given scales (all when empty),
/// sorted by scale then experiment name.
pub fn find_result_files(results_dir: &Path, scales: &[Scale]) -> anyhow::Result<Vec<PathBuf>> {
    let scales: Vec<Scale> = if scales.is_empty() {
        Scale::ALL.to_vec()
    } else {
        scales.to_vec()
    };
    let mut found = Vec::new();
    for scale in scales {
        let dir = results_dir.join(scale.as_str());
        if !dir.is_dir() {
            continue;
        }
        let mut here: Vec<PathBuf> = fs::read_dir(&dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|e| e == "json")
                    && !p.file_name().is_some_and(|n| {
                        // Hidden (temp) files, the claims evaluation `lsmlab report` writes here,
                        // and shards of a sweep (`lsmlab merge` joins them into one result first).
                        let n = n.to_string_lossy();
                        n.starts_with('.') || n == CLAIMS_FILE_NAME || is_shard_file(&n)
                    })
            })
            .collect();
        here.sort();
        found.extend(here);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::sample_result as sample;

    #[test]
    fn files_without_provenance_or_cells_still_read_and_new_ones_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        let mut json = serde_json::to_value(sample()).unwrap();
        assert!(json.get("provenance").is_none() && json.get("cells").is_none());
        fs::write(&path, json.to_string()).unwrap();
        assert_eq!(ResultFile::read(&path).unwrap(), sample());

        let mut result = sample();
        result.provenance = Some(Provenance::current());
        result.cells = Some(CellLog {
            total: 4,
            shard: Some(crate::cells::Shard { index: 2, count: 2 }),
            repeat: 1,
            done: vec![CellRecord {
                index: 1,
                label: "strategies=Eager".into(),
                rows: 1,
                duration_s: 0.5,
                cpu_s: Some(0.4),
                peak_rss_bytes: Some(3 << 20),
            }],
            memory_estimate_bytes: Some(4 << 20),
            grid_rows: 0,
        });
        result.write_atomic(&path).unwrap();
        assert_eq!(ResultFile::read(&path).unwrap(), result);
        json = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert!(json["cells"].get("repeat").is_none(), "repeat 1 is left out");
        assert_eq!(json["cells"]["memory_estimate_bytes"], 4 << 20);
        assert_eq!(json["cells"]["done"][0]["peak_rss_bytes"], 3 << 20);

        // A cell log written before cells recorded their CPU time and peak still reads.
        let log = json["cells"].as_object_mut().unwrap();
        log.remove("memory_estimate_bytes");
        let cell = log["done"][0].as_object_mut().unwrap();
        cell.remove("cpu_s");
        cell.remove("peak_rss_bytes");
        fs::write(&path, json.to_string()).unwrap();
        let old = ResultFile::read(&path).unwrap().cells.unwrap();
        assert_eq!(
            (
                old.memory_estimate_bytes,
                old.done[0].cpu_s,
                old.done[0].peak_rss_bytes
            ),
            (None, None, None)
        );
        assert_eq!((old.cpu_s(), old.peak()), (None, None));

        assert!(
            json["cells"].get("grid_rows").is_none(),
            "no rows of the whole grid: left out"
        );

        // Cells that do not account for the rows are refused.
        result.cells.as_mut().unwrap().done[0].rows = 2;
        assert!(format!("{:#}", result.validate().unwrap_err()).contains("account for 2 rows"));
        // Rows of the whole grid follow the cells' and are counted with them.
        let rows = result.rows.len();
        let log = result.cells.as_mut().unwrap();
        log.done[0].rows = rows - 1;
        log.grid_rows = 1;
        result.validate().unwrap();
        result.cells.as_mut().unwrap().grid_rows = 2;
        let err = format!("{:#}", result.validate().unwrap_err());
        assert!(err.contains("and 2 rows of the whole grid"), "{err}");
    }

    #[test]
    fn shard_files_are_recognised_by_name() {
        assert!(is_shard_file("rum-update.shard-1-of-4.json"));
        assert!(!is_shard_file("rum-update.json"));
        assert!(!is_shard_file("rum-update.shard-x-of-4.json"));
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_764_508_502), "2025-11-30T13:15:02Z");
        assert_eq!(rfc3339_utc(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59Z");
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z'));
    }

    #[test]
    fn civil_from_days_agrees_with_a_day_by_day_walk() {
        let (mut y, mut m, mut d) = (1970i64, 1u32, 1u32);
        for days in 0..(366 * 450) {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let len = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ][m as usize - 1];
            d += 1;
            if d > len {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn write_then_read_round_trips_with_the_documented_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = ResultFile::path_in(dir.path(), Scale::Tiny, "fake");
        let result = sample();
        result.write_atomic(&path).unwrap();
        assert_eq!(ResultFile::read(&path).unwrap(), result);
        let json: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        for key in [
            "schema",
            "experiment",
            "paper",
            "scale",
            "seed",
            "config",
            "machine",
            "git",
            "started_at",
            "duration_s",
            "rows",
            "notes",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(json["schema"], SCHEMA);
        assert_eq!(json["scale"], "tiny");
        for key in ["os", "cpu", "cores", "memory_bytes"] {
            assert!(json["machine"].get(key).is_some(), "missing machine.{key}");
        }
        assert_eq!(json["git"]["commit"], "unknown");
        // No temp file left behind.
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("fake.json")]);
    }

    #[test]
    fn refuses_non_finite_and_null_and_nested_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");

        let mut r = sample();
        r.duration_s = f64::NAN;
        let err = format!("{:#}", r.write_atomic(&path).unwrap_err());
        assert!(err.contains("duration_s"), "{err}");

        let mut r = sample();
        r.rows[0].insert("ratio".into(), Value::from(f64::NAN));
        let err = format!("{:#}", r.write_atomic(&path).unwrap_err());
        assert!(err.contains("ratio") && err.contains("null"), "{err}");

        let mut r = sample();
        r.rows[0].insert("series".into(), serde_json::json!([1, 2]));
        let err = format!("{:#}", r.write_atomic(&path).unwrap_err());
        assert!(err.contains("series"), "{err}");

        let mut r = sample();
        r.config.insert("ratio".into(), Value::from(f64::INFINITY));
        let err = format!("{:#}", r.write_atomic(&path).unwrap_err());
        assert!(err.contains("ratio"), "{err}");

        assert!(!path.exists());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no temp file left behind"
        );
    }

    #[test]
    fn read_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let err = format!("{:#}", ResultFile::read(&missing).unwrap_err());
        assert!(err.contains("missing.json"), "{err}");

        let bad = dir.path().join("bad.json");
        fs::write(&bad, "{ not json").unwrap();
        let err = format!("{:#}", ResultFile::read(&bad).unwrap_err());
        assert!(err.contains("bad.json"), "{err}");

        let other = dir.path().join("other.json");
        fs::write(&other, r#"{"schema": "something/2"}"#).unwrap();
        let err = format!("{:#}", ResultFile::read(&other).unwrap_err());
        assert!(err.contains("other.json") && err.contains("something/2"), "{err}");

        let partial = dir.path().join("partial.json");
        fs::write(&partial, r#"{"schema": "lsmlab.result/1", "experiment": "x"}"#).unwrap();
        let err = format!("{:#}", ResultFile::read(&partial).unwrap_err());
        assert!(err.contains("partial.json") && err.contains("paper"), "{err}");
    }

    #[test]
    fn git_is_unknown_outside_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(GitInfo::detect(dir.path()), GitInfo::unknown());
    }

    #[test]
    fn only_the_code_makes_a_tree_dirty() {
        use std::process::Command;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(root)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        for d in ["results/small", "docs", "engine/src"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let outside = ["results/small/r.json", "REPORT.md", "docs/d.md", "Makefile"];
        for f in outside.iter().chain(&["engine/src/lib.rs", "Cargo.toml"]) {
            std::fs::write(root.join(f), "a").unwrap();
        }
        git(&["add", "."]);
        git(&["commit", "-qm", "c"]);
        let sub = root.join("results/small");
        let clean = GitInfo::detect(&sub);
        assert!(clean.commit.len() >= 40 && !clean.dirty, "{clean:?}");
        for f in outside {
            std::fs::write(root.join(f), "b").unwrap();
        }
        assert!(
            !GitInfo::detect(&sub).dirty,
            "results, report, docs and Makefile are not code"
        );
        std::fs::write(root.join("engine/src/lib.rs"), "b").unwrap();
        assert!(
            GitInfo::detect(&sub).dirty,
            "a changed source file, seen from a subdirectory"
        );
        std::fs::write(root.join("engine/src/lib.rs"), "a").unwrap();
        assert!(!GitInfo::detect(&sub).dirty, "the source file restored");
        std::fs::write(root.join("Cargo.toml"), "b").unwrap();
        git(&["add", "Cargo.toml"]);
        assert!(GitInfo::detect(&sub).dirty, "a staged change to a manifest");
    }

    #[test]
    fn the_build_recorded_the_source_tree_it_was_compiled_from() {
        // `cargo test` builds before it runs, and the build script re-runs whenever the code or
        // the commit changes, so the recorded state is the tree's now (a checkout without git
        // records `unknown`, as detection finds it).
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert_eq!(GitInfo::of_build(), GitInfo::detect(&root));
    }

    #[test]
    fn machine_detection_fills_the_fields() {
        let m = Machine::detect();
        assert!(!m.os.is_empty() && !m.cpu.is_empty());
        assert!(m.cores >= 1);
    }

    #[test]
    fn finds_result_files_per_scale() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample();
        r.write_atomic(&ResultFile::path_in(dir.path(), Scale::Tiny, "b"))
            .unwrap();
        r.write_atomic(&ResultFile::path_in(dir.path(), Scale::Tiny, "a"))
            .unwrap();
        r.write_atomic(&ResultFile::path_in(dir.path(), Scale::Small, "a"))
            .unwrap();
        fs::write(dir.path().join("tiny/notes.txt"), "x").unwrap();
        let all = find_result_files(dir.path(), &[]).unwrap();
        let rel: Vec<_> = all
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            rel,
            vec![
                PathBuf::from("tiny/a.json"),
                "tiny/b.json".into(),
                "small/a.json".into()
            ]
        );
        assert_eq!(find_result_files(dir.path(), &[Scale::Small]).unwrap().len(), 1);
        assert!(find_result_files(&dir.path().join("nope"), &[])
            .unwrap()
            .is_empty());
    }
}
