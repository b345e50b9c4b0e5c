//! Fail-stop of both record-cluster layouts (OEP 7's paginated cluster and the single-page one),
//! with no cache and with a small write-back cache, under every device fault kind (failed reads,
//! writes and syncs, reported and silent short writes, flipped bits on read, a full disk), each at
//! many positions of a stream of inserts, growing and shrinking updates, deletes, fetches and
//! batch fetches. (Sync faults are swept too, and never fire: the clusters never sync.)
//!
//! Contract checked: a failed fetch changes nothing; the first failed update (insert, update,
//! delete) stops the cluster, which then refuses every call with `Error::Stopped`; every answer
//! that is `Ok` equals a brute-force map oracle's; every failed call returns a typed error (the
//! injected fault, a checksum error naming page and device, or the refusal); nothing panics; the
//! cluster's files own every allocated page after every step. A cluster that never stopped still
//! matches the oracle once the device is healed and its cache emptied (unless a torn write left a
//! damaged page behind, whose reads keep failing with checksum errors). The sweep counts faults
//! injected and calls failed per kind, so it cannot pass without reaching the fault paths.
//!
//! Budget: `FAULT_CASES` positions per fault kind (default 4, a few seconds at the test profile).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

mod failstop_common;

use failstop_common::{cases, plan, stack, Sweep, Tally};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::cluster::{self, ClusterOptions, Layout, Lookup, RecordCluster, Rid};
use lsmlab_engine::storage::{Device, Fault, FaultKind, Injection};
use lsmlab_engine::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

const PAGE: usize = 1024;
const WARM_UP: usize = 150;
const ARMED: usize = 300;
const HEALED: usize = 50;

fn record(rng: &mut Xoshiro256PlusPlus, tag: u64) -> Vec<u8> {
    let len = match rng.random_range(0..20) {
        0 => rng.random_range(0..10),
        1 => rng.random_range(PAGE..3 * PAGE),
        2..=4 => rng.random_range(PAGE / 3..PAGE - 100),
        _ => rng.random_range(20..PAGE / 8),
    };
    (0..len).map(|i| (tag as usize * 31 + i) as u8).collect()
}

struct Run {
    c: Box<dyn RecordCluster>,
    dev: Arc<dyn Device>,
    live: BTreeMap<Rid, Vec<u8>>,
    dead: Vec<Rid>,
    rng: Xoshiro256PlusPlus,
    tag: u64,
    stopped: bool,
    tally: Tally,
}

impl Run {
    /// The outcome of a call: `Some(answer)` to check, `None` if it failed (and was tallied).
    fn outcome<T>(&mut self, r: Result<T>, update: bool, what: &str) -> Option<T> {
        match r {
            Ok(v) => {
                assert!(!self.stopped, "{what}: a stopped cluster answered");
                self.tally.checked += 1;
                Some(v)
            }
            Err(e) => {
                if self.stopped {
                    assert!(matches!(e, Error::Stopped { .. }), "{what}: {e}");
                }
                self.tally.failed(&e, what);
                self.stopped |= update;
                None
            }
        }
    }

    fn pick(&mut self) -> Option<Rid> {
        let n = self.live.len();
        (n > 0).then(|| *self.live.keys().nth(self.rng.random_range(0..n)).unwrap())
    }

    fn step(&mut self, what: &str) {
        match self.rng.random_range(0..100) {
            0..35 => {
                self.tag += 1;
                let r = record(&mut self.rng, self.tag);
                let got = self.c.insert(&r);
                if let Some(rid) = self.outcome(got, true, what) {
                    assert!(!self.live.contains_key(&rid), "{what}: {rid:?} handed out twice");
                    self.live.insert(rid, r);
                }
            }
            35..55 => {
                if let Some(rid) = self.pick() {
                    self.tag += 1;
                    let r = record(&mut self.rng, self.tag);
                    let got = self.c.update(rid, &r);
                    if let Some(l) = self.outcome(got, true, what) {
                        assert_eq!(l, Lookup::Found(()), "{what}: update {rid:?}");
                        self.live.insert(rid, r);
                    }
                }
            }
            55..65 => {
                if let Some(rid) = self.pick() {
                    let got = self.c.delete(rid);
                    if let Some(l) = self.outcome(got, true, what) {
                        assert_eq!(l, Lookup::Found(()), "{what}: delete {rid:?}");
                        self.live.remove(&rid);
                        self.dead.push(rid);
                    }
                }
            }
            65..85 => {
                let rid = match self.rng.random_bool(0.8) {
                    true => self.pick(),
                    false if !self.dead.is_empty() => {
                        Some(self.dead[self.rng.random_range(0..self.dead.len())])
                    }
                    false => None,
                };
                if let Some(rid) = rid {
                    let got = self.c.fetch(rid);
                    if let Some(l) = self.outcome(got, false, what) {
                        assert_eq!(l.found().as_ref(), self.live.get(&rid), "{what}: fetch {rid:?}");
                    }
                }
            }
            _ => {
                let mut ids: Vec<Rid> = self.live.keys().copied().take(30).collect();
                ids.extend(self.dead.iter().take(5));
                ids.reverse();
                let got = self.c.fetch_batch(&ids);
                if let Some(got) = self.outcome(got, false, what) {
                    for (rid, g) in ids.iter().zip(got) {
                        assert_eq!(g.found().as_ref(), self.live.get(rid), "{what}: batch {rid:?}");
                    }
                }
            }
        }
        self.audit(what);
    }

