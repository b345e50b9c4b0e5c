//! User data (`--data PATH`) turned into datasets: which datasets a run loads ([`plan`]), a check of
//! every data file before anything runs ([`preflight`]), and the loading itself, which says on
//! stderr and in the result notes which columns it read and how many records it kept.
//!
//! `--data` replaces the generated datasets: a run with data files generates nothing. Each path
//! (a file, or a directory whose files load as one dataset) is one dataset, named after it; paths
//! with the same name are told apart by their parent directories ([`dataset_names`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use lsmlab_workloads::load::{dataset_name, guess, load, probe, CsvColumns, CsvDialect, Format, LoadOptions};
use lsmlab_workloads::Trajectories;

use crate::progress::{thousands, Progress};
use crate::scale::Scale;

/// A user-supplied data file (`--data PATH`, with `--format`, `--columns`, `--skip-malformed`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataSpec {
    /// The data file.
    pub path: PathBuf,
    /// The file's format, when the user named it; otherwise the experiment guesses from the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A column mapping such as `id=0,ts=1,lat=2,lon=3`; the experiment's loader defines the names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<String>,
    /// Skip malformed lines (counting them in a note) instead of failing on the first one.
    #[serde(default)]
    pub skip_malformed: bool,
}

/// A `--data` path and the dataset name it runs under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedData {
    /// The dataset name rows carry for this file.
    pub name: String,
    /// The file and how to read it.
    pub spec: DataSpec,
}

/// What a run loads: generated datasets or data files, never both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetPlan {
    /// Generated datasets to run, by generator name, in the configured order.
    pub generate: Vec<String>,
    /// Data files to load, in the order given.
    pub files: Vec<NamedData>,
    /// What the plan decided that a reader must know (data replacing the generated datasets,
    /// renamed files); also printed on stderr when loading.
    pub notes: Vec<String>,
}

impl DatasetPlan {
    /// True if the generated dataset `name` is to be run.
    pub fn generates(&self, name: &str) -> bool {
        self.generate.iter().any(|g| g == name)
    }
}

/// The datasets of a run with `configured` generated datasets (the `datasets` parameter) and `data`
/// files: the files when there are any (they replace the generated datasets), else the generated
/// ones. Refuses a run with neither, so that no empty result is ever written.
pub fn plan(configured: &[&str], data: &[DataSpec]) -> anyhow::Result<DatasetPlan> {
    if data.is_empty() {
        if configured.is_empty() {
            bail!(
                "nothing to run: `datasets` is empty and no --data file is given; set datasets to one or more \
                 of {} (e.g. --set datasets={}) or pass --data FILE",
                lsmlab_workloads::DATASETS.join(", "),
                lsmlab_workloads::DATASETS.join(",")
            );
        }
        return Ok(DatasetPlan {
            generate: configured.iter().map(|s| s.to_string()).collect(),
            files: Vec::new(),
            notes: Vec::new(),
        });
    }
    let (names, mut notes) = dataset_names(data)?;
    if !configured.is_empty() {
        notes.insert(
            0,
            format!(
                "--data replaces the generated datasets: {} not run",
                configured.join(", ")
            ),
        );
    }
    Ok(DatasetPlan {
        generate: Vec::new(),
        files: names
            .into_iter()
            .zip(data)
            .map(|(name, spec)| NamedData {
                name,
                spec: spec.clone(),
            })
            .collect(),
        notes,
    })
}

