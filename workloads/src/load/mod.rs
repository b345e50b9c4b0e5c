//! Loaders for real trajectory data: SNAP Gowalla check-ins, the Chicago taxi trips CSV, GeoLife
//! `.plt` GPS logs and any CSV/TSV of (object id, time, x, y), plain or gzipped, into time-ordered
//! [`Trajectories`]. A directory loads as one dataset: its data files, in path order
//! ([`data_files`]).
//!
//! Bad input is never silently dropped: a malformed line is an error naming the file, the line and
//! the column ([`WorkloadError::Malformed`]), or, with [`LoadOptions::skip_malformed`], a skipped
//! line counted in the [`LoadReport`]. The one gap that is skipped by default is the Chicago
//! format's documented one: trips without pickup coordinates (counted in
//! [`LoadReport::skipped_missing`]).

mod chicago;
mod columns;
mod csv;
mod geolife;
pub(crate) mod reader;
mod snap;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use columns::{ColumnRef, CsvColumns, IdSource};
pub use reader::MAX_LINE_BYTES;

use crate::trajectories::padded_bounds;
use crate::{Record, Trajectories, WorkloadError};

/// The file formats [`load`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// SNAP's `loc-gowalla_totalCheckins.txt`: `user<TAB>ISO-8601 time<TAB>lat<TAB>lon<TAB>location
    /// id`, no header, sorted by user then time descending.
    SnapGowalla,
    /// The Chicago taxi trips CSV (with header): `pickup_latitude`, `pickup_longitude`,
    /// `trip_start_timestamp` and, if present, `taxi_id`.
    ChicagoCsv,
    /// Any CSV/TSV of (object id, time, x, y); see [`CsvColumns`].
    Csv,
    /// GeoLife's `.plt` GPS logs: six header lines, then `lat,lon,0,altitude,days,date,time`; the
    /// object id is the user directory.
    GeolifePlt,
}

impl Format {
    /// The names [`Format::from_str`] accepts, in declaration order.
    pub const NAMES: [&'static str; 4] = ["snap-gowalla", "chicago-csv", "csv", "geolife-plt"];

    /// [`guess`]: the format a file's first line looks like.
    pub fn guess(path: &Path) -> Option<Format> {
        guess(path)
    }

    /// The name `--format` and [`std::str::FromStr`] accept.
    pub fn name(self) -> &'static str {
        match self {
            Format::SnapGowalla => Self::NAMES[0],
            Format::ChicagoCsv => Self::NAMES[1],
            Format::Csv => Self::NAMES[2],
            Format::GeolifePlt => Self::NAMES[3],
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "snap-gowalla" => Ok(Format::SnapGowalla),
            "chicago-csv" => Ok(Format::ChicagoCsv),
            "csv" => Ok(Format::Csv),
            "geolife-plt" | "geolife" | "plt" => Ok(Format::GeolifePlt),
            _ => Err(WorkloadError::UnknownFormat {
                name: s.to_string(),
                valid: Self::NAMES.iter().map(|n| n.to_string()).collect(),
            }),
        }
    }
}

/// Guesses a file's format from its name and first line: a `.plt` file or one that starts with
/// `Geolife trajectory` is GeoLife; a header with a pickup latitude column is the Chicago CSV; five
/// tab-separated fields `integer, ISO time, number, number, ...` are SNAP Gowalla; any other
/// `.csv` or `.tsv` file, or line with at least four delimited fields, is a generic CSV. A directory's format is its first data
/// file's ([`data_files`]). `None` if the file cannot be read or looks like none of these.
pub fn guess(path: &Path) -> Option<Format> {
    if path.is_dir() {
        return data_files(path).ok().and_then(|d| guess(&d.files[0]));
    }
    if data_extension(path) == "plt" {
        return Some(Format::GeolifePlt);
    }
    let line = reader::first_line(path)?;
    let lower = line.to_ascii_lowercase();
    if lower.trim() == geolife::FIRST_LINE {
        return Some(Format::GeolifePlt);
    }
    if chicago::LAT_NAMES.iter().any(|n| lower.contains(n)) || lower.contains("pickup centroid latitude") {
        return Some(Format::ChicagoCsv);
    }
    let tabbed: Vec<&str> = line.split('\t').map(str::trim).collect();
    if tabbed.len() >= 4
        && tabbed[0].parse::<u64>().is_ok()
        && tabbed[1].contains('T')
        && crate::time::parse_timestamp(tabbed[1]).is_ok()
        && tabbed[2].parse::<f64>().is_ok()
        && tabbed[3].parse::<f64>().is_ok()
    {
        return Some(Format::SnapGowalla);
    }
    let delim = csv::detect_delimiter(&line);
    let named_csv = matches!(data_extension(path).as_str(), "csv" | "tsv");
    (named_csv || line.split(char::from(delim)).count() >= 4).then_some(Format::Csv)
}

