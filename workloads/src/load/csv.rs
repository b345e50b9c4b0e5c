//! Generic CSV/TSV of (object id, time, x, y), for trajectory data in any other layout (a BerlinMOD
//! export, a GPS log). Columns come from a [`CsvColumns`] spec, by header name or position, or are
//! guessed from the header's names ([`guess_columns`]); a file whose columns cannot be guessed is an
//! error that shows the header and a spec to start from, never a silent read by position.

use std::path::Path;

use super::reader::{Fields, LineReader};
use super::{number, quoted, ColumnRef, CsvColumns, CsvDialect, IdSource, Sink};
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

/// Header names (normalised: lower case, spaces and hyphens as underscores) recognised as each
/// role, in order of preference. `id` comes last among the ids: in many exports it numbers the
/// records, not the objects.
const OID_NAMES: &[&str] = &[
    "oid",
    "object_id",
    "objectid",
    "moid",
    "uid",
    "user",
    "user_id",
    "userid",
    "taxi_id",
    "taxi",
    "vehicle",
    "vehicle_id",
    "vehicleid",
    "car",
    "car_id",
    "driver_id",
    "device_id",
    "mmsi",
    "track_id",
    "trajectory_id",
    "traj_id",
    "tid",
    "person_id",
    "agent_id",
    "id",
];
/// Single columns holding a whole timestamp, preferred over a date + time pair.
const TIMESTAMP_NAMES: &[&str] = &[
    "timestamp",
    "datetime",
    "date_time",
    "time_stamp",
    "ts",
    "trip_start_timestamp",
    "pickup_datetime",
    "tpep_pickup_datetime",
    "lpep_pickup_datetime",
    "checkin_time",
    "check_in_time",
    "utc_time",
    "gps_time",
    "unix_time",
    "epoch",
];
/// Read after a date + time pair was looked for.
const TIME_NAMES: &[&str] = &["time", "t", "date"];
const TIME_SUFFIXES: &[&str] = &["timestamp", "datetime", "time", "ts"];
const X_NAMES: &[&str] = &[
    "x",
    "lon",
    "lng",
    "long",
    "longitude",
    "pickup_longitude",
    "pickup_centroid_longitude",
];
const X_SUFFIXES: &[&str] = &["longitude", "lon", "lng", "long"];
const Y_NAMES: &[&str] = &[
    "y",
    "lat",
    "latitude",
    "pickup_latitude",
    "pickup_centroid_latitude",
];
const Y_SUFFIXES: &[&str] = &["latitude", "lat"];

/// A resolved column: its position and how messages name it.
struct Column {
    index: usize,
    label: String,
}

/// What a header's names say about its columns.
#[derive(Debug)]
pub(super) struct Guess {
    pub spec: CsvColumns,
    /// Other columns that also matched a role, e.g. `y: also "dropoff_latitude"`.
    pub also: Vec<String>,
}

