//! Every memory level of the time-series store against a brute-force oracle (a `BTreeMap` of
//! the newest value per point) on seeded random out-of-order streams, across flushes, DIOL's
//! memory merges and disk compactions; plus the counted behaviour the experiments rely on.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

use std::collections::BTreeMap;
use std::sync::Arc;

use lsmlab_engine::series::{CompactionParams, Layout, SeriesConfig, SeriesStore};
use lsmlab_engine::storage::{Device, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A configuration with memtables of a few dozen points so a short stream flushes many times.
fn small(layout: Layout, compaction: Option<usize>) -> SeriesConfig {
    let mut c = SeriesConfig::paper(layout);
    c.iotdb.memtable_bytes = 600; // 39 points
    c.diol.normal_bytes = 300; // 19 points
    c.diol.delay_bytes = 60; // 4 points
    c.compaction = compaction.map(|t| CompactionParams {
        delay_files_trigger: t,
    });
    c
}

fn store(c: SeriesConfig) -> SeriesStore {
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(256));
    SeriesStore::new(c, dev).unwrap()
}

type Oracle = BTreeMap<(u32, u64), i64>;

fn check_all(s: &mut SeriesStore, oracle: &Oracle, series: u32, horizon: u64, rng: &mut Xoshiro256PlusPlus) {
    // Every inserted point readable with its newest value; a few absent ones absent.
    for (&(sr, t), &v) in oracle {
        assert_eq!(s.get(sr, t).unwrap(), Some(v), "point ({sr}, {t})");
    }
    for _ in 0..20 {
        let (sr, t) = (rng.random_range(0..series), rng.random_range(0..horizon + 10));
        assert_eq!(
            s.get(sr, t).unwrap(),
            oracle.get(&(sr, t)).copied(),
            "probe ({sr}, {t})"
        );
    }
    for _ in 0..30 {
        check_range(s, oracle, series, horizon, rng);
    }
}

fn check_range(
    s: &mut SeriesStore,
    oracle: &Oracle,
    series: u32,
    horizon: u64,
    rng: &mut Xoshiro256PlusPlus,
) {
    let sr = rng.random_range(0..series);
    let a = rng.random_range(0..horizon + 5);
    let b = a + rng.random_range(0..horizon / 4 + 2);
    let got = s.range(sr, a, b).unwrap();
    let want: Vec<(u64, i64)> = oracle.range((sr, a)..=(sr, b)).map(|(k, v)| (k.1, *v)).collect();
    assert_eq!(got, want, "range series {sr} [{a}, {b}]");
}

/// One randomized stream: mostly in order, `o3` of the points late by up to `max_delay`,
/// some re-inserted with a new value, reads interleaved.
fn run_stream(
    layout: Layout,
    compaction: Option<usize>,
    seed: u64,
    series: u32,
    n: u64,
    o3: f64,
    max_delay: u64,
) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut s = store(small(layout, compaction));
    let mut oracle = Oracle::new();
    // Arrival order: timestamp + delay for late points.
    let mut arrivals: Vec<(u64, u32, u64)> = Vec::new();
    for sr in 0..series {
        for t in 1..=n {
            let late = rng.random_bool(o3);
            let at = if late {
                t + rng.random_range(1..=max_delay)
            } else {
                t
            };
            arrivals.push((at, sr, t));
        }
    }
    arrivals.sort_unstable();
    let mut step = 0u64;
    for (at, sr, t) in arrivals {
        let v = rng.random_range(-1000..1000);
        s.insert(sr, t, v).unwrap();
        oracle.insert((sr, t), v);
        step += 1;
        if rng.random_bool(0.05) {
            // Re-insert an earlier point: the newest version must win.
            let t2 = rng.random_range(1..=t);
            let v2 = rng.random_range(-1000..1000);
            s.insert(sr, t2, v2).unwrap();
            oracle.insert((sr, t2), v2);
        }
        if step.is_multiple_of(7) {
            let key = (rng.random_range(0..series), rng.random_range(0..at + 3));
            assert_eq!(
                s.get(key.0, key.1).unwrap(),
                oracle.get(&key).copied(),
                "{layout:?} get {key:?} at step {step}"
            );
        }
        if step.is_multiple_of(29) {
            check_range(&mut s, &oracle, series, at, &mut rng);
        }
        if step.is_multiple_of(500) {
            check_all(&mut s, &oracle, series, n + max_delay, &mut rng);
        }
    }
    check_all(&mut s, &oracle, series, n, &mut rng);
    let stats = s.stats();
    assert!(stats.flushes > 0, "{layout:?}: the stream must flush");
    s.flush_all().unwrap();
    assert_eq!(s.memory_points(), 0);
    check_all(&mut s, &oracle, series, n, &mut rng);
    s.compact().unwrap();
    assert_eq!(s.files().1, 0, "{layout:?}: compaction leaves no delay file");
    check_all(&mut s, &oracle, series, n, &mut rng);
    // Re-insert after everything is on disk: memory must shadow the disk.
    for t in (1..=n).step_by(13) {
        s.insert(0, t, 7777).unwrap();
        oracle.insert((0, t), 7777);
    }
    check_all(&mut s, &oracle, series, n, &mut rng);
}

