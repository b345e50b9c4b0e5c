//! Generic CSV/TSV of (object id, time, x, y), for trajectory data in any other layout (a BerlinMOD
//! export, a GPS log). Columns come from a [`CsvColumns`] spec, by header name or position.

use std::path::Path;

use super::reader::{Fields, LineReader};
use super::{number, quoted, ColumnRef, CsvColumns, CsvDialect, Sink};
use crate::time::parse_timestamp;
use crate::WorkloadError;

/// Tab if the line has one, else comma, else semicolon, else comma.
pub(super) fn detect_delimiter(line: &str) -> u8 {
    if line.contains('\t') {
        b'\t'
    } else if line.contains(',') {
        b','
    } else if line.contains(';') {
        b';'
    } else {
        b','
    }
}

const OID_NAMES: [&str; 8] = [
    "oid",
    "id",
    "object_id",
    "user",
    "user_id",
    "taxi_id",
    "vehicle",
    "moid",
];
const TIME_NAMES: [&str; 5] = ["time", "timestamp", "ts", "t", "datetime"];
const X_NAMES: [&str; 4] = ["x", "lon", "lng", "longitude"];
const Y_NAMES: [&str; 3] = ["y", "lat", "latitude"];

/// A resolved column: its position and how messages name it.
struct Column {
    index: usize,
    label: String,
}

pub(super) fn read(
    path: &Path,
    columns: Option<&CsvColumns>,
    dialect: CsvDialect,
    sink: &mut Sink,
) -> Result<(), WorkloadError> {
    sink.expect("delimited lines of object id, time, x, y");
    let mut lines = LineReader::open(path)?;
    let mut fields = Fields::default();
    // Find the first non-blank line: it decides the delimiter and whether there is a header.
    let Some((first_no, first)) = lines.first_data_line()? else {
        return Ok(());
    };
    let delim = dialect.delimiter.unwrap_or_else(|| detect_delimiter(&first));
    let malformed_first = |reason: String| WorkloadError::Malformed {
        path: path.into(),
        line: first_no,
        reason,
    };
    fields.split(&first, delim).map_err(malformed_first)?;
    let first_fields: Vec<String> = (0..fields.len())
        .map(|i| fields.get(i).unwrap_or_default().to_string())
        .collect();

    let guessed;
    let spec = match columns {
        Some(c) => c,
        None => {
            guessed = guess_columns(&first_fields, dialect.header);
            &guessed
        }
    };
    let header = match dialect.header {
        Some(h) => h,
        None if spec.uses_names() => true,
        None => {
            // A header if the first line's x or y is not a number.
            let at = |c: &ColumnRef| match c {
                ColumnRef::Index(i) => first_fields.get(*i).map(String::as_str),
                ColumnRef::Name(_) => None,
            };
            [&spec.x, &spec.y]
                .iter()
                .any(|c| at(c).is_none_or(|v| v.trim().parse::<f64>().is_err()))
        }
    };
    if spec.uses_names() && !header {
        return Err(WorkloadError::BadColumnSpec {
            spec: spec.to_string(),
            reason: format!("columns given by name, but {} has no header", path.display()),
        });
    }
    let resolve = |c: &ColumnRef| -> Result<Column, WorkloadError> {
        match c {
            ColumnRef::Index(i) => Ok(Column {
                index: *i,
                label: match first_fields.get(*i) {
                    Some(name) if header => quoted(name),
                    _ => format!("{i}"),
                },
            }),
            ColumnRef::Name(name) => first_fields
                .iter()
                .position(|h| h.trim().eq_ignore_ascii_case(name.trim()))
                .map(|index| Column {
                    index,
                    label: quoted(name),
                })
                .ok_or_else(|| WorkloadError::MissingColumn {
                    path: path.into(),
                    column: name.clone(),
                    header: first_fields.clone(),
                }),
        }
    };
    let [oid_c, time_c, x_c, y_c] = [&spec.oid, &spec.time, &spec.x, &spec.y].map(resolve);
    let (oid_c, time_c, x_c, y_c) = (oid_c?, time_c?, x_c?, y_c?);
    let needed = [&oid_c, &time_c, &x_c, &y_c]
        .iter()
        .map(|c| c.index)
        .max()
        .unwrap_or(0)
        + 1;
    if columns.is_none() {
        sink.note(format!("no columns given: read {spec}"));
    }
    if header {
        sink.expect("data lines after the header");
    }

    let mut parse_line = |line: &str, sink: &mut Sink| -> Result<(), String> {
        fields.split(line, delim)?;
        if fields.len() < needed {
            return Err(format!(
                "expected at least {needed} {}-separated fields, got {}",
                if delim == b'\t' { "tab" } else { "delimiter" },
                fields.len()
            ));
        }
        let get = |c: &Column| fields.get(c.index).unwrap_or_default();
        let oid = get(&oid_c);
        if oid.is_empty() {
            return Err(format!("column {}: empty object id", oid_c.label));
        }
        let time = parse_timestamp(get(&time_c)).map_err(|e| format!("column {}: {e}", time_c.label))?;
        let x = number(&x_c.label, get(&x_c))?;
        let y = number(&y_c.label, get(&y_c))?;
        let oid = sink.object_id(oid);
        sink.push(oid, time, x, y);
        Ok(())
    };
    if !header {
        sink.data_line();
        if let Err(reason) = parse_line(&first, sink) {
            sink.malformed(first_no, reason)?;
        }
    }
    lines.for_each_data_line(sink, parse_line)
}

/// Columns when none are given: recognisable header names, else positions 0, 1, 2, 3.
fn guess_columns(first: &[String], header: Option<bool>) -> CsvColumns {
    if header == Some(false) {
        return CsvColumns::positional();
    }
    let find = |names: &[&str]| {
        first
            .iter()
            .find(|h| names.contains(&h.trim().to_ascii_lowercase().as_str()))
            .map(|h| ColumnRef::Name(h.clone()))
    };
    match (
        find(&OID_NAMES),
        find(&TIME_NAMES),
        find(&X_NAMES),
        find(&Y_NAMES),
    ) {
        (Some(oid), Some(time), Some(x), Some(y)) => CsvColumns { oid, time, x, y },
        _ => CsvColumns::positional(),
    }
}
