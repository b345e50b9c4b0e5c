//! Which columns of a CSV/TSV file hold the object id, the time and the coordinates.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::WorkloadError;

/// A column, by header name (matched case-insensitively, surrounding spaces ignored) or by
/// 0-based position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnRef {
    /// The column whose header is this name.
    Name(String),
    /// The column at this 0-based position.
    Index(usize),
}

impl ColumnRef {
    /// A number is a position, anything else a header name.
    fn parse(s: &str) -> ColumnRef {
        let s = s.trim();
        s.parse()
            .map(ColumnRef::Index)
            .unwrap_or_else(|_| ColumnRef::Name(s.to_string()))
    }

    /// True if both name the same column as written (positions equal, or names equal ignoring case).
    fn same(&self, other: &ColumnRef) -> bool {
        match (self, other) {
            (ColumnRef::Index(a), ColumnRef::Index(b)) => a == b,
            (ColumnRef::Name(a), ColumnRef::Name(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
            _ => false,
        }
    }
}

impl fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnRef::Name(n) => f.write_str(n),
            ColumnRef::Index(i) => write!(f, "{i}"),
        }
    }
}

/// Where a record's object id comes from: a column, or the file's path, for data sets that keep one
/// object per file or per directory (GPS logs such as GeoLife keep one user per directory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSource {
    /// The value of this column.
    Column(ColumnRef),
    /// The file name without its extensions (`@file`).
    FileStem,
    /// The name of the directory holding the file (`@dir`).
    DirName,
}

impl IdSource {
    /// The id every record of `path` gets, for the path-based sources; `None` for a column.
    pub fn path_id(&self, path: &Path) -> Option<String> {
        match self {
            IdSource::Column(_) => None,
            IdSource::FileStem => Some(super::dataset_name(path)),
            IdSource::DirName => Some(parent_name(path)),
        }
    }
}

/// The name of the directory holding `path` (resolved through the current directory for a bare file
/// name); empty if there is none.
pub(crate) fn parent_name(path: &Path) -> String {
    let named = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    match path.parent().and_then(named) {
        Some(name) => name,
        None => std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.parent().and_then(named))
            .unwrap_or_default(),
    }
}

impl fmt::Display for IdSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdSource::Column(c) => c.fmt(f),
            IdSource::FileStem => f.write_str("@file"),
            IdSource::DirName => f.write_str("@dir"),
        }
    }
}

/// The columns a generic CSV/TSV file is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvColumns {
    /// Where the object id comes from.
    pub oid: IdSource,
    /// The time column (a timestamp, or a date when `time_of_day` is given).
    pub time: ColumnRef,
    /// A second time column joined after `time` with a space, for files that keep the date and the
    /// time of day apart (`time=date+time`).
    pub time_of_day: Option<ColumnRef>,
    /// The x (longitude) column.
    pub x: ColumnRef,
    /// The y (latitude) column.
    pub y: ColumnRef,
}

impl CsvColumns {
    /// Positions 0, 1, 2, 3: object id, time, x, y.
    pub fn positional() -> CsvColumns {
        CsvColumns {
            oid: IdSource::Column(ColumnRef::Index(0)),
            time: ColumnRef::Index(1),
            time_of_day: None,
            x: ColumnRef::Index(2),
            y: ColumnRef::Index(3),
        }
    }

    /// The columns read, with their role names, in the order object id, time, (time of day,) x, y.
    pub fn columns(&self) -> Vec<(&'static str, &ColumnRef)> {
        let mut out = Vec::with_capacity(5);
        if let IdSource::Column(c) = &self.oid {
            out.push(("oid", c));
        }
        out.push(("time", &self.time));
        if let Some(c) = &self.time_of_day {
            out.push(("time", c));
        }
        out.push(("x", &self.x));
        out.push(("y", &self.y));
        out
    }

    /// True if any column is given by name (then the file must have a header).
    pub fn uses_names(&self) -> bool {
        self.columns()
            .iter()
            .any(|(_, c)| matches!(c, ColumnRef::Name(_)))
    }