/// How to load a file.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// The file's format.
    pub format: Format,
    /// For [`Format::Csv`]: which columns hold what. `None`: with a header, the first column named
    /// like an id (`oid`, `id`, `object_id`, `user`, `user_id`, `taxi_id`, `vehicle`, `moid`), a time
    /// (`time`, `timestamp`, `ts`, `t`, `datetime`), an x (`x`, `lon`, `lng`, `longitude`) and a y
    /// (`y`, `lat`, `latitude`); without one, positions 0, 1, 2, 3. Ignored by the other formats.
    pub columns: Option<CsvColumns>,
    /// Skip (and count) malformed lines instead of failing on the first one.
    pub skip_malformed: bool,
    /// Keep only the first `limit` records in time order (the whole file is read and sorted first,
    /// so the prefix is the start of the replayed stream, not the start of the file).
    pub limit: Option<usize>,
    /// For [`Format::ChicagoCsv`] files without a `taxi_id` column: how many synthetic taxis to
    /// deal the trips to (default as the Chicago generator: 2019's pickups per taxi, at least 50).
    pub taxis: Option<usize>,
}

impl LoadOptions {
    /// Defaults for `format`: columns guessed, malformed lines are errors, no limit, default taxis.
    pub fn new(format: Format) -> LoadOptions {
        LoadOptions {
            format,
            columns: None,
            skip_malformed: false,
            limit: None,
            taxis: None,
        }
    }
}

/// The CSV dialect for [`Format::Csv`]; `None` fields are detected from the first line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CsvDialect {
    /// Field delimiter. Detected: tab if the first line has one, else comma, else semicolon.
    pub delimiter: Option<u8>,
    /// Whether the first line is a header. Detected: yes if any column is given by name, else yes
    /// if the first line's x or y field is not a number.
    pub header: Option<bool>,
}

/// What a load read and what it left out.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LoadReport {
    /// Files read: 1, or a directory's data files.
    pub files: usize,
    /// Non-blank data lines read (the header excluded).
    pub lines: usize,
    /// Records parsed, before `limit` kept the first [`LoadReport::records`] of them.
    pub available: usize,
    /// Records in the returned dataset (after `limit`).
    pub records: usize,
    /// Which fields became the object id, time, x and y, and whether they were guessed, e.g.
    /// `columns guessed from the header: oid="uid" (column 0), ...`.
    pub columns: Option<String>,
    /// Lines skipped because they did not parse (only with `skip_malformed`).
    pub skipped_malformed: usize,
    /// Lines skipped because the format allows them to lack a location (Chicago trips without
    /// pickup coordinates).
    pub skipped_missing: usize,
    /// Anything a reader must know: synthetic ids, the first skipped lines, a directory's files.
    pub notes: Vec<String>,
}

/// Loads `path` as `opts.format` into records sorted by time (stably: equal times keep file
/// order), named after the file stem, with the points' bounding box as extent. A directory loads
/// as one dataset named after it: its [`data_files`] in path order, all in `opts.format` (for
/// [`Format::Csv`] with guessed columns, those guessed from the first file).
pub fn load(path: &Path, opts: &LoadOptions) -> Result<(Trajectories, LoadReport), WorkloadError> {
    load_with_dialect(path, opts, CsvDialect::default())
}

/// [`load`] with an explicit delimiter or header setting for [`Format::Csv`].
pub fn load_with_dialect(
    path: &Path,
    opts: &LoadOptions,
    dialect: CsvDialect,
) -> Result<(Trajectories, LoadReport), WorkloadError> {
    let mut sink = Sink::new(path, opts.skip_malformed);
    read_all(path, opts, dialect, &mut sink)?;
    sink.finish(opts)
}

