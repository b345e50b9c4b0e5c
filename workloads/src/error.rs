//! The crate's typed errors. Every message about a data file names the file (and the line, for a
//! bad line) and says what was expected, so a user can fix the input without reading the code
//! (DESIGN.md section 5).

use std::path::PathBuf;

/// Everything generating or loading a workload can fail with.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// Opening or reading a file failed (a gzip stream cut short is one). The message says the
    /// I/O error once: it is part of this error's text, not also its `source()`, so that a
    /// printed chain of causes does not repeat it.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: std::io::Error },
    /// One line of a data file does not parse; `line` counts from 1 and includes the header.
    #[error("{}:{line}: {reason}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// The file holds no data at all (or nothing after its header).
    #[error("{}: empty file: expected {expected}", path.display())]
    Empty { path: PathBuf, expected: String },
    /// Every data line was skipped, so there is nothing to replay.
    #[error(
        "{}: no usable records ({lines} data lines: {skipped_malformed} malformed, {skipped_missing} \
         without coordinates)",
        path.display()
    )]
    NoRecords {
        path: PathBuf,
        lines: usize,
        skipped_malformed: usize,
        skipped_missing: usize,
    },
    /// A column named in the column spec (or required by the format) is not in the header.
    #[error("{}: no column {column:?} in the header (columns: {})", path.display(), header.join(", "))]
    MissingColumn {
        path: PathBuf,
        column: String,
        header: Vec<String>,
    },
    /// `generate` was asked for a dataset it does not know.
    #[error("unknown dataset {name:?}; valid datasets: {}", valid.join(", "))]
    UnknownDataset { name: String, valid: Vec<String> },
    /// A format name that `Format::from_str` does not accept.
    #[error("unknown format {name:?}; accepted formats: {}", valid.join(", "))]
    UnknownFormat { name: String, valid: Vec<String> },
    /// A column spec such as `"oid=user,time=ts,x=lon,y=lat"` or `"0,1,3,2"` that does not parse.
    #[error("bad column spec {spec:?}: {reason}")]
    BadColumnSpec { spec: String, reason: String },
    /// A generator parameter is out of range.
    #[error("invalid {generator} parameter: {reason}")]
    InvalidParameter { generator: &'static str, reason: String },
    /// A CSV file's columns were not given and cannot be told from its header: `reason` shows the
    /// header (or the first line), `example` a column spec for this file.
    #[error(
        "{}: cannot tell which columns hold the object id, time, x and y: {reason}; name them, e.g. \
         --columns {example}",
        path.display()
    )]
    ColumnsNotGuessed {
        path: PathBuf,
        reason: String,
        example: String,
    },
    /// A data directory that holds no file to load.
    #[error("{}: {reason}", path.display())]
    DataDirectory { path: PathBuf, reason: String },
}