    /// The first two roles given the same column as written, e.g. `("oid", "time", "0")`.
    fn repeated(&self) -> Option<(&'static str, &'static str, String)> {
        let cols = self.columns();
        for (i, (a, ca)) in cols.iter().enumerate() {
            for (b, cb) in &cols[i + 1..] {
                if ca.same(cb) {
                    return Some((a, b, ca.to_string()));
                }
            }
        }
        None
    }
}

impl fmt::Display for CsvColumns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oid={},time={}", self.oid, self.time)?;
        if let Some(c) = &self.time_of_day {
            write!(f, "+{c}")?;
        }
        write!(f, ",x={},y={}", self.x, self.y)
    }
}

/// Parses `"oid=user,time=ts,x=lon,y=lat"` (keys in any order, all four required) or four
/// comma-separated columns in the order oid, time, x, y (`"0,1,3,2"`, or names: `"user,ts,lon,lat"`).
/// A value that is a number is a 0-based position, anything else a header name. The time may join
/// two columns, date then time of day (`time=date+time`, `time=5+6`); the object id may come from
/// the file's name (`oid=@file`) or its directory's (`oid=@dir`). No two roles may share a column.
impl FromStr for CsvColumns {
    type Err = WorkloadError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| WorkloadError::BadColumnSpec {
            spec: spec.to_string(),
            reason,
        };
        let items: Vec<&str> = spec.split(',').map(str::trim).collect();
        if items.len() != 4 {
            return Err(bad(format!(
                "expected 4 comma-separated columns (oid, time, x, y) such as \"oid=user,time=ts,x=lon,y=lat\" \
                 or \"0,1,3,2\", got {}",
                items.len()
            )));
        }
        if items.iter().any(|i| i.is_empty()) {
            return Err(bad("empty column".to_string()));
        }
        let keyed = items.iter().filter(|i| i.contains('=')).count();
        let values: [&str; 4] = if keyed == 0 {
            [items[0], items[1], items[2], items[3]]
        } else if keyed == 4 {
            let mut slots: [Option<&str>; 4] = Default::default();
            for item in items {
                let Some((key, value)) = item.split_once('=') else {
                    return Err(bad("either give all four as key=column or none".to_string()));
                };
                let slot = match key.trim().to_ascii_lowercase().as_str() {
                    "oid" | "id" | "object" => 0,
                    "time" | "t" | "ts" => 1,
                    "x" | "lon" | "lng" => 2,
                    "y" | "lat" => 3,
                    other => return Err(bad(format!("unknown key {other:?}; expected oid, time, x and y"))),
                };
                if value.trim().is_empty() {
                    return Err(bad(format!("no column given for {key:?}")));
                }
                if slots[slot].replace(value.trim()).is_some() {
                    return Err(bad(format!("{key:?} given twice")));
                }
            }
            match slots {
                [Some(oid), Some(time), Some(x), Some(y)] => [oid, time, x, y],
                _ => return Err(bad("give each of oid, time, x and y once".to_string())),
            }
        } else {
            return Err(bad("either give all four as key=column or none".to_string()));
        };
        let [oid, time, x, y] = values;
        let oid = match oid.to_ascii_lowercase().as_str() {
            "@file" => IdSource::FileStem,
            "@dir" => IdSource::DirName,
            _ => IdSource::Column(ColumnRef::parse(oid)),
        };
        for (role, v) in [("time", time), ("x", x), ("y", y)] {
            if v.starts_with('@') {
                return Err(bad(format!(
                    "{role}={v}: only the object id can come from the path (@file, @dir)"
                )));
            }
        }
        let (time, time_of_day) = match time.split_once('+') {
            None => (ColumnRef::parse(time), None),
            Some((date, tod)) if !date.trim().is_empty() && !tod.trim().is_empty() && !tod.contains('+') => {
                (ColumnRef::parse(date), Some(ColumnRef::parse(tod)))
            }
            Some(_) => {
                return Err(bad(format!(
                    "time {time:?}: join exactly two columns, date then time of day, as in \"time=date+time\""
                )))
            }
        };
        for (role, v) in [("x", x), ("y", y)] {
            if v.contains('+') && v.split('+').all(|p| p.trim().parse::<usize>().is_ok()) {
                return Err(bad(format!("{role}={v}: only the time can join two columns")));
            }
        }
        let columns = CsvColumns {
            oid,
            time,
            time_of_day,
            x: ColumnRef::parse(x),
            y: ColumnRef::parse(y),
        };
        if let Some((a, b, col)) = columns.repeated() {
            return Err(bad(format!(
                "{a} and {b} are both column {col}; each role needs a column of its own"
            )));
        }
        Ok(columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keyed_and_positional_specs() {
        let c: CsvColumns = "oid=user,time=ts,x=lon,y=lat".parse().unwrap();
        assert_eq!(c.oid, IdSource::Column(ColumnRef::Name("user".into())));
        assert_eq!(c.y, ColumnRef::Name("lat".into()));
        assert!(c.uses_names());
        assert_eq!(c.to_string(), "oid=user,time=ts,x=lon,y=lat");
        let c: CsvColumns = "y=2, x=3, time=1, oid=0".parse().unwrap();
        assert_eq!(
            c,
            CsvColumns {
                y: ColumnRef::Index(2),
                x: ColumnRef::Index(3),
                ..CsvColumns::positional()
            }
        );
        let c: CsvColumns = "0,1,3,2".parse().unwrap();
        assert_eq!(
            (c.x.clone(), c.y.clone()),
            (ColumnRef::Index(3), ColumnRef::Index(2))
        );
        assert!(!c.uses_names());
        let c: CsvColumns = "user,1,lon,lat".parse().unwrap();
        assert_eq!(c.time, ColumnRef::Index(1));
        assert_eq!(c.x, ColumnRef::Name("lon".into()));
    }

    #[test]
    fn parses_joined_times_and_path_ids() {
        let c: CsvColumns = "oid=@dir,time=5+6,x=1,y=0".parse().unwrap();
        assert_eq!(c.oid, IdSource::DirName);
        assert_eq!(
            (c.time.clone(), c.time_of_day.clone()),
            (ColumnRef::Index(5), Some(ColumnRef::Index(6)))
        );
        assert_eq!(c.to_string(), "oid=@dir,time=5+6,x=1,y=0");
        assert_eq!(c.columns().len(), 4);
        let c: CsvColumns = "@FILE,date + time,lon,lat".parse().unwrap();
        assert_eq!(c.oid, IdSource::FileStem);
        assert_eq!(c.time_of_day, Some(ColumnRef::Name("time".into())));
        assert_eq!(
            IdSource::DirName.path_id(Path::new("Data/000/Trajectory/1.plt")),
            Some("Trajectory".to_string())
        );
        assert_eq!(
            IdSource::FileStem.path_id(Path::new("a/b/car-7.csv.gz")),
            Some("car-7".to_string())
        );
    }

    #[test]
    fn rejects_bad_specs_with_reasons() {
        for (spec, needle) in [
            ("0,1,2", "expected 4"),
            ("oid=a,time=b,x=c,z=d", "unknown key \"z\""),
            ("oid=a,time=b,x=c,x=d", "given twice"),
            ("oid=a,1,2,3", "either give all four"),
            ("0,,2,3", "empty column"),
            ("oid=a,time=,x=c,y=d", "no column given"),
            ("0,0,2,3", "oid and time are both column 0"),
            ("1,0,2,2", "x and y are both column 2"),
            ("oid=id,time=t,x=LAT,y=lat", "x and y are both column LAT"),
            ("0,1+3,2,3", "time and y are both column 3"),
            ("0,1+1,2,3", "time and time are both column 1"),
            ("0,1+2+3,4,5", "join exactly two"),
            ("0,+2,4,5", "join exactly two"),
            ("0,1,@file,3", "only the object id"),
            ("0,1,2+4,3", "only the time"),
        ] {
            let err = spec.parse::<CsvColumns>().unwrap_err().to_string();
            assert!(err.contains(needle) && err.contains(spec), "{spec}: {err}");
        }
    }
}
