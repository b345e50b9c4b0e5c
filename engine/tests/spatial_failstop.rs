//! Fail-stop of the LSM R-tree under every strategy: with a device that fails the k-th write or
//! read (once, or from then on), every operation either errors or behaves like a brute-force
//! oracle of the writes that were applied, no query ever answers Ok with a wrong result, and once
//! the device works again the index keeps matching the oracle through more flushes and merges, the
//! Update Memo audit holds, and dropping the index frees every page.
//!
//! `every_fault_kind_*` sweeps add short writes (reported and silent), flipped bits, sync errors
//! and a full disk on a checksum-verified device, rotating over every strategy, and check that
//! every failed call returns a typed error; after healing, an index with a page torn by a short
//! write may keep failing queries and merges that read it with checksum errors, never with a
//! wrong answer. Budget: `FAULT_CASES` positions per fault kind (default 11: each kind once per
//! strategy variant, seconds).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test may panic: that is its failure report

mod failstop_common;

use failstop_common::{cases, plan, stack, Sweep};
use lsmlab_engine::cache::BufferCache;
use lsmlab_engine::geom::{Point, Rect};
use lsmlab_engine::spatial::{LsmRTree, SpatialConfig, Strategy};
use lsmlab_engine::storage::{Device, Fault, FaultyDevice, Injection, MemDevice};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::sync::Arc;

mod common;
use common::{hot_point as point, small_spatial_config};

const ALL: Rect = Rect::new(-1.0, -1.0, 101.0, 101.0);
/// Healthy operations before the fault is armed, then operations with it armed.
const WARM_UP: usize = 600;
const ARMED: usize = 900;

/// A strategy plus a tweak of its configuration.
type Variant = (Strategy, fn(&mut SpatialConfig));

/// Small pages (7 entries a leaf), a memory component of `memory_pages` pages and a 2-page key
/// index, so that a stream crosses many flushes and merges.
fn index(dev: Arc<dyn Device>, (strategy, tweak): Variant, memory_pages: u64) -> LsmRTree {
    let cache = Arc::new(BufferCache::new(dev, 16));
    let mut cfg = small_spatial_config(strategy, memory_pages);
    cfg.bloom_fp = Some(0.01);
    tweak(&mut cfg);
    LsmRTree::new(cfg, cache).unwrap()
}

fn rect(rng: &mut impl Rng) -> Rect {
    let a = point(rng);
    let side = rng.random::<f64>() * 40.0;
    Rect::new(
        a.x - side / 2.0,
        a.y - side / 2.0,
        a.x + side / 2.0,
        a.y + side / 2.0,
    )
}

type Answer = Vec<(u64, (u64, u64))>;

fn oracle_answer(live: &BTreeMap<u64, Point>, rect: &Rect) -> Answer {
    live.iter()
        .filter(|(_, p)| rect.contains_point(**p))
        .map(|(&o, p)| (o, (p.x.to_bits(), p.y.to_bits())))
        .collect()
}

/// The index's answer, sorted, or `None` if the query failed.
fn index_answer(index: &LsmRTree, rect: &Rect) -> Option<Answer> {
    index_result(index, rect).ok()
}

