//! Fail-stop of the time-series store under every layout (iotdb, iotdb-real, diol, and diol with
//! `m1_pick = expired-ttl`), with and without disk compaction, under every device fault kind
//! (failed reads, writes and syncs, reported and silent short writes, flipped bits on read, a
//! full disk), each at many positions of a stream of out-of-order inserts, point reads and range
//! reads.
//!
//! Contract checked: an insert is applied even when the flush or compaction it started fails
//! (the point stays in memory, a failed flush is retried by the next); every answer that is `Ok`
//! equals a brute-force oracle's; every failed call returns a typed error (the injected fault, or
//! a checksum error naming page and device); nothing panics; after every step the store's files
//! own every allocated page (no leak). Once the device is healed, a flush succeeds and every point
//! reads back, unless a torn write left a damaged page behind, in which case reads of it keep
//! failing with checksum errors and nothing answers wrong. The sweep counts the faults injected
//! and the calls failed per kind, so it cannot pass without reaching the fault paths.
//!
//! Budget: `FAULT_CASES` positions per fault kind (default 3, a few seconds at the test profile).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

mod failstop_common;

use failstop_common::{cases, plan, stack, Sweep, Tally};
use lsmlab_engine::series::{CompactionParams, Layout, M1Pick, SeriesConfig, SeriesStore};
use lsmlab_engine::storage::{Device, Fault, FaultKind, Injection};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

const PAGE: usize = 256;
const SERIES: u32 = 2;
/// Points per series; arrivals before the fault is armed, and while it is.
const POINTS: u64 = 700;
const WARM_UP: usize = 300;
const ARMED: usize = 700;

/// Memtables of a few dozen points (as in `series_oracle`), so a stream flushes many times.
fn config(layout: Layout, expired_ttl: bool, compaction: bool) -> SeriesConfig {
    let mut c = SeriesConfig::paper(layout);
    c.iotdb.memtable_bytes = 600;
    c.diol.normal_bytes = 300;
    c.diol.delay_bytes = 60;
    if expired_ttl {
        c.diol.m1_pick = M1Pick::ExpiredTtl;
    }
    c.compaction = compaction.then_some(CompactionParams {
        delay_files_trigger: 2,
    });
    c
}

type Oracle = BTreeMap<(u32, u64), i64>;

struct Run {
    store: SeriesStore,
    dev: Arc<dyn Device>,
    oracle: Oracle,
    rng: Xoshiro256PlusPlus,
    tally: Tally,
    horizon: u64,
}

impl Run {
    fn get(&mut self, sr: u32, t: u64, what: &str) {
        match self.store.get(sr, t) {
            Ok(v) => {
                assert_eq!(v, self.oracle.get(&(sr, t)).copied(), "{what}: get ({sr}, {t})");
                self.tally.checked += 1;
            }
            Err(e) => self.tally.failed(&e, what),
        }
    }

    fn range(&mut self, what: &str) {
        let sr = self.rng.random_range(0..SERIES);
        let a = self.rng.random_range(0..self.horizon + 5);
        let b = a + self.rng.random_range(0..60);
        match self.store.range(sr, a, b) {
            Ok(got) => {
                let want: Vec<(u64, i64)> = self
                    .oracle
                    .range((sr, a)..=(sr, b))
                    .map(|(k, v)| (k.1, *v))
                    .collect();
                assert_eq!(got, want, "{what}: range {sr} [{a}, {b}]");
                self.tally.checked += 1;
            }
            Err(e) => self.tally.failed(&e, what),
        }
    }

