//! Which columns of a CSV/TSV file hold the object id, the time and the coordinates.

use std::fmt;
use std::str::FromStr;

use crate::WorkloadError;

/// A column, by header name (matched case-insensitively, surrounding spaces ignored) or by
/// 0-based position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnRef {
    Name(String),
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
}

impl fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnRef::Name(n) => f.write_str(n),
            ColumnRef::Index(i) => write!(f, "{i}"),
        }
    }
}

/// The four columns a generic CSV/TSV file is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvColumns {
    pub oid: ColumnRef,
    pub time: ColumnRef,
    pub x: ColumnRef,
    pub y: ColumnRef,
}

impl CsvColumns {
    /// Positions 0, 1, 2, 3: object id, time, x, y.
    pub fn positional() -> CsvColumns {
        CsvColumns {
            oid: ColumnRef::Index(0),
            time: ColumnRef::Index(1),
            x: ColumnRef::Index(2),
            y: ColumnRef::Index(3),
        }
    }

    /// The columns in the order object id, time, x, y, with their role names.
    pub fn roles(&self) -> [(&'static str, &ColumnRef); 4] {
        [
            ("oid", &self.oid),
            ("time", &self.time),
            ("x", &self.x),
            ("y", &self.y),
        ]
    }

    /// True if any column is given by name (then the file must have a header).
    pub fn uses_names(&self) -> bool {
        self.roles().iter().any(|(_, c)| matches!(c, ColumnRef::Name(_)))
    }
}

impl fmt::Display for CsvColumns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oid={},time={},x={},y={}", self.oid, self.time, self.x, self.y)
    }
}

/// Parses `"oid=user,time=ts,x=lon,y=lat"` (keys in any order, all four required) or four
/// comma-separated columns in the order oid, time, x, y (`"0,1,3,2"`, or names: `"user,ts,lon,lat"`).
/// A value that is a number is a 0-based position, anything else a header name.
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
        let cols: [ColumnRef; 4] = if keyed == 0 {
            [items[0], items[1], items[2], items[3]].map(ColumnRef::parse)
        } else if keyed == 4 {
            let mut slots: [Option<ColumnRef>; 4] = Default::default();
            for item in items {
                let (key, value) = item.split_once('=').expect("contains '='");
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
                if slots[slot].replace(ColumnRef::parse(value)).is_some() {
                    return Err(bad(format!("{key:?} given twice")));
                }
            }
            slots.map(|s| s.expect("four distinct keys fill four slots"))
        } else {
            return Err(bad("either give all four as key=column or none".to_string()));
        };
        let [oid, time, x, y] = cols;
        Ok(CsvColumns { oid, time, x, y })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_keyed_and_positional_specs() {
        let c: CsvColumns = "oid=user,time=ts,x=lon,y=lat".parse().unwrap();
        assert_eq!(c.oid, ColumnRef::Name("user".into()));
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
    fn rejects_bad_specs_with_reasons() {
        for (spec, needle) in [
            ("0,1,2", "expected 4"),
            ("oid=a,time=b,x=c,z=d", "unknown key \"z\""),
            ("oid=a,time=b,x=c,x=d", "given twice"),
            ("oid=a,1,2,3", "either give all four"),
            ("0,,2,3", "empty column"),
            ("oid=a,time=,x=c,y=d", "no column given"),
        ] {
            let err = spec.parse::<CsvColumns>().unwrap_err().to_string();
            assert!(err.contains(needle) && err.contains(spec), "{spec}: {err}");
        }
    }
}
