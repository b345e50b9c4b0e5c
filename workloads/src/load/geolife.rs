//! Microsoft Research Asia's GeoLife GPS trajectories (`.plt` files). Each file is one trajectory:
//! six header lines, then `latitude,longitude,0,altitude (feet),days since 1899-12-30,date,time`,
//! in GMT. The data set keeps one user per directory (`Data/<user>/Trajectory/<start>.plt`), so the
//! object id is the user: the directory holding the file, or the one above it when that directory
//! is `Trajectory`. x = longitude, y = latitude; the time is the date and time columns joined.

use std::path::Path;

use super::columns::parent_name;
use super::reader::LineReader;
use super::{check_lon_lat, number, Sink};
use crate::time::parse_timestamp;
use crate::WorkloadError;

/// Lines before the first point in every `.plt` file.
const HEADER_LINES: usize = 6;

/// The first line of a `.plt` file, which format guessing recognises.
pub(super) const FIRST_LINE: &str = "geolife trajectory";

/// The user a `.plt` file belongs to (see the module doc).
pub(super) fn user(path: &Path) -> String {
    let dir = parent_name(path);
    if dir.eq_ignore_ascii_case("trajectory") {
        let above = path.parent().map(parent_name).unwrap_or_default();
        if !above.is_empty() {
            return above;
        }
    }
    dir
}

pub(super) fn read(path: &Path, sink: &mut Sink) -> Result<(), WorkloadError> {
    sink.expect("GeoLife points after the six header lines: lat,lon,0,altitude,days,date,time");
    let user = user(path);
    sink.set_mapping(
        "GeoLife .plt: oid=the user directory (the directory holding the file, or the one above \
         `Trajectory`), time=date (column 5) + time (column 6), x=longitude (column 1), y=latitude (column 0)"
            .to_string(),
    );
    let mut lines = LineReader::open(path)?;
    for _ in 0..HEADER_LINES {
        if lines.next_line()?.is_none() {
            return Ok(());
        }
    }
    let oid = sink.object_id(&user);
    let mut joined = String::new();
    lines.for_each_data_line(sink, |line, sink| {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < 7 {
            return Err(format!(
                "expected 7 comma-separated fields (lat, lon, 0, altitude, days, date, time), got {}",
                f.len()
            ));
        }
        let lat = number("\"latitude\" (0)", f[0])?;
        let lon = number("\"longitude\" (1)", f[1])?;
        check_lon_lat(lon, lat)?;
        joined.clear();
        joined.push_str(f[5]);
        joined.push(' ');
        joined.push_str(f[6]);
        let time = parse_timestamp(&joined).map_err(|e| format!("date (5) + time (6): {e}"))?;
        sink.push(oid, time, lon, lat);
        Ok(())
    })
}
