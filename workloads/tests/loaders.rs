//! The loaders on small inline fixtures written to a temporary directory.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::io::Write;
use std::path::{Path, PathBuf};

use lsmlab_engine::geom::Point;
use lsmlab_workloads::load::{
    data_files, dataset_name, guess, load_with_dialect, probe, CsvDialect, IdSource,
};
use lsmlab_workloads::{load, ColumnRef, CsvColumns, Format, LoadOptions, WorkloadError};

/// A scratch directory removed on drop (std only, to keep the dependency list short).
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("lsmlab-workloads-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        if name.ends_with(".gz") {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(text.as_bytes()).unwrap();
            std::fs::write(&path, gz.finish().unwrap()).unwrap();
        } else {
            std::fs::write(&path, text).unwrap();
        }
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn opts(format: Format) -> LoadOptions {
    LoadOptions::new(format)
}

/// CSV with the given columns.
fn csv_with(columns: CsvColumns) -> LoadOptions {
    LoadOptions {
        columns: Some(columns),
        ..opts(Format::Csv)
    }
}

fn times(t: &lsmlab_workloads::Trajectories) -> Vec<i64> {
    t.records.iter().map(|r| r.time).collect()
}

const SNAP: &str = "\
0\t2010-10-12T00:21:28Z\t40.64\t-73.78\t23261
0\t2010-10-11T20:21:20Z\t40.74\t-73.98\t16907
1\t2010-10-11T22:00:00Z\t40.70\t-74.00\t11
1\t2010-10-10T10:00:00Z\t40.71\t-74.01\t12
";

#[test]
fn snap_gowalla_plain_and_gzipped() {
    let dir = Scratch::new("snap");
    for name in ["checkins.txt", "checkins.tsv.gz"] {
        let path = dir.write(name, SNAP);
        let (t, report) = load(&path, &opts(Format::SnapGowalla)).unwrap();
        assert_eq!(t.name, "checkins");
        assert_eq!(t.records.len(), 4);
        assert_eq!(t.objects(), 2);
        assert!(t.records.windows(2).all(|w| w[0].time <= w[1].time));
        // Earliest check-in: user 1 at 2010-10-10T10:00:00Z, x = lon, y = lat.
        assert_eq!(t.records[0].oid, 1);
        assert_eq!(t.records[0].time, 1_286_704_800);
        assert_eq!(t.records[0].point, Point::new(-74.01, 40.71));
        assert_eq!((t.extent.min.x, t.extent.max.y), (-74.01, 40.74));
        assert_eq!(
            (
                report.lines,
                report.records,
                report.skipped_malformed,
                report.skipped_missing
            ),
            (4, 4, 0, 0)
        );
        assert_eq!(guess(&path), Some(Format::SnapGowalla));
        // The replayed stream: user 1's first record inserts, its second updates from there.
        let ops = t.to_ops();
        assert!(matches!(
            ops[0],
            lsmlab_workloads::SpatialOp::Insert { oid: 1, .. }
        ));
    }
}

#[test]
fn malformed_line_reports_file_line_and_column() {
    let dir = Scratch::new("malformed");
    let text = format!("{SNAP}2\t2010-10-11T20:21:20Z\tabc\t-73.98\t5\n\n3\t2010-10-11T20:21:20Z\t40.1\n");
    let path = dir.write("data.txt", &text);
    let err = load(&path, &opts(Format::SnapGowalla)).unwrap_err();
    assert!(matches!(err, WorkloadError::Malformed { line: 5, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.ends_with("data.txt:5: column \"lat\": expected a number, got \"abc\""),
        "{msg}"
    );

    let (t, report) = load(
        &path,
        &LoadOptions {
            skip_malformed: true,
            ..opts(Format::SnapGowalla)
        },
    )
    .unwrap();
    assert_eq!(t.records.len(), 4);
    assert_eq!(report.lines, 6);
    assert_eq!(report.skipped_malformed, 2);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("data.txt:7: expected 5 tab-separated fields")),
        "{:?}",
        report.notes
    );
}

const CHICAGO: &str = "\
pickup_community_area,fare,trip_start_timestamp,pickup_latitude,pickup_longitude,company
,12.45,1400269500,,,\"Taxi Co, Inc.\"
8,5.0,1400000300,41.89,-87.63,A
32,7.0,1400000100,41.88,-87.62,\"B \"\"quoted\"\"\"
,3.0,1400000200,41.95,,C
6,9.0,1400000400,41.94,-87.65,D
";