/// Reads `path` with `columns`, or with columns guessed from its header; returns the spec used, so
/// that the other files of a directory are read alike.
pub(super) fn read(
    path: &Path,
    columns: Option<&CsvColumns>,
    dialect: CsvDialect,
    sink: &mut Sink,
) -> Result<Option<CsvColumns>, WorkloadError> {
    sink.expect("delimited lines of object id, time, x, y");
    let mut lines = LineReader::open(path)?;
    let mut fields = Fields::default();
    // Find the first non-blank line: it decides the delimiter and whether there is a header.
    let Some((first_no, first)) = lines.first_data_line()? else {
        return Ok(columns.cloned());
    };
    let delim = dialect.delimiter.unwrap_or_else(|| detect_delimiter(&first));
    let split = |fields: &mut Fields, no: usize, line: &str| -> Result<Vec<String>, WorkloadError> {
        fields
            .split(line, delim)
            .map_err(|reason| WorkloadError::Malformed {
                path: path.into(),
                line: no,
                reason,
            })?;
        Ok((0..fields.len())
            .map(|i| fields.get(i).unwrap_or_default().to_string())
            .collect())
    };
    let first_fields = split(&mut fields, first_no, &first)?;

    let header = match (dialect.header, columns) {
        (Some(h), _) => h,
        (None, Some(spec)) if spec.uses_names() => true,
        (None, Some(spec)) => {
            // A header if the first line's x or y is not a number.
            let at = |c: &ColumnRef| match c {
                ColumnRef::Index(i) => first_fields.get(*i).map(String::as_str),
                ColumnRef::Name(_) => None,
            };
            [&spec.x, &spec.y]
                .iter()
                .any(|c| at(c).is_none_or(|v| v.trim().parse::<f64>().is_err()))
        }
        // Data lines hold coordinates; a header holds no number at all.
        (None, None) => !first_fields.iter().any(|f| f.trim().parse::<f64>().is_ok()),
    };
    // With a header, the first data line helps the guess (is `time` a whole timestamp?).
    let sample = if header { lines.first_data_line()? } else { None };

    let mut also = Vec::new();
    let spec = match columns {
        Some(c) => c.clone(),
        None if !header => {
            let shown: Vec<String> = first_fields
                .iter()
                .enumerate()
                .map(|(i, f)| format!("{i}={f}"))
                .collect();
            return Err(WorkloadError::ColumnsNotGuessed {
                path: path.into(),
                reason: format!(
                    "the file has no header line (line {first_no} holds data: {}), so columns must be given \
                     by position",
                    shown.join(", ")
                ),
                example: "oid=0,time=1,x=2,y=3".to_string(),
            });
        }
        None => {
            let sample_fields = match &sample {
                Some((no, line)) => Some(split(&mut fields, *no, line)?),
                None => None,
            };
            let guess =
                guess_columns(&first_fields, sample_fields.as_deref()).map_err(|(reason, example)| {
                    WorkloadError::ColumnsNotGuessed {
                        path: path.into(),
                        reason,
                        example,
                    }
                })?;
            also = guess.also;
            guess.spec
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
    let oid_c = match &spec.oid {
        IdSource::Column(c) => Some(resolve(c)?),
        _ => None,
    };
    let path_id = spec.oid.path_id(path);
    let time_c = resolve(&spec.time)?;
    let tod_c = spec.time_of_day.as_ref().map(resolve).transpose()?;
    let x_c = resolve(&spec.x)?;
    let y_c = resolve(&spec.y)?;
    let roles: Vec<(&str, &Column)> = [
        oid_c.as_ref().map(|c| ("oid", c)),
        Some(("time", &time_c)),
        tod_c.as_ref().map(|c| ("time", c)),
        Some(("x", &x_c)),
        Some(("y", &y_c)),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (i, (a, ca)) in roles.iter().enumerate() {
        if let Some((b, _)) = roles[i + 1..].iter().find(|(_, cb)| cb.index == ca.index) {
            return Err(WorkloadError::BadColumnSpec {
                spec: spec.to_string(),
                reason: format!(
                    "{a} and {b} are both column {} of {}; each role needs a column of its own",
                    ca.index,
                    path.display()
                ),
            });
        }
    }
    let needed = roles.iter().map(|(_, c)| c.index).max().unwrap_or(0) + 1;
    let describe = |c: &Column| {
        if header {
            format!("{} (column {})", c.label, c.index)
        } else {
            format!("column {}", c.index)
        }
    };
    let mut mapping = format!(
        "{}: oid={}, time={}{}, x={}, y={}",
        if columns.is_none() {
            "columns guessed from the header"
        } else {
            "columns as given"
        },
        match (&oid_c, &spec.oid) {
            (Some(c), _) => describe(c),
            (None, IdSource::FileStem) => "the file name (@file)".to_string(),
            (None, _) => "the directory name (@dir)".to_string(),
        },
        describe(&time_c),
        tod_c
            .as_ref()
            .map(|c| format!(" + {}", describe(c)))
            .unwrap_or_default(),
        describe(&x_c),
        describe(&y_c),
    );
    if columns.is_none() {
        if !also.is_empty() {
            mapping.push_str(&format!("; also matched: {}", also.join(", ")));
        }
        mapping.push_str(&format!("; to change it: --columns {spec}"));
    }
    sink.set_mapping(mapping);
    if header {
        sink.expect("data lines after the header");
    }

    let mut joined = String::new();
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
        let oid = match (&oid_c, &path_id) {
            (Some(c), _) => {
                let oid = get(c);
                if oid.is_empty() {
                    return Err(format!("column {}: empty object id", c.label));
                }
                oid
            }
            (None, Some(id)) => id.as_str(),
            (None, None) => unreachable!("an id source is a column or a path"),
        };
        let time = match &tod_c {
            None => parse_timestamp(get(&time_c)).map_err(|e| format!("column {}: {e}", time_c.label))?,
            Some(tod) => {
                joined.clear();
                joined.push_str(get(&time_c));
                joined.push(' ');
                joined.push_str(get(tod));
                parse_timestamp(&joined)
                    .map_err(|e| format!("columns {} + {} joined: {e}", time_c.label, tod.label))?
            }
        };
        let x = number(&x_c.label, get(&x_c))?;
        let y = number(&y_c.label, get(&y_c))?;
        let oid = sink.object_id(oid);
        sink.push(oid, time, x, y);
        Ok(())
    };
    let pending = if header { sample } else { Some((first_no, first)) };
    if let Some((no, line)) = pending {
        sink.data_line();
        if let Err(reason) = parse_line(&line, sink) {
            sink.malformed(no, reason)?;
        }
    }
    lines.for_each_data_line(sink, parse_line)?;
    Ok(Some(spec))
}

/// A header name as the name lists spell it: lower case, spaces and hyphens as underscores.
fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace([' ', '-'], "_")
}

/// Columns from a header's names: an object id, a time (a whole timestamp, else a date and a time
/// of day joined), an x and a y, each a distinct column. `sample` (the first data line) decides
/// between a `time` column alone and `date` + `time` when the header has both. The error is the
/// reason (with the header) and an example spec for this header.
pub(super) fn guess_columns(header: &[String], sample: Option<&[String]>) -> Result<Guess, (String, String)> {
    let norm: Vec<String> = header.iter().map(|h| normalise(h)).collect();
    let mut taken: Vec<usize> = Vec::new();
    let mut also = Vec::new();
    let exact = |names: &[&str], taken: &[usize]| {
        names.iter().find_map(|n| {
            norm.iter()
                .enumerate()
                .position(|(i, h)| h == n && !taken.contains(&i))
        })
    };
    // Columns whose name ends in `_<suffix>` (e.g. `pickup_latitude`), in header order.
    let by_suffix = |suffixes: &[&str], taken: &[usize]| -> Vec<usize> {
        (0..norm.len())
            .filter(|i| !taken.contains(i))
            .filter(|&i| {
                suffixes
                    .iter()
                    .any(|s| norm[i].ends_with(&format!("_{s}")) || norm[i] == *s)
            })
            .collect()
    };
    let mut pick = |role: &str, names: &[&str], suffixes: &[&str], taken: &mut Vec<usize>| {
        let found = exact(names, taken).or_else(|| {
            let matches = by_suffix(suffixes, taken);
            for &other in matches.iter().skip(1) {
                also.push(format!("{role}: {}", quoted(&header[other])));
            }
            matches.first().copied()
        });
        if let Some(i) = found {
            taken.push(i);
        }
        found
    };
    let oid = pick("oid", OID_NAMES, &[], &mut taken);
    let (time, time_of_day) = match exact(TIMESTAMP_NAMES, &taken) {
        Some(i) => {
            taken.push(i);
            (Some(i), None)
        }
        None => {
            let date = norm.iter().position(|h| h == "date");
            let tod = norm.iter().position(|h| h == "time");
            match (date, tod) {
                (Some(d), Some(t)) if !taken.contains(&d) && !taken.contains(&t) => {
                    let time_alone = sample
                        .and_then(|s| s.get(t))
                        .is_some_and(|v| parse_timestamp(v).is_ok());
                    if time_alone {
                        taken.push(t);
                        (Some(t), None)
                    } else {
                        taken.extend([d, t]);
                        (Some(d), Some(t))
                    }
                }
                _ => (pick("time", TIME_NAMES, TIME_SUFFIXES, &mut taken), None),
            }
        }
    };
    let x = pick("x", X_NAMES, X_SUFFIXES, &mut taken);
    let y = pick("y", Y_NAMES, Y_SUFFIXES, &mut taken);
    let name = |i: usize| ColumnRef::Name(header[i].trim().to_string());
    if let (Some(oid), Some(time), Some(x), Some(y)) = (oid, time, x, y) {
        return Ok(Guess {
            spec: CsvColumns {
                oid: IdSource::Column(name(oid)),
                time: name(time),
                time_of_day: time_of_day.map(name),
                x: name(x),
                y: name(y),
            },
            also,
        });
    }
    let missing: Vec<&str> = [
        (
            oid,
            "an object id (oid, id, uid, user, user_id, taxi_id, vehicle, ...)",
        ),
        (
            time,
            "a time (time, timestamp, datetime, date, or date and time, ...)",
        ),
        (x, "an x (x, lon, lng, long, longitude, ...)"),
        (y, "a y (y, lat, latitude, ...)"),
    ]
    .iter()
    .filter(|(found, _)| found.is_none())
    .map(|(_, what)| *what)
    .collect();
    // The example fills the roles not found with the header's unused columns, in order.
    let mut unused = (0..header.len()).filter(|i| !taken.contains(i));
    let mut fill = |found: Option<usize>| {
        found
            .or_else(|| unused.next())
            .map_or_else(|| "COLUMN".to_string(), |i| header[i].trim().to_string())
    };
    let oid_s = fill(oid);
    let time_s = match (time, time_of_day) {
        (Some(d), Some(t)) => format!("{}+{}", header[d].trim(), header[t].trim()),
        _ => fill(time),
    };
    let example = format!("oid={oid_s},time={time_s},x={},y={}", fill(x), fill(y));
    let reason = format!(
        "no column is named like {} (header: {})",
        missing.join(", or "),
        header.join(", ")
    );
    Err((reason, example))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(h: &str) -> Vec<String> {
        h.split(',').map(str::to_string).collect()
    }

    fn guessed(h: &str, sample: Option<&str>) -> String {
        let s = sample.map(names);
        guess_columns(&names(h), s.as_deref()).unwrap().spec.to_string()
    }

    #[test]
    fn guesses_common_names() {
        for (header, spec) in [
            ("uid,lat,lng,datetime", "oid=uid,time=datetime,x=lng,y=lat"),
            (
                "user,latitude,longitude,timestamp",
                "oid=user,time=timestamp,x=longitude,y=latitude",
            ),
            ("id,Time,X,Y", "oid=id,time=Time,x=X,y=Y"),
            ("trip_id,taxi_id,lon,lat,ts", "oid=taxi_id,time=ts,x=lon,y=lat"),
            ("Vehicle,Long,Lat,Date", "oid=Vehicle,time=Date,x=Long,y=Lat"),
            (
                "taxi_id,trip_start_timestamp,pickup_latitude,pickup_longitude",
                "oid=taxi_id,time=trip_start_timestamp,x=pickup_longitude,y=pickup_latitude",
            ),
            (
                "user_id,date,time,lat,lon",
                "oid=user_id,time=date+time,x=lon,y=lat",
            ),
            (
                "User ID,start lat,start lon,gps-time",
                "oid=User ID,time=gps-time,x=start lon,y=start lat",
            ),
        ] {
            assert_eq!(guessed(header, None), spec, "{header}");
        }
        // `time` alone when the first data line shows it holds whole timestamps.
        assert_eq!(
            guessed("id,date,time,x,y", Some("1,2008-10-23,2008-10-23 02:53:04,1,2")),
            "oid=id,time=time,x=x,y=y"
        );
        assert_eq!(
            guessed("id,date,time,x,y", Some("1,2008-10-23,02:53:04,1,2")),
            "oid=id,time=date+time,x=x,y=y"
        );
        let g = guess_columns(
            &names("car,time,pickup_latitude,dropoff_latitude,pickup_longitude"),
            None,
        )
        .unwrap();
        assert_eq!(
            g.spec.to_string(),
            "oid=car,time=time,x=pickup_longitude,y=pickup_latitude"
        );
        let g = guess_columns(&names("car,time,start_lat,end_lat,start_lng"), None).unwrap();
        assert_eq!(g.also, vec!["y: \"end_lat\"".to_string()]);
    }

    #[test]
    fn an_unguessable_header_gives_the_reason_and_an_example() {
        let (reason, example) = guess_columns(&names("who,when,lat,lon,speed"), None).unwrap_err();
        assert!(
            reason.contains("an object id") && reason.contains("a time") && !reason.contains("an x"),
            "{reason}"
        );
        assert!(reason.contains("header: who, when, lat, lon, speed"), "{reason}");
        assert_eq!(example, "oid=who,time=when,x=lon,y=lat");
        let (_, example) = guess_columns(&names("a,b"), None).unwrap_err();
        assert_eq!(example, "oid=a,time=b,x=COLUMN,y=COLUMN");
    }
}
