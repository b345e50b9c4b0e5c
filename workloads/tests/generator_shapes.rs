//! Degenerate-shape checks of the generators across (records, objects): the stream has exactly
//! the objects asked for, each inserted once and then updated, in time order, inside the extent,
//! over many distinct locations, with the skew each generator promises. One test compares the
//! Chicago generator with the real sample in `shared/data` (skipped when the file is absent).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use lsmlab_engine::geom::Point;
use lsmlab_workloads::gen::{chicago, ChicagoParams};
use lsmlab_workloads::gen::{
    metres_between, BERLINMOD_PAPER_RECORDS as PAPER_RECORDS, BERLINMOD_PAPER_VEHICLES as PAPER_VEHICLES,
};
use lsmlab_workloads::{generate_spec, load, Format, GenSpec, LoadOptions, SpatialOp, Trajectories};

const CHICAGO_SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/data/chicago_taxi_trips_sample.csv.gz"
);

/// Records per object, from the stream.
fn per_object(t: &Trajectories) -> BTreeMap<u64, usize> {
    let mut n = BTreeMap::new();
    for r in &t.records {
        *n.entry(r.oid).or_default() += 1;
    }
    n
}

/// Points with their record counts, busiest first.
fn point_counts(t: &Trajectories) -> Vec<usize> {
    let mut per = BTreeMap::<(u64, u64), usize>::new();
    for r in &t.records {
        *per.entry((r.point.x.to_bits(), r.point.y.to_bits())).or_default() += 1;
    }
    let mut c: Vec<usize> = per.into_values().collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    c
}

fn top_share(counts: &[usize], k: usize) -> f64 {
    counts.iter().take(k).sum::<usize>() as f64 / counts.iter().sum::<usize>() as f64
}

/// The checks every generated stream must pass, whatever the shape.
fn check_stream(name: &str, t: &Trajectories, records: usize, objects: usize) {
    let ctx = format!("{name} ({records} records, {objects} objects)");
    assert_eq!(t.records.len(), records, "{ctx}: records");
    let per = per_object(t);
    assert_eq!(per.len(), objects, "{ctx}: distinct objects");
    assert!(
        per.keys().all(|&o| o < objects as u64),
        "{ctx}: object ids are 0..objects"
    );
    assert!(
        t.records.windows(2).all(|w| w[0].time <= w[1].time),
        "{ctx}: time order"
    );
    assert!(
        t.records.iter().all(|r| t.extent.contains_point(r.point)),
        "{ctx}: a point outside {:?}",
        t.extent
    );
    // The first record of each object is its insert, every later one an update from where it was.
    let mut seen = BTreeSet::new();
    let mut at = HashMap::<u64, Point>::new();
    for (r, op) in t.records.iter().zip(t.to_ops()) {
        match op {
            SpatialOp::Insert { oid, .. } => assert!(seen.insert(oid) && oid == r.oid, "{ctx}"),
            SpatialOp::Update { oid, from, .. } => {
                assert!(!seen.insert(oid) && oid == r.oid, "{ctx}: update before insert");
                assert_eq!(at.get(&oid), Some(&from), "{ctx}");
            }
            SpatialOp::Delete { .. } => panic!("{ctx}: a delete"),
        }
        at.insert(r.oid, r.point);
    }
}

#[test]
fn gowalla_shapes() {
    for (records, objects) in [(20_000, 50), (20_000, 2_000), (12_000, 12_000), (30_000, 6_000)] {
        let spec = GenSpec::new(records).with_objects(objects);
        let t = generate_spec("gowalla", &spec, 11).unwrap();
        check_stream("gowalla", &t, records, objects);
        let points = point_counts(&t);
        // Venues: one per ~6.5 check-ins, most of them visited.
        assert!(points.len() > records / 20, "{} distinct venues", points.len());
        // Skew: the busiest venue is far busier than an even spread, yet holds a few percent at most.
        let top = top_share(&points, 1);
        assert!(top > 20.0 / points.len() as f64 && top < 0.05, "top venue {top}");
        // Activity is heavy-tailed when users have room for it: the busiest user has many times the mean.
        if records / objects >= 5 {
            let max = *per_object(&t).values().max().unwrap();
            assert!(max >= 5 * records / objects, "busiest user {max}");
        }
    }
}