#[test]
fn every_layout_matches_the_oracle_one_series() {
    for layout in Layout::ALL {
        for (seed, o3, delay) in [(1, 0.1, 30), (2, 0.3, 200), (3, 0.5, 5)] {
            run_stream(layout, None, seed, 1, 1200, o3, delay);
        }
    }
}

#[test]
fn every_layout_matches_the_oracle_with_disk_compaction() {
    for layout in Layout::ALL {
        for (seed, trigger) in [(11, 1), (12, 3)] {
            run_stream(layout, Some(trigger), seed, 1, 1200, 0.3, 150);
        }
    }
}

#[test]
fn every_layout_matches_the_oracle_many_series() {
    for layout in Layout::ALL {
        run_stream(layout, Some(2), 21, 3, 400, 0.2, 60);
        run_stream(layout, None, 22, 3, 400, 0.2, 60);
    }
}

#[test]
fn an_in_order_stream_has_no_delayed_points_and_no_merges() {
    for layout in Layout::ALL {
        let mut s = store(small(layout, None));
        for t in 1..=2000 {
            s.insert(0, t, t as i64).unwrap();
        }
        let st = s.stats();
        assert_eq!(st.delayed_inserts, 0, "{layout:?}");
        assert_eq!(st.memory_compaction_points, 0, "{layout:?}");
        assert_eq!(s.files().1, 0, "{layout:?}: no delay file");
        assert_eq!(st.flushed_points + s.memory_points(), 2000, "{layout:?}");
    }
}

#[test]
fn memory_never_holds_more_memtables_than_the_layout_allows() {
    for layout in Layout::ALL {
        let mut s = store(small(layout, None));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let limit = match layout {
            Layout::Iotdb | Layout::IotdbReal => 6,
            Layout::Diol => 11 + 16,
        };
        for t in 1..=5000u64 {
            let ts = if rng.random_bool(0.3) {
                t.saturating_sub(rng.random_range(1..400)).max(1)
            } else {
                t
            };
            s.insert(0, ts, 0).unwrap();
            assert!(s.memtables() <= limit, "{layout:?}: {} memtables", s.memtables());
        }
    }
}

#[test]
fn iotdb_keeps_four_sealed_memtables_and_flushes_the_oldest() {
    let mut s = store(small(Layout::Iotdb, None));
    let (cap, _) = s.capacities();
    assert_eq!(cap, 39);
    // Five sealed memtables' worth plus one point: the first sealed one is flushed, whole.
    for t in 1..=(cap * 5 + 1) {
        s.insert(0, t, 0).unwrap();
    }
    let st = s.stats();
    assert_eq!(st.flushes, 1);
    assert_eq!(st.flushed_points, cap);
    assert_eq!(s.memory_points(), cap * 4 + 1);
    // A point of the flushed memtable is read from disk, one of memory is not.
    let before = s.stats().disk_reads;
    assert_eq!(s.get(0, 1).unwrap(), Some(0));
    assert_eq!(s.stats().disk_reads, before + 1);
    assert_eq!(s.get(0, cap * 5).unwrap(), Some(0));
    assert_eq!(s.stats().disk_reads, before + 1);
}

#[test]
fn delay_rules_differ_as_documented() {
    // Baseline and DIOL: delayed iff before the active normal memtable's first time.
    // Real IoTDB: unsequence iff not after the last flushed (sealed sequence) time.
    for layout in Layout::ALL {
        let mut s = store(small(layout, None));
        let (cap, _) = s.capacities();
        for t in 1..=cap {
            s.insert(0, 2 * t, 0).unwrap();
        }
        // Seal the first normal memtable: its last time is 2 * cap.
        s.insert(0, 2 * cap + 10, 0).unwrap();
        assert_eq!(s.stats().delayed_inserts, 0);
        s.insert(0, 2 * cap + 5, 0).unwrap(); // after the sealed max, before the active's first
        let after_start = s.stats().delayed_inserts;
        s.insert(0, 3, 0).unwrap(); // before everything sealed
        let old = s.stats().delayed_inserts - after_start;
        assert_eq!(old, 1, "{layout:?}");
        match layout {
            Layout::IotdbReal => assert_eq!(after_start, 0, "sequence: after last flushed time"),
            _ => assert_eq!(after_start, 1, "{layout:?}: before the active memtable's start"),
        }
    }
}

#[test]
fn diol_merges_delay_points_into_normal_memtables_in_m1() {
    let mut s = store(small(Layout::Diol, None));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let (normal, delay) = s.capacities();
    assert_eq!((normal, delay), (19, 4));
    let mut arrivals: Vec<(u64, u64)> = (1..=3000u64)
        .map(|t| {
            (
                if rng.random_bool(0.2) {
                    t + rng.random_range(20..60)
                } else {
                    t
                },
                t,
            )
        })
        .collect();
    arrivals.sort_unstable();
    for (_, t) in arrivals {
        s.insert(0, t, t as i64).unwrap();
    }
    let st = s.stats();
    assert!(st.delayed_inserts > 0);
    assert!(
        st.memory_compactions > 0 && st.memory_compaction_points > 0,
        "{st:?}"
    );
    assert!(s.files().1 > 0, "some delay memtables reach disk as delay files");
    for t in 1..=3000 {
        assert_eq!(s.get(0, t).unwrap(), Some(t as i64));
    }
}