#[test]
fn chicago_skips_rows_without_coordinates_and_deals_synthetic_taxis() {
    let dir = Scratch::new("chicago");
    let path = dir.write("taxi.csv.gz", CHICAGO);
    assert_eq!(guess(&path), Some(Format::ChicagoCsv));
    let (t, report) = load(&path, &opts(Format::ChicagoCsv)).unwrap();
    assert_eq!(t.name, "taxi");
    assert_eq!(times(&t), vec![1_400_000_100, 1_400_000_300, 1_400_000_400]);
    assert_eq!(t.records[0].point, Point::new(-87.62, 41.88));
    assert_eq!(
        (
            report.lines,
            report.records,
            report.skipped_missing,
            report.skipped_malformed
        ),
        (5, 3, 2, 0)
    );
    assert!(
        report.notes.iter().any(|n| n.contains("synthetic taxis")),
        "{:?}",
        report.notes
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("2 trips without pickup coordinates")),
        "{:?}",
        report.notes
    );

    let (t, report) = load(
        &path,
        &LoadOptions {
            taxis: Some(2),
            ..opts(Format::ChicagoCsv)
        },
    )
    .unwrap();
    let oids: Vec<u64> = t.records.iter().map(|r| r.oid).collect();
    assert_eq!(oids, vec![0, 1, 0], "round-robin in time order");
    assert!(
        report.notes.iter().any(|n| n.contains("to 2 synthetic taxis")),
        "{:?}",
        report.notes
    );
}

#[test]
fn chicago_with_taxi_ids_and_portal_names() {
    let dir = Scratch::new("chicago-ids");
    let text = "\
Trip ID,Taxi ID,Trip Start Timestamp,Pickup Centroid Latitude,Pickup Centroid Longitude
a,f00d,01/01/2019 12:15:00 AM,41.9,-87.6
b,beef,01/01/2019 12:00:00 AM,41.8,-87.7
c,f00d,01/01/2019 01:00:00 PM,41.7,-87.8
";
    let path = dir.write("portal.csv", text);
    let (t, report) = load(
        &path,
        &LoadOptions {
            taxis: Some(9),
            ..opts(Format::ChicagoCsv)
        },
    )
    .unwrap();
    // String ids, dense in first-seen (file) order: f00d -> 0, beef -> 1.
    let oids: Vec<u64> = t.records.iter().map(|r| r.oid).collect();
    assert_eq!(oids, vec![1, 0, 0]);
    assert_eq!(t.records[0].time, 1_546_300_800);
    assert_eq!(t.records[2].time, 1_546_300_800 + 13 * 3600);
    assert!(
        report.notes.iter().any(|n| n.contains("taxis option ignored")),
        "{:?}",
        report.notes
    );
}

#[test]
fn chicago_without_required_column_names_it() {
    let dir = Scratch::new("chicago-missing");
    let path = dir.write("bad.csv", "trip_start_timestamp,pickup_longitude\n1,2\n");
    let msg = load(&path, &opts(Format::ChicagoCsv)).unwrap_err().to_string();
    assert!(
        msg.contains("bad.csv") && msg.contains("\"pickup_latitude\"") && msg.contains("pickup_longitude"),
        "{msg}"
    );
}

#[test]
fn csv_by_header_names_with_mixed_timestamp_forms_and_string_ids() {
    let dir = Scratch::new("csv-names");
    let text = "\
vehicle,lat,lon,when
car-b,52.50,13.40,2007-05-28 08:00:05
car-a,52.51,13.41,2007-05-28T08:00:00Z
car-b,52.52,13.42,2007-05-28T10:00:03+02:00
car-a,52.53,13.43,2007-05-28T08:00:04.500
car-c,52.54,13.44,1180339210
car-c,52.55,13.45,1180339211.75
";
    let path = dir.write("fleet.csv", text);
    let columns: CsvColumns = "oid=vehicle,time=when,x=lon,y=lat".parse().unwrap();
    let (t, report) = load(&path, &csv_with(columns)).unwrap();
    let base = 1_180_339_200; // 2007-05-28T08:00:00Z
    assert_eq!(
        times(&t),
        vec![base, base + 3, base + 4, base + 5, base + 10, base + 11]
    );
    // car-b -> 0, car-a -> 1, car-c -> 2 (first-seen order in the file).
    let oids: Vec<u64> = t.records.iter().map(|r| r.oid).collect();
    assert_eq!(oids, vec![1, 0, 1, 0, 2, 2]);
    assert_eq!(t.records[0].point, Point::new(13.41, 52.51));
    assert_eq!(report.records, 6);
    assert!(
        report.notes.iter().any(|n| n.contains("3 string object ids")),
        "{:?}",
        report.notes
    );
}

