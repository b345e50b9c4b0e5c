//! SNAP's Gowalla check-ins (`loc-gowalla_totalCheckins.txt`, and the NYC subset in
//! `shared/data`): `user<TAB>time<TAB>latitude<TAB>longitude<TAB>location id`, no header. The file
//! is sorted by user and then by time descending; the loader's time sort turns it into the stream
//! the LSM RUM-tree paper replays (`docs/papers/rum.md#the-paper-in-brief`). x = longitude, y =
//! latitude.

use std::path::Path;

use super::reader::LineReader;
use super::{check_lon_lat, number, Sink};
use crate::time::parse_timestamp;
use crate::WorkloadError;

pub(super) fn read(path: &Path, sink: &mut Sink) -> Result<(), WorkloadError> {
    sink.expect("SNAP check-in lines: user<TAB>ISO-8601 time<TAB>lat<TAB>lon<TAB>location id");
    sink.set_mapping(
        "SNAP check-ins: oid=user (column 0), time (column 1), x=longitude (column 3), y=latitude (column 2)"
            .to_string(),
    );
    let mut lines = LineReader::open(path)?;
    lines.for_each_data_line(sink, |line, sink| {
        let (oid, time, lon, lat) = parse(line, sink)?;
        sink.push(oid, time, lon, lat);
        Ok(())
    })
}

fn parse(line: &str, sink: &mut Sink) -> Result<(u64, i64, f64, f64), String> {
    let mut f = line.split('\t');
    let mut next = || f.next().map(str::trim);
    let (Some(user), Some(time), Some(lat), Some(lon)) = (next(), next(), next(), next()) else {
        let got = line.split('\t').count();
        return Err(format!(
            "expected 5 tab-separated fields (user, time, lat, lon, location id), got {got}"
        ));
    };
    if user.parse::<u64>().is_err() {
        return Err(format!(
            "column \"user\": expected an integer user id, got {user:?}"
        ));
    }
    let oid = sink.object_id(user);
    let time = parse_timestamp(time).map_err(|e| format!("column \"time\": {e}"))?;
    let lat = number("\"lat\"", lat)?;
    let lon = number("\"lon\"", lon)?;
    check_lon_lat(lon, lat)?;
    Ok((oid, time, lon, lat))
}
