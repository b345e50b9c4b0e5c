//! The crate's typed errors. Every message about a data file names the file (and the line, for a
//! bad line) and says what was expected, so a user can fix the input without reading the code
//! (`docs/design.md#conventions`).

use std::path::PathBuf;

/// Everything generating or loading a workload can fail with.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// Opening or reading a file failed (a gzip stream cut short is one). The message says the
    /// I/O error once: it is part of this error's text, not also its `source()`, so that a
    /// printed chain of causes does not repeat it.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system reported.
        error: std::io::Error,
    },
    /// One line of a data file does not parse; `line` counts from 1 and includes the header.
    #[error("{}:{line}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line, counting from 1 (the header included).
        line: usize,
        /// Why the line does not parse.
        reason: String,
    },
    /// The file holds no data at all (or nothing after its header).
    #[error("{}: empty file: expected {expected}", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// What the file should have held.
        expected: String,
    },
    /// Every data line was skipped, so there is nothing to replay.
    #[error(
        "{}: no usable records ({lines} data lines: {skipped_malformed} malformed, {skipped_missing} \
         without coordinates)",
        path.display()
    )]
    NoRecords {
        /// The file.
        path: PathBuf,
        /// Data lines read (the header excluded).
        lines: usize,
        /// Lines skipped because they do not parse.
        skipped_malformed: usize,
        /// Lines skipped because they have no coordinates.
        skipped_missing: usize,
    },
    /// A column named in the column spec (or required by the format) is not in the header.
    #[error("{}: no column {column:?} in the header (columns: {})", path.display(), header.join(", "))]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column asked for.
        column: String,
        /// The file's header columns.
        header: Vec<String>,
    },
    /// `generate` was asked for a dataset it does not know.
    #[error("unknown dataset {name:?}; valid datasets: {}", valid.join(", "))]
    UnknownDataset {
        /// The name asked for.
        name: String,
        /// Every dataset name `generate` accepts.
        valid: Vec<String>,
    },
    /// A format name that `Format::from_str` does not accept.
    #[error("unknown format {name:?}; accepted formats: {}", valid.join(", "))]
    UnknownFormat {
        /// The name given.
        name: String,
        /// Every format name accepted.
        valid: Vec<String>,
    },
    /// A column spec such as `"oid=user,time=ts,x=lon,y=lat"` or `"0,1,3,2"` that does not parse.
    #[error("bad column spec {spec:?}: {reason}")]
    BadColumnSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A generator parameter is out of range.
    #[error("invalid {generator} parameter: {reason}")]
    InvalidParameter {
        /// The generator (or stream builder) refusing it, e.g. "gowalla" or "ts".
        generator: &'static str,
        /// Which parameter, its value and the range it must be in.
        reason: String,
    },
    /// A CSV file's columns were not given and cannot be told from its header: `reason` shows the
    /// header (or the first line), `example` a column spec for this file.
    #[error(
        "{}: cannot tell which columns hold the object id, time, x and y: {reason}; name them, e.g. \
         --columns {example}",
        path.display()
    )]
    ColumnsNotGuessed {
        /// The file.
        path: PathBuf,
        /// The header (or first line) that does not say.
        reason: String,
        /// A column spec that would read this file.
        example: String,
    },
    /// A data directory that holds no file to load.
    #[error("{}: {reason}", path.display())]
    DataDirectory {
        /// The directory.
        path: PathBuf,
        /// Why nothing in it can be loaded.
        reason: String,
    },
}