#[test]
fn csv_by_index_without_header_tab_separated_and_gzipped() {
    let dir = Scratch::new("csv-index");
    let text = "7\t100\t2.0\t1.0\n7\t50\t4.0\t3.0\n9\t75\t6.0\t5.0\n";
    let path = dir.write("points.tsv.gz", text);
    assert_eq!(guess(&path), Some(Format::Csv));
    // Columns oid, time, y, x: x is column 3, y column 2.
    let columns: CsvColumns = "0,1,3,2".parse().unwrap();
    let (t, report) = load(&path, &csv_with(columns)).unwrap();
    assert_eq!(t.name, "points");
    assert_eq!(times(&t), vec![50, 75, 100]);
    assert_eq!(t.records[0].point, Point::new(3.0, 4.0));
    assert_eq!(report.lines, 3, "no header detected");
    assert_eq!(
        report.columns.as_deref(),
        Some("columns as given: oid=column 0, time=column 1, x=column 3, y=column 2")
    );
    // No columns given and no header: an error that shows the first line and a spec, never a
    // silent read by position.
    let err = load(&path, &opts(Format::Csv)).unwrap_err();
    assert!(matches!(err, WorkloadError::ColumnsNotGuessed { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("points.tsv.gz: cannot tell which columns")
            && msg.contains("no header line (line 1 holds data: 0=7, 1=100, 2=2.0, 3=1.0)")
            && msg.ends_with("--columns oid=0,time=1,x=2,y=3"),
        "{msg}"
    );
}

#[test]
fn csv_header_detection_dialect_and_guessed_names() {
    let dir = Scratch::new("csv-dialect");
    let path = dir.write("semi.csv", "id;t;x;y\n1;10;0.5;0.25\n2;5;1.5;1.25\n");
    // Header recognised by its names, delimiter detected as ';'.
    let (t, report) = load(&path, &opts(Format::Csv)).unwrap();
    assert_eq!(times(&t), vec![5, 10]);
    assert_eq!(
        report.columns.as_deref(),
        Some(
            "columns guessed from the header: oid=\"id\" (column 0), time=\"t\" (column 1), x=\"x\" (column 2), \
             y=\"y\" (column 3); to change it: --columns oid=id,time=t,x=x,y=y"
        )
    );
    // Indices with a header line: detected because its x/y are not numbers.
    let idx = LoadOptions {
        columns: Some(CsvColumns::positional()),
        ..opts(Format::Csv)
    };
    let (t, report) = load(&path, &idx).unwrap();
    assert_eq!((t.records.len(), report.lines), (2, 2));
    // An explicit dialect: header off makes the header line a malformed data line.
    let err = load_with_dialect(
        &path,
        &idx,
        CsvDialect {
            delimiter: Some(b';'),
            header: Some(false),
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("semi.csv:1: column 1: expected a timestamp"),
        "{err}"
    );
}

#[test]
fn csv_missing_named_column_lists_the_header() {
    let dir = Scratch::new("csv-missing");
    let path = dir.write("a.csv", "user,ts,lon,lat\n1,2,3,4\n");
    let columns = CsvColumns {
        oid: IdSource::Column(ColumnRef::Name("user".into())),
        time: ColumnRef::Name("time".into()),
        time_of_day: None,
        x: ColumnRef::Name("lon".into()),
        y: ColumnRef::Name("lat".into()),
    };
    let msg = load(&path, &csv_with(columns)).unwrap_err().to_string();
    assert!(
        msg.contains("a.csv: no column \"time\" in the header (columns: user, ts, lon, lat)"),
        "{msg}"
    );
}

#[test]
fn csv_malformed_lines_and_skip_counts() {
    let dir = Scratch::new("csv-bad");
    let path = dir.write("data.csv", "oid,time,x,y\n1,5,0,0\n2,6,1\n3,7,abc,1\n4,8,1,1\n");
    let named = LoadOptions {
        columns: Some("oid=oid,time=time,x=x,y=y".parse().unwrap()),
        ..opts(Format::Csv)
    };
    let msg = load(&path, &named).unwrap_err().to_string();
    assert!(
        msg.ends_with("data.csv:3: expected at least 4 delimiter-separated fields, got 3"),
        "{msg}"
    );
    let (t, report) = load(
        &path,
        &LoadOptions {
            skip_malformed: true,
            ..named
        },
    )
    .unwrap();
    assert_eq!(t.records.len(), 2);
    assert_eq!((report.lines, report.skipped_malformed), (4, 2));
    assert!(report
        .notes
        .iter()
        .any(|n| n.ends_with("data.csv:4: column \"x\": expected a number, got \"abc\"")));
}

#[test]
fn empty_missing_and_all_skipped_files_are_clear_errors() {
    let dir = Scratch::new("empty");
    let empty = dir.write("empty.csv", "");
    for format in [Format::SnapGowalla, Format::ChicagoCsv, Format::Csv] {
        let err = load(&empty, &opts(format)).unwrap_err();
        assert!(matches!(err, WorkloadError::Empty { .. }), "{format}: {err:?}");
        assert!(
            err.to_string().contains("empty.csv: empty file: expected"),
            "{err}"
        );
    }
    let header_only = dir.write(
        "header.csv",
        "pickup_latitude,pickup_longitude,trip_start_timestamp\n",
    );
    let msg = load(&header_only, &opts(Format::ChicagoCsv))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("expected trips after the CSV header"), "{msg}");

    let missing = dir.0.join("nope.tsv");
    let err = load(&missing, &opts(Format::SnapGowalla)).unwrap_err();
    assert!(
        matches!(err, WorkloadError::Io { .. }) && err.to_string().contains("nope.tsv"),
        "{err}"
    );
    assert_eq!(guess(&missing), None);

    let bad = dir.write("bad.txt", "x\n\ny\n");
    let skip = LoadOptions {
        skip_malformed: true,
        ..opts(Format::SnapGowalla)
    };
    let msg = load(&bad, &skip).unwrap_err().to_string();
    assert!(
        msg.contains("no usable records (2 data lines: 2 malformed"),
        "{msg}"
    );
}

#[test]
fn limit_keeps_a_time_prefix() {
    let dir = Scratch::new("limit");
    let path = dir.write("c.txt", SNAP);
    let (t, report) = load(
        &path,
        &LoadOptions {
            limit: Some(2),
            ..opts(Format::SnapGowalla)
        },
    )
    .unwrap();
    assert_eq!(times(&t), vec![1_286_704_800, 1_286_828_480]);
    assert_eq!((report.records, report.available), (2, 4));
    // The extent covers the kept records only.
    assert_eq!(t.extent.max.y, 40.74);
    assert_eq!(t.extent.min.x, -74.01);
}

#[test]
fn formats_parse_and_names_strip_extensions() {
    assert_eq!("snap-gowalla".parse::<Format>().unwrap(), Format::SnapGowalla);
    assert_eq!("chicago-csv".parse::<Format>().unwrap(), Format::ChicagoCsv);
    assert_eq!("csv".parse::<Format>().unwrap(), Format::Csv);
    let msg = "json".parse::<Format>().unwrap_err().to_string();
    assert!(
        msg.contains("\"json\"") && msg.contains("snap-gowalla, chicago-csv, csv"),
        "{msg}"
    );
    for (p, n) in [
        ("a/b/gowalla.tsv.gz", "gowalla"),
        ("x.csv", "x"),
        ("y.TXT", "y"),
        ("z.dat.gz", "z.dat"),
        ("w", "w"),
    ] {
        assert_eq!(dataset_name(Path::new(p)), n);
    }
}

#[test]
fn guessed_columns_are_reported_and_unguessable_headers_stop_with_an_example() {
    let dir = Scratch::new("guess");
    let path = dir.write(
        "rides.csv",
        "ride,uid,lng,lat,datetime\nr1,u7,13.4,52.5,2020-01-01T00:00:05Z\nr2,u8,13.5,52.6,2020-01-01T00:00:01Z\n",
    );
    let (t, report) = load(&path, &opts(Format::Csv)).unwrap();
    assert_eq!((t.records.len(), t.objects()), (2, 2));
    assert_eq!(t.records[0].point, Point::new(13.5, 52.6));
    let mapping = report.columns.unwrap();
    assert!(
        mapping.starts_with("columns guessed from the header: oid=\"uid\" (column 1), time=\"datetime\" (column 4), x=\"lng\" (column 2), y=\"lat\" (column 3)")
            && mapping.ends_with("--columns oid=uid,time=datetime,x=lng,y=lat"),
        "{mapping}"
    );

    let path = dir.write("log.csv", "who,when,latitude,longitude\na,1,2,3\n");
    let err = load(&path, &opts(Format::Csv)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, WorkloadError::ColumnsNotGuessed { .. }), "{msg}");
    assert!(
        msg.contains("log.csv: cannot tell which columns hold the object id, time, x and y")
            && msg.contains("an object id (oid, id, uid")
            && msg.contains("header: who, when, latitude, longitude")
            && msg.ends_with("e.g. --columns oid=who,time=when,x=longitude,y=latitude"),
        "{msg}"
    );
    // The example is a spec that loads the file.
    let columns: CsvColumns = "oid=who,time=when,x=longitude,y=latitude".parse().unwrap();
    let (t, _) = load(&path, &csv_with(columns)).unwrap();
    assert_eq!(t.records[0].point, Point::new(3.0, 2.0));
}

#[test]
fn columns_must_be_distinct_once_resolved() {
    let dir = Scratch::new("distinct");
    let path = dir.write("d.csv", "id,t,lat,lon\n1,2,3,4\n");
    let err = "0,1,2,2".parse::<CsvColumns>().unwrap_err().to_string();
    assert!(err.contains("x and y are both column 2"), "{err}");
    // A name and a position can name the same column only once the header is read.
    let columns: CsvColumns = "oid=id,time=t,x=lat,y=2".parse().unwrap();
    let err = load(&path, &csv_with(columns)).unwrap_err().to_string();
    assert!(
        err.contains("x and y are both column 2 of") && err.contains("d.csv"),
        "{err}"
    );
}

#[test]
fn date_and_time_columns_are_joined() {
    let dir = Scratch::new("join");
    let text = "user,date,time,lat,lon\n5,2008-10-23,02:53:10,39.9,116.3\n5,2008-10-23,02:53:04,39.8,116.2\n";
    let path = dir.write("gps.csv", text);
    let (t, report) = load(&path, &opts(Format::Csv)).unwrap();
    let t0 = 1_224_730_384; // 2008-10-23T02:53:04Z
    assert_eq!(times(&t), vec![t0, t0 + 6]);
    assert_eq!(t.records[0].point, Point::new(116.2, 39.8));
    assert!(
        report
            .columns
            .as_deref()
            .unwrap()
            .contains("time=\"date\" (column 1) + \"time\" (column 2)"),
        "{:?}",
        report.columns
    );
    // Given explicitly, by position; a bad pair names both columns.
    let bad = dir.write("bad.csv", "5,2008-10-23,nope,39.9,116.3\n");
    let columns: CsvColumns = "0,1+2,4,3".parse().unwrap();
    let msg = load(&bad, &csv_with(columns)).unwrap_err().to_string();
    assert!(
        msg.contains("bad.csv:1: columns 1 + 2 joined: expected a timestamp"),
        "{msg}"
    );
}

/// A GeoLife `.plt` file: six header lines, then lat, lon, 0, altitude, days, date, time.
fn plt(points: &[(&str, &str, &str)]) -> String {
    let mut s = String::from(
        "Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n0,2,255,My Track,0,0,2,8421376\n0\n",
    );
    for (lat, lon, time) in points {
        s.push_str(&format!("{lat},{lon},0,492,39744.12,2008-10-23,{time}\n"));
    }
    s
}

#[test]
fn a_geolife_directory_loads_as_one_dataset_with_users_as_objects() {
    let dir = Scratch::new("geolife");
    let data = dir.0.join("Data");
    for sub in ["000/Trajectory", "010/Trajectory", ".hidden"] {
        std::fs::create_dir_all(data.join(sub)).unwrap();
    }
    dir.write(
        "Data/010/Trajectory/20081023025304.plt",
        &plt(&[("39.9", "116.3", "02:53:04"), ("39.91", "116.31", "02:53:09")]),
    );
    dir.write(
        "Data/000/Trajectory/20081024000000.plt",
        &plt(&[("40.0", "116.4", "02:53:06")]),
    );
    dir.write(
        "Data/000/Trajectory/20081023000000.plt.gz",
        &plt(&[("40.1", "116.5", "02:53:05")]),
    );
    dir.write(
        "Data/010/labels.txt",
        "Start Time\tEnd Time\tTransportation Mode\n",
    );
    dir.write("Data/.hidden/x.plt", "junk");

    let listing = data_files(&data).unwrap();
    let rel: Vec<String> = listing
        .files
        .iter()
        .map(|p| p.strip_prefix(&data).unwrap().display().to_string())
        .collect();
    assert_eq!(
        rel,
        vec![
            "000/Trajectory/20081023000000.plt.gz",
            "000/Trajectory/20081024000000.plt",
            "010/Trajectory/20081023025304.plt",
        ]
    );
    assert_eq!(listing.skipped, vec![data.join("010/labels.txt")]);
    assert_eq!(guess(&data), Some(Format::GeolifePlt));
    assert_eq!(dataset_name(&data), "Data");

    let (t, report) = load(&data, &opts(Format::GeolifePlt)).unwrap();
    assert_eq!(t.name, "Data");
    let t0 = 1_224_730_384;
    assert_eq!(times(&t), vec![t0, t0 + 1, t0 + 2, t0 + 5]);
    // Users 010 and 000 become objects 10 and 0.
    let oids: Vec<u64> = t.records.iter().map(|r| r.oid).collect();
    assert_eq!(oids, vec![10, 0, 0, 10]);
    assert_eq!(t.records[0].point, Point::new(116.3, 39.9));
    assert_eq!((report.files, report.lines, report.records), (3, 4, 4));
    let labels = format!(
        "left out 1 file with other extensions: {}",
        data.join("010/labels.txt").display()
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("read 3 .plt files under") && n.ends_with(&labels)),
        "{:?}",
        report.notes
    );
    assert!(report
        .columns
        .unwrap()
        .starts_with("GeoLife .plt: oid=the user directory"));

    // A bad point names its file and line (header lines counted).
    dir.write(
        "Data/010/Trajectory/20081023025304.plt",
        &plt(&[("north", "116.3", "02:53:04")]),
    );
    let msg = load(&data, &opts(Format::GeolifePlt)).unwrap_err().to_string();
    assert!(
        msg.contains("20081023025304.plt:7: column \"latitude\" (0): expected a number"),
        "{msg}"
    );
}