/// The index's answer, sorted, or the query's error.
fn index_result(index: &LsmRTree, rect: &Rect) -> lsmlab_engine::Result<Answer> {
    let out = index.query(rect)?;
    let mut v: Answer = out
        .results
        .iter()
        .map(|e| (e.oid, (e.point.x.to_bits(), e.point.y.to_bits())))
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// What one stream saw.
#[derive(Default)]
struct Outcome {
    failed_writes: u64,
    failed_queries: u64,
    injected: u64,
}

/// The brute-force oracle and the stream that drives both it and the index.
struct Run {
    rng: Xoshiro256PlusPlus,
    live: BTreeMap<u64, Point>,
    objects: u64,
    out: Outcome,
    /// The typed errors failed calls returned.
    typed: failstop_common::Tally,
}

impl Run {
    /// One random operation. A write that fails with the index's clock unchanged changed nothing
    /// (Eager's primary-index lookup failed); one that fails after the clock advanced is applied
    /// (a flush or merge that followed it failed). Queries must answer exactly like the oracle or
    /// fail.
    fn step(&mut self, index: &mut LsmRTree, what: &str) {
        let r: f64 = self.rng.random();
        let before = index.clock();
        let (oid, result, new) = if self.objects == 0 || r < 0.12 {
            let oid = self.objects;
            self.objects += 1;
            let p = point(&mut self.rng);
            (oid, index.insert(oid, p), Some(p))
        } else if r < 0.85 {
            let oid = self.rng.random_range(0..self.objects);
            let p = point(&mut self.rng);
            let result = match self.live.get(&oid).copied() {
                Some(old) => index.update(oid, Some(old), p),
                None => index.insert(oid, p), // a deleted object comes back
            };
            (oid, result, Some(p))
        } else if r < 0.90 {
            let oid = self.rng.random_range(0..self.objects);
            match self.live.get(&oid).copied() {
                Some(old) => (oid, index.delete(oid, Some(old)), None),
                None => return,
            }
        } else {
            let rect = rect(&mut self.rng);
            match index_result(index, &rect) {
                Ok(got) => assert_eq!(got, oracle_answer(&self.live, &rect), "{what}: query {rect:?}"),
                Err(e) => {
                    self.typed.failed(&e, what);
                    self.out.failed_queries += 1
                }
            }
            return;
        };
        let applied = index.clock() > before;
        assert!(
            applied || result.is_err(),
            "{what}: a write succeeded without a timestamp"
        );
        if applied {
            match new {
                Some(p) => self.live.insert(oid, p),
                None => self.live.remove(&oid),
            };
        }
        if let Err(e) = &result {
            self.typed.failed(e, what);
        }
        self.out.failed_writes += u64::from(result.is_err());
    }

    fn check_all(&self, index: &LsmRTree, what: &str) {
        assert_eq!(
            index_answer(index, &ALL),
            Some(oracle_answer(&self.live, &ALL)),
            "{what}: full scan"
        );
    }
}

/// A warm-up on a healthy device, then a stream with `reads`/`writes` armed, then the device
/// healed and more operations, checking the oracle throughout.
fn stream(variant: Variant, name: &str, seed: u64, reads: Fault, writes: Fault) -> Outcome {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(256))));
    let dev: Arc<dyn Device> = faulty.clone();
    let mut index = index(dev.clone(), variant, 4);
    let mut run = Run {
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        live: BTreeMap::new(),
        objects: 0,
        out: Outcome::default(),
        typed: failstop_common::Tally::default(),
    };
    let what = format!("{name}, seed {seed}, fault {reads:?}/{writes:?}");
    for _ in 0..WARM_UP {
        run.step(&mut index, &what);
    }
    assert_eq!(run.out.failed_writes + run.out.failed_queries, 0);
    faulty.arm(reads, writes);
    for _ in 0..ARMED {
        run.step(&mut index, &what);
    }
    run.out.injected = faulty.failures();
    faulty.disarm();
    let healed = format!("{what}, healed");
    run.check_all(&index, &healed);
    let (flushes, merges) = (index.stats().rtree.flushes, index.stats().rtree.merges);
    index.flush().unwrap();
    run.check_all(&index, &healed);
    let (writes_before, queries_before) = (run.out.failed_writes, run.out.failed_queries);
    for _ in 0..WARM_UP {
        run.step(&mut index, &healed);
    }
    assert_eq!(
        (run.out.failed_writes, run.out.failed_queries),
        (writes_before, queries_before),
        "{healed}: an operation failed on a healthy device"
    );
    index.flush().unwrap();
    run.check_all(&index, &healed);
    let st = index.stats().rtree;
    assert!(
        st.flushes > flushes && st.merges > merges,
        "{healed}: no flush or merge after healing"
    );
    assert_eq!(index.audit_update_memo().unwrap(), Ok(()), "{healed}: UM audit");
    if let Some(um) = index.update_memo() {
        assert!(!um.has_zero_count_entry(), "{healed}: UM entry with count 0");
    }
    if index.stats().key_index.is_none() {
        // Without a key index every allocated page belongs to a disk component.
        assert_eq!(
            dev.allocated_pages(),
            index.disk_pages(),
            "{healed}: pages leaked by failed steps"
        );
    }
    drop(index);
    assert_eq!(
        dev.allocated_pages(),
        0,
        "{what}: dropping the index frees every page"
    );
    run.out
}

/// Sweeps the fault position over the stream: the k-th write, every write from the k-th, the
/// k-th read, every read from the k-th.
fn sweep(name: &str, variant: Variant) {
    let (mut failed_writes, mut failed_queries) = (0, 0);
    for k in (1..420).step_by(19) {
        for (i, (r, w)) in Fault::sweep_at(k).into_iter().enumerate() {
            let o = stream(variant, name, k * 10 + i as u64, r, w);
            assert!(o.injected > 0, "{name}, k {k}: the fault {r:?}/{w:?} never fired");
            failed_writes += o.failed_writes;
            failed_queries += o.failed_queries;
        }
    }
    assert!(
        failed_writes > 50,
        "{name}: only {failed_writes} writes saw a failed flush or merge"
    );
    assert!(
        failed_queries > 50,
        "{name}: only {failed_queries} queries failed"
    );
}