#[test]
fn disk_compaction_counts_what_it_rewrites() {
    for layout in Layout::ALL {
        let mut s = store(small(layout, Some(2)));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut arrivals: Vec<(u64, u64)> = (1..=4000u64)
            .map(|t| {
                (
                    if rng.random_bool(0.3) {
                        t + rng.random_range(1..3000)
                    } else {
                        t
                    },
                    t,
                )
            })
            .collect();
        arrivals.sort_unstable();
        for (_, t) in arrivals {
            s.insert(0, t, 1).unwrap();
        }
        let st = s.stats();
        assert!(st.disk_compactions > 0, "{layout:?}");
        assert!(st.compaction_pages_written > 0 && st.compaction_points_rewritten > 0);
        assert!(
            s.files().1 < 2,
            "{layout:?}: delay files are merged away at the trigger"
        );
        // Points on disk + in memory = distinct points inserted (no version duplicated).
        assert_eq!(s.disk_points() + s.memory_points(), 4000, "{layout:?}");
        let io = s.io();
        assert_eq!(
            io.page_writes,
            st.flush_pages_written + st.compaction_pages_written
        );
    }
}

#[test]
fn a_range_fully_in_memory_does_not_touch_disk() {
    let mut s = store(small(Layout::Diol, None));
    for t in 1..=200 {
        s.insert(0, t, 0).unwrap();
    }
    assert_eq!(s.stats().flushes, 0);
    s.flush_all().unwrap();
    for t in 201..=260 {
        s.insert(0, t, 0).unwrap();
    }
    let before = s.stats();
    assert_eq!(s.range(0, 210, 250).unwrap().len(), 41);
    assert_eq!(s.stats().disk_reads, before.disk_reads);
    assert_eq!(s.range(0, 150, 250).unwrap().len(), 101);
    let after = s.stats();
    assert_eq!(after.disk_reads, before.disk_reads + 1);
    assert_eq!(after.disk_read_points, before.disk_read_points + 51);
}

#[test]
fn bad_configuration_is_a_typed_error() {
    let mut c = SeriesConfig::paper(Layout::Diol);
    c.diol.delay_m2 = 0;
    let dev: Arc<dyn Device> = Arc::new(MemDevice::new(256));
    assert!(SeriesStore::new(c, dev.clone()).is_err());
    let mut c = SeriesConfig::paper(Layout::Iotdb);
    c.iotdb.fill = 1.5;
    assert!(SeriesStore::new(c, dev).is_err());
    let tiny: Arc<dyn Device> = Arc::new(MemDevice::new(64));
    assert!(SeriesStore::new(SeriesConfig::paper(Layout::Iotdb), tiny).is_ok());
}

#[test]
fn paper_scaling_keeps_the_budget_a_fixed_fraction_of_the_data() {
    for layout in Layout::ALL {
        let full = SeriesConfig::paper(layout);
        let small = SeriesConfig::paper_scaled(layout, 1_000_000);
        let f_full = full.budget_points() as f64 / 100e6;
        let f_small = small.budget_points() as f64 / 1e6;
        assert!(
            (f_full - f_small).abs() < 0.01 * f_full,
            "{layout:?}: {f_full} vs {f_small}"
        );
        assert_eq!(full.budget_bytes(), 384 << 20);
    }
}

/// The authors' exact-zero TTL test never picks the first two normal memtables, so their points
/// stay in memory; the expired-TTL reading merges and flushes them like the others.
#[test]
fn diol_m1_pick_rules_differ_on_the_first_memtables() {
    use lsmlab_engine::series::M1Pick;
    for (pick, first_in_memory) in [(M1Pick::ExactZeroTtl, true), (M1Pick::ExpiredTtl, false)] {
        let mut c = small(Layout::Diol, None);
        c.diol.m1_pick = pick;
        let mut s = store(c);
        let (cap, _) = s.capacities();
        for t in 1..=cap * 60 {
            s.insert(0, t, 0).unwrap();
        }
        let before = s.stats().disk_reads;
        for t in [1, cap + 1, 2 * cap] {
            assert_eq!(s.get(0, t).unwrap(), Some(0));
        }
        let third = s.stats().disk_reads - before;
        assert_eq!(
            third == 0,
            first_in_memory,
            "{pick:?}: {third} of the first two memtables' reads hit disk"
        );
        assert_eq!(s.get(0, 3 * cap).unwrap(), Some(0));
        assert_eq!(
            s.stats().disk_reads - before,
            third + 1,
            "{pick:?}: the third memtable is on disk"
        );
    }
}