    /// The cluster's files own every allocated page.
    fn audit(&self, what: &str) {
        assert_eq!(
            self.dev.allocated_pages(),
            self.c.space().file_pages,
            "{what}: pages allocated outside the cluster's files"
        );
    }
}

fn stream(layout: Layout, cache_pages: usize, seed: u64, inj: Injection) -> Tally {
    let s = stack(PAGE);
    let cache = Arc::new(BufferCache::new(s.dev.clone(), cache_pages));
    let mut run = Run {
        c: cluster::open(layout, cache, ClusterOptions::default()).unwrap(),
        dev: s.dev.clone(),
        live: BTreeMap::new(),
        dead: Vec::new(),
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        tag: 0,
        stopped: false,
        tally: Tally::default(),
    };
    let what = format!("{layout}, cache {cache_pages}, seed {seed}, {inj}");
    for _ in 0..WARM_UP {
        run.step(&what);
    }
    assert_eq!(run.tally.failed_calls, 0, "{what}: failed while healthy");
    s.faulty.inject(inj);
    for _ in 0..ARMED {
        run.step(&what);
    }
    run.tally.injected_from(&s.faulty);
    s.faulty.disarm();
    let healed = format!("{what}, healed");
    for _ in 0..HEALED {
        run.step(&healed);
    }
    if run.stopped {
        let e = run.c.fetch(Rid::in_page(9, 0, 0, 0)).unwrap_err();
        run.tally.failed(&e, &healed);
        assert!(matches!(e, Error::Stopped { .. }), "{healed}: {e}");
    } else {
        let damaged = inj.kind.damages_pages();
        let before = run.tally.failed_calls;
        run.c.cache().clear().unwrap();
        let live: Vec<(Rid, Vec<u8>)> = run.live.iter().map(|(r, v)| (*r, v.clone())).collect();
        for (rid, r) in live {
            let got = run.c.fetch(rid);
            if let Some(l) = run.outcome(got, false, &healed) {
                assert_eq!(l.found().as_ref(), Some(&r), "{healed}: fetch {rid:?}");
            }
        }
        if !damaged {
            assert_eq!(run.tally.failed_calls, before, "{healed}: a fetch failed");
        }
        assert_eq!(run.c.space().live_records, run.live.len() as u64, "{healed}");
    }
    run.audit(&healed);
    run.tally
}

fn sweep(layout: Layout) {
    // The clusters never sync (the OEP 7 model has no durability point), so sync faults never fire.
    let mut sweep = Sweep::new(layout.name()).inapplicable(FaultKind::SyncError);
    // About 250 page writes and 150 device reads while armed (fewer with the cache).
    for (c, inj) in plan(cases(4), 120) {
        let cache = if c % 2 == 0 { 0 } else { 6 };
        sweep.record(inj, stream(layout, cache, 500 + c as u64, inj));
    }
    sweep.check();
}

#[test]
fn the_paginated_cluster_fails_stop_under_every_fault_kind() {
    sweep(Layout::Paginated);
}

#[test]
fn the_single_page_cluster_fails_stop_under_every_fault_kind() {
    sweep(Layout::SinglePage);
}

/// Regression: an update that failed part way left its modified page images in the operation's
/// session (and its allocations in the free-space map), and the next operation's commit wrote the
/// half-done update back. Before the fix, after a failed update of a 3-page record and one more
/// insert on the healed device, the paginated cluster answered a fetch of the updated record with
/// the newly inserted record's bytes (a failed 2nd to 5th write) or failed with a corrupt-page
/// error (a failed read), and the single-page cluster lost the record or panicked in
/// `Slotted::add_slot`. Now the cluster stops at the failed update and refuses every call.
#[test]
fn a_failed_update_stops_the_cluster_instead_of_leaving_half_an_update() {
    let mut failed = 0;
    for layout in [Layout::Paginated, Layout::SinglePage] {
        for k in 1..8 {
            for kind in [FaultKind::ReadError, FaultKind::WriteError] {
                let s = stack(PAGE);
                let cache = Arc::new(BufferCache::new(s.dev.clone(), 0));
                let mut c = cluster::open(layout, cache, ClusterOptions::default()).unwrap();
                let small = c.insert(&[1u8; 100]).unwrap();
                let big = c.insert(&vec![2u8; 3 * PAGE]).unwrap();
                s.faulty.inject(Injection::new(kind, Fault::Nth(k)));
                let r = c.update(big, &vec![3u8; 2 * PAGE]);
                s.faulty.disarm();
                let what = format!("{layout}, {kind} at {k}");
                match r {
                    Ok(l) => {
                        assert_eq!(l, Lookup::Found(()), "{what}");
                        assert_eq!(c.fetch(big).unwrap().found(), Some(vec![3u8; 2 * PAGE]), "{what}");
                        continue;
                    }
                    Err(e) => assert!(failstop_common::is_injected(&e), "{what}: {e}"),
                }
                failed += 1;
                assert!(
                    matches!(c.insert(&[5u8; 200]), Err(Error::Stopped { .. })),
                    "{what}"
                );
                for r in [c.fetch(small), c.fetch(big)] {
                    assert!(matches!(r, Err(Error::Stopped { .. })), "{what}: {r:?}");
                }
                assert!(matches!(c.delete(small), Err(Error::Stopped { .. })), "{what}");
                assert_eq!(s.dev.allocated_pages(), c.space().file_pages, "{what}");
            }
        }
    }
    assert!(failed > 10, "only {failed} updates failed");
}