    /// One arrival, then maybe a read; then the page audit.
    fn step(&mut self, i: usize, (at, sr, t): (u64, u32, u64), what: &str) {
        self.horizon = at;
        let v = self.rng.random_range(-1000..1000);
        // Applied even if the flush or compaction it starts fails.
        self.oracle.insert((sr, t), v);
        if let Err(e) = self.store.insert(sr, t, v) {
            self.tally.failed(&e, what);
        }
        if self.rng.random_bool(0.05) {
            let t2 = self.rng.random_range(1..=t);
            let v2 = self.rng.random_range(-1000..1000);
            self.oracle.insert((sr, t2), v2);
            if let Err(e) = self.store.insert(sr, t2, v2) {
                self.tally.failed(&e, what);
            }
        }
        if i.is_multiple_of(4) {
            let (sr, t) = (self.rng.random_range(0..SERIES), self.rng.random_range(0..at + 3));
            self.get(sr, t, what);
        }
        if i.is_multiple_of(13) {
            self.range(what);
        }
        self.audit(what);
    }

    /// The store's files own every allocated page.
    fn audit(&self, what: &str) {
        assert_eq!(
            self.dev.allocated_pages(),
            self.store.disk_pages(),
            "{what}: pages allocated outside the store's files"
        );
    }

    /// Every point and some ranges; `strict`: nothing may fail.
    fn check_all(&mut self, strict: bool, what: &str) {
        let before = self.tally.failed_calls;
        let keys: Vec<(u32, u64)> = self.oracle.keys().copied().collect();
        for (sr, t) in keys {
            self.get(sr, t, what);
        }
        for _ in 0..30 {
            self.range(what);
        }
        if strict {
            assert_eq!(
                self.tally.failed_calls, before,
                "{what}: a read failed on a healed device"
            );
        }
    }
}

fn arrivals(seed: u64) -> Vec<(u64, u32, u64)> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xA11);
    let mut out = Vec::new();
    for sr in 0..SERIES {
        for t in 1..=POINTS {
            let late = rng.random_bool(0.3);
            let at = if late { t + rng.random_range(1..=60) } else { t };
            out.push((at, sr, t));
        }
    }
    out.sort_unstable();
    out
}

fn stream(variant: (Layout, bool), compaction: bool, seed: u64, inj: Injection) -> Tally {
    let (layout, expired) = variant;
    let s = stack(PAGE);
    let what = format!(
        "{}{}{}, seed {seed}, {inj}",
        layout.name(),
        if expired { " (expired-ttl)" } else { "" },
        if compaction { " + compaction" } else { "" }
    );
    let mut run = Run {
        store: SeriesStore::new(config(layout, expired, compaction), s.dev.clone()).unwrap(),
        dev: s.dev.clone(),
        oracle: Oracle::new(),
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        tally: Tally::default(),
        horizon: 0,
    };
    let arrivals = arrivals(seed);
    for (i, &a) in arrivals.iter().enumerate() {
        if i == WARM_UP {
            assert_eq!(run.tally.failed_calls, 0, "{what}: failed while healthy");
            s.faulty.inject(inj);
        }
        if i == WARM_UP + ARMED {
            break;
        }
        run.step(i, a, &what);
    }
    run.tally.injected_from(&s.faulty);
    s.faulty.disarm();
    let healed = format!("{what}, healed");
    let damaged = inj.kind.damages_pages();
    for (i, &a) in arrivals.iter().enumerate().skip(WARM_UP + ARMED) {
        run.step(i, a, &healed);
    }
    match run.store.flush_all() {
        Ok(()) => assert_eq!(run.store.memory_points(), 0, "{healed}"),
        Err(e) => {
            assert!(damaged, "{healed}: the flush failed: {e}");
            run.tally.failed(&e, &healed);
        }
    }
    run.audit(&healed);
    run.check_all(!damaged, &healed);
    if compaction {
        match run.store.compact() {
            Ok(()) => assert_eq!(run.store.files().1, 0, "{healed}"),
            Err(e) => {
                assert!(damaged, "{healed}: the compaction failed: {e}");
                run.tally.failed(&e, &healed);
            }
        }
        run.audit(&healed);
        run.check_all(!damaged, &healed);
    }
    run.tally
}