/// The dataset name of each `--data` path: its file name without data extensions (a directory's
/// name as it is). Paths with the same name take as many of their parent directories as tell them
/// apart, joined with `-` (`2019/trips.csv` and `2020/trips.csv` run as `2019-trips` and
/// `2020-trips`); any name still shared gets `-2`, `-3`, ... in the order given. The same path given
/// twice is an error. Returns the names and a note per renamed group.
pub fn dataset_names(data: &[DataSpec]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let full: Vec<PathBuf> = data
        .iter()
        .map(|d| std::fs::canonicalize(&d.path).unwrap_or_else(|_| d.path.clone()))
        .collect();
    let option = |d: &DataSpec| {
        if d.format.as_deref() == Some(TRACE_FORMAT) {
            "--trace"
        } else {
            "--data"
        }
    };
    for (i, p) in full.iter().enumerate() {
        if let Some(j) = full[..i].iter().position(|q| q == p) {
            bail!(
                "{} {} and {} {} are the same path; give each file once",
                option(&data[j]),
                data[j].path.display(),
                option(&data[i]),
                data[i].path.display()
            );
        }
    }
    let base: Vec<String> = data.iter().map(|d| dataset_name(&d.path)).collect();
    let mut names = base.clone();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..data.len() {
        if base[..i].contains(&base[i]) {
            continue;
        }
        let group: Vec<usize> = (i..data.len()).filter(|&j| base[j] == base[i]).collect();
        if group.len() < 2 {
            continue;
        }
        // Parent directory names, nearest first.
        let parents: Vec<Vec<String>> = group
            .iter()
            .map(|&j| {
                full[j]
                    .parent()
                    .into_iter()
                    .flat_map(Path::ancestors)
                    .filter_map(|a| a.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect()
            })
            .collect();
        let deepest = parents.iter().map(Vec::len).max().unwrap_or(0);
        let with_parents = |k: usize| -> Vec<String> {
            parents
                .iter()
                .map(|p| {
                    let mut parts: Vec<&str> = p.iter().take(k).map(String::as_str).collect();
                    parts.reverse();
                    parts.push(&base[i]);
                    parts.join("-")
                })
                .collect()
        };
        let distinct = |named: &[String]| {
            (0..named.len())
                .filter(|&a| !named[..a].contains(&named[a]))
                .count()
        };
        // The fewest parents that tell the most paths apart (all of them, unless two share every
        // directory).
        let mut best = (1, 0);
        for k in 1..=deepest {
            let d = distinct(&with_parents(k));
            if d > best.1 {
                best = (k, d);
            }
            if d == group.len() {
                break;
            }
        }
        for (&j, name) in group.iter().zip(with_parents(best.0)) {
            names[j] = name;
        }
        groups.push(group);
    }
    make_unique(&mut names);
    let notes = groups
        .iter()
        .map(|group| {
            let renamed: Vec<String> = group
                .iter()
                .map(|&j| format!("{:?} ({})", names[j], data[j].path.display()))
                .collect();
            format!(
                "--data: {} paths are named {:?}; they run as {}",
                group.len(),
                base[group[0]],
                renamed.join(", ")
            )
        })
        .collect();
    Ok((names, notes))
}

/// Appends `-2`, `-3`, ... to every repeat of an earlier name.
fn make_unique(names: &mut [String]) {
    for i in 1..names.len() {
        let mut n = 2;
        let stem = names[i].clone();
        while names[..i].contains(&names[i]) {
            names[i] = format!("{stem}-{n}");
            n += 1;
        }
    }
}

/// The loader options of `spec`: its format (named, or guessed from the path), columns and skip
/// policy; `limit` keeps the first records in time order.
fn options(spec: &DataSpec, limit: Option<usize>) -> anyhow::Result<LoadOptions> {
    let format = match &spec.format {
        Some(f) => f.parse::<Format>()?,
        None => guess(&spec.path).with_context(|| {
            format!(
                "cannot tell the format of {} from its name and first line; pass --format {} (or --format \
                 {DELAYS_FORMAT} for a file of delays, one integer per line)",
                spec.path.display(),
                Format::NAMES.join(", ")
            )
        })?,
    };
    let columns = spec
        .columns
        .as_deref()
        .map(|c| c.parse::<CsvColumns>())
        .transpose()?;
    if columns.is_some() && format != Format::Csv {
        bail!(
            "--columns applies to csv files, but {} is read as {format}, whose columns are fixed",
            spec.path.display()
        );
    }
    Ok(LoadOptions {
        format,
        columns,
        skip_malformed: spec.skip_malformed,
        limit,
        taxis: None,
    })
}

/// `--format` of a trace written by `lsmlab gen` (`--trace`).
pub const TRACE_FORMAT: &str = "lsmlab-trace";

/// `--format` of a file of delays, one integer per line (the DIOL experiments' `file` model).
pub const DELAYS_FORMAT: &str = "delays";

/// Checks every `--data` path before anything runs: it exists, its format is known, its options
/// parse, its columns are found (or guessed) and the start of its first file reads, and no two
/// paths are the same. Reads at most the first lines of each.
pub fn preflight(data: &[DataSpec]) -> anyhow::Result<()> {
    for spec in data {
        let path = &spec.path;
        if !path.exists() {
            bail!("data file {} does not exist", path.display());
        }
        if !path.is_file() && !path.is_dir() {
            bail!("data file {} is neither a file nor a directory", path.display());
        }
        if path.is_file() && std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            bail!(
                "data file {} is empty (0 bytes): there is nothing to load; give a file of records",
                path.display()
            );
        }
        if path.is_dir() && !holds_a_file(path, 8) {
            bail!(
                "data folder {} holds no files: there is nothing to load; give a folder of data files \
                 (or one file)",
                path.display()
            );
        }
        if spec.format.as_deref() == Some(TRACE_FORMAT) {
            // A trace of `lsmlab gen` (`--trace`, or a config file's data): its family, above the
            // harness, reads it whole before the run (the binary's `lsmlab::trace::check_for`).
            continue;
        }
        if spec.format.as_deref() == Some(DELAYS_FORMAT) {
            // One integer per line (the DIOL experiments); read whole, so a bad line fails here.
            lsmlab_workloads::ts::load_delays(path).with_context(|| {
                format!(
                    "checking --data {} as a file of delays (one integer per line)",
                    path.display()
                )
            })?;
            continue;
        }
        let checked = options(spec, None).and_then(|opts| Ok(probe(path, &opts, CsvDialect::default())?));
        checked.with_context(|| format!("checking --data {}", path.display()))?;
    }
    dataset_names(data)?;
    Ok(())
}