#[test]
fn chicago_shapes() {
    for (records, objects) in [(20_000, 50), (20_000, 5_000), (10_000, 10_000), (40_000, 400)] {
        let spec = GenSpec::new(records).with_objects(objects);
        let t = generate_spec("chicago", &spec, 12).unwrap();
        check_stream("chicago", &t, records, objects);
        let points = point_counts(&t);
        // Pickups are published at tract or community-area centroids only: a few hundred distinct
        // points (at most 800 tracts + 77 areas), as in the real data.
        assert!(
            (250..=877).contains(&points.len()),
            "{} distinct points",
            points.len()
        );
        // The busiest centroid (downtown) has ~10% of the pickups (6-17% by seed), the top 10
        // about half.
        let (top1, top10) = (top_share(&points, 1), top_share(&points, 10));
        assert!((0.05..0.20).contains(&top1), "top centroid {top1}");
        assert!((0.35..0.60).contains(&top10), "top 10 centroids {top10}");
        // Taxis are busy evenly: every taxi near the mean when it has room for it.
        let per = per_object(&t);
        let mean = records / objects;
        if mean >= 100 {
            assert!(
                per.values().all(|&n| n > mean / 2 && n < 2 * mean),
                "uneven taxis"
            );
        }
    }
    // Spread on: distinct pickup points, the skew kept at the scale of a tract.
    let spread = ChicagoParams {
        spread_share: 1.0,
        taxis: Some(500),
        ..ChicagoParams::default()
    };
    let t = chicago(20_000, 12, &spread).unwrap();
    check_stream("chicago spread", &t, 20_000, 500);
    assert!(point_counts(&t).len() > 19_900);
}

#[test]
fn berlinmod_shapes() {
    for (records, objects) in [(20_000, 50), (20_000, 2_000), (5_000, 5_000), (120_000, 4)] {
        let spec = GenSpec::new(records).with_objects(objects);
        let t = generate_spec("berlinmod", &spec, 13).unwrap();
        check_stream("berlinmod", &t, records, objects);
        // Every vehicle reports its equal share.
        let per = per_object(&t);
        let (lo, hi) = (per.values().min().unwrap(), per.values().max().unwrap());
        assert!(hi - lo <= 1 && *lo == records / objects, "shares {lo}..{hi}");
        // Positions are metres apart along roads: nearly all distinct, and each step short.
        let points = point_counts(&t);
        assert!(
            points.len() as f64 > 0.9 * records as f64,
            "{} distinct positions",
            points.len()
        );
        let mut last = HashMap::new();
        for r in &t.records {
            if let Some(prev) = last.insert(r.oid, r.point) {
                let d = metres_between(prev, r.point);
                assert!(d <= 20.0 * 1.01, "a step of {d} m");
            }
        }
    }
}

#[test]
fn berlinmod_has_sf1_records_per_vehicle_over_weeks() {
    // SF 1.0: 2,000 vehicles, 56,129,943 positions (28,065 each) over 28 days. A few vehicles with
    // the same share must drive for weeks, home to work and back, and interleave in time.
    let share = PAPER_RECORDS / PAPER_VEHICLES;
    assert_eq!(share, 28_064);
    let vehicles = 6;
    let spec = GenSpec::new(share * vehicles).with_objects(vehicles);
    let t = generate_spec("berlinmod", &spec, 14).unwrap();
    check_stream("berlinmod sf1", &t, share * vehicles, vehicles);
    let mut span = BTreeMap::<u64, (i64, i64)>::new();
    for r in &t.records {
        let e = span.entry(r.oid).or_insert((r.time, r.time));
        e.1 = r.time;
    }
    // How long depends on the commute (a few km to 30 km each way): more than a week for all.
    for (oid, (first, last)) in span {
        let days = (last - first) as f64 / 86_400.0;
        eprintln!("vehicle {oid}: {days:.1} days");
        assert!((7.0..120.0).contains(&days), "vehicle {oid} drove {days:.1} days");
    }
    // Interleaved: the first half of the stream already has every vehicle.
    let half: BTreeSet<u64> = t.records[..t.records.len() / 2].iter().map(|r| r.oid).collect();
    assert_eq!(half.len(), vehicles);
}

#[test]
fn chicago_generator_matches_the_sample() {
    if !Path::new(CHICAGO_SAMPLE).exists() {
        eprintln!("note: {CHICAGO_SAMPLE} is absent; skipping the comparison with the real sample");
        return;
    }
    let (real, _) = load(Path::new(CHICAGO_SAMPLE), &LoadOptions::new(Format::ChicagoCsv)).unwrap();
    let real = point_counts(&real);
    // Averaged over seeds, at the sample's size.
    let seeds = 1..=4u64;
    let mut gen_top = [0.0; 3];
    let mut gen_distinct = 0.0;
    for seed in seeds.clone() {
        let t = chicago(15_000, seed, &ChicagoParams::default()).unwrap();
        let c = point_counts(&t);
        for (i, k) in [1, 10, 50].into_iter().enumerate() {
            gen_top[i] += top_share(&c, k) / seeds.clone().count() as f64;
        }
        gen_distinct += c.len() as f64 / seeds.clone().count() as f64;
    }
    for (i, k) in [1, 10, 50].into_iter().enumerate() {
        let want = top_share(&real, k);
        assert!(
            (gen_top[i] - want).abs() < 0.03,
            "top {k} share: generator {:.3}, sample {want:.3}",
            gen_top[i]
        );
    }
    // The sample: 236 distinct points; the generator's long tail is somewhat longer (284).
    let ratio = gen_distinct / real.len() as f64;
    assert!(
        (0.8..1.5).contains(&ratio),
        "distinct points: generator {gen_distinct}, sample {}",
        real.len()
    );
}
