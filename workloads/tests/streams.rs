//! Cross-module properties of the replayed streams: every generator's `to_ops` output inserts each
//! object once and then updates it from exactly where it was; timestamps round-trip the parser.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::HashMap;

use lsmlab_engine::geom::Point;
use lsmlab_workloads::time::{parse_timestamp, unix_seconds};
use lsmlab_workloads::{generate, Record, SpatialOp, Trajectories, DATASETS};
use proptest::prelude::*;

/// Checks `to_ops` against a brute-force replay of the records.
fn check_ops(t: &Trajectories) {
    let ops = t.to_ops();
    assert_eq!(ops.len(), t.records.len());
    let mut at: HashMap<u64, Point> = HashMap::new();
    for (r, op) in t.records.iter().zip(&ops) {
        match *op {
            SpatialOp::Insert { oid, at: p } => {
                assert_eq!((oid, p), (r.oid, r.point));
                assert!(at.insert(oid, p).is_none(), "object {oid} inserted twice");
            }
            SpatialOp::Update { oid, from, to } => {
                assert_eq!((oid, to), (r.oid, r.point));
                assert_eq!(
                    at.insert(oid, to),
                    Some(from),
                    "update of {oid} not from its previous location"
                );
            }
            SpatialOp::Delete { .. } => panic!("to_ops never deletes"),
        }
    }
    assert_eq!(at.len(), t.objects());
}

#[test]
fn generated_streams_insert_once_then_update_from_the_previous_location() {
    for name in DATASETS {
        let t = generate(name, 30_000, 99).unwrap();
        check_ops(&t);
        let updates = t
            .to_ops()
            .iter()
            .filter(|op| matches!(op, SpatialOp::Update { .. }))
            .count();
        assert!(updates > 20_000, "{name}: only {updates} updates");
    }
}

#[test]
fn generators_are_deterministic_per_seed() {
    for name in DATASETS {
        let a = generate(name, 10_000, 5).unwrap();
        assert_eq!(a, generate(name, 10_000, 5).unwrap(), "{name}");
        assert_ne!(a.records, generate(name, 10_000, 6).unwrap().records, "{name}");
        assert_eq!(a.records.len(), 10_000);
    }
}

proptest! {
    #[test]
    fn ops_follow_any_record_sequence(raw in prop::collection::vec((0u64..8, 0i64..50, -10.0f64..10.0, -10.0f64..10.0), 0..200)) {
        let records = raw.into_iter().map(|(oid, time, x, y)| Record { oid, time, point: Point::new(x, y) }).collect();
        let t = Trajectories::from_records("p", records);
        prop_assert!(t.records.windows(2).all(|w| w[0].time <= w[1].time));
        check_ops(&t);
    }

    #[test]
    fn iso_timestamps_round_trip(y in 1900i64..2100, m in 1u32..=12, d in 1u32..=28, hh in 0u32..24, mm in 0u32..60, ss in 0u32..60) {
        let t = unix_seconds(y, m, d, hh, mm, ss);
        prop_assert_eq!(parse_timestamp(&format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")), Ok(t));
        prop_assert_eq!(parse_timestamp(&format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}")), Ok(t));
        prop_assert_eq!(parse_timestamp(&t.to_string()), Ok(t));
    }
}
