//! The real data samples in `shared/data` (present on the development machine and in CI, absent
//! on a user's clone: each test skips with a note when its file is missing).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::BTreeMap;
use std::path::Path;

use lsmlab_workloads::load::guess;
use lsmlab_workloads::{load, Format, LoadOptions, SpatialOp};

const GOWALLA_NYC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/gowalla_nyc_checkins.tsv.gz"
);
const CHICAGO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/chicago_taxi_trips_sample.csv.gz"
);

fn present(path: &str) -> bool {
    let ok = Path::new(path).exists();
    if !ok {
        eprintln!("note: {path} is absent; skipping (the real data samples only exist on the dev machine and in CI)");
    }
    ok
}

#[test]
fn snap_gowalla_nyc_loads_every_check_in() {
    if !present(GOWALLA_NYC) {
        return;
    }
    let path = Path::new(GOWALLA_NYC);
    assert_eq!(guess(path), Some(Format::SnapGowalla));
    let (t, report) = load(path, &LoadOptions::new(Format::SnapGowalla)).unwrap();
    assert_eq!(t.name, "gowalla_nyc_checkins");
    assert_eq!(t.records.len(), 138_957);
    assert_eq!(t.objects(), 7_115);
    assert_eq!(
        (report.lines, report.records, report.skipped_malformed),
        (138_957, 138_957, 0)
    );
    assert!(t.records.windows(2).all(|w| w[0].time <= w[1].time));
    // New York: x = longitude about -74, y = latitude about 40.7.
    assert!(t.extent.min.x > -75.0 && t.extent.max.x < -73.0, "{:?}", t.extent);
    assert!(t.extent.min.y > 40.0 && t.extent.max.y < 41.5, "{:?}", t.extent);
    // docs/papers/rum.md#the-paper-in-brief: median 5, mean 19.5, max 1,794 check-ins per user.
    let mut per_user = BTreeMap::<u64, usize>::new();
    for r in &t.records {
        *per_user.entry(r.oid).or_default() += 1;
    }
    let mut counts: Vec<usize> = per_user.into_values().collect();
    counts.sort_unstable();
    assert_eq!((counts[counts.len() / 2], *counts.last().unwrap()), (5, 1_794));
    let ops = t.to_ops();
    let inserts = ops
        .iter()
        .filter(|op| matches!(op, SpatialOp::Insert { .. }))
        .count();
    assert_eq!(inserts, 7_115);
}

#[test]
fn chicago_sample_loads_rows_with_coordinates() {
    if !present(CHICAGO) {
        return;
    }
    let path = Path::new(CHICAGO);
    assert_eq!(guess(path), Some(Format::ChicagoCsv));
    let (t, report) = load(path, &LoadOptions::new(Format::ChicagoCsv)).unwrap();
    assert_eq!(t.name, "chicago_taxi_trips_sample");
    // 15,002 trips, of which 2 lack pickup coordinates.
    assert_eq!(
        (
            report.lines,
            report.records,
            report.skipped_missing,
            report.skipped_malformed
        ),
        (15_002, 15_000, 2, 0)
    );
    assert_eq!(t.records.len(), 15_000);
    // No taxi id in the sample: 15,000 / 2000 clamps to 50 synthetic taxis.
    assert_eq!(t.objects(), 50);
    assert!(
        report.notes.iter().any(|n| n.contains("50 synthetic taxis")),
        "{:?}",
        report.notes
    );
    assert!(t.records.windows(2).all(|w| w[0].time <= w[1].time));
    // Inside the paper's Chicago bounds (lat 41.660..42.021, lon -87.914..-87.531).
    assert!(t
        .records
        .iter()
        .all(|r| (41.6..42.1).contains(&r.point.y) && (-88.0..-87.5).contains(&r.point.x)));
    // The busiest centroid has ~10% of the pickups (docs/papers/rum.md#the-paper-in-brief).
    let mut per_point = BTreeMap::<(u64, u64), usize>::new();
    for r in &t.records {
        *per_point
            .entry((r.point.x.to_bits(), r.point.y.to_bits()))
            .or_default() += 1;
    }
    let top = *per_point.values().max().unwrap() as f64 / t.records.len() as f64;
    assert!((0.09..0.11).contains(&top), "top centroid share {top}");
}