#[test]
fn a_csv_directory_shares_the_first_files_guessed_columns_and_path_ids() {
    let dir = Scratch::new("csvdir");
    let root = dir.0.join("fleet");
    std::fs::create_dir_all(&root).unwrap();
    dir.write("fleet/car-b.csv", "time,lon,lat\n5,1.0,2.0\n");
    dir.write("fleet/car-a.csv", "time,lon,lat\n7,3.0,4.0\n6,5.0,6.0\n");
    // One object per file: its name.
    let columns: CsvColumns = "oid=@file,time=time,x=lon,y=lat".parse().unwrap();
    let (t, report) = load(&root, &csv_with(columns)).unwrap();
    assert_eq!(times(&t), vec![5, 6, 7]);
    // car-a is read first (path order): string ids in first-seen order.
    let oids: Vec<u64> = t.records.iter().map(|r| r.oid).collect();
    assert_eq!(oids, vec![1, 0, 0]);
    assert!(report.columns.unwrap().contains("oid=the file name (@file)"));
    // Without a spec the header has no id: the error names the first file.
    let msg = load(&root, &opts(Format::Csv)).unwrap_err().to_string();
    assert!(msg.contains("car-a.csv: cannot tell"), "{msg}");

    let empty = dir.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let msg = load(&empty, &opts(Format::Csv)).unwrap_err().to_string();
    assert!(msg.contains("empty: no data files in this directory"), "{msg}");
}