/// Checks that `path` loads as `opts` says without reading all of it: a directory's listing, then
/// the first [`PROBE_LINES`] data lines of its first file (or of the file), through the same
/// readers as [`load`], so a missing file, an unknown layout, a missing or unguessable column or
/// an early bad line fails here. The report tells the column mapping and the files found.
pub fn probe(path: &Path, opts: &LoadOptions, dialect: CsvDialect) -> Result<LoadReport, WorkloadError> {
    let mut sink = Sink::new(path, opts.skip_malformed);
    sink.max_lines = Some(PROBE_LINES);
    let first = if path.is_dir() {
        let listing = data_files(path)?;
        sink.report.files = listing.files.len();
        listing.files[0].clone()
    } else {
        sink.report.files = 1;
        path.to_path_buf()
    };
    sink.file = first.clone();
    read_one(&first, opts, opts.columns.as_ref(), dialect, &mut sink)?;
    if sink.report.lines == 0 && sink.report.skipped_malformed == 0 {
        return Err(WorkloadError::Empty {
            path: first,
            expected: sink.expected.to_string(),
        });
    }
    Ok(sink.report)
}

/// Data lines [`probe`] reads.
pub const PROBE_LINES: usize = 1_000;

/// Reads one file into `sink`; returns the CSV columns used (for the next file of a directory).
fn read_one(
    file: &Path,
    opts: &LoadOptions,
    columns: Option<&CsvColumns>,
    dialect: CsvDialect,
    sink: &mut Sink,
) -> Result<Option<CsvColumns>, WorkloadError> {
    match opts.format {
        Format::SnapGowalla => snap::read(file, sink)?,
        Format::ChicagoCsv => chicago::read(file, sink)?,
        Format::GeolifePlt => geolife::read(file, sink)?,
        Format::Csv => return csv::read(file, columns, dialect, sink),
    }
    Ok(None)
}

/// Reads a file, or every data file of a directory, into `sink`.
fn read_all(
    path: &Path,
    opts: &LoadOptions,
    dialect: CsvDialect,
    sink: &mut Sink,
) -> Result<(), WorkloadError> {
    if !path.is_dir() {
        sink.report.files = 1;
        read_one(path, opts, opts.columns.as_ref(), dialect, sink)?;
        return Ok(());
    }
    let listing = data_files(path)?;
    sink.report.files = listing.files.len();
    let mut columns = opts.columns.clone();
    for file in &listing.files {
        sink.file = file.clone();
        let used = read_one(file, opts, columns.as_ref(), dialect, sink)?;
        columns = columns.or(used);
    }
    sink.file = path.to_path_buf();
    sink.note(listing.describe(path));
    Ok(())
}

/// The data files of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataFiles {
    /// The files read, in path order.
    pub files: Vec<PathBuf>,
    /// Their extension (after `.gz`), lower case, or empty.
    pub extension: String,
    /// Files left out because their extension differs.
    pub skipped: Vec<PathBuf>,
}

impl DataFiles {
    /// `read 3 .plt files under DIR in path order; left out 1 other file: DIR/000/labels.txt`.
    pub fn describe(&self, dir: &Path) -> String {
        let ext = if self.extension.is_empty() {
            "extension-less".to_string()
        } else {
            format!(".{}", self.extension)
        };
        let mut s = format!(
            "read {} {ext} file{} under {} in path order",
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
            dir.display()
        );
        if !self.skipped.is_empty() {
            let shown: Vec<String> = self
                .skipped
                .iter()
                .take(3)
                .map(|p| p.display().to_string())
                .collect();
            s.push_str(&format!(
                "; left out {} file{} with other extensions: {}{}",
                self.skipped.len(),
                if self.skipped.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if self.skipped.len() > 3 { ", ..." } else { "" }
            ));
        }
        s
    }
}

/// A file's extension after removing `.gz`, lower case: `trips.CSV.gz` -> `csv`.
fn data_extension(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_string(),
        _ => String::new(),
    }
}