fn parsed(name: &str) -> Strategy {
    name.parse().unwrap()
}

#[test]
fn eager_loses_nothing_when_the_device_fails() {
    sweep("Eager", (parsed("Eager"), |_| {}));
}

#[test]
fn buddy_eager_loses_nothing_when_the_device_fails() {
    sweep("Eager(buddy)", (parsed("Eager(buddy)"), |_| {}));
}

#[test]
fn validation_with_a_key_index_loses_nothing_when_the_device_fails() {
    sweep("Validation(key-index)", (parsed("Validation(key-index)"), |_| {}));
}

#[test]
fn physical_eager_loses_nothing_when_the_device_fails() {
    sweep("Eager(physical)", (parsed("Eager(physical)"), |_| {}));
}

#[test]
fn eager_with_primary_lookups_loses_nothing_when_the_device_fails() {
    for name in ["Eager", "Eager(physical)"] {
        sweep(
            &format!("{name} (primary lookup)"),
            (parsed(name), |c| c.eager_primary_lookup = true),
        );
    }
}

#[test]
fn validation_with_merge_repair_loses_nothing_when_the_device_fails() {
    sweep("Validation(repair)", (parsed("Validation(repair)"), |_| {}));
}

#[test]
fn validation_without_merge_repair_loses_nothing_when_the_device_fails() {
    sweep("Validation", (parsed("Validation"), |_| {}));
}

#[test]
fn every_update_memo_strategy_loses_nothing_when_the_device_fails() {
    for name in ["UM", "UM+F", "UM+M", "UM+BV", "UM+FMBV"] {
        sweep(name, (parsed(name), |_| {}));
    }
}

/// Every variant the sweeps cover.
fn variants() -> Vec<(String, Variant)> {
    let mut v: Vec<(String, Variant)> = Vec::new();
    for name in ["Eager", "Eager(buddy)", "Eager(physical)"] {
        v.push((name.into(), (parsed(name), |_| {})));
        v.push((
            format!("{name} (primary lookup)"),
            (parsed(name), |c| c.eager_primary_lookup = true),
        ));
    }
    for name in [
        "Validation",
        "Validation(key-index)",
        "Validation(repair)",
        "UM",
        "UM+F",
        "UM+M",
        "UM+BV",
        "UM+FMBV",
    ] {
        v.push((name.into(), (parsed(name), |_| {})));
    }
    v
}

/// Everything a flush or merge decides, as the index reports it.
fn state(index: &LsmRTree) -> impl PartialEq + std::fmt::Debug {
    let st = index.stats();
    (
        index_answer(index, &ALL),
        (index.disk_components(), index.disk_entries(), index.disk_pages()),
        (
            st.rtree.flushes,
            st.rtree.merges,
            st.rtree.flushed_entries,
            st.rtree.merged_entries,
        ),
        st.cleaned,
        index.memory_entries(),
        index.update_memo().map(|um| um.snapshot()),
    )
}

/// A flush (and the merges it starts) that fails at its k-th write or read and is then retried on
/// a healed device ends exactly where the same flush on a healthy twin does: same components, same
/// cleaning, same Update Memo. k runs over every access of the flushes and their merges (until the
/// fault no longer fires). A failure that leaves anything half done shows up here.
#[test]
fn a_failed_flush_or_merge_retried_ends_exactly_where_a_healthy_one_does() {
    for (name, variant) in variants() {
        for reads in [false, true] {
            // The streams differ with k (their seed), so stop only after a few misses in a row.
            let (mut k, mut hits, mut misses) = (1, 0, 0);
            while misses < 5 {
                if twin(&name, variant, k, reads) {
                    (hits, misses) = (hits + 1, 0);
                } else {
                    misses += 1;
                }
                k += 1;
            }
            // Reads fail only in merges (and in key-index lookups): so merges were hit.
            let what = if reads { "reads" } else { "writes" };
            assert!(
                hits > 5,
                "{name}: only {hits} flushes failed at one of their {what}"
            );
        }
    }
}