#[test]
fn probe_reads_only_the_start_and_fails_like_load() {
    let dir = Scratch::new("probe");
    let mut text = String::from("uid,lat,lng,time\n");
    for i in 0..2_000 {
        text.push_str(&format!("{},{},{},{}\n", i % 7, 1.0, 2.0, i));
    }
    text.push_str("8,bad,2,3\n");
    let path = dir.write("big.csv", &text);
    let report = probe(&path, &opts(Format::Csv), CsvDialect::default()).unwrap();
    assert_eq!(
        (report.files, report.lines),
        (1, lsmlab_workloads::load::PROBE_LINES)
    );
    assert!(report.columns.unwrap().contains("oid=\"uid\""));
    assert!(load(&path, &opts(Format::Csv)).is_err(), "the bad last line");

    let empty = dir.write("empty.csv", "");
    let err = probe(&empty, &opts(Format::Csv), CsvDialect::default()).unwrap_err();
    assert!(matches!(err, WorkloadError::Empty { .. }), "{err:?}");
    let headerless = dir.write("h.csv", "1,2,3,4\n");
    let err = probe(&headerless, &opts(Format::Csv), CsvDialect::default()).unwrap_err();
    assert!(matches!(err, WorkloadError::ColumnsNotGuessed { .. }), "{err:?}");
}