/// The files a directory loads from: every regular file below it (hidden files and directories,
/// those starting with `.`, left out; symbolic links to directories not followed) whose extension
/// is the most common one among them (ties: the alphabetically first), sorted by path, so that
/// GeoLife's `Data/<user>/Trajectory/*.plt` loads its `.plt` files and leaves out `labels.txt`.
pub fn data_files(dir: &Path) -> Result<DataFiles, WorkloadError> {
    let mut all = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let io = |error| WorkloadError::Io {
            path: d.clone(),
            error,
        };
        for entry in std::fs::read_dir(&d).map_err(io)? {
            let entry = entry.map_err(io)?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(io)?;
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if path.is_file() {
                all.push(path);
            }
        }
    }
    all.sort();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &all {
        *counts.entry(data_extension(f)).or_default() += 1;
    }
    // The most common extension; `max_by_key` keeps the last maximum, so iterate in reverse to
    // prefer the alphabetically first on a tie.
    let Some(extension) = counts
        .iter()
        .rev()
        .max_by_key(|(_, &n)| n)
        .map(|(e, _)| e.clone())
    else {
        return Err(WorkloadError::DataDirectory {
            path: dir.to_path_buf(),
            reason: "no data files in this directory (hidden files are left out)".to_string(),
        });
    };
    let (files, skipped) = all.into_iter().partition(|f| data_extension(f) == extension);
    Ok(DataFiles {
        files,
        extension,
        skipped,
    })
}