/// Drives an index on a faulty device and a healthy twin through the same stream with explicit
/// flushes; from the 3rd on, each flush of the faulty one fails its k-th read or write (if it makes
/// that many). Returns whether any did.
fn twin(name: &str, variant: Variant, k: u64, reads: bool) -> bool {
    let faulty = Arc::new(FaultyDevice::new(Arc::new(MemDevice::new(256))));
    let dev: Arc<dyn Device> = faulty.clone();
    let healthy_dev: Arc<dyn Device> = Arc::new(MemDevice::new(256));
    // A memory component large enough that mostly the explicit flushes write, small enough that
    // components get merged.
    let mut faulty_index = index(dev.clone(), variant, 16);
    let mut healthy = index(healthy_dev.clone(), variant, 16);
    let mut runs = [0, 1].map(|_| Run {
        rng: Xoshiro256PlusPlus::seed_from_u64(k),
        live: BTreeMap::new(),
        objects: 0,
        out: Outcome::default(),
        typed: failstop_common::Tally::default(),
    });
    let what = format!("{name}, k {k}, reads {reads}");
    let mut failed = false;
    for round in 0..10 {
        for _ in 0..40 {
            runs[0].step(&mut faulty_index, &what);
            runs[1].step(&mut healthy, &what);
        }
        if round >= 2 {
            let fault = Fault::Nth(k);
            if reads {
                faulty.arm(fault, Fault::Never);
            } else {
                faulty.arm(Fault::Never, fault);
            }
        }
        let result = faulty_index.flush();
        faulty.disarm();
        if result.is_err() {
            failed = true;
            faulty_index.flush().unwrap();
        }
        healthy.flush().unwrap();
        assert_eq!(state(&faulty_index), state(&healthy), "{what}, round {round}");
        assert_eq!(runs[0].live, runs[1].live, "{what}: the streams diverged");
    }
    assert_eq!(faulty_index.audit_update_memo().unwrap(), Ok(()), "{what}");
    if faulty_index.stats().key_index.is_none() {
        assert_eq!(dev.allocated_pages(), healthy_dev.allocated_pages(), "{what}");
    }
    failed
}

/// A stream like [`stream`]'s on the verified faulty stack with one injection of any kind (every
/// failed call's error is checked to be typed in `Run::step`). Once healed, the index matches the
/// oracle through more flushes and merges and the Update Memo audit holds, unless a torn write
/// left a damaged page behind, in which case queries and merges reading it keep failing with
/// checksum errors while every answer given is still the oracle's. Pages are audited and dropping
/// the index frees them all.
fn stream_kind(variant: Variant, name: &str, seed: u64, inj: Injection) -> failstop_common::Tally {
    let s = stack(256);
    let mut index = index(s.dev.clone(), variant, 4);
    let mut run = Run {
        rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        live: BTreeMap::new(),
        objects: 0,
        out: Outcome::default(),
        typed: failstop_common::Tally::default(),
    };
    let what = format!("{name}, seed {seed}, {inj}");
    for _ in 0..WARM_UP {
        run.step(&mut index, &what);
    }
    assert_eq!(run.out.failed_writes + run.out.failed_queries, 0, "{what}");
    s.faulty.inject(inj);
    for _ in 0..ARMED / 2 {
        run.step(&mut index, &what);
    }
    run.typed.injected_from(&s.faulty);
    s.faulty.disarm();
    let healed = format!("{what}, healed");
    let before = run.typed.failed_calls;
    for _ in 0..WARM_UP / 2 {
        run.step(&mut index, &healed);
    }
    match index.flush() {
        Ok(()) => {}
        Err(e) => run.typed.failed(&e, &healed),
    }
    match index_result(&index, &ALL) {
        Ok(got) => assert_eq!(got, oracle_answer(&run.live, &ALL), "{healed}: full scan"),
        Err(e) => run.typed.failed(&e, &healed),
    }
    if !inj.kind.damages_pages() {
        assert_eq!(
            run.typed.failed_calls, before,
            "{healed}: a call failed on a healthy device"
        );
        assert_eq!(index.audit_update_memo().unwrap(), Ok(()), "{healed}: UM audit");
    }
    if index.stats().key_index.is_none() {
        assert_eq!(
            s.dev.allocated_pages(),
            index.disk_pages(),
            "{healed}: pages leaked"
        );
    }
    drop(index);
    assert_eq!(
        s.dev.allocated_pages(),
        0,
        "{what}: dropping the index frees every page"
    );
    run.typed.checked = (WARM_UP + ARMED / 2 + WARM_UP / 2) as u64;
    run.typed
}

/// Every fault kind at `FAULT_CASES` positions (default 11), case `c` on variant `c % 11`, so the
/// default budget runs each kind once on every strategy.
#[test]
fn every_fault_kind_on_every_strategy() {
    let variants = variants();
    let mut sweep = Sweep::new("spatial (all strategies)");
    for (c, inj) in plan(cases(variants.len()), 200) {
        let (name, variant) = &variants[c % variants.len()];
        sweep.record(inj, stream_kind(*variant, name, 3000 + c as u64, inj));
    }
    sweep.check();
}