/// A gzip stream of `header` followed by `n` bytes of `b'7'` and no newline: a few kilobytes that
/// inflate to one line of `n` bytes.
fn gzip_one_long_line(header: &str, n: usize) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(header.as_bytes()).unwrap();
    let chunk = vec![b'7'; 1 << 16];
    for _ in 0..n / chunk.len() {
        gz.write_all(&chunk).unwrap();
    }
    gz.finish().unwrap()
}

/// A gzip bomb (one line inflating past the cap) is refused by every line reader with an error
/// naming the file and the line, after reading at most the cap of it.
#[test]
fn a_line_longer_than_the_cap_is_malformed() {
    use lsmlab_workloads::load::MAX_LINE_BYTES;
    let dir = Scratch::new("long-line");
    let n = 8 * MAX_LINE_BYTES;
    let bomb = gzip_one_long_line("oid,time,x,y\n1,2,3,4\n", n);
    assert!(bomb.len() < n / 100, "{} bytes compressed", bomb.len());
    let at_line = |err: WorkloadError, file: &Path, line: usize| {
        let msg = err.to_string();
        assert!(
            matches!(err, WorkloadError::Malformed { line: l, .. } if l == line),
            "{msg}"
        );
        assert!(msg.starts_with(&format!("{}:{line}:", file.display())), "{msg}");
        assert!(msg.contains("line longer than 1048576 bytes"), "{msg}");
    };
    let csv = dir.0.join("bomb.csv.gz");
    std::fs::write(&csv, &bomb).unwrap();
    at_line(load(&csv, &opts(Format::Csv)).unwrap_err(), &csv, 3);

    let delays = dir.0.join("delays.gz");
    std::fs::write(&delays, gzip_one_long_line("5\n", n)).unwrap();
    at_line(
        lsmlab_workloads::ts::load_delays(&delays).unwrap_err(),
        &delays,
        2,
    );

    let edges = dir.0.join("edges.gz");
    std::fs::write(&edges, gzip_one_long_line("# edges\n0 1\n", n)).unwrap();
    at_line(
        lsmlab_workloads::graph::load_edge_list(&edges).unwrap_err(),
        &edges,
        3,
    );

    // A line of exactly the cap (its newline included) still reads.
    let mut text = String::from("1 ");
    text.push_str(&"2".repeat(MAX_LINE_BYTES - 3));
    text.push('\n');
    let at_cap = dir.write("at-cap.txt", &text);
    let msg = lsmlab_workloads::graph::load_edge_list(&at_cap)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("is not a non-negative integer vertex id"), "{msg}");
}

/// A gzip file cut short says so once, naming the file.
#[test]
fn a_truncated_gzip_file_says_so_once() {
    let dir = Scratch::new("truncated-gz");
    let mut text = String::from("oid,time,x,y\n");
    for i in 0..3000 {
        text.push_str(&format!("{i},{i},{}.5,{}.25\n", i % 90, i % 70));
    }
    let full = std::fs::read(dir.write("full.csv.gz", &text)).unwrap();
    let cut = dir.0.join("cut.csv.gz");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let err = load(&cut, &opts(Format::Csv)).unwrap_err();
    assert!(matches!(err, WorkloadError::Io { .. }), "{err}");
    // The whole chain of causes, as the CLI prints it.
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        chain.push_str(&format!(": {s}"));
        source = s.source();
    }
    assert_eq!(chain, format!("{}: incomplete deflate stream", cut.display()));
}
