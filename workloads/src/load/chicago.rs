//! The Chicago taxi trips CSV (City of Chicago data portal; the sample in `shared/data` is the
//! TFX example's 2013-2016 extract). Pickup locations are census-tract centroids; trips whose
//! pickup was outside Chicago or hidden for privacy have no coordinates: the portal documents
//! this gap, so such rows are skipped and counted, not errors.
//!
//! Columns are found by header name, case-insensitively, with spaces read as underscores, so both
//! the TFX names (`pickup_latitude`, `pickup_longitude`, `trip_start_timestamp`, `taxi_id`) and the
//! portal's export names (`Pickup Centroid Latitude`, `Pickup Centroid Longitude`, `Trip Start
//! Timestamp`, `Taxi ID`) work. Timestamps may be unix seconds or the portal's
//! `MM/DD/YYYY hh:mm:ss AM` form.

use std::path::Path;

use super::reader::{Fields, LineReader};
use super::{check_lon_lat, number, quoted, Sink};
use crate::gen::ChicagoParams;
use crate::time::parse_timestamp;
use crate::{Record, WorkloadError};

/// Accepted names (normalised: lower case, spaces as underscores) of each column.
pub(super) const LAT_NAMES: [&str; 2] = ["pickup_latitude", "pickup_centroid_latitude"];
const LON_NAMES: [&str; 2] = ["pickup_longitude", "pickup_centroid_longitude"];
const TIME_NAMES: [&str; 1] = ["trip_start_timestamp"];
const TAXI_NAMES: [&str; 1] = ["taxi_id"];

fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(' ', "_")
}

pub(super) fn read(path: &Path, sink: &mut Sink) -> Result<(), WorkloadError> {
    sink.expect("a CSV header with pickup_latitude, pickup_longitude and trip_start_timestamp, then trips");
    let mut lines = LineReader::open(path)?;
    let mut fields = Fields::default();
    // The header: the first non-blank line.
    let Some((no, line)) = lines.first_data_line()? else {
        return Ok(());
    };
    fields
        .split(&line, b',')
        .map_err(|reason| WorkloadError::Malformed {
            path: path.into(),
            line: no,
            reason: format!("header: {reason}"),
        })?;
    let header: Vec<String> = (0..fields.len())
        .map(|i| fields.get(i).unwrap_or_default().to_string())
        .collect();
    sink.expect("trips after the CSV header");
    let normalised: Vec<String> = header.iter().map(|h| normalise(h)).collect();
    let find = |names: &[&str]| normalised.iter().position(|h| names.contains(&h.as_str()));
    let required = |names: &[&str]| {
        find(names).ok_or_else(|| WorkloadError::MissingColumn {
            path: path.into(),
            column: names[0].to_string(),
            header: header.clone(),
        })
    };
    let lat_i = required(&LAT_NAMES)?;
    let lon_i = required(&LON_NAMES)?;
    let time_i = required(&TIME_NAMES)?;
    let taxi_i = find(&TAXI_NAMES);
    let needed = lat_i.max(lon_i).max(time_i).max(taxi_i.unwrap_or(0)) + 1;
    if taxi_i.is_none() {
        sink.use_synthetic_taxis();
    }
    let named = |i: usize| format!("{} (column {i})", quoted(&header[i]));
    sink.set_mapping(format!(
        "Chicago taxi trips: oid={}, time={}, x={}, y={}",
        taxi_i.map_or_else(|| "synthetic taxis (no taxi_id column)".to_string(), named),
        named(time_i),
        named(lon_i),
        named(lat_i)
    ));
    lines.for_each_data_line(sink, |line, sink| {
        fields.split(line, b',')?;
        if fields.len() < needed {
            return Err(format!(
                "expected {} fields as in the header, got {}",
                header.len(),
                fields.len()
            ));
        }
        let field = |i: usize| fields.get(i).unwrap_or_default();
        let (lat, lon) = (field(lat_i), field(lon_i));
        if lat.is_empty() || lon.is_empty() {
            sink.missing();
            return Ok(());
        }
        let lat = number(&quoted(&header[lat_i]), lat)?;
        let lon = number(&quoted(&header[lon_i]), lon)?;
        check_lon_lat(lon, lat)?;
        let time =
            parse_timestamp(field(time_i)).map_err(|e| format!("column {}: {e}", quoted(&header[time_i])))?;
        let oid = match taxi_i {
            Some(i) if !field(i).is_empty() => sink.object_id(field(i)),
            Some(i) => return Err(format!("column {}: empty taxi id", quoted(&header[i]))),
            None => 0,
        };
        sink.push(oid, time, lon, lat);
        Ok(())
    })?;
    if sink.skipped_missing() > 0 {
        let n = sink.skipped_missing();
        sink.note(format!(
            "{n} trips without pickup coordinates skipped (the data portal leaves them out)"
        ));
    }
    Ok(())
}

/// Deals time-ordered trips to synthetic taxis, round-robin: the k-th trip goes to taxi k mod T.
/// The files without a taxi id (the TFX sample) cannot tell which taxi made a trip; round-robin in
/// time order gives every taxi a steady stream of unrelated pickups, which is the property the
/// LSM RUM-tree paper's Chicago results depend on (the next pickup is anywhere in the city).
/// T is `taxis`, or as the Chicago generator chooses for this many records.
pub(super) fn deal_to_taxis(records: &mut [Record], taxis: Option<usize>, notes: &mut Vec<String>) {
    let params = ChicagoParams {
        taxis,
        ..ChicagoParams::default()
    };
    let t = params.taxis_for(records.len()).max(1);
    for (k, r) in records.iter_mut().enumerate() {
        r.oid = (k % t) as u64;
    }
    notes.push(format!(
        "no taxi_id column: {} trips dealt round-robin in time order to {t} synthetic taxis{}",
        records.len(),
        if taxis.is_some() {
            " (as requested)"
        } else {
            " (the Chicago generator's default: 2019's pickups per taxi, at least 50)"
        }
    ));
}