/// Whether `dir` holds a file, looking at most `depth` folders down.
fn holds_a_file(dir: &Path, depth: usize) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        p.is_file() || (depth > 0 && p.is_dir() && holds_a_file(&p, depth - 1))
    })
}

/// Loads the plan's data files (keeping the first `records` of each in time order, 0 = all),
/// saying on stderr, and in the returned notes, how each file's fields were read and how many
/// records were read and kept (`scale` is named in what is said).
pub fn load_files(
    plan: &DatasetPlan,
    records: usize,
    scale: Scale,
    progress: &Progress,
) -> anyhow::Result<(Vec<Trajectories>, Vec<String>)> {
    let mut notes = Vec::new();
    let mut say = |line: String| {
        progress.message(&line);
        notes.push(line);
    };
    for note in &plan.notes {
        say(note.clone());
    }
    let mut out = Vec::with_capacity(plan.files.len());
    for file in &plan.files {
        let limit = (records > 0).then_some(records);
        let (t, lines) = load_one(file, limit, scale, progress)?;
        for line in lines {
            say(line);
        }
        out.push(t);
    }
    Ok((out, notes))
}

/// Loads one named `--data` path; returns the dataset and what to tell about it.
fn load_one(
    file: &NamedData,
    limit: Option<usize>,
    scale: Scale,
    progress: &Progress,
) -> anyhow::Result<(Trajectories, Vec<String>)> {
    let spec = &file.spec;
    let opts = options(spec, limit)?;
    progress.message(format!(
        "{}: loading {} as {}",
        file.name,
        spec.path.display(),
        opts.format
    ));
    let (mut t, report) =
        load(&spec.path, &opts).with_context(|| format!("loading {}", spec.path.display()))?;
    let e = t.extent;
    if !(e.width().is_finite() && e.height().is_finite()) {
        bail!(
            "{}: the records span x from {:?} to {:?} and y from {:?} to {:?}, a width or height too large for \
             a number (coordinates near 1e308 are no locations): check the x and y columns{}",
            spec.path.display(),
            e.min.x,
            e.max.x,
            e.min.y,
            e.max.y,
            if spec.skip_malformed {
                " (--skip-malformed skips lines that do not parse; these parse, as numbers too large)"
            } else {
                ""
            }
        );
    }
    t.name = file.name.clone();
    let name = &file.name;
    let mut lines = Vec::new();
    if let Some(columns) = &report.columns {
        lines.push(format!("{name}: {columns}"));
    }
    let mut skipped = Vec::new();
    if report.skipped_malformed > 0 {
        skipped.push(format!(
            "{} malformed lines skipped",
            thousands(report.skipped_malformed as u64)
        ));
    }
    if report.skipped_missing > 0 {
        skipped.push(format!(
            "{} without coordinates skipped",
            thousands(report.skipped_missing as u64)
        ));
    }
    lines.push(format!(
        "{name}: read {} records from {} ({}{}, {} data lines{})",
        thousands(report.available as u64),
        spec.path.display(),
        opts.format,
        if report.files == 1 {
            String::new()
        } else {
            format!(", {} files", thousands(report.files as u64))
        },
        thousands(report.lines as u64),
        skipped.iter().map(|s| format!(", {s}")).collect::<String>()
    ));
    let kept = match limit {
        Some(n) if n < report.available => format!(
            "kept the first {} of {} records at scale {} (records={n}, in time order; --set records=0 keeps all)",
            thousands(report.records as u64),
            thousands(report.available as u64),
            scale
        ),
        Some(n) => format!(
            "kept all {} records (records={n} at scale {} allows up to {})",
            thousands(report.records as u64),
            scale,
            thousands(n as u64)
        ),
        None => format!("kept all {} records (records=0)", thousands(report.records as u64)),
    };
    lines.push(format!(
        "{name}: {kept}; they hold {} objects",
        thousands(t.objects() as u64)
    ));
    lines.extend(report.notes.iter().map(|n| format!("{name}: {n}")));
    Ok((t, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &Path) -> DataSpec {
        DataSpec {
            path: path.to_path_buf(),
            format: None,
            columns: None,
            skip_malformed: false,
        }
    }

    #[test]
    fn data_replaces_the_generated_datasets_and_nothing_is_refused() {
        let p = plan(&["gowalla", "chicago"], &[]).unwrap();
        assert_eq!(p.generate, ["gowalla", "chicago"]);
        assert!(p.generates("chicago") && !p.generates("berlinmod") && p.files.is_empty());

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trips.csv");
        std::fs::write(&file, "x").unwrap();
        let p = plan(&["gowalla", "chicago"], &[spec(&file)]).unwrap();
        assert!(p.generate.is_empty() && !p.generates("gowalla"));
        assert_eq!(p.files[0].name, "trips");
        assert_eq!(
            p.notes,
            ["--data replaces the generated datasets: gowalla, chicago not run"]
        );
        assert!(plan(&[], &[spec(&file)]).unwrap().notes.is_empty());

        let err = plan(&[], &[]).unwrap_err().to_string();
        assert!(
            err.contains("`datasets` is empty and no --data file is given")
                && err.contains("--set datasets=gowalla,chicago,berlinmod"),
            "{err}"
        );
    }

    #[test]
    fn same_names_are_told_apart_by_their_directories() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
            p
        };
        let a = write("2019/q1/trips.csv");
        let b = write("2020/q1/trips.csv.gz");
        let c = write("2020/other.csv");
        let d = write("2020/q1/trips.tsv");
        let (names, notes) = dataset_names(&[spec(&a), spec(&b), spec(&c)]).unwrap();
        assert_eq!(names, ["2019-q1-trips", "2020-q1-trips", "other"]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("--data: 2 paths are named \"trips\"; they run as \"2019-q1-trips\" ("),
            "{notes:?}"
        );
        // Same directories: numbered in the order given.
        let (names, _) = dataset_names(&[spec(&b), spec(&d), spec(&a)]).unwrap();
        assert_eq!(names, ["2020-q1-trips", "2020-q1-trips-2", "2019-q1-trips"]);
        let err = dataset_names(&[
            spec(&a),
            spec(&c),
            spec(&dir.path().join("2019/q1/../q1/trips.csv")),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("are the same path"), "{err}");
    }

    #[test]
    fn preflight_checks_existence_format_and_columns() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.csv");
        std::fs::write(&good, "uid,lat,lon,time\n1,2,3,4\n").unwrap();
        preflight(&[spec(&good)]).unwrap();
        let cases: [(&str, &str, Option<&str>, &str); 4] = [
            ("missing.csv", "", None, "does not exist"),
            ("h.csv", "1,2,3,4\n", None, "no header line"),
            (
                "cols.csv",
                "a,b,c,d\n1,2,3,4\n",
                Some("0,0,1,2"),
                "oid and time are both column 0",
            ),
            (
                "snap.txt",
                "0\t2010-10-12T00:21:28Z\t40.6\t-73.7\t1\n",
                Some("0,1,2,3"),
                "columns are fixed",
            ),
        ];
        for (name, text, columns, needle) in cases {
            let path = dir.path().join(name);
            if !text.is_empty() {
                std::fs::write(&path, text).unwrap();
            }
            let err = format!(
                "{:#}",
                preflight(&[
                    spec(&good),
                    DataSpec {
                        columns: columns.map(str::to_string),
                        ..spec(&path)
                    }
                ])
                .unwrap_err()
            );
            assert!(err.contains(needle) && err.contains(name), "{name}: {err}");
        }
    }
}