fn sweep(variant: (Layout, bool), name: &str) {
    let mut sweep = Sweep::new(name);
    // About 40 pages written and 90 read while armed: positions over the first 60 accesses.
    for (c, inj) in plan(cases(3), 60) {
        let seed = 100 + c as u64;
        sweep.record(inj, stream(variant, c % 2 == 0, seed, inj));
    }
    sweep.check();
}

#[test]
fn iotdb_loses_nothing_under_every_fault_kind() {
    sweep((Layout::Iotdb, false), "iotdb");
}

#[test]
fn iotdb_real_loses_nothing_under_every_fault_kind() {
    sweep((Layout::IotdbReal, false), "iotdb-real");
}

#[test]
fn diol_loses_nothing_under_every_fault_kind() {
    sweep((Layout::Diol, false), "diol");
}

#[test]
fn diol_with_expired_ttl_picks_loses_nothing_under_every_fault_kind() {
    sweep((Layout::Diol, true), "diol (expired-ttl)");
}

/// Regression: a flush whose page write failed used to drop the memtable's points (the store
/// answered `None` for them) and leak the pages allocated for the run.
#[test]
fn a_failed_flush_keeps_its_points_readable_frees_its_pages_and_is_retried() {
    for kind in [FaultKind::WriteError, FaultKind::SyncError, FaultKind::DiskFull] {
        let s = stack(PAGE);
        let mut store = SeriesStore::new(config(Layout::Iotdb, false, false), s.dev.clone()).unwrap();
        for t in 1..=20 {
            store.insert(0, t, t as i64).unwrap();
        }
        s.faulty.inject(Injection::new(kind, Fault::From(1)));
        store.flush_all().unwrap_err();
        assert_eq!(
            s.dev.allocated_pages(),
            0,
            "{kind}: the failed run's pages are freed"
        );
        assert_eq!(store.get(0, 7).unwrap(), Some(7), "{kind}");
        assert_eq!(
            store.range(0, 18, 25).unwrap(),
            vec![(18, 18), (19, 19), (20, 20)]
        );
        // A newer version in memory wins over the pending one. (The insert retries the failed
        // flush, which fails again; the point is kept all the same.)
        assert!(store.insert(0, 7, -7).is_err());
        assert_eq!(store.get(0, 7).unwrap(), Some(-7));
        s.faulty.disarm();
        store.flush_all().unwrap();
        assert_eq!((store.memory_points(), store.files().0 + store.files().1), (0, 2));
        assert_eq!(store.get(0, 7).unwrap(), Some(-7));
        assert_eq!(store.get(0, 8).unwrap(), Some(8));
        assert_eq!(s.dev.allocated_pages(), store.disk_pages());
    }
}

/// Regression: a disk compaction used to free a normal file before writing its merged
/// replacement, so a failed write lost the file's points.
#[test]
fn a_failed_compaction_loses_no_point() {
    let s = stack(PAGE);
    let mut store = SeriesStore::new(config(Layout::IotdbReal, false, false), s.dev.clone()).unwrap();
    let mut oracle = Oracle::new();
    for t in (1..=200u64).chain((1..=200).step_by(3)) {
        store.insert(0, t, t as i64 * 2 + 1).unwrap();
        oracle.insert((0, t), t as i64 * 2 + 1);
    }
    store.flush_all().unwrap();
    assert!(store.files().1 > 0, "delay files to compact");
    s.faulty
        .inject(Injection::new(FaultKind::WriteError, Fault::From(2)));
    store.compact().unwrap_err();
    s.faulty.disarm();
    for (&(sr, t), &v) in &oracle {
        assert_eq!(store.get(sr, t).unwrap(), Some(v), "({sr}, {t})");
    }
    assert_eq!(s.dev.allocated_pages(), store.disk_pages());
    store.compact().unwrap();
    assert_eq!(store.files().1, 0);
    for (&(sr, t), &v) in &oracle {
        assert_eq!(store.get(sr, t).unwrap(), Some(v), "({sr}, {t})");
    }
}