/// Dataset name from a path: the file name without `.gz` and then without `.csv`, `.tsv`, `.txt`
/// or `.plt` (a directory's name as it is).
pub fn dataset_name(path: &Path) -> String {
    if path.is_dir() {
        let named = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
        return named(path)
            .or_else(|| std::fs::canonicalize(path).ok().as_deref().and_then(named))
            .unwrap_or_default();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let lower = name.to_ascii_lowercase();
    let cut = [".csv", ".tsv", ".txt", ".plt"]
        .iter()
        .find(|ext| lower.ends_with(*ext))
        .map_or(0, |ext| ext.len());
    name[..name.len() - cut].to_string()
}

/// Where the format readers put what they parse; applies the skip policy and counts.
pub(crate) struct Sink {
    /// What is loaded (a file or a directory): names the dataset and the whole-load errors.
    path: PathBuf,
    /// The file being read: named by line errors.
    file: PathBuf,
    /// Stop after this many data lines ([`probe`]).
    max_lines: Option<usize>,
    skip_malformed: bool,
    records: Vec<Record>,
    report: LoadReport,
    /// Object ids that were not numbers, to densify after reading (first-seen order).
    string_ids: std::collections::HashMap<String, u64>,
    max_numeric_id: Option<u64>,
    /// What an empty file should have held, for the error message.
    expected: &'static str,
    /// Synthetic object ids to assign after sorting (Chicago files without taxi ids).
    synthetic_taxis: bool,
}

/// Flag bit on a provisional id that stands for the `k`-th distinct string id.
const STRING_ID: u64 = 1 << 63;
const MAX_NOTED_SKIPS: usize = 3;

impl Sink {
    fn new(path: &Path, skip_malformed: bool) -> Sink {
        Sink {
            path: path.to_path_buf(),
            file: path.to_path_buf(),
            max_lines: None,
            skip_malformed,
            records: Vec::new(),
            report: LoadReport::default(),
            string_ids: Default::default(),
            max_numeric_id: None,
            expected: "data lines",
            synthetic_taxis: false,
        }
    }

    /// A line that does not parse: an error, or with `skip_malformed` a counted skip.
    pub(crate) fn malformed(&mut self, line: usize, reason: String) -> Result<(), WorkloadError> {
        let err = WorkloadError::Malformed {
            path: self.file.clone(),
            line,
            reason,
        };
        if !self.skip_malformed {
            return Err(err);
        }
        self.report.skipped_malformed += 1;
        if self.report.skipped_malformed <= MAX_NOTED_SKIPS {
            self.report.notes.push(format!("skipped malformed line: {err}"));
        }
        Ok(())
    }

    pub(crate) fn missing(&mut self) {
        self.report.skipped_missing += 1;
    }

    pub(crate) fn skipped_missing(&self) -> usize {
        self.report.skipped_missing
    }

    pub(crate) fn data_line(&mut self) {
        self.report.lines += 1;
    }

    /// True once a [`probe`] has read its lines.
    pub(crate) fn full(&self) -> bool {
        self.max_lines.is_some_and(|m| self.report.lines >= m)
    }

    /// Records which fields became the record's roles (the first file's, for a directory).
    pub(crate) fn set_mapping(&mut self, mapping: String) {
        self.report.columns.get_or_insert(mapping);
    }

    pub(crate) fn push(&mut self, oid: u64, time: i64, x: f64, y: f64) {
        self.records.push(Record {
            oid,
            time,
            point: lsmlab_engine::geom::Point::new(x, y),
        });
    }

    /// An object id: a number below 2^63 is kept; anything else becomes a dense id in first-seen
    /// order, numbered after the largest numeric id once the file is read.
    pub(crate) fn object_id(&mut self, s: &str) -> u64 {
        if let Ok(n) = s.parse::<u64>() {
            if n < STRING_ID {
                self.max_numeric_id = Some(self.max_numeric_id.map_or(n, |m| m.max(n)));
                return n;
            }
        }
        let next = self.string_ids.len() as u64;
        STRING_ID | *self.string_ids.entry(s.to_string()).or_insert(next)
    }

    /// What the file should hold, for the message if it holds nothing.
    pub(crate) fn expect(&mut self, expected: &'static str) {
        self.expected = expected;
    }

    /// Deal the records to synthetic taxis once sorted (see `chicago::deal_to_taxis`).
    pub(crate) fn use_synthetic_taxis(&mut self) {
        self.synthetic_taxis = true;
    }

    pub(crate) fn note(&mut self, note: String) {
        self.report.notes.push(note);
    }

    fn finish(mut self, opts: &LoadOptions) -> Result<(Trajectories, LoadReport), WorkloadError> {
        if self.report.lines == 0 && self.report.skipped_malformed == 0 {
            return Err(WorkloadError::Empty {
                path: self.path,
                expected: self.expected.to_string(),
            });
        }
        if self.records.is_empty() {
            return Err(WorkloadError::NoRecords {
                path: self.path,
                lines: self.report.lines,
                skipped_malformed: self.report.skipped_malformed,
                skipped_missing: self.report.skipped_missing,
            });
        }
        if !self.string_ids.is_empty() {
            let base = self.max_numeric_id.map_or(0, |m| m + 1);
            for r in &mut self.records {
                if r.oid & STRING_ID != 0 {
                    r.oid = base + (r.oid & !STRING_ID);
                }
            }
            let note = match self.max_numeric_id {
                None => format!(
                    "{} string object ids mapped to 0.. in first-seen order",
                    self.string_ids.len()
                ),
                Some(_) => format!(
                    "{} non-numeric object ids mapped to {base}.. in first-seen order (numeric ids kept)",
                    self.string_ids.len()
                ),
            };
            self.report.notes.push(note);
        }
        self.report.available = self.records.len();
        if self.report.skipped_malformed > MAX_NOTED_SKIPS {
            let more = self.report.skipped_malformed - MAX_NOTED_SKIPS;
            self.report
                .notes
                .push(format!("... and {more} more malformed lines skipped"));
        }
        let mut t = Trajectories::from_records(dataset_name(&self.path), self.records);
        let all_extent = t.extent;
        if let Some(limit) = opts.limit {
            t.truncate(limit);
        }
        if self.synthetic_taxis {
            chicago::deal_to_taxis(&mut t.records, opts.taxis, &mut self.report.notes);
        } else if opts.format == Format::ChicagoCsv && opts.taxis.is_some() {
            self.report
                .notes
                .push("taxis option ignored: the file has a taxi_id column".to_string());
        }
        // The extent of the records kept; with `limit: Some(0)`, of everything read.
        if !t.records.is_empty() {
            t.extent = padded_bounds(&t.records);
        } else {
            t.extent = all_extent;
        }
        self.report.records = t.records.len();
        Ok((t, self.report))
    }
}

/// Parses a coordinate or other number; the error reads `column "lat": expected a number, got "abc"`.
pub(crate) fn number(column: &str, s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("column {column}: expected a number, got {s:?}")),
    }
}

/// Checks a longitude/latitude pair is on Earth.
pub(crate) fn check_lon_lat(lon: f64, lat: f64) -> Result<(), String> {
    if !(-180.0..=180.0).contains(&lon) {
        return Err(format!("longitude {lon} is outside -180..180"));
    }
    if !(-90.0..=90.0).contains(&lat) {
        return Err(format!("latitude {lat} is outside -90..90"));
    }
    Ok(())
}

/// A quoted column name for messages: `"lat"`.
pub(crate) fn quoted(name: &str) -> String {
    format!("{name:?}")
}
