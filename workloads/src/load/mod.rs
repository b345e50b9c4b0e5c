//! Loaders for real trajectory data: SNAP Gowalla check-ins, the Chicago taxi trips CSV and any
//! CSV/TSV of (object id, time, x, y), plain or gzipped, into time-ordered [`Trajectories`].
//!
//! Bad input is never silently dropped: a malformed line is an error naming the file, the line and
//! the column ([`WorkloadError::Malformed`]), or, with [`LoadOptions::skip_malformed`], a skipped
//! line counted in the [`LoadReport`]. The one gap that is skipped by default is the Chicago
//! format's documented one: trips without pickup coordinates (counted in
//! [`LoadReport::skipped_missing`]).

mod chicago;
mod columns;
mod csv;
mod reader;
mod snap;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use columns::{ColumnRef, CsvColumns};

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
}

impl Format {
    /// The names [`Format::from_str`] accepts, in declaration order.
    pub const NAMES: [&'static str; 3] = ["snap-gowalla", "chicago-csv", "csv"];

    /// [`guess`]: the format a file's first line looks like.
    pub fn guess(path: &Path) -> Option<Format> {
        guess(path)
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::SnapGowalla => Self::NAMES[0],
            Format::ChicagoCsv => Self::NAMES[1],
            Format::Csv => Self::NAMES[2],
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
            _ => Err(WorkloadError::UnknownFormat {
                name: s.to_string(),
                valid: Self::NAMES.iter().map(|n| n.to_string()).collect(),
            }),
        }
    }
}

/// Guesses a file's format from its first line: a header with a pickup latitude column is the
/// Chicago CSV; five tab-separated fields `integer, ISO time, number, number, ...` are SNAP Gowalla;
/// any other line with at least four delimited fields is a generic CSV. `None` if the file cannot
/// be read or looks like none of these.
pub fn guess(path: &Path) -> Option<Format> {
    let line = reader::first_line(path)?;
    let lower = line.to_ascii_lowercase();
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
    (line.split(char::from(delim)).count() >= 4).then_some(Format::Csv)
}

/// How to load a file.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
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
    /// Non-blank data lines read (the header excluded).
    pub lines: usize,
    /// Records in the returned dataset (after `limit`).
    pub records: usize,
    /// Lines skipped because they did not parse (only with `skip_malformed`).
    pub skipped_malformed: usize,
    /// Lines skipped because the format allows them to lack a location (Chicago trips without
    /// pickup coordinates).
    pub skipped_missing: usize,
    /// Anything a reader must know: synthetic ids, the first skipped lines, a limit applied.
    pub notes: Vec<String>,
}

/// Loads `path` as `opts.format` into records sorted by time (stably: equal times keep file
/// order), named after the file stem, with the points' bounding box as extent.
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
    match opts.format {
        Format::SnapGowalla => snap::read(path, &mut sink)?,
        Format::ChicagoCsv => chicago::read(path, &mut sink)?,
        Format::Csv => csv::read(path, opts.columns.as_ref(), dialect, &mut sink)?,
    }
    sink.finish(opts)
}

/// Dataset name from a path: the file name without `.gz` and then without `.csv`, `.tsv` or `.txt`.
pub fn dataset_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let lower = name.to_ascii_lowercase();
    let cut = [".csv", ".tsv", ".txt"]
        .iter()
        .find(|ext| lower.ends_with(*ext))
        .map_or(0, |ext| ext.len());
    name[..name.len() - cut].to_string()
}

/// Where the format readers put what they parse; applies the skip policy and counts.
pub(crate) struct Sink {
    path: PathBuf,
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
            path: self.path.clone(),
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
        if self.report.skipped_malformed > MAX_NOTED_SKIPS {
            let more = self.report.skipped_malformed - MAX_NOTED_SKIPS;
            self.report
                .notes
                .push(format!("... and {more} more malformed lines skipped"));
        }
        let mut t = Trajectories::from_records(dataset_name(&self.path), self.records);
        let all_extent = t.extent;
        let loaded = t.records.len();
        if let Some(limit) = opts.limit {
            if limit < loaded {
                t.truncate(limit);
                self.report.notes.push(format!(
                    "kept the first {limit} of {loaded} records in time order (limit)"
                ));
            }
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
